"""The kernel warm-up (issue 26, item 2) on the CPU: no GPU here, so what is checked is what decides
which binaries exist and when they are made.

* Batch-dependent integer arguments do not change a kernel's binary: the specialisation key Triton's
  own binder computes for sm_90 (H100/H200) is the same for every row count, and an AOT compile for
  sm_90 of two row counts gives one binary (same cache hash).
* The plan (which views, prefill sizes and decode shapes) per preset and decoder.
* The dry run of the real code collects every binary a real decode launches: the real decoder runs its
  pages with the Triton kernels under the interpreter (``TRITON_INTERPRET=1``) while each launch's sm_90
  key is recorded, and the recorded keys are a subset of the dry run's.
* Progress ("compiling GPU kernels (n/N)"), the cache directory and the stored ``triton_key``.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels then run in numpy

import functools
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from ocr_app.models.deepseek_ocr2 import kernel_warmup as kw  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SM90 = ("cuda", 90, 32)

# integer arguments that follow the batch (rows, tokens, pages in flight, views) or the slot length
BATCH_ARGS = {
    "moe_up": ("T",),
    "moe_down": ("T",),
    "ngram_ban": ("L",),
    "finish_token": ("L", "B"),
    "wq_gemm_kernel": ("M",),
    "wq_moe_scan_kernel": ("T",),
    "int8_epilogue_kernel": ("M",),
    "ln_partition": ("n_rows", "H", "W", "n_wh", "n_ww"),
    "add_ln": ("n_rows", "H", "W", "n_wh", "n_ww"),
    "augment_qkv": ("H", "W", "DP", "VW"),
    "merge_heads": ("T", "heads"),
}


def _kernels() -> dict:
    from ocr_app.models.deepseek_ocr2 import sam_triton
    from ocr_app.models.deepseek_ocr2.decoding import triton_ops
    from ocr_app.quant import triton_kernels

    out = {}
    for mod in (sam_triton, triton_ops, triton_kernels):
        for name in dir(mod):
            obj = getattr(mod, name)
            if hasattr(obj, "fn") and hasattr(obj, "kwargs") and obj.fn.__module__ == mod.__name__:
                out[name] = obj
    return out


@functools.cache
def _backend():
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    return make_backend(GPUTarget(*SM90))


@functools.cache
def _binder(fn, dns: tuple):
    """Triton's own argument binder of ``fn`` for sm_90 (no GPU needed), with these unspecialised args."""
    from triton.runtime.jit import JITFunction, create_function_from_signature

    jit = JITFunction(fn, do_not_specialize=list(dns))
    return jit, create_function_from_signature(jit.signature, jit.params, _backend())


def sm90_key(kernel, args: tuple, kwargs: dict, dns: tuple | None = None) -> tuple[str, str]:
    """(kernel name, the specialisation key Triton computes for this launch on sm_90)."""
    if dns is None:
        dns = tuple(kernel.kwargs.get("do_not_specialize") or ())
    _, binder = _binder(kernel.fn, dns)
    _, spec, options = binder(*args, **kwargs)
    return kernel.fn.__name__, str(spec) + str(sorted(options.items()))


def _dummy_args(kernel) -> dict:
    jit, _ = _binder(kernel.fn, ())
    out = {}
    for p in jit.params:
        if p.is_constexpr:
            out[p.name] = 1
        elif p.name.endswith("_ptr"):
            out[p.name] = torch.empty(64)
        elif p.name in ("eps", "scale"):
            out[p.name] = 1.0
        else:
            out[p.name] = 4096
    return out


# --- row counts do not change the binary --------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BATCH_ARGS))
def test_batch_dependent_arguments_do_not_change_the_binary(name):
    """Each batch-dependent integer is ``do_not_specialize``: Triton's sm_90 key is the same for 1, a
    multiple of 16 and any other value. Without the marking the key would change (the check can fail)."""
    kernel = _kernels()[name]
    assert set(BATCH_ARGS[name]) <= set(kernel.kwargs.get("do_not_specialize") or ())
    base = _dummy_args(kernel)
    for arg in BATCH_ARGS[name]:
        keys = {sm90_key(kernel, (), {**base, arg: v}) for v in (1, 16, 37, 4096)}
        assert len(keys) == 1, (name, arg)
        plain = {sm90_key(kernel, (), {**base, arg: v}, dns=()) for v in (1, 16, 37)}
        assert len(plain) == 3, (name, arg)


