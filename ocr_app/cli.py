"""The ``ocr-app`` command: a peer of the web app over the same library.

Exit codes (documented in the README): 0 every page converted (pages that hit the token cap are kept and
flagged, still 0); 1 an internal failure (engine, runtime, a bug) or outputs that could not be written
(disk full, permission denied); 2 bad input (a file or page range was rejected — the other files still
converted) or bad usage; 3 every file converted but some pages need a look: ``empty``, ``low_confidence``
or ``repaired`` (the summary counts them); 130 stopped by Ctrl-C (SIGINT), 143 by SIGTERM.

Signals: the first SIGINT or SIGTERM lets the page in progress finish, publishes the document it belongs
to with the pages done (``complete: false``) and exits; a second one stops at once and publishes nothing
of that document. Either way no temp file is left behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ocr_app.choices import (
    DTYPE_CHOICES,
    canonical_engine,
    canonical_precision,
    engine_names,
    unmet_requirement,
)
from ocr_app.exceptions import ConversionCancelled, InputError, OcrError
from ocr_app.load_bar import LoadBar
from ocr_app.models.deepseek_ocr2.modes import MODES
from ocr_app.models.deepseek_ocr2.prompts import PRESETS
from ocr_app.render.formats import OUTPUT_FORMATS, format_names
from ocr_app.settings import DEVICE_KINDS, TEXT_LAYER_POLICIES

if TYPE_CHECKING:
    from ocr_app.coldstart import ColdStart
    from ocr_app.convert import ConvertOptions
    from ocr_app.engines.registry import EngineSet
    from ocr_app.schema import DocumentResult
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_FLAGGED, EXIT_CANCELLED = 0, 1, 2, 3, 130
FLAGGED_STATUSES = frozenset({"empty", "low_confidence", "repaired"})  # exit 3 when no error is worse
ALL_FORMATS = OUTPUT_FORMATS


class VocabChoice(click.Choice):
    """A ``click.Choice`` over a declared vocabulary that also takes its aliases (``bfloat16``,
    ``rapidocr``): the value passed on is always the canonical name. ``choices`` may be a function,
    read when the command line is parsed or help is printed: an engine kind registered by a plug-in
    after this module was imported is a choice."""

    def __init__(
        self, choices: tuple[str, ...] | Callable[[], tuple[str, ...]], canonical: Callable[[str], str]
    ) -> None:
        self._vocabulary = choices
        super().__init__((), case_sensitive=False)
        self._canonical = canonical

    @property  # type: ignore[override]
    def choices(self) -> tuple[str, ...]:
        vocabulary = self._vocabulary
        return tuple(vocabulary() if callable(vocabulary) else vocabulary)

    @choices.setter
    def choices(self, _value: object) -> None:  # click's __init__ assigns; the vocabulary stays the source
        pass

    def convert(self, value, param, ctx):
        with contextlib.suppress(Exception):  # unknown: click's own error lists the values that exist
            value = self._canonical(str(value))
        return super().convert(value, param, ctx)


gpu_memory_option = click.option(
    "--gpu-memory",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="GPU memory budget in GiB (--dtype auto picks within it; the process caps itself to it).",
)


def model_options(func):
    """Options that pick the engine and the model, shared by ``convert`` and ``ui``."""
    for option in reversed(
        [
            click.option("--model", default=None, help="Hub id or local checkpoint directory."),
            click.option("--device", default=None, help=f"{', '.join(DEVICE_KINDS)} or cuda:N."),
            click.option(
                "--dtype",
                type=VocabChoice(DTYPE_CHOICES, canonical_precision),
                default=None,
                help="Precision (auto: by device and free GPU memory).",
            ),
            click.option(
                "--engine",
                type=VocabChoice(engine_names, canonical_engine),
                default=None,
                help="auto: the PDF text layer where usable, else the best OCR engine here.",
            ),
        ]
    ):
        func = option(func)
    return func


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    from ocr_app.exceptions import install_user_error_filter

    install_user_error_filter()  # user errors: one line each, no traceback


def _parse_formats(value: str) -> frozenset[str]:
    """``--format`` against the live format registry (a format registered by a plug-in is a choice)."""
    names = format_names()
    chosen = {v.strip().lower() for v in value.split(",") if v.strip()}
    if "all" in chosen:
        return frozenset(names)
    unknown = chosen - set(names)
    if unknown:
        raise click.BadParameter(
            f"unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(names)}"
        )
    return frozenset(chosen)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
@click.version_option(package_name="ocr-app")
def main(verbose: int) -> None:
    """Convert PDFs and images to Markdown, JSON and layout overlays with DeepSeek-OCR-2."""
    from ocr_app.runtime.onnx_import import watch_onnxruntime_import

    _setup_logging(verbose)
    watch_onnxruntime_import()  # no telemetry file of onnxruntime's left in the temp folder


class _InputsCommand(click.Command):
    """A command whose file arguments may come from a shell wildcard: without ``--``, an argument that
    looks like an option and is also the name of a file here is refused, not taken as the option.

    Why: ``ocr-app convert *`` in a folder holding a file named ``--out=DIR`` sent every output to DIR
    (issue 31). A wildcard cannot be told from typed options once the shell has expanded it; a file of
    exactly that name can. With ``--`` the user has said where file names start: every argument after
    it is one, and those before it were typed."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for arg in [] if "--" in args else args:
            if arg.startswith("-") and len(arg) > 1 and os.path.lexists(arg):
                raise click.UsageError(
                    f"{arg!r} is the name of a file here but looks like an option: put file names after "
                    f"-- (ocr-app {ctx.info_name} -o OUT -- FILES...)",
                    ctx,
                )
        return super().parse_args(ctx, args)


