"""The web app's Blocks: ``OcrApp`` lays out the widgets, wires their events and runs the jobs.

Why a class: the layout, the event handlers and the job runner share the widgets and the converter;
as methods they are small and named (the previous single builder was one 467-line function of
closures). One job runner (``OcrApp.run_job``) serves both the page's Convert button and the
``/convert`` API endpoint, so the two front doors validate, cancel and clean up the same way.
Importing this module imports gradio (handlers are annotated with ``gr.Request``, which gradio
reads from their signatures); ``ocr_app.ui.app.build_app`` imports it
only when an app is built.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import gradio as gr

from ocr_app.exceptions import OcrError
from ocr_app.render.write_errors import output_error
from ocr_app.runtime.memory import trim_host_heap
from ocr_app.schema import DocumentResult
from ocr_app.ui import form, page_html, queue_words, status_panel, viewer
from ocr_app.ui.access import resolve_access
from ocr_app.ui.api_results import ApiResults
from ocr_app.ui.file_input import without_temp_files
from ocr_app.ui.jobs import CancelRegistry, JobOutcome, Progress, Waiting, stream_conversion, wait_turn
from ocr_app.ui.offline import offline_markdown
from ocr_app.ui.privacy import Owners, client_of
from ocr_app.ui.session import SessionDirs
from ocr_app.ui.slots import JobSlots

if TYPE_CHECKING:
    from ocr_app.convert import Converter
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

TRIM_AFTER_S = 2.0  # the heap is trimmed this long after the last job left, if none came meanwhile

PANEL_INTERVAL_S = 2.0
QUEUE_INTERVAL_S = 1.0  # how often a waiting tab re-reads its place in the queue
LIVE_VIEW_INTERVAL_S = 1.0  # while a job runs, refresh the page viewer at most this often
STATUS_INTERVAL_S = 0.25  # and the progress line at most this often (fast engines report ~100 events/s)
GPU_GROUP = "gpu"  # concurrency id shared by the UI's and the API's conversions
PRIVATE = {"api_visibility": "private", "show_progress": "hidden"}  # UI-only events, no spinner
# Page navigation runs one event at a time, in the order the clicks came: a pick from the list and a
# "Previous" right after it otherwise ran side by side, and the slower answer won (the page picked, not
# the one before it). Each answer is a few milliseconds of reading one rendered page.
NAVIGATION = {"concurrency_id": "page-view", "concurrency_limit": 1}
WAIT_REPORT_S = 1.0  # how often a job waiting for its engine's slot tells its place
MAX_JOBS_AT_ONCE = 64  # gradio admits at most this many conversions, whatever the engines serve


def _session_key(request: Any) -> str:
    return str(getattr(request, "session_hash", None) or "anonymous")


def _file_paths(files: Any) -> list[str]:
    """Upload values (paths, FileData dicts or objects with ``.name``) → paths."""
    if not files:
        return []
    items = files if isinstance(files, list) else [files]
    paths = []
    for item in items:
        if isinstance(item, str | Path):
            paths.append(str(item))
        elif isinstance(item, dict) and item.get("path"):
            paths.append(str(item["path"]))
        elif getattr(item, "name", None):
            paths.append(str(item.name))
    return paths


def _failure_message(documents: list[DocumentResult]) -> str:
    return "\n".join(f"{d.source}: {d.error}" for d in documents if d.error)


def _pdf_names(files: Any) -> list[str]:
    return [Path(p).name for p in _file_paths(files) if Path(p).suffix.lower() == ".pdf"]


@dataclass(frozen=True)
class Choices:
    """What the option widgets offer, read once from the engines' capabilities and ``describe()``."""

    default_engine: str
    engines: list[tuple[str, str]]  # (label, name) for the engine dropdown
    engine_notes: list[str]  # engines that cannot run here, and why
    presets: list[tuple[str, str]]
    default_preset: str
    modes: list[str]
    default_mode: str

    @classmethod
    def of(cls, converter: Converter, settings: Settings) -> Choices:
        from ocr_app.runtime.vram import snapshot

        describe = converter.describe()
        names = converter.engine_names()
        default_engine = str(describe.get("default") or (names[0] if names else ""))
        engines, notes = status_panel.engine_choices(
            names,
            describe,
            missing=converter.engines.missing(),
            has_gpu=snapshot(settings.device).available,
        )
        caps = converter.capabilities()
        presets = form.preset_choices(caps, settings.prompt)
        values = [v for _, v in presets]
        modes = form.mode_choices(caps, settings.mode)
        return cls(
            default_engine=default_engine,
            engines=engines,
            engine_notes=notes,
            presets=presets,
            default_preset=settings.prompt if settings.prompt in values else values[0],
            modes=modes,
            default_mode=settings.mode if settings.mode in modes else modes[0],
        )