AOT_CHECK = r"""
import os, sys, tempfile
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.compiler.compiler import make_backend
from triton.runtime.jit import create_function_from_signature
from ocr_app.quant import launch as L, ops
from ocr_app.quant.modules import QuantLinear
from ocr_app.quant.options import KernelOptions
from ocr_app.models.deepseek_ocr2.decoding import kernels as dk

target = GPUTarget("cuda", 90, 32)
backend = make_backend(target)

def compile_sm90(kernel, args, kwargs):
    # what JITFunction.run does before it compiles, with the sm_90 backend instead of the current GPU's
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    kwargs = {**kwargs, "debug": False, "instrumentation_mode": ""}
    bound, spec, options = binder(*args, **kwargs)
    options, sig, constexprs, attrs = kernel._pack_args(backend, kwargs, bound, spec, options)
    return triton.compile(ASTSource(kernel, sig, constexprs, attrs), target=target, options=options.__dict__)

def collect(fn):
    got = []
    with L.collecting(lambda k, g, a, kw: got.append((k, a, kw))):
        fn()
    return got

torch.manual_seed(0)
lin = QuantLinear.from_float(torch.randn(256, 128, dtype=torch.bfloat16), None)
opts = KernelOptions(backend="triton")
hashes = {}
for m in (300, 1000):  # two prefill sizes of one route ("gemm", 64)
    [(k, a, kw)] = collect(lambda: ops.wq_linear(torch.zeros(m, 128, dtype=torch.bfloat16), lin.qw, options=opts))
    hashes.setdefault(k.fn.__name__, set()).add(compile_sm90(k, a, kw).hash)
cap, L_ = 64, 2048
state = dict(seq=torch.zeros(cap, L_, dtype=torch.long), kv=torch.zeros(cap, dtype=torch.long),
             gen=torch.zeros(cap, dtype=torch.long), maxnew=torch.zeros(cap, dtype=torch.long),
             code=torch.zeros(cap, dtype=torch.long), done=torch.zeros(cap, dtype=torch.bool),
             active=torch.zeros(cap, dtype=torch.bool), eos=torch.tensor([1]))
for rows in (1, 16, 48):  # batch buckets of one decoder
    s = state
    [(k, a, kw)] = collect(lambda: dk.finish_token(torch.zeros(rows, dtype=torch.long), s["seq"], s["kv"], s["gen"],
                                                    s["maxnew"], s["code"], s["done"], s["active"], s["eos"], rows))
    hashes.setdefault(k.fn.__name__, set()).add(compile_sm90(k, a, kw).hash)
for name, h in sorted(hashes.items()):
    print("HASHES", name, len(h))
"""