@main.command(cls=_InputsCommand)
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("outputs"),
    show_default=True,
    help="Output directory (one sub-folder per input file).",
)
@click.option("-p", "--pages", default=None, help='1-based page range, e.g. "1-3,7,10-".')
@click.option(
    "--mode", default=None, help=f"Resolution mode: {', '.join(MODES)}, default:N (N = most tiles, 2–6)."
)
@click.option("--prompt", default=None, help=f"Prompt preset ({', '.join(PRESETS)}) or custom text.")
@click.option("--locate-text", default=None, help="Text to find with the 'locate' preset.")
@click.option("--dpi", type=click.IntRange(36, 600), default=None, help="PDF render DPI [default: 144].")
@model_options
@gpu_memory_option
@click.option(
    "--text-layer",
    type=click.Choice(TEXT_LAYER_POLICIES),
    default=None,
    help="Use the PDF text layer instead of OCR where it is usable.",
)
@click.option("--password", default=None, help="Password of encrypted PDFs.")
@click.option(
    "--format",
    "formats",
    default="all",
    show_default=True,
    help=f"Comma-separated outputs: {', '.join(ALL_FORMATS)} or all.",
)
@click.option("--max-new-tokens", type=click.IntRange(1), default=None, help="Token cap per page.")
@click.option("--cache/--no-cache", default=None, help="Cross-page vision cache [default: on].")
@click.option("--json-summary", is_flag=True, help="Print the summary as JSON on stdout.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("-v", "--verbose", count=True, help="More log output; print the cold-start breakdown.")
def convert(**params) -> None:
    """Convert INPUT files and folders (PDF, PNG, JPEG, WebP, BMP, TIFF)."""
    from ocr_app.stdout_guard import reserved_stdout

    args = ConvertArgs(**params)
    # --json-summary: stdout holds the JSON only; whatever a library prints meanwhile goes to stderr
    stdout = click.get_current_context().with_resource(reserved_stdout()) if args.json_summary else None
    cold = _cold_start(args.verbose)
    settings, options, engines = _prepare(args)
    results = _run(args, settings, options, engines, cold)
    _print_ignored(results, {"--prompt": args.prompt, "--mode": args.mode})
    code = _exit_code(results)
    if stdout is not None:
        click.echo(json.dumps(_summary_dict(results, code), indent=2), file=stdout)
        stdout.flush()
    else:
        _print_summary(results)
    if _process_ends_here():
        _exit_now(code)
    sys.exit(code)


@dataclass(frozen=True)
class ConvertArgs:
    """The ``convert`` command's options as click parsed them, typed; ``None`` = not given.

    Why an object: the command's 21 options travel together into settings (``settings()``), the
    library's ``ConvertOptions`` (``options()``) and the output choices, instead of as 21 parameters.
    Constructed from click's keywords, so a misspelt field is a ``TypeError``, not a new attribute.
    """

    inputs: tuple[Path, ...]
    out_dir: Path = Path("outputs")
    pages: str | None = None
    mode: str | None = None
    prompt: str | None = None
    locate_text: str | None = None
    dpi: int | None = None
    model: str | None = None
    device: str | None = None
    dtype: str | None = None
    engine: str | None = None
    gpu_memory: float | None = None
    text_layer: str | None = None
    password: str | None = field(default=None, repr=False)
    formats: str = "all"
    max_new_tokens: int | None = None
    cache: bool | None = None
    json_summary: bool = False
    quiet: bool = False
    verbose: int = 0

    def settings(self) -> Settings:
        """Settings from the environment with this run's overrides (a batch run never idles)."""
        from ocr_app.settings import load_settings

        return load_settings(
            model=self.model,
            device=self.device,
            dtype=self.dtype,
            engine=self.engine,
            text_layer=self.text_layer,
            idle_unload_s=0,  # the process ends when the work does: no use for idle unload
            gpu_memory_gib=self.gpu_memory,
        )

    def options(self, settings: Settings) -> ConvertOptions:
        """The library's per-job options; what is not given falls back to ``settings``."""
        from ocr_app.convert import ConvertOptions

        return ConvertOptions.from_settings(
            settings,
            pages=self.pages,
            mode=self.mode,
            prompt=self.prompt,
            locate_text=self.locate_text,
            dpi=self.dpi,
            password=self.password,
            formats=_parse_formats(self.formats),
            max_new_tokens=self.max_new_tokens,
            use_cache=self.cache,
        )


def _cold_start(verbose: int) -> ColdStart | None:
    """With -v: the cold-start breakdown, heavy imports timed first."""
    if not verbose:
        return None
    from ocr_app.coldstart import ColdStart, import_heavy

    cold = ColdStart()
    logging.getLogger().setLevel(logging.WARNING - 10 * min(verbose, 2))
    import_heavy()
    cold.mark("imports")
    return cold


def _prepare(args: ConvertArgs) -> tuple[Settings, ConvertOptions, EngineSet]:
    """Settings, options and engines, every usage error found before anything loads (exit 2)."""
    from ocr_app.stack import build_engines

    try:
        settings = args.settings()
        _check_usage(settings, args.mode)
        _check_prompt(args.prompt or settings.prompt, args.locate_text)
        if args.out_dir.exists() and not args.out_dir.is_dir():
            raise click.BadParameter(
                f"{args.out_dir} is an existing file, not a folder.", param_hint="'-o' / '--out'"
            )
        options = args.options(settings)
        return settings, options, build_engines(settings)
    except click.UsageError:
        raise
    except OcrError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_INPUT if isinstance(exc, InputError) else EXIT_INTERNAL)
    except Exception as exc:  # pydantic validation of env/options
        click.echo(f"Error: invalid settings: {_settings_error(exc)}", err=True)
        sys.exit(EXIT_INPUT)


