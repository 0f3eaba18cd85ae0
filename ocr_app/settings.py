"""One settings object for the library, CLI and UI.

Why pydantic-settings: every knob can come from the environment (prefix ``DEEPSEEK_OCR_``), from a
``.env`` file, or be passed explicitly, and values are validated once with clear messages.

Vocabularies are declared once — engine kinds (a registry) and precisions in ``choices.py``, output
formats in ``render/formats.py``, and below for the device kinds, text-layer policies and decoders —
and the CLI and the web app build their options from them (``cli.py``), so a new value is added in one
place. This module imports neither an engine nor the DeepSeek-OCR-2 wing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Literal, get_args

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ocr_app.choices import DtypeSetting, canonical_precision, check_engine, engine_names
from ocr_app.exceptions import ConfigError

DEFAULT_MODEL = "deepseek-community/DeepSeek-OCR-2"

DeviceKind = Literal["auto", "cpu", "cuda", "mps"]  # plus "cuda:N"
DEVICE_KINDS: tuple[str, ...] = get_args(DeviceKind)
TextLayerPolicy = Literal["auto", "always", "never"]
TEXT_LAYER_POLICIES: tuple[str, ...] = get_args(TextLayerPolicy)
DecoderName = Literal["auto", "generate", "graph"]
DECODERS: tuple[str, ...] = get_args(DecoderName)
LoaderName = Literal["native", "transformers"]
_CUDA_INDEX = re.compile(r"^cuda:\d+$")


def default_cache_dir() -> Path:
    """The per-user cache directory (platformdirs), e.g. ``~/.cache/ocr-app``."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("ocr-app"))