def test_one_sm90_binary_serves_every_row_count():
    """AOT compile for sm_90 through Triton's own toolchain (no GPU): the launches the product makes for
    300 and 1000 prefill tokens (one W4 GEMM route), and for decode batches of 1, 16 and 48 rows, each
    compile to one binary (one cache hash)."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not tool.exists():
        pytest.skip(f"Triton's NVIDIA toolchain is not installed ({tool})")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    res = subprocess.run([sys.executable, "-c", AOT_CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    lines = sorted(x for x in res.stdout.splitlines() if x.startswith("HASHES"))
    assert lines == ["HASHES finish_token 1", "HASHES wq_gemm_kernel 1"], res.stdout


# --- the plan ----------------------------------------------------------------------------------------
def _engine(preset: str = "bf16", *, slots: int = 4, decoder: str = "graph", fused_sam: bool = True):
    from ocr_app.models.deepseek_ocr2.configs import config_dict, random_model
    from ocr_app.models.deepseek_ocr2.engine import DeepSeekOcr2Engine
    from ocr_app.models.deepseek_ocr2.sam_kernels import fuse_sam_layers
    from ocr_app.settings import load_settings

    model = random_model(config_dict("tiny"), torch.device("cpu"), torch.float32)
    if fused_sam:
        fuse_sam_layers(model, any_device=True)
    if preset != "bf16":
        from ocr_app.models.deepseek_ocr2.quant_recipes import ADAPTER
        from ocr_app.quant.apply import quantize_model
        from ocr_app.quant.options import KernelOptions, set_kernel_options
        from ocr_app.quant.presets import get_preset

        quantize_model(model, get_preset(preset), adapter=ADAPTER)
        set_kernel_options(model, KernelOptions(backend="triton"))  # the kernels, under the interpreter
    eng = DeepSeekOcr2Engine(load_settings(device="cpu", decoder=decoder, decode_max_slots=slots))
    eng.model, eng.device, eng.dtype = model, torch.device("cpu"), torch.float32
    eng.precision = {"preset": preset}
    return eng


@functools.cache
def _tiny(preset: str):
    return _engine(preset)


def test_plan_per_preset_and_decoder():
    from ocr_app.models.deepseek_ocr2.modes import view_geometries
    from ocr_app.quant.ops import dense_route, moe_route, token_classes

    assert view_geometries() == [(768, 0), (1024, 0), (1024, 768)]  # small, global, default (+ tiles)
    bf16 = kw.plan_warmup(_tiny("bf16"))
    assert bf16.views == ((768, 0), (1024, 0), (1024, 768))
    assert bf16.prefill_tokens == ()  # a float language model launches no Triton kernel in its prefill
    assert bf16.decoders == ((1, (1,)), (2, (1, 2)), (4, (1, 2, 4)))  # CPU: slots follow the pages
    mixed = kw.plan_warmup(_tiny("mixed"))
    text = _tiny("mixed").model.config.text_config
    top_k, experts = text.num_experts_per_tok, text.n_routed_experts
    # from the smallest page (the 768 px view: 144 tokens + separator) to 4 pages at the full context
    assert mixed.prefill_tokens == tuple(token_classes(145, 4 * 8192, top_k, experts))
    routes = [(dense_route(n), moe_route(n, top_k, experts)) for n in mixed.prefill_tokens]
    assert len(set(routes)) == len(routes) >= 2
    assert routes[0] == (dense_route(146), moe_route(146, top_k, experts))  # 145 and 146: one class
    # the generate path: no graph decoder, its decode steps run the quantised matmuls from one row
    gen = kw.plan_warmup(_engine("mixed", decoder="generate"))
    assert gen.decoders == () and gen.prefill_tokens[0] == 1
    assert kw.plan_warmup(_engine(fused_sam=False)).views == ()  # transformers' SAM layer: no kernels


@pytest.mark.parametrize(("low", "top_k", "experts"), [(1, 6, 64), (1, 2, 8), (145, 6, 64), (7, 1, 1)])
def test_token_classes_cover_every_route_once(low, top_k, experts):
    """Against every count one by one: each route's first count, nothing else (the sampled search must
    not step over a route)."""
    from ocr_app.quant.ops import dense_route, moe_route, token_classes

    first: dict = {}
    for n in range(low, 3001):
        first.setdefault((dense_route(n), moe_route(n, top_k, experts)), n)
    assert token_classes(low, 3000, top_k, experts) == sorted(first.values())


# --- the dry run finds what the real decoder launches -------------------------------------------------
def _decode_options(eng):
    from ocr_app.models.deepseek_ocr2.decoding.guard import GuardSpec, LoopSpec

    opts = eng.new_scheduler().options
    return replace(opts, guard=GuardSpec(2, 6, (400, 401)), loop=LoopSpec(0), kernels="triton", check_every=2)


def _planned(eng, plan, options) -> set:
    keys: set = set()
    kw.dry_run(eng, plan, lambda k, g, a, kwa: keys.add(sm90_key(k, a, kwa)), options)
    return keys


def _real_decode(eng, options, slots: int) -> tuple[set, set]:
    """Five pages of different prompt and output lengths through the real decoder (admission into free
    slots, chunks, compaction), every Triton kernel run by the interpreter and its sm_90 key recorded;
    returns (keys, batch sizes the steps ran at)."""
    from ocr_app.models.deepseek_ocr2.decoding.decoder import PageDecoder
    from ocr_app.models.deepseek_ocr2.decoding.interface import DecodeRequest
    from ocr_app.quant.launch import collecting

    keys: set = set()

    def run(kernel, grid, args, kwargs):
        keys.add(sm90_key(kernel, args, kwargs))
        kernel[grid](*args, **kwargs)

    g = torch.Generator().manual_seed(0)
    pending = [
        DecodeRequest([0, *torch.randint(5, 390, (n,), generator=g).tolist()], {}, new, key=i)
        for i, (n, new) in enumerate([(6, 3), (9, 7), (6, 5), (12, 2), (8, 4)])
    ]
    dec = PageDecoder(eng.model, capacity=slots, max_len=64, options=options)
    batches: set = set()
    real_run = dec.graphs.run

    def run_steps(step, b, lb, steps):
        batches.add(b)
        real_run(step, b, lb, steps)

    dec.graphs.run = run_steps
    done = 0
    with collecting(run, runs=True), torch.inference_mode():
        while done < 5:
            free = len(dec.free_slots)
            if pending and free:
                dec.admit(pending[:free])
                pending = pending[free:]
            dec.run_chunk()
            done += len(dec.collect())
            if not pending:
                dec.compact()
    return keys, batches


@pytest.mark.parametrize("preset", ["bf16", "mixed"])
def test_dry_run_covers_every_binary_the_real_decoder_launches(preset):
    eng = _tiny(preset)
    if (
        preset == "mixed"
    ):  # every expert route in the decode step: GEMV at 1 page, scan at 2, sorted GEMM at 4
        from ocr_app.quant.options import KernelOptions, set_kernel_options

        eng = _engine("mixed")
        set_kernel_options(
            eng.model, KernelOptions(backend="triton", decode_gemv_max_rows=2, moe_scan_max_tokens=2)
        )
    options = _decode_options(eng)
    plan = replace(kw.plan_warmup(eng, min_tokens=1), views=())  # text-only pages: prompts from 7 tokens
    planned = _planned(eng, plan, options)
    real, batches = _real_decode(eng, options, slots=4)
    assert len(batches) >= 2  # pages finished at different times: several batch buckets ran
    names = {n for n, _ in real}
    if preset == "bf16":
        assert {"moe_up", "moe_down", "finish_token", "ngram_ban", "rope_kv", "add_rmsnorm"} <= names
    else:
        assert {"wq_gemv_kernel", "wq_gemm_kernel", "wq_moe_scan_kernel", "finish_token"} <= names
        assert "moe_up" not in names
    assert real - planned == set()
    # and each binary is planned once: no two planned keys differ only by a row count
    assert len(planned) == len({(n, k) for n, k in planned})


def test_vision_binaries_do_not_depend_on_pages_or_tiles():
    """The encoder's kernels for one page and for three pages with six tiles are the same binaries: the
    plan's one blank page per geometry compiles them all."""
    eng = _tiny("bf16")
    planned = _planned(eng, kw.WarmupPlan(views=((768, 0),)), None)
    assert {n for n, _ in planned} == {"ln_partition", "add_ln", "augment_qkv", "merge_heads"}
    batch: set = set()
    from ocr_app.quant.launch import collecting

    with collecting(lambda k, g, a, kwa: batch.add(sm90_key(k, a, kwa))), torch.inference_mode():
        eng.encode_images(
            {
                "pixel_values": torch.zeros(3, 3, 768, 768),
                "pixel_values_local": None,
                "num_local_patches": [0] * 3,
            }
        )
    assert batch == planned