def _run(
    args: ConvertArgs, settings: Settings, options: ConvertOptions, engines: EngineSet, cold: ColdStart | None
) -> list[DocumentResult]:
    """Convert with a progress bar; Ctrl-C and engine failures become their exit codes."""
    from ocr_app.convert import CancelEvent, Converter
    from ocr_app.runtime.load_progress import attach_load_progress

    ends_process = _process_ends_here()  # then nothing is freed at the end: the process exit does it
    bar = _ProgressBar(disabled=args.quiet or args.json_summary)
    load_bar = LoadBar(disabled=args.quiet or args.json_summary)
    published = _Published()
    progress = _both(bar, published) if cold is None else _both(_both(bar, cold.on_progress), published)
    cancel = CancelEvent()
    stops = _StopSignals(cancel)
    detach = attach_load_progress(engines, load_bar)
    try:
        results = Converter(engines, settings).convert(
            args.inputs, args.out_dir, options, progress=progress, cancel=cancel
        )
        if cold is not None:
            from ocr_app.coldstart import format_summary

            bar.close()
            click.echo(format_summary(cold.summary(engines.describe())), err=True)
    except ConversionCancelled as exc:
        stops.done = True
        bar.close()
        _print_summary(exc.documents)
        click.echo(cancelled_message(cancel.reason, exc.documents, exc.partial, args.out_dir), err=True)
        sys.exit(stops.exit_code)
    except KeyboardInterrupt:
        stops.done = True
        bar.close()
        _print_summary(published.documents)
        click.echo(stopped_message(stops.name, published.documents, args.out_dir), err=True)
        sys.exit(stops.exit_code)
    except OcrError as exc:
        bar.close()
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_INPUT if isinstance(exc, InputError) else EXIT_INTERNAL)
    finally:
        stops.restore()
        detach()
        load_bar.close()
        if not ends_process:
            engines.unload_all()
    bar.close()
    return results