class OcrApp:
    """The web app: its widgets (``self.w``), the events wiring them, and one job runner.

    Build once per server with ``build()``; the Blocks keep references to the bound methods below.
    """

    def __init__(self, converter: Converter, settings: Settings, *, work_dir: Path | None = None) -> None:
        """``work_dir``: where jobs write their outputs; default a new folder inside gradio's temp folder,
        so gradio serves outputs in place (no copy outside the owner check, ``ui.privacy``)."""
        from gradio.utils import get_upload_folder

        from ocr_app.runtime.vram import VramHistory

        self.converter = converter
        self.settings = settings
        self.trim_heap = trim_host_heap  # what ``_trim_if_idle`` runs (glibc's malloc_trim)
        # No share link is known until the launcher has tried (``set_access``): none is claimed before.
        self.access = resolve_access(settings, share=False)
        uploads = Path(get_upload_folder())
        if work_dir is None:
            uploads.mkdir(parents=True, exist_ok=True)
            work_dir = Path(tempfile.mkdtemp(prefix="ocr-app-sessions-", dir=uploads))
        self.dirs = SessionDirs(work_dir)
        self.owners = Owners([self.dirs.root, uploads])  # every file under them is served to its owners only
        self.api_results = ApiResults(settings.api_result_ttl_s, on_removed=self.owners.forget)
        self.cancels = CancelRegistry()
        self.history = VramHistory(window_s=600.0)
        self.describe = converter.describe()
        self.choices = Choices.of(converter, settings)
        self.slots = JobSlots(self._engine_limits())
        self.w = SimpleNamespace()  # the components, by name, filled in by build()
        self.demo: gr.Blocks | None = None

    def _engine_limits(self) -> dict[str, int]:
        """Jobs each offered engine runs at once: ``DEEPSEEK_OCR_CONCURRENCY_LIMIT`` when set, else what
        the engine serves at once (several when it batches, e.g. the graph decoder; 1 for the light
        engine, whose page already uses every core)."""
        names = {name for _, name in self.choices.engines} | {self.choices.default_engine} - {""}
        fixed = self.settings.concurrency_limit
        limits = {}
        for name in sorted(names):
            if fixed is not None:
                limits[self._slot_name(name)] = fixed
                continue
            try:
                limit = self.converter.engines.get(name).capabilities().max_concurrent_jobs
            except OcrError:
                limit = 1
            limits[self._slot_name(name)] = limit
        return limits

    def _slot_name(self, engine: str) -> str:
        """Jobs for ``auto`` take the slots of the OCR engine behind it: the same engine object reads
        their scans, so they count against its limit (the light engine must not run two at once)."""
        info = (self.describe.get("engines") or {}).get(engine) or {}
        return str(info.get("ocr") or engine)

    def jobs_at_once(self) -> int:
        """Conversions gradio admits at once; each then waits for its own engine's slot."""
        fixed = self.settings.concurrency_limit
        return fixed if fixed is not None else max(1, min(MAX_JOBS_AT_ONCE, self.slots.total()))

    # --- the one job runner --------------------------------------------------------------------
    def run_job(
        self,
        files: Any,
        values: form.FormValues,
        request: Any,
        passwords: dict[str, str] | None = None,
        idle_s: float | None = None,
        *,
        api: bool = False,
    ) -> Iterator[Progress | Waiting | JobOutcome | None]:
        """Validate, wait for a slot of the job's engine, start the job in this session's folder, stream
        it; raises gr.Error on bad input.

        Both front doors call this: the Convert button draws each ``Waiting`` and ``Progress``, the API
        waits for the ``JobOutcome``. A second job of the same session replaces the first's cancel flag
        and (in the page, not for ``api`` calls) its folder. The job's folder belongs to the requesting
        client: only it is served the outputs; inputs must be the client's own uploads.
        ``idle_s``: also yield None after that long without an event (``stream_conversion``).
        """
        paths = _file_paths(files)
        if not paths:
            raise gr.Error("Upload at least one PDF or image first.")
        client = client_of(request)
        if any(not self.owners.allows(p, client) for p in paths):
            raise gr.Error("A file of this request was not uploaded by this session; upload it again.")
        try:
            options = form.build_options(values, self.settings)
        except OcrError as exc:
            raise gr.Error(str(exc)) from exc
        key = _session_key(request)
        cancel = self.cancels.start(key)
        engine = self._slot_name(options.engine or self.choices.default_engine)
        try:
            ticket = yield from wait_turn(self.slots, engine, cancel, WAIT_REPORT_S)
            if ticket is None:  # cancelled while waiting: its place went at once
                yield JobOutcome(cancelled=True)
                return
            try:
                yield from self._run_admitted(
                    paths, options, passwords, key, cancel, client, ticket, api, idle_s
                )
            finally:
                self.slots.leave(ticket)
                self._trim_when_idle()
        finally:
            self.cancels.finish(key, cancel)

    def _trim_when_idle(self) -> None:
        """The jobs' memory goes back to the system, not to glibc's arenas, once the app is idle:
        ``malloc_trim`` locks the arenas while it runs (16 jobs ending at once each paid it on their
        results' path and the decoder's), so it runs ``TRIM_AFTER_S`` after the last job has left, on a
        timer thread, if no job has come since."""
        if self.slots.idle():
            timer = threading.Timer(TRIM_AFTER_S, self._trim_if_idle)
            timer.name, timer.daemon = "ocr-app-trim", True
            timer.start()

    def _trim_if_idle(self) -> None:
        if self.slots.idle():
            self.trim_heap()

    def _run_admitted(self, paths, options, passwords, key, cancel, client, ticket, api: bool, idle_s):
        """The job once its engine has a slot: in its own folder, owned by ``client``."""
        try:
            job_dir = self.dirs.new_job(key, replace=not api)
        except OSError as exc:  # a full disk before the job starts: the same words as any failed write
            raise gr.Error(str(output_error(exc)), title="Cannot write the outputs") from exc
        self.owners.claim(job_dir, client)
        stream = stream_conversion(self.converter, paths, job_dir, options, cancel, passwords, idle_s)
        try:
            with self.api_results.reading(paths) if api else nullcontext():
                for item in stream:
                    if isinstance(item, JobOutcome):
                        item.folder = job_dir
                    elif isinstance(item, Progress):
                        self.slots.progress(ticket, item.fraction)
                    yield item
        finally:
            self.dirs.finished(job_dir)

    @staticmethod
    def _check_outcome(outcome: JobOutcome) -> list[DocumentResult]:
        """The documents, or gr.Error when every file failed (a cancelled job keeps what it has)."""
        documents = outcome.documents
        if not outcome.cancelled and documents and all(d.error for d in documents):
            raise gr.Error(_failure_message(documents), title="Conversion failed")
        return documents

    # --- the two front doors -------------------------------------------------------------------
    def convert_ui(self, data: dict, request: gr.Request) -> Iterator[dict]:
        """The Convert button: one progress line and live page views while the job runs, the whole result
        at the end. Failures are said in the status line in the app's words, never raised: gradio's error
        pill would sit over the message (the API endpoint raises)."""
        w = self.w
        files, values = self._form_values(data)
        passwords = dict(data[w.passwords_state] or {})
        yield {
            w.job_status: "Starting…",
            w.downloads: None,
            w.queue_md: "",
            w.cancel_btn: gr.Button(interactive=True),
        }
        try:
            job = self.run_job(files, values, request, passwords, idle_s=STATUS_INTERVAL_S)
            outcome = yield from self._follow(job)
        except gr.Error as exc:  # refused before it started (no file, bad page range...)
            yield {w.job_status: viewer.error_markdown(str(exc.message))}
            return
        documents = form.app_errors(outcome.documents, passwords)
        if any(not d.error for d in documents):  # some converted: a toast for each file that did not
            for doc in documents:
                if doc.error:
                    gr.Warning(f"{doc.source}: {doc.error}", title="A file failed")
        update = self._view(documents, viewer.summary_markdown(documents, outcome.cancelled), final=True)
        if form.needs_password(documents):  # open the box the message points at
            update[w.passwords_box] = gr.Accordion(open=True)
        yield update

    def _follow(self, job: Iterator[Progress | JobOutcome | None]) -> Generator[dict, None, JobOutcome]:
        """Draw a running job and return its outcome. The progress line (drawn by the app, once: gradio's
        overlay drew it again over a faded copy) at most every STATUS_INTERVAL_S, a line held back being
        drawn when no event follows; the page viewer, which resends every page so far, at most every
        LIVE_VIEW_INTERVAL_S, so a long document does not flood the browser."""
        w = self.w
        live: dict[str, DocumentResult] = {}
        last_view = last_status = 0.0
        line = held = ""
        for item in job:
            if isinstance(item, JobOutcome):
                return item
            if isinstance(item, Waiting):  # its engine's slots are taken: say where it stands
                yield {w.queue_md: item.message, w.job_status: item.message}
                continue
            if item is None:  # no event for a while
                if held:
                    last_status, held = time.monotonic(), ""
                    yield {w.job_status: line}
                continue
            line = held = viewer.progress_markdown(item.message, item.fraction)
            result = item.event.page_result
            if result is not None:
                live.setdefault(item.event.source, DocumentResult(source=item.event.source)).pages.append(
                    result
                )
            now = time.monotonic()
            if result is not None and now - last_view >= LIVE_VIEW_INTERVAL_S:
                last_view = last_status = now
                held = ""
                yield self._view(list(live.values()), line, final=False)
            elif now - last_status >= STATUS_INTERVAL_S:
                last_status, held = now, ""
                yield {w.job_status: line}
        return JobOutcome()

    def convert_api(
        self,
        files,
        pages,
        prompt,
        custom_prompt,
        locate_text,
        mode,
        dpi,
        use_cache,
        engine,
        password,
        request: gr.Request,
    ):
        """Convert files; returns (Markdown of all documents, result JSON, [md, json, searchable pdf, zip files]).

        ``password``: one password for every encrypted PDF, or a JSON object of file name → password.
        (The parameter names are the endpoint's documented API: gradio_client calls them by name.)
        """
        values = form.FormValues(pages, prompt, custom_prompt, locate_text, mode, dpi, use_cache, engine)
        shared, per_file = form.parse_passwords(password)
        passwords = {name: shared for name in _pdf_names(files)} if shared else {}
        passwords.update(per_file)
        outcome = JobOutcome()
        for item in self.run_job(files, values, request, passwords, api=True):
            if isinstance(item, JobOutcome):
                outcome = item  # (Progress and Waiting: an API call only waits for the result)
        downloads = viewer.download_paths(outcome.documents)
        if outcome.folder is not None:  # removed once the client fetched them, or after the TTL
            self.api_results.add(outcome.folder, downloads, inputs=_file_paths(files))
        documents = self._check_outcome(outcome)
        result = {"cancelled": outcome.cancelled, "documents": [d.to_dict() for d in documents]}
        return viewer.document_markdown(documents), result, downloads

    def cancel_job(self, request: gr.Request) -> str:
        """Toast for the tab, the same words for API clients."""
        if self.cancels.cancel(_session_key(request)):
            message = "Cancelling… the page in progress finishes first; finished pages are kept."
        else:
            message = "Nothing to cancel: no conversion is running in this session."
        gr.Info(message)
        return message

    def _form_values(self, data: dict) -> tuple[Any, form.FormValues]:
        """The Convert button's inputs (a dict by component) → (files, FormValues)."""
        w = self.w
        return data[w.files], form.FormValues(
            *(data[c] for c in (w.pages, w.preset, w.custom, w.locate, w.mode, w.dpi, w.use_cache, w.engine))
        )

    # --- result views --------------------------------------------------------------------------
    @staticmethod
    def page_view_of(entries: list[dict], key: str | None) -> tuple:
        """(dropdown value, page number, viewer HTML, status) of one page; all change together."""
        entry = next((viewer.PageEntry(**e) for e in entries if e["key"] == key), None)
        if entry is None:
            return None, None, page_html.EMPTY_VIEW, ""
        return entry.key, entry.page_number, entry.html(), viewer.page_status_markdown(entry)

    def _view(self, documents: list[DocumentResult], message: str, *, final: bool) -> dict:
        """Every result component at once. While running, show the newest page; at the end, the first."""
        w = self.w
        entries = [e.to_dict() for e in viewer.page_entries(documents)]
        key = (entries[0] if final else entries[-1])["key"] if entries else None
        selected, number, html, status = self.page_view_of(entries, key)
        update: dict = {
            w.job_status: message,
            w.status_table: viewer.status_rows(documents),
            w.pages_state: entries,
            w.page_select: gr.Dropdown(choices=[(e["label"], e["key"]) for e in entries], value=selected),
            w.page_number: number,
            w.page_view: html,
            w.page_status: status,
        }
        if final:  # the whole document is rendered once, not on every live update of a long job
            update[w.downloads] = viewer.download_paths(documents)
            update[w.doc_source] = viewer.document_markdown(documents)
            update[w.doc_md] = offline_markdown(update[w.doc_source])  # remote images as links
        return update

    def show_page(self, key, entries):
        return self.page_view_of(entries or [], key)

    def step_page(self, key, entries, delta: int):
        keys = [e["key"] for e in entries or []]
        if not keys:
            return self.page_view_of([], None)
        i = keys.index(key) if key in keys else 0
        return self.page_view_of(entries, keys[max(0, min(len(keys) - 1, i + delta))])

    def goto_page(self, number, key, entries):
        """Page ``number`` of the file being shown (the nearest page it has, for a page range)."""
        entries = entries or []
        if not entries or number is None:
            return self.page_view_of(entries, key)
        current = next((e for e in entries if e["key"] == key), entries[0])
        same = [e for e in entries if e["source"] == current["source"]]
        best = min(same, key=lambda e: abs(e["page_number"] - int(number)))
        return self.page_view_of(entries, best["key"])

    # --- option and panel events ---------------------------------------------------------------
    def options_state(self, engine_name: str | None) -> tuple[bool, bool, str]:
        """(prompt and mode usable, vision cache usable, note under the options) for the chosen engine."""
        name = engine_name or self.choices.default_engine
        why = form.ignored_options_reason(name, self.describe)
        cache = form.uses_vision_cache(name, self.describe)
        notes = [f"Prompt and resolution mode are off: {why}."] if why else []
        if not cache:
            notes.append(f"The vision cache is off: {name} reads no page through DeepSeek-OCR-2.")
        return why is None, cache, " ".join(notes)

    def on_preset(self, value):
        return gr.update(visible=value == form.CUSTOM), gr.update(visible=value == form.LOCATE)

    def on_engine(self, name):
        usable, cache, note = self.options_state(name)
        return (*(gr.update(interactive=usable) for _ in range(4)), gr.update(interactive=cache), note)

    def tick(self):
        text, frame, has_gpu = status_panel.panel_update(
            self.history, self.converter.describe(), self.settings
        )
        return text, gr.LinePlot(frame, visible=status_panel.plot_visible(frame, has_gpu))

    def queue_tick(self, request: gr.Request):
        """A tab whose job waits in gradio's queue (every slot of every engine taken): its place and
        an estimate over the default engine's slots."""
        ahead = queue_words.jobs_ahead(self.demo, getattr(request, "session_hash", None), GPU_GROUP)
        if ahead is None:
            return queue_words.queue_words(None)
        engine = self._slot_name(self.choices.default_engine)
        queued = max(0, ahead - self.jobs_at_once())
        return queue_words.queue_words(ahead, self.slots.estimate_after(engine, queued))

    def set_access(self, access: Any) -> None:
        """Who may use the app and why it is exposed, as the launcher found it (a share link exists)."""
        self.access = access

    def open_warning_text(self) -> str:
        warning = self.access.warning
        return f"**Open to others:** {warning}" if warning else ""

    def open_banner(self):
        """The open-instance banner as it stands (drawn again on each page load)."""
        text = self.open_warning_text()
        return gr.update(value=text, visible=bool(text))

    def on_unload(self, request: gr.Request):
        key = _session_key(request)
        self.cancels.cancel(key)
        self.dirs.cleanup(key)
        self.owners.forget(self.dirs.session_dir(key))

    # --- layout ----------------------------------------------------------------------------------
    def build(self) -> gr.Blocks:
        """Return the app's ``gr.Blocks`` (queue configured); call ``launch`` on it or use ``ui.launch``."""
        # No telemetry or version check: documents can be private and the app must work offline.
        from ocr_app.ui.refusals import blocks_class

        with blocks_class()(  # gr.Blocks whose refusals of API files reach the client with their reason
            title="ocr-app · DeepSeek-OCR-2",
            delete_cache=(600, 3600),
            analytics_enabled=False,
            fill_width=True,  # the page viewer needs the room; gradio's default caps the app at 1280 px
        ) as demo:
            self.demo = demo
            with gr.Row(elem_id="header-row"):
                gr.Markdown(
                    "## ocr-app — documents to Markdown with DeepSeek-OCR-2\n"
                    "Upload PDFs or images and press **Convert**. Every detected block is drawn on its page.",
                    elem_id="app-title",
                )
                # signed in through gradio's auth: its /logout ends this browser's session
                if self.access.users:
                    gr.Button(
                        "Sign out",
                        link="logout?all_session=false",
                        link_target="_self",
                        size="sm",
                        variant="secondary",
                        scale=0,
                        min_width=100,
                        elem_id="sign-out",
                    )
            notice = status_panel.notice_markdown(self.describe)
            gr.Markdown(notice, visible=bool(notice), elem_id="engine-notice")
            self.w.open_warning = gr.Markdown(
                self.open_warning_text(), visible=bool(self.access.warning), elem_id="open-warning"
            )
            self.w.pages_state = gr.State([])
            self.w.passwords_state = gr.State({})  # file name -> PDF password; memory only, never logged
            with gr.Row(elem_id="main-row"):
                with gr.Column(scale=1, min_width=320, elem_id="inputs-col"):
                    self._inputs()
                with (
                    gr.Column(scale=2, elem_id="results-col"),
                    gr.Tabs(overflow_behavior="wrap", elem_id="results-tabs"),
                ):
                    self._results()
                with (
                    gr.Column(scale=1, min_width=320, elem_id="gpu-col"),
                    gr.Accordion("GPU and model", open=True, elem_id="gpu-panel"),
                ):
                    self._gpu_panel()
            self._api_components()
            self._wire_jobs()
            self._wire_pages()
            self._wire_panel()
        demo.queue(default_concurrency_limit=self.jobs_at_once())
        demo.ocr_app_dirs = self.dirs  # type: ignore[attr-defined]  # so launchers/tests can remove the outputs
        demo.ocr_app_jobs = self.cancels  # type: ignore[attr-defined]  # so a shutdown cancels running jobs
        demo.ocr_app = self  # type: ignore[attr-defined]  # the launcher reads access and privacy from it
        return demo

    def _inputs(self) -> None:
        from ocr_app.ingest import SUPPORTED_EXTENSIONS

        w = self.w
        w.files = without_temp_files(
            gr.File(
                label="PDFs and images",
                file_count="multiple",
                file_types=sorted(SUPPORTED_EXTENSIONS),
                elem_id="input-files",
            )
        )
        with gr.Accordion(form.PASSWORDS_BOX, open=False, elem_id="passwords") as w.passwords_box:
            gr.render(inputs=w.files)(self._password_boxes)
        with gr.Row():
            w.convert_btn = gr.Button("Convert", variant="primary", elem_id="convert-btn")
            w.cancel_btn = gr.Button("Cancel", variant="stop", elem_id="cancel-btn", interactive=False)
        w.queue_md = gr.Markdown("", elem_id="queue-status")
        w.job_status = gr.Markdown("", elem_id="job-status")
        with gr.Accordion("Options", open=False):
            self._options()
        w.downloads = gr.File(
            label="Downloads (Markdown, JSON, searchable PDF, ZIP)",
            file_count="multiple",
            interactive=False,
            elem_id="downloads",
        )

    def _password_boxes(self, uploaded: Any) -> None:
        """One password box per uploaded PDF (re-rendered when the upload changes)."""
        names = _pdf_names(uploaded)
        if not names:
            gr.Markdown("Upload a PDF first; a box per PDF appears here.")
        for i, name in enumerate(names):
            box = gr.Textbox(
                "",
                type="password",
                label=f"Password for {name}" if len(names) > 1 else "PDF password",
                placeholder="only for encrypted PDFs",
                key=f"pw-{name}",
                elem_id=f"pw-{i}",
                elem_classes=["pdf-password"],
            )

            def remember(value, current, name=name):
                current = dict(current or {})
                if value:
                    current[name] = value
                else:
                    current.pop(name, None)
                return current

            box.change(
                remember, [box, self.w.passwords_state], self.w.passwords_state, queue=False, **PRIVATE
            )

    def _options(self) -> None:
        w, c = self.w, self.choices
        honoured, cache, note = self.options_state(c.default_engine)
        w.pages = gr.Textbox("", label="Pages", placeholder="all (e.g. 1-3,7,10-)", elem_id="opt-pages")
        w.preset = gr.Dropdown(
            c.presets, value=c.default_preset, label="Prompt", elem_id="opt-prompt", interactive=honoured
        )
        w.custom = gr.Textbox(
            "",
            label="Custom prompt",
            placeholder="<image>\nFree OCR.",
            lines=2,
            visible=c.default_preset == form.CUSTOM,
            interactive=honoured,
        )
        w.locate = gr.Textbox(
            "", label="Text to locate", visible=c.default_preset == form.LOCATE, interactive=honoured
        )
        w.mode = gr.Dropdown(
            c.modes,
            value=c.default_mode,
            label="Resolution mode",
            info="auto picks per page; larger modes read small print better but cost more",
            elem_id="opt-mode",
            interactive=honoured,
        )
        w.options_md = gr.Markdown(note, elem_id="options-note")
        w.dpi = gr.Slider(
            form.DPI_MIN,
            form.DPI_MAX,
            value=self.settings.dpi,
            step=1,
            label="PDF render DPI",
            elem_id="opt-dpi",
        )
        w.use_cache = gr.Checkbox(
            value=self.settings.cache_enabled,
            label="Cross-page vision cache",
            interactive=cache,
            elem_id="opt-cache",
        )
        offered = [name for _, name in c.engines]
        w.engine = gr.Dropdown(
            c.engines,
            value=c.default_engine if c.default_engine in offered else None,
            label="Engine",
            info=("Cannot run here: " + "; ".join(c.engine_notes)) if c.engine_notes else None,
            visible=len(c.engines) > 1,
            elem_id="opt-engine",
        )

    def _results(self) -> None:
        w = self.w
        with gr.Tab("Pages"):
            with gr.Row(elem_id="page-picker"):
                w.prev_btn = gr.Button("◀ Previous", size="sm", elem_id="page-prev", scale=1)
                w.page_select = gr.Dropdown([], label="Page", elem_id="page-select", scale=4, filterable=True)
                w.page_number = gr.Number(
                    None, label="Go to page", precision=0, minimum=1, elem_id="page-number", scale=1
                )
                w.next_btn = gr.Button("Next ▶", size="sm", elem_id="page-next", scale=1)
            w.page_status = gr.Markdown("", elem_id="page-status")
            viewer_js, viewer_css = page_html.assets()
            w.page_view = gr.HTML(
                page_html.EMPTY_VIEW,
                elem_id="page-view",
                js_on_load=viewer_js,
                css_template=viewer_css,
                apply_default_css=False,
            )
        with gr.Tab("Document"):
            w.doc_md = gr.Markdown(latex_delimiters=viewer.LATEX_DELIMITERS, elem_id="doc-markdown")
        with gr.Tab("Source"):
            w.doc_source = gr.Code(
                language="markdown", label="Markdown source", wrap_lines=True, elem_id="doc-source"
            )
        with gr.Tab("Status"):
            w.status_table = gr.Dataframe(
                headers=viewer.STATUS_HEADERS,
                interactive=False,
                wrap=True,
                column_widths=["18%", "7%", "13%", "12%", "9%", "11%", "30%"],
                elem_id="status-table",
            )

    def _gpu_panel(self) -> None:
        # It opens with a real sample, not "not sampled yet" while the first tick is on its way.
        text, frame, has_gpu = status_panel.panel_update(self.history, self.describe, self.settings)
        self.w.panel_md = gr.Markdown(text, elem_id="gpu-status")
        self.w.panel_plot = gr.LinePlot(
            frame,
            visible=status_panel.plot_visible(frame, has_gpu),
            elem_id="gpu-plot",
            x="seconds",
            y="GiB",
            color="series",
            x_title="seconds ago",
            height=180,
            label="VRAM (last 10 minutes)",
        )

    def _api_components(self) -> None:
        """Hidden components that give the API endpoint simple, typed outputs (and its password input)."""
        w = self.w
        w.api_btn = gr.Button(visible=False)
        # The API takes any file type: an unsupported file in a batch gets its own error from the library
        # instead of gradio refusing the whole request (the upload widget filters by extension).
        w.api_upload = without_temp_files(gr.File(visible=False, file_count="multiple", label="files"))
        w.api_password = gr.Textbox("", visible=False, label="password", type="password")
        w.api_markdown = gr.Textbox(visible=False, label="markdown")
        w.api_json = gr.JSON(visible=False, label="result")
        w.api_files = gr.File(visible=False, file_count="multiple", label="files")
        w.api_cancel = gr.Textbox(visible=False, label="message")

    # --- events ----------------------------------------------------------------------------------
    def _wire_jobs(self) -> None:
        """Convert (UI and API, one GPU queue) and Cancel."""
        w = self.w
        options = [w.pages, w.preset, w.custom, w.locate, w.mode, w.dpi, w.use_cache, w.engine]
        page_outputs = [w.page_select, w.page_number, w.page_view, w.page_status]
        view_outputs = [w.job_status, w.doc_md, w.doc_source, w.status_table, w.downloads, w.pages_state]
        gpu = {"concurrency_limit": self.jobs_at_once(), "concurrency_id": GPU_GROUP}
        w.convert_btn.click(
            self.convert_ui,
            {w.files, *options, w.passwords_state},
            [*view_outputs, *page_outputs, w.queue_md, w.cancel_btn, w.passwords_box],
            api_visibility="private",
            show_progress="hidden",  # the job draws its own progress line and bar (viewer.progress_markdown)
            **gpu,
        ).then(
            lambda: (gr.Button(interactive=False), ""),
            None,
            [w.cancel_btn, w.queue_md],
            queue=False,
            **PRIVATE,
        )
        w.api_btn.click(
            self.convert_api,
            [w.api_upload, *options, w.api_password],
            [w.api_markdown, w.api_json, w.api_files],
            api_name="convert",
            **gpu,
        )
        w.cancel_btn.click(self.cancel_job, None, w.api_cancel, concurrency_limit=None, api_name="cancel")

    def _wire_pages(self) -> None:
        """The page viewer's navigation and the options that depend on the prompt and engine."""
        w = self.w
        page_outputs = [w.page_select, w.page_number, w.page_view, w.page_status]
        # .input, not .change: programmatic updates from the job already carry the page they select.
        w.page_select.input(
            self.show_page, [w.page_select, w.pages_state], page_outputs, **PRIVATE, **NAVIGATION
        )
        w.page_number.submit(
            self.goto_page,
            [w.page_number, w.page_select, w.pages_state],
            page_outputs,
            **PRIVATE,
            **NAVIGATION,
        )
        for button, delta in ((w.prev_btn, -1), (w.next_btn, 1)):
            button.click(
                lambda k, e, d=delta: self.step_page(k, e, d),
                [w.page_select, w.pages_state],
                page_outputs,
                **PRIVATE,
                **NAVIGATION,
            )
        w.preset.change(self.on_preset, w.preset, [w.custom, w.locate], api_visibility="private")
        w.engine.change(
            self.on_engine,
            w.engine,
            [w.preset, w.custom, w.locate, w.mode, w.use_cache, w.options_md],
            api_visibility="private",
        )

    def _wire_panel(self) -> None:
        """The GPU panel's and the queue line's timers, and the per-tab cleanup."""
        w = self.w
        gr.Timer(PANEL_INTERVAL_S).tick(
            self.tick, None, [w.panel_md, w.panel_plot], concurrency_limit=None, **PRIVATE
        )
        gr.Timer(QUEUE_INTERVAL_S).tick(self.queue_tick, None, w.queue_md, concurrency_limit=None, **PRIVATE)
        self.demo.load(self.tick, None, [w.panel_md, w.panel_plot], **PRIVATE)
        self.demo.load(self.open_banner, None, w.open_warning, **PRIVATE)
        self.demo.unload(self.on_unload)