# --- progress, cache directory, stored triton_key ------------------------------------------------------
def test_parallel_compile_reports_each_distinct_binary_once():
    from ocr_app.load_bar import compiling_label

    gate = threading.Event()
    futures: dict[str, Future] = {}

    def compile_one(key: str) -> None:
        assert gate.wait(5)
        if key == "bad":
            raise RuntimeError("ptxas failed")

    def submit(kernel, grid, args, kwargs):  # Triton's contract: one future per new binary, None if it has it
        key = kwargs["key"]
        if key == "cached":
            return None
        if key not in futures:
            futures[key] = pool.submit(compile_one, key)
        return futures[key]

    with ThreadPoolExecutor(4) as pool:
        compiler = kw.ParallelCompile(submit)
        for key in ("a", "b", "a", "cached", "bad", "b", "c"):
            compiler(object(), (1,), (), {"key": key})
        assert (compiler.launches, compiler.variants) == (7, 4)
        seen: list = []
        gate.set()
        compiler.wait(lambda done, total, label: seen.append((done, total, label)))
    assert seen == [(n, 4, compiling_label(n, 4)) for n in range(5)]
    assert seen[-1][2] == "compiling GPU kernels (4/4)" and compiler.failed == 1


def test_without_async_compile_binaries_compile_in_turn_and_count_once():
    """Triton before 3.4 (no ``AsyncCompileMode``): each launch compiles at once, still at load."""

    compiled: dict = {}

    class Kernel:
        def warmup(self, *args, grid, **kwargs):
            return compiled.setdefault(kwargs["key"], object())

    compiler = kw.ParallelCompile(functools.partial(kw._serial_submit, {}))
    for key in ("a", "b", "a", "c", "b"):
        compiler(Kernel(), (1,), (), {"key": key})
    seen: list = []
    compiler.wait(lambda done, total, label: seen.append(label))
    assert (compiler.launches, compiler.variants, compiler.failed) == (5, 3, 0)
    assert seen[-1] == "compiling GPU kernels (3/3)"