class _Published:
    """Progress listener keeping the documents whose outputs were published, as they are."""

    def __init__(self) -> None:
        self.documents: list[DocumentResult] = []

    def __call__(self, event) -> None:
        if event.stage == "published" and event.document is not None:
            self.documents.append(event.document)


def cancelled_message(reason: str, documents: list, partial, out_dir: Path) -> str:
    """What a first signal left on disk, in one line, from the results themselves (issue 31: a remote
    run said "marked incomplete" while its JSON said ``complete: true``)."""
    written = [d for d in documents if d.outputs and not d.error]
    cut = [d for d in written if not d.complete]
    head = reason[:1].upper() + reason[1:]
    if cut:
        what = "the document in progress was" if len(cut) == 1 else f"{len(cut)} documents in progress were"
        return f"{head}: {what} written with the pages done, marked incomplete, to {out_dir}."
    if partial is not None and partial.complete and partial.outputs:
        return f"{head}: every page of the document in progress had finished; it was written complete to {out_dir}."
    return f"{head}: no page of the document in progress had finished, so it was not written; files finished before it are in {out_dir}."


def stopped_message(signal_name: str, published: list, out_dir: Path) -> str:
    """What a second signal (stop at once) left on disk: the documents already published are listed
    above it; only those still being converted were dropped."""
    cut = [d for d in published if not d.complete]
    if cut:
        names = one_line(", ".join(d.source for d in cut))
        return (
            f"\nStopped at once ({signal_name}). Written before the stop, marked incomplete: {names}; "
            f"documents still in progress were not written. Outputs are in {out_dir}."
        )
    return (
        f"\nStopped at once ({signal_name}). The document in progress was not written; files finished "
        f"before it are in {out_dir}."
    )