class Settings(BaseSettings):
    """All settings. Env: ``DEEPSEEK_OCR_<FIELD>`` (case-insensitive)."""

    model_config = SettingsConfigDict(env_prefix="DEEPSEEK_OCR_", env_file=".env", extra="ignore")

    # model
    model: str = Field(DEFAULT_MODEL, description="Hub id or local directory of the checkpoint.")
    device: str = Field(
        "auto",
        description=f"{', '.join(DEVICE_KINDS)}, cuda:N, or several (cuda:0,cuda:1); auto = every GPU.",
    )
    dtype: DtypeSetting = Field("auto", description="Precision; auto picks one by device and free memory.")
    engine: str = Field("auto", description=f"One of {', '.join(engine_names())} (or a registered plug-in).")
    remote_url: str | None = Field(
        None,
        description="OpenAI-compatible vLLM/SGLang endpoint; several comma-separated, or a TOML file "
        "of endpoints (docs/SCALE_OUT.md).",
    )
    remote_model: str | None = Field(None, description="Model name on the remote endpoint.")
    remote_api_key: str | None = Field(None, description="Bearer token for the remote endpoint.")
    remote_timeout_s: float = Field(
        300.0, gt=0, description="Most seconds one page's answer may take in all."
    )
    remote_connect_timeout_s: float = Field(
        10.0, gt=0, description="Seconds to open a connection to an endpoint."
    )
    remote_first_byte_s: float = Field(
        30.0,
        gt=0,
        description="Seconds an endpoint may stay silent: before the first byte of a page's (streamed) answer, "
        "and between two of its parts. Past it the page goes to another endpoint or fails.",
    )
    remote_concurrency: int = Field(8, ge=1, description="Pages in flight at once on each endpoint.")
    remote_backoff_s: float = Field(
        2.0, gt=0, description="First backoff of a failing endpoint; doubles per failure (max 300 s)."
    )
    remote_hedge_factor: float = Field(
        1.5,
        ge=0,
        description="With several endpoints, a page not answered after this × the fleet's recent p95 page "
        "time is re-sent to another endpoint; the first answer wins. 0 = never.",
    )
    remote_hedge_min_s: float = Field(1.0, ge=0, description="Never re-send a page younger than this (s).")

    # ingest
    dpi: int = Field(144, ge=36, le=600)
    max_pixels_per_page: int = Field(
        300_000_000, ge=1, description="Larger pages are refused; up to it huge scans are read as tiles."
    )
    pdf_render_pixels: int = Field(
        60_000_000,
        ge=1,
        description="A PDF page larger than this at the chosen DPI is rendered at a lower DPI.",
    )
    max_pages: int = Field(2000, ge=1)
    max_file_mb: float = Field(500.0, gt=0)
    max_page_stream_mb: float = Field(
        400.0,
        gt=0,
        description="Bytes one page may decode to: PDF content streams (any filter chain) and images (as "
        "RGB); more is refused before decoding (decompression and pixel bombs); a JPEG is decoded smaller.",
    )
    max_render_s: float = Field(
        60.0, gt=0, description="Seconds a heavy PDF page may take to render before it is stopped."
    )
    render_isolation_mb: float = Field(
        32.0,
        ge=0,
        description="PDF pages whose content inflates past this render in a child process, killed after "
        "max_render_s (0: every page).",
    )

    # generation
    mode: str = "default"
    prompt: str = "markdown"
    max_new_tokens: int = Field(8192, ge=1)
    no_repeat_ngram_size: int = Field(30, ge=0)
    no_repeat_window: int = Field(90, ge=0)
    decoder: DecoderName = Field(
        "auto",
        description="auto: graph decoder (slot KV cache, CUDA graphs, continuous batching) on CUDA and "
        "transformers generate elsewhere; graph: always the graph decoder (eager on CPU); generate.",
    )
    decode_max_slots: int = Field(64, ge=1, description="Most pages the graph decoder runs at once.")
    decode_attention: Literal["auto", "sdpa"] = Field(
        "auto",
        description="auto: the graph decoder's own split-K attention kernel where its fused step runs (no "
        "per-shape cuDNN plan, one CUDA graph per batch size); sdpa: torch's attention over length buckets.",
    )
    decode_small_request_batch: int = Field(
        16,
        ge=0,
        description="While a request of at most 4 pages decodes beside larger ones, the larger ones get no "
        "new decode slots beyond this batch size, so the small one decodes at a small batch's step time "
        "(0 = every free slot is used).",
    )
    vision_attn_mb: int = Field(
        256, ge=0, description="Bias memory per slice of SAM's global attention (0 = one slice)."
    )
    vision_fused: bool = Field(
        True,
        description="On CUDA, SAM's layers run fused Triton kernels for their norms, window partition and "
        "attention inputs (same output up to rounding); false = transformers' layer.",
    )
    kernel_warmup: bool = Field(
        True,
        description="On CUDA, compile every Triton kernel the loaded model can launch before it is "
        "reported ready (in parallel, kept in Triton's cache under cache_dir/triton), so no document "
        "waits for a compile; false = compile each on first use.",
    )
    loader: LoaderName = Field(
        "native",
        description="native: where the graph decoder runs (CUDA by default, or decoder=graph), DeepSeek-OCR-2 "
        "is built from the project's own modules and processor and its weights read straight into device "
        "memory, without importing transformers or torchvision (the cold start's largest part); "
        "transformers: transformers' from_pretrained and processor (the reference). The generate decoder "
        "always loads through transformers.",
    )
    weight_prefetch: bool = Field(
        False,
        description="Read the checkpoint's files onto the device in a background thread while transformers "
        "is imported, then assign them to an empty model (false = transformers' from_pretrained; off by "
        "default: no cold-start gain measured on an H200 host, docs/PERFORMANCE.md).",
    )
    preprocess_on_gpu: bool = Field(
        True,
        description="Resize, tile and normalise page images on the model's GPU (CUDA only): the CPU work "
        "per page was what kept the decoder waiting.",
    )
    text_layer: TextLayerPolicy = "auto"
    min_confidence: float = Field(
        0.8, ge=0, le=1, description="Pages whose engine confidence is below this are 'low_confidence'."
    )
    tile_max_side: int = Field(
        4000,
        ge=0,
        description="Pages with a longer side (px, at the chosen DPI) are read as tiles; 0 = never.",
    )
    tile_size: int = Field(3000, ge=256, description="Largest tile side (px) of a tiled page.")

    # runtime
    idle_unload_s: float = Field(300.0, ge=0, description="0 disables idle unload.")
    idle_park: bool = Field(
        True,
        description="An idle unload on a GPU keeps the weights in pinned host memory (the GPU is freed all "
        "the same) so the next request wakes them with one copy instead of a cold load; false = drop them "
        "(host memory back too, next request loads from disk).",
    )
    preload: bool = False
    preload_warmup: bool = Field(
        True,
        description="After a preload, run a batch of blank pages through the model (graph decoder only) so "
        "the first document does not pay first-call costs (vision batch shapes, decoder build, graph "
        "captures): 2.6-3.0 s more at start-up on an H200, about 1 s off the first document.",
    )
    cache_enabled: bool = True
    cache_dir: Path = Field(default_factory=default_cache_dir)
    vision_cache_mb: int = Field(512, ge=0, description="In-memory vision-feature cache bound (CPU RAM).")
    vision_cache_disk: bool = Field(False, description="Also keep vision features under cache_dir/vision.")
    vision_cache_disk_mb: int = Field(2048, ge=0, description="Bound of the on-disk vision-feature store.")
    result_cache_mb: int = Field(256, ge=0, description="On-disk result cache bound; 0 disables it.")
    memory_tolerance_mb: int = Field(64, ge=0, description="GPU memory a request may keep before a warning.")
    oom_recovery: bool = Field(True, description="Retry a page with a smaller footprint after a GPU OOM.")
    quant_cache: bool = Field(
        True,
        description="Keep int8/mixed weights quantised from a float checkpoint under cache_dir/quantized, "
        "so the next load reads them instead of quantising again.",
    )
    gpu_memory_gib: float | None = Field(
        None,
        gt=0,
        description="GPU memory budget for this process (GiB). The dtype preset, pages in flight and the "
        "OOM ladder plan within it and the process caps itself to it. None = the device's free memory.",
    )

    # server
    host: str = "127.0.0.1"
    port: int = Field(7860, ge=0, le=65535)
    share: bool = False
    concurrency_limit: int | None = Field(
        None,
        ge=1,
        description="Conversions the app runs at once; None = what each engine serves at once "
        "(its Capabilities: several for the graph decoder and a server fleet, the cores for CPU engines).",
    )
    auth: str | None = Field(
        None,
        repr=False,
        description="Sign-in pairs user:password, separated by commas (or newlines); gradio's own auth.",
    )
    auth_file: Path | None = Field(None, description="A file of user:password lines (# comments).")
    api_result_ttl_s: float = Field(
        300.0, gt=0, description="API results are deleted once fetched, or this many seconds after the call."
    )

    @field_validator("device", mode="before")
    @classmethod
    def _device(cls, value: object) -> object:
        text = str(value).strip().lower() if value is not None else "auto"
        items = [t.strip() for t in text.split(",")] if "," in text else [text]
        bad = [t for t in items if t not in DEVICE_KINDS and not _CUDA_INDEX.match(t)]
        if bad or not all(items):
            raise ValueError(
                f"unknown device {value!r}: use {', '.join(DEVICE_KINDS)}, cuda:N or a list (cuda:0,cuda:1)"
            )
        text = ",".join(items)
        return text

    @field_validator("dtype", mode="before")
    @classmethod
    def _dtype(cls, value: object) -> object:  # aliases (bfloat16, half, …) → the canonical name
        return _in_vocabulary(canonical_precision, value)

    @field_validator("engine", mode="before")
    @classmethod
    def _engine(cls, value: object) -> object:  # aliases (rapidocr, deepseek-ocr2) → the canonical name
        return _in_vocabulary(check_engine, value)


def _in_vocabulary(canonical: Callable[[str], str], value: object) -> object:
    """A text setting made canonical by its vocabulary's ``canonical`` (which raises ``ConfigError`` on an
    unknown name), as a ``ValueError``: pydantic reports those with the field name."""
    if not isinstance(value, str):
        return value
    try:
        return canonical(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def load_settings(**overrides: object) -> Settings:
    """Settings from env/.env with explicit overrides (None values are ignored)."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    return Settings(**clean)


class KernelSettings(BaseSettings):
    """Knobs of the quantised matmuls for benchmarks and debugging (``OCR_APP_<FIELD>``; docs/RUNTIME.md,
    "OCR_APP_* kernel variables"), not product settings. Read here like every other setting;
    ``quant.options.KernelOptions.from_settings`` turns them into the kernels' options object, which
    checks the values (its errors name the variables)."""

    model_config = SettingsConfigDict(env_prefix="OCR_APP_", env_file=".env", extra="ignore")

    quant_backend: str = Field("auto", description="auto, torch or triton.")
    triton_fast_launch: bool = Field(
        True, description="Launch compiled Triton kernels without pointer checks."
    )