def test_load_bar_and_ui_line_name_the_kernel_step(capsys):
    from ocr_app.load_bar import LoadBar, compiling_label
    from ocr_app.runtime.load_progress import describe_load_step

    bar = LoadBar()
    bar(1, 3, "model.layers.0")
    bar(0, 5, compiling_label(0, 5))
    bar(5, 5, compiling_label(5, 5))
    err = capsys.readouterr().err
    assert "quantising" in err and "compiling GPU kernels" in err and "5/5" in err
    assert describe_load_step(2, 5, compiling_label(2, 5)).endswith("compiling GPU kernels (2/5)")
    assert describe_load_step(1, 3, "layer 0").startswith("Quantising the model")


def test_triton_cache_dir_is_keyed_and_the_users_choice_wins(tmp_path, monkeypatch):
    import triton

    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    path = kw.use_project_triton_cache(tmp_path, "NVIDIA H200")
    assert path.parent == tmp_path / "triton" and path.is_dir()
    assert path.name == f"nvidia-h200-triton{triton.__version__}-{kw.kernel_source_hash()}"
    assert os.environ["TRITON_CACHE_DIR"] == str(path)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "mine"))
    assert kw.use_project_triton_cache(tmp_path, "NVIDIA H200") == tmp_path / "mine"


def test_triton_key_is_reused_only_while_tritons_files_are_unchanged(tmp_path, monkeypatch):
    from triton.runtime import cache as tcache

    calls = []

    def fresh():
        @functools.lru_cache
        def triton_key():
            calls.append(1)
            return "3.x-abc"

        return triton_key

    monkeypatch.setattr(tcache, "triton_key", fresh())
    assert kw.reuse_triton_key(tmp_path) is False and len(calls) == 1  # computed once, stored
    monkeypatch.setattr(tcache, "triton_key", fresh())  # a new process
    assert kw.reuse_triton_key(tmp_path) is True
    assert tcache.triton_key() == "3.x-abc" and len(calls) == 1  # Triton's hash was not computed again
    assert kw.reuse_triton_key(tmp_path) is False  # already in place
    stored = tmp_path / "triton_key.json"
    stored.write_text(stored.read_text().replace('"fingerprint": "', '"fingerprint": "0'))  # a reinstall
    monkeypatch.setattr(tcache, "triton_key", fresh())
    assert kw.reuse_triton_key(tmp_path) is False and len(calls) == 2


def test_off_cuda_the_warm_up_is_a_no_op_and_the_cold_start_line_shows_it_on_gpu():
    from ocr_app.coldstart import ColdStart, format_summary

    report = kw.warm_up(_tiny("bf16"))
    assert report == {"skipped": "not a CUDA device (no Triton kernels run)"}
    info = {"engines": {"deepseek": {"load_seconds": 5.0, "kernel_warmup": {"seconds": 1.25}}}}
    line = format_summary(ColdStart().summary(info))
    assert "weight load 5.00 s" in line and "kernel warm-up (in the load) 1.25 s" in line
    assert "kernel warm-up" not in format_summary(
        ColdStart().summary({"engines": {"d": {"load_seconds": 1}}})
    )