class _StopSignals:
    """SIGINT and SIGTERM while converting: the first asks the converter to stop after the page in
    progress (``cancel``), a second stops at once (``KeyboardInterrupt``). Installed only on the main
    thread (a test's CliRunner in a worker thread keeps the process's handlers)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, cancel) -> None:
        self.cancel = cancel
        self.signum: int | None = None
        self.done = False
        self._old: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._old[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        first = self.signum is None
        self.signum = self.signum or signum
        if self.done:  # converting is over (the summary is being printed): nothing left to stop
            return
        if not first:
            raise KeyboardInterrupt
        name = signal.Signals(signum).name
        self.cancel.cancel(f"cancelled by {name}")
        # os.write: a handler must not re-enter the buffered stream it may have interrupted
        os.write(
            2, f"\n{name}: stopping after the page in progress (send it again to stop at once)\n".encode()
        )

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGINT"

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports it: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum if self.signum else EXIT_CANCELLED

    def restore(self) -> None:
        self.done = True
        for signum, handler in self._old.items():
            signal.signal(signum, handler)
        self._old.clear()


def _process_ends_here() -> bool:
    """Whether this command is the process's own (the ``ocr-app`` script or ``python -m ocr_app.cli``),
    not a call inside another program (a test's CliRunner, a notebook, a script importing ``main``)."""
    entry = sys.modules.get("__main__")
    return getattr(getattr(entry, "__spec__", None), "name", None) == "ocr_app.cli" or (
        getattr(entry, "main", None) is main
    )


def _exit_now(code: int) -> None:
    """End the process once every output is written and the summary printed, without the teardown.

    Why: freeing the model (a full garbage collection, the allocator's cache) and Python's own
    teardown of torch and transformers took ~1.5 s after the last page, a seventh of a one-page
    cold start (CPU: 6.9 → 5.5 s for the tiny model); the operating system frees all of it at once.
    Output files are closed and renamed into place before this point; streams and log handlers are
    flushed here."""
    import os

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _settings_error(exc: Exception) -> str:
    """A pydantic validation error as "field: message" lines, without its links and input dumps."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for err in errors():
        where = ".".join(str(x) for x in err.get("loc", ())) or "settings"
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {msg}")
    return "; ".join(parts) or str(exc)


def _check_usage(settings, mode: str | None) -> None:
    """An unknown mode, a CUDA device this machine lacks, or an engine without a setting its kind
    requires (``Capabilities.requires``: the remote engine's endpoint): exit 2 before anything loads,
    naming the valid choices (the value may come from --mode or DEEPSEEK_OCR_MODE). Dtype and engine are
    checked by their own vocabularies (click choices and the settings validators), the device's spelling
    by the settings validator."""
    from ocr_app.exceptions import ConfigError
    from ocr_app.models.deepseek_ocr2.modes import check_mode

    try:
        check_mode(mode or settings.mode)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'--mode'") from None
    _check_device(settings.device)
    unmet = unmet_requirement(settings.engine, settings)
    if unmet:
        raise click.UsageError(unmet)


def _check_device(device: str | None) -> None:
    """A CUDA device this machine does not have: exit 2 before anything loads (counted without torch)."""
    from ocr_app.engines.devices import check_cuda_devices, visible_cuda_count
    from ocr_app.exceptions import ConfigError

    try:
        check_cuda_devices(device, visible_cuda_count())
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'--device'") from None


def _check_prompt(prompt: str, locate_text: str | None) -> None:
    """An empty prompt, or 'locate' without --locate-text: exit 2 before anything loads (the engine
    resolves the prompt per page; a whole document of failed pages would say it too late)."""
    from ocr_app.exceptions import ConfigError
    from ocr_app.models.deepseek_ocr2.prompts import resolve_prompt

    try:
        resolve_prompt(prompt, locate_text=locate_text)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="'--prompt' / '--locate-text'") from None


def _both(first, second):
    def call(event) -> None:
        first(event)
        second(event)

    return call


def _exit_code(results) -> int:
    kinds = {r.error_kind for r in results if r.error} | {
        p.error_kind for r in results for p in r.pages if p.error
    }
    if "internal" in kinds:
        return EXIT_INTERNAL
    if "input" in kinds:
        return EXIT_INPUT
    if any(p.status in FLAGGED_STATUSES for r in results for p in r.pages):
        return EXIT_FLAGGED
    return EXIT_OK


def _print_ignored(results, given: dict[str, str | None]) -> None:
    """Once per run, on stderr: options given on the command line that no page's engine took."""
    keys = {"--prompt": ("prompt", "prompt"), "--mode": ("mode", "resolution mode")}
    with_ignored = [r for r in results if r.settings.get("ignored")]
    flags = {flag: value for flag, value in given.items()
             if value is not None and any(keys[flag][0] in r.settings["ignored"] for r in with_ignored)}  # fmt: skip
    if flags:
        engines = sorted({str(p.engine) for r in with_ignored for p in r.pages if p.error is None})
        click.secho(
            f"Note: {' and '.join(f'{k} {v}' for k, v in flags.items())} "
            f"{'was' if len(flags) == 1 else 'were'} ignored: the {' and '.join(engines)} engine took no "
            f"{' and no '.join(keys[k][1] for k in flags)} (recorded under settings.ignored in the JSON).",
            fg="yellow",
            err=True,
        )


def _summary_dict(results, code: int) -> dict:
    return {
        "exit_code": code,
        "files": [
            {
                "source": r.source,
                "error": r.error,
                "complete": r.complete,
                "incomplete_reason": None if r.complete else r.incomplete_reason,
                "page_count": r.page_count,
                "pages": len(r.pages),
                "headline": r.headline(),
                "status_counts": r.status_counts(),
                "source_repaired": r.source_repaired,
                "status": {p.index + 1: p.status for p in r.pages},
                "read_by": _read_by(r),
                "ignored": r.settings.get("ignored", {}),
                "hedged": _hedged(r),
                "outputs": {k: str(v) for k, v in r.outputs.items()},
            }
            for r in results
        ],
    }


def _page_groups(pages) -> list[tuple[str, str, str]]:
    """Flagged pages as (page span, status, why), runs of pages with the same status and reason merged."""
    reasons = {
        "length": "token cap hit (kept)",
        "repetition": "repetition (kept)",
        "repaired": "the source file was damaged and repaired; the page may be incomplete",
    }
    groups: list[list] = []  # [first, last, status, why]
    for p in pages:
        if p.status == "ok":
            continue
        why = p.error or p.quality_reason or reasons.get(p.status, "")
        n = p.index + 1
        if groups and groups[-1][2:] == [p.status, why] and groups[-1][1] == n - 1:
            groups[-1][1] = n
        else:
            groups.append([n, n, p.status, why])
    return [(f"page {a}" if a == b else f"pages {a}–{b}", status, why) for a, b, status, why in groups]


def _print_summary(results) -> None:
    for r in results:
        if r.error:
            click.secho(one_line(f"✗ {r.source}: {r.error}"), fg="red", err=True)
            continue
        groups = _page_groups(r.pages)
        where = r.outputs.get("dir") or r.outputs.get("md", "") or "(not written)"
        mark, colour = ("✓", "green") if not groups and r.complete else ("!", "yellow")
        click.secho(one_line(f"{mark} {r.source}: {r.headline()} → {where}"), fg=colour)
        for span, status, why in groups[:_MAX_FLAGGED_LINES]:
            click.secho(one_line(f"    {span}: {status}: {why}"), fg="yellow", err=True)
        if len(groups) > _MAX_FLAGGED_LINES:
            more = len(groups) - _MAX_FLAGGED_LINES
            click.secho(f"    … and {more} more (see the status fields in the JSON)", fg="yellow", err=True)
        for label, numbers in _pages_per_member(r).items():
            click.echo(
                f"    {label}: {len(numbers)} page{'' if len(numbers) == 1 else 's'} ({_span(numbers)})"
            )
        if hedged := _hedged(r):
            click.echo(
                f"    hedged: {len(hedged)} page{'' if len(hedged) == 1 else 's'} re-sent because an endpoint "
                f"was slow, the first answer kept ({_span(hedged)})"
            )


def one_line(text: str) -> str:
    """``text`` with control characters shown escaped (``\\n``): a file named with a newline printed a
    summary line in two pieces (issue 31)."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


_MAX_FLAGGED_LINES = 20  # a long scan through the text layer must not print thousands of lines


def _read_by(result) -> dict[int, str]:
    """Page number → the endpoint or GPU that read it (pages read by a pool of engines only)."""
    from ocr_app.engines.pool import read_by

    found = {p.index + 1: read_by(p.notes) for p in result.pages}
    return {n: label for n, label in found.items() if label}


def _hedged(result) -> list[int]:
    """Page numbers re-sent to another endpoint because theirs was slow (``pool.hedged``)."""
    from ocr_app.engines.pool import hedged

    return [p.index + 1 for p in result.pages if hedged(p.notes)]


def _pages_per_member(result) -> dict[str, list[int]]:
    per: dict[str, list[int]] = {}
    for number, label in sorted(_read_by(result).items()):
        per.setdefault(label, []).append(number)
    return per


def _span(numbers: list[int]) -> str:
    """[1, 2, 3, 5] → "pages 1-3, 5"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return ("page " if len(numbers) == 1 else "pages ") + text


class _ProgressBar:
    """tqdm bar over pages; silent when disabled. One file: a bar named after it. Several files (they may
    convert side by side): one bar over the pages of every file opened so far, "N/M files" done."""

    def __init__(self, disabled: bool) -> None:
        self.disabled = disabled
        self._bar = None
        self._files: dict[int, tuple[int, int]] = {}  # file index -> (pages done, pages selected)
        self._finished: set[int] = set()

    def __call__(self, event) -> None:
        if self.disabled:
            return
        from tqdm import tqdm

        if event.file_count <= 1:
            if event.stage == "open" or self._bar is None:
                self.close()
                self._bar = tqdm(total=None, unit="page", desc=event.source, file=sys.stderr, leave=True)
            total, done = event.total, event.done
        else:
            if self._bar is None:
                self._bar = tqdm(total=None, unit="page", file=sys.stderr, leave=True)
            self._files[event.file_index] = (event.done, event.total)
            if event.stage in ("done", "file_error"):
                self._finished.add(event.file_index)
            self._bar.set_description_str(f"{len(self._finished)}/{event.file_count} files")
            total = sum(t for _, t in self._files.values())
            done = sum(d for d, _ in self._files.values())
        if total and self._bar.total != total:
            self._bar.total = total
        self._bar.set_postfix_str(event.message[:60])
        self._bar.n = done
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@main.command()
@click.option("--model", default=None, help="Hub id or local checkpoint directory.")
@click.option("--dtype", default=None, help="auto, bf16, fp16, fp32, int8, mixed.")
@click.option(
    "--gpu-memory",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="GPU memory budget in GiB (shows the preset --dtype auto picks within it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(model, dtype, gpu_memory, as_json) -> None:
    """Show versions, device, GPU memory, engines and whether weights are cached."""
    from ocr_app.info import collect_info
    from ocr_app.settings import load_settings

    data = collect_info(load_settings(model=model, dtype=dtype, gpu_memory_gib=gpu_memory))
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
        return
    for section, values in data.items():
        click.secho(section, bold=True)
        for key, value in values.items():
            click.echo(f"  {key:<22} {value}")


@main.command("make-tiny-model")
@click.argument("out_dir", type=click.Path(path_type=Path))
@click.option(
    "--trained/--random",
    default=True,
    show_default=True,
    help="Trained: reads the built-in sample pages exactly (trains on the CPU once, then cached). "
    "Random: random weights, for shape and speed checks only.",
)
def make_tiny_model(out_dir: Path, trained: bool) -> None:
    """Write a tiny DeepSeek-OCR-2 checkpoint with the real tokenizer (for trying the pipeline offline).

    The trained one reproduces, token for token, the grounded transcripts of eight built-in sample
    pages (written next to it under sample-pages/); on any other page its text is meaningless.
    Needs the 'tiny' extra (pip install 'ocr-app[tiny]': the real tokenizer is rebuilt from it).
    """
    from ocr_app.models.deepseek_ocr2.tiny import build_tiny_checkpoint

    try:
        if trained:
            import shutil

            from ocr_app.models.deepseek_ocr2.tiny_pages import write_pages
            from ocr_app.models.deepseek_ocr2.tiny_train import build_trained_checkpoint

            cached = build_trained_checkpoint()
            shutil.copytree(cached, out_dir, dirs_exist_ok=True)
            pages = write_pages(Path(out_dir) / "sample-pages")
            path = Path(out_dir)
            hint = (
                f"ocr-app convert {pages[0]} --model {path} --engine deepseek --mode global "
                "(the sample pages named '-default' are read with --mode default)"
            )
        else:
            path = build_tiny_checkpoint(out_dir)
            hint = f"ocr-app convert FILE.pdf --model {path} --engine deepseek"
    except OcrError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)
    click.echo(f"Wrote a tiny {'trained' if trained else 'random-weight'} checkpoint to {path}. Try: {hint}")


@main.group()
def cache() -> None:
    """Inspect or clear the on-disk caches (results, vision features, quantised models)."""


@cache.command("info")
def cache_info() -> None:
    """Show where the caches live and how much they hold."""
    from ocr_app.runtime.result_cache import ResultCache
    from ocr_app.settings import load_settings

    settings = load_settings()
    stats = ResultCache.from_settings(settings).stats()
    click.echo(f"cache dir        {settings.cache_dir}")
    click.echo(
        f"result cache     {stats['entries']} entries, {stats['bytes'] / 2**20:.1f} MiB "
        f"of {stats['max_bytes'] / 2**20:.0f} MiB"
    )
    vision = Path(settings.cache_dir) / "vision"
    size = sum(f.stat().st_size for f in vision.rglob("*") if f.is_file()) if vision.is_dir() else 0
    click.echo(
        f"vision features  {size / 2**20:.1f} MiB on disk ({'on' if settings.vision_cache_disk else 'off'})"
    )
    from ocr_app.quant.store import QuantStore

    entries = QuantStore.from_settings(settings).entries()
    total = sum(e.get("bytes", 0) for e in entries)
    click.echo(f"quantised models {len(entries)} entries, {total / 2**30:.2f} GiB")
    for e in entries:
        secs = e.get("quantize_seconds")
        took = f", quantised in {secs:.1f} s" if isinstance(secs, (int, float)) else ""
        click.echo(
            f"  {e['preset']:<6} {e.get('bytes', 0) / 2**30:.2f} GiB  from {e.get('source')}{took}  [{e['key']}]"
        )


@cache.command("clear")
def cache_clear() -> None:
    """Delete every cached result and on-disk vision feature."""
    import shutil

    from ocr_app.runtime.result_cache import ResultCache
    from ocr_app.settings import load_settings

    settings = load_settings()
    removed = ResultCache.from_settings(settings).clear()
    vision = Path(settings.cache_dir) / "vision"
    if vision.is_dir():
        shutil.rmtree(vision)
    from ocr_app.quant.store import QuantStore

    quantised = QuantStore.from_settings(settings).clear()
    click.echo(
        f"Removed {removed} cached results, {quantised} quantised models and the vision feature store "
        f"from {settings.cache_dir}."
    )


@main.command()
@click.option(
    "--host", default=None, help="Interface to listen on [default: 127.0.0.1; 0.0.0.0 for the network]."
)
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Port [default: 7860].")
@click.option(
    "--share", is_flag=True, default=None, help="Also create a public gradio link (needs the internet)."
)
@model_options
@gpu_memory_option
@click.option("--preload", is_flag=True, default=None, help="Load the model before serving.")
@click.option(
    "--auth",
    "auth",
    multiple=True,
    metavar="USER:PASSWORD",
    help="Require sign-in; repeat for more users (also DEEPSEEK_OCR_AUTH).",
)
@click.option(
    "--auth-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Require sign-in for the user:password lines of this file (also DEEPSEEK_OCR_AUTH_FILE).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="Conversions at once [default: what the engine serves at once].",
)
@click.option("--log-level", default="INFO", show_default=True, help="Python log level.")
def ui(
    host,
    port,
    share,
    model,
    device,
    dtype,
    engine,
    gpu_memory,
    preload,
    auth,
    auth_file,
    concurrency,
    log_level,
) -> None:
    """Start the web app (`python app.py` runs this same command)."""
    from ocr_app.ui.main import serve

    code = serve(
        log_level=log_level,
        host=host,
        port=port,
        share=share,
        model=model,
        device=device,
        dtype=dtype,
        engine=engine,
        gpu_memory_gib=gpu_memory,
        preload=preload,
        auth="\n".join(auth) if auth else None,  # newline-separated: a password may hold a comma
        auth_file=auth_file,
        concurrency_limit=concurrency,
    )
    if _process_ends_here():  # the server, jobs and temp folder are gone: no 3 s interpreter teardown
        _exit_now(code)
    sys.exit(code)


def _add_plugin_commands() -> None:
    """Commands that live beside their subsystem (light to import: no torch at import time)."""
    from ocr_app.models.deepseek_ocr2.quantize_command import quantize_command

    main.add_command(quantize_command)


_add_plugin_commands()

if __name__ == "__main__":  # pragma: no cover
    main()