def test_warm_up_on_a_gpu_compiles_once_reports_and_marks(tmp_path, monkeypatch):
    """``warm_up``'s GPU flow with the GPU parts stood in for (device name, synchronise, Triton's async
    compile: a pool that 'writes' one cache entry per distinct sm_90 key): Triton's cache goes under the
    project's cache dir, progress counts the distinct binaries, the report says what was compiled, and
    the next load finds the marker and skips the dry run."""
    from contextlib import contextmanager

    import triton
    from triton.runtime import cache as tcache

    eng = _tiny("bf16")
    eng.settings = eng.settings.model_copy(update={"cache_dir": tmp_path})
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setattr(kw, "_no_triton", lambda device: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(tcache, "triton_key", functools.lru_cache(lambda: "3.x-key"))
    compiled: list = []

    @contextmanager
    def fake_async_compile(workers):
        futures: dict = {}

        def build(key):
            name, spec = key
            entry = Path(os.environ["TRITON_CACHE_DIR"]) / f"{abs(hash(spec))}"
            entry.mkdir(parents=True, exist_ok=True)
            (entry / f"{name}.json").write_text("{}")
            compiled.append(name)

        with ThreadPoolExecutor(workers) as pool:

            def submit(kernel, grid, args, kwargs):
                key = sm90_key(kernel, args, kwargs)
                if key not in futures:
                    futures[key] = pool.submit(build, key)
                return futures[key]

            yield submit

    monkeypatch.setattr(kw, "triton_async_compile", fake_async_compile)
    seen: list = []
    report = kw.warm_up(eng, lambda done, total, label: seen.append(label))
    cache = tmp_path / "triton" / kw.cache_key("NVIDIA H200", triton.__version__)
    assert report["cache_dir"] == str(cache) == os.environ["TRITON_CACHE_DIR"]
    # the tiny bf16 model on the CPU launches only the SAM kernels (the module decode step here):
    # ln_partition 1, add_ln 2 (windowed, global), augment_qkv 2 (window, global view), merge_heads 1
    assert report["variants"] == report["compiled"] == len(compiled) == 6
    assert report["launches"] > report["variants"] and report["failed"] == 0
    assert seen[0] == "compiling GPU kernels (0/6)" and seen[-1] == "compiling GPU kernels (6/6)"
    assert kw.cached_binaries(cache) == 6 and list((cache / kw.MARKER_DIR).glob("*.done"))
    again = kw.warm_up(eng, lambda *a: seen.append(a))
    assert again["skipped"].startswith("compiled by an earlier process") and len(compiled) == 6


def test_load_kernels_initialises_each_kernel_on_a_pool_and_reports(monkeypatch):
    """``load_kernels`` runs each compiled kernel's ``_init_handles`` (module + launcher, what Triton
    otherwise does at the first launch) on worker threads under the model's device, counts a failure
    without raising it (the launch that would meet it reports it with its page), reports progress as
    ``loading GPU kernels (n/N)`` and skips results that are not kernels (a failed compile's None)."""
    from ocr_app.runtime.load_progress import describe_load_step

    devices: list = []
    monkeypatch.setattr(torch.cuda, "device", lambda d: devices.append(d) or _Null())

    class Kernel:
        def __init__(self, fail: bool = False) -> None:
            self.fail, self.threads = fail, []

        def _init_handles(self) -> None:
            self.threads.append(threading.current_thread().name)
            if self.fail:
                raise RuntimeError("out of resources: shared memory")

    kernels = [Kernel(), Kernel(), Kernel(fail=True)]
    seen: list = []
    report = kw.load_kernels([*kernels, None], "cuda:1", 2, lambda d, t, label: seen.append((d, t, label)))
    assert report["kernels_loaded"] == 2 and report["load_failed"] == 1 and report["load_s"] >= 0
    assert all(k.threads and k.threads[0].startswith("triton-load") for k in kernels)
    assert devices == ["cuda:1"] * 3
    assert [s[:2] for s in seen] == [(1, 3), (2, 3), (3, 3)] and seen[-1][2] == "loading GPU kernels (3/3)"
    assert describe_load_step(*seen[-1]).startswith("Preparing the GPU")
    assert kw.load_kernels([], "cuda:0", 4)["kernels_loaded"] == 0


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_load_bar_shows_the_loading_step_as_kernels(capsys):
    from ocr_app.load_bar import LoadBar, compiling_label, loading_label

    bar = LoadBar()
    bar(1, 2, compiling_label(1, 2))
    bar(2, 2, compiling_label(2, 2))
    bar(2, 2, loading_label(2, 2))
    err = capsys.readouterr().err
    assert "compiling GPU kernels" in err and "loading GPU kernels" in err and "kernel" in err
