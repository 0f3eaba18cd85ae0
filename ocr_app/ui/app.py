"""Build the Gradio app over a ``Converter``.

Why a builder that takes its dependencies: the app holds no model and does no OCR; it renders the
library's results. The launcher (``app.py``) and the tests pass in a converter built from settings, so
the same Blocks run on a GPU server, a CPU laptop, or against the tiny test checkpoint.
"""

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocr_app.exceptions import OcrError
from ocr_app.schema import DocumentResult
from ocr_app.ui import form, page_html, queue_words, status_panel, viewer
from ocr_app.ui.jobs import CancelRegistry, JobOutcome, Progress, stream_conversion
from ocr_app.ui.session import SessionDirs

if TYPE_CHECKING:
    import gradio as gr

    from ocr_app.convert import Converter
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

PANEL_INTERVAL_S = 2.0
QUEUE_INTERVAL_S = 1.0  # how often a waiting tab re-reads its place in the queue
LIVE_VIEW_INTERVAL_S = 1.0  # while a job runs, refresh the page viewer at most this often
STATUS_INTERVAL_S = 0.25  # and the progress line at most this often (fast engines report ~100 events/s)
GPU_GROUP = "gpu"  # concurrency id shared by the UI's and the API's conversions
# Wide screens: inputs and the GPU panel on the left, results on the right. Narrow screens: inputs,
# then results, then the GPU panel (a grid, since the panel sits in the left column when wide).
CSS = """
#job-status { min-height: 5em; }
#job-status progress { width: 100%; height: 8px; accent-color: #ea580c; }
#job-status .job-error { color: #b91c1c; }
#engine-notice { background: #fff7e6; border: 1px solid #f0c36d; border-radius: 8px; padding: 4px 12px; }
#main-row { display: grid !important; grid-template-columns: minmax(300px, 380px) minmax(0, 1fr);
  grid-template-areas: "inputs results" "gpu results"; align-items: start; }
#inputs-col { grid-area: inputs; } #results-col { grid-area: results; } #gpu-col { grid-area: gpu; }
#status-table th, #status-table th * { white-space: nowrap !important; }
#options-note { font-size: 0.9em; opacity: 0.85; }
/* The page picker shows once there is a page to pick (no "Go to page 0" on an empty app). */
#results-col:not(:has(.ocr-viewer)) #page-picker { display: none !important; }
#page-picker { align-items: end; }
@media (max-width: 900px) {
  #main-row { grid-template-columns: minmax(0, 1fr); grid-template-areas: "inputs" "results" "gpu"; }
}
/* Phones: the page list gets a whole line, Go to page the next, Previous and Next share the last. */
@media (max-width: 600px) {
  #page-picker { flex-wrap: wrap !important; }
  #page-picker > .form { order: 1; flex: 1 1 100% !important; flex-wrap: wrap !important; }
  #page-picker > .form > * { flex: 1 1 100% !important; min-width: 0 !important; }
  #page-prev { order: 2; flex: 1 1 40% !important; min-width: 0 !important; }
  #page-next { order: 3; flex: 1 1 40% !important; min-width: 0 !important; }
}
"""


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


def build_app(converter: "Converter", settings: "Settings", *, work_dir: Path | None = None) -> "gr.Blocks":
    """Return the app's ``gr.Blocks`` (queue configured); call ``launch`` on it or use ``ui.launch``."""
    import gradio as gr

    from ocr_app.ingest import SUPPORTED_EXTENSIONS
    from ocr_app.models.deepseek_ocr2.loading import weights_available
    from ocr_app.runtime.vram import VramHistory, snapshot

    dirs = SessionDirs(work_dir)
    cancels = CancelRegistry()
    history = VramHistory(window_s=600.0)
    describe = converter.describe()
    engine_names = converter.engine_names()
    default_engine = str(describe.get("default") or (engine_names[0] if engine_names else ""))
    engine_list, engine_notes = status_panel.engine_choices(
        engine_names,
        describe,
        deepseek_weights="deepseek" in engine_names and weights_available(settings.model),
        has_gpu=snapshot(settings.device).available,
    )
    offered = [name for _, name in engine_list]
    caps = converter.capabilities()
    presets = form.preset_choices(caps, settings.prompt)
    preset_values = [v for _, v in presets]
    default_preset = settings.prompt if settings.prompt in preset_values else preset_values[0]
    modes = form.mode_choices(caps, settings.mode)
    default_mode = settings.mode if settings.mode in modes else modes[0]
    viewer_js, viewer_css = page_html.assets()

    def run_job(
        values: form.FormValues,
        files: Any,
        request: Any,
        passwords: dict[str, str] | None = None,
        idle_s: float | None = None,
    ) -> Iterator[Progress | JobOutcome | None]:
        """Validate, start the job in this session's folder, stream it; raises gr.Error on bad input."""
        paths = _file_paths(files)
        if not paths:
            raise gr.Error("Upload at least one PDF or image first.")
        try:
            options = form.build_options(values, settings)
        except OcrError as exc:
            raise gr.Error(str(exc)) from exc
        key = _session_key(request)
        cancel = cancels.start(key)
        job_dir = dirs.new_job(key)
        try:
            yield from stream_conversion(converter, paths, job_dir, options, cancel, passwords, idle_s)
        finally:
            cancels.finish(key, cancel)
            dirs.finished(job_dir)

    def options_state(engine_name: str | None) -> tuple[bool, str]:
        """(prompt and mode usable, note under the options) for the chosen engine."""
        why = form.ignored_options_reason(engine_name or default_engine, describe)
        return why is None, (f"Prompt and resolution mode are off: {why}." if why else "")

    honoured, options_note = options_state(default_engine)
    # The panel opens with a real sample, not "not sampled yet" while the first tick is on its way.
    first_panel, first_frame, first_gpu = status_panel.panel_update(history, describe, settings)

    # No telemetry or version check: documents can be private and the app must work offline.
    with gr.Blocks(
        title="ocr-app · DeepSeek-OCR-2",
        delete_cache=(600, 3600),
        analytics_enabled=False,
        fill_width=True,  # the page viewer needs the room; gradio's default caps the app at 1280 px
    ) as demo:
        gr.Markdown(
            "## ocr-app — documents to Markdown with DeepSeek-OCR-2\n"
            "Upload PDFs or images and press **Convert**. Every detected block is drawn on its page."
        )
        notice = status_panel.notice_markdown(describe)
        gr.Markdown(notice, visible=bool(notice), elem_id="engine-notice")
        pages_state = gr.State([])
        passwords_state = gr.State({})  # file name -> PDF password; memory only, never logged or written

        with gr.Row(elem_id="main-row"):
            with gr.Column(scale=1, min_width=320, elem_id="inputs-col"):
                files = gr.File(
                    label="PDFs and images",
                    file_count="multiple",
                    file_types=sorted(SUPPORTED_EXTENSIONS),
                    elem_id="input-files",
                )

                with gr.Accordion(form.PASSWORDS_BOX, open=False, elem_id="passwords") as passwords_box:

                    @gr.render(inputs=files)
                    def password_boxes(uploaded):
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
                                remember,
                                [box, passwords_state],
                                passwords_state,
                                api_visibility="private",
                                show_progress="hidden",
                                queue=False,
                            )

                with gr.Row():
                    convert_btn = gr.Button("Convert", variant="primary", elem_id="convert-btn")
                    cancel_btn = gr.Button("Cancel", variant="stop", elem_id="cancel-btn", interactive=False)
                queue_md = gr.Markdown("", elem_id="queue-status")
                job_status = gr.Markdown("", elem_id="job-status")
                with gr.Accordion("Options", open=False):
                    pages = gr.Textbox(
                        "", label="Pages", placeholder="all (e.g. 1-3,7,10-)", elem_id="opt-pages"
                    )
                    preset = gr.Dropdown(
                        presets,
                        value=default_preset,
                        label="Prompt",
                        elem_id="opt-prompt",
                        interactive=honoured,
                    )
                    custom = gr.Textbox(
                        "",
                        label="Custom prompt",
                        placeholder="<image>\nFree OCR.",
                        lines=2,
                        visible=default_preset == form.CUSTOM,
                        interactive=honoured,
                    )
                    locate = gr.Textbox(
                        "",
                        label="Text to locate",
                        visible=default_preset == form.LOCATE,
                        interactive=honoured,
                    )
                    mode = gr.Dropdown(
                        modes,
                        value=default_mode,
                        label="Resolution mode",
                        info="auto picks per page; larger modes read small print better but cost more",
                        elem_id="opt-mode",
                        interactive=honoured,
                    )
                    options_md = gr.Markdown(options_note, elem_id="options-note")
                    dpi = gr.Slider(
                        form.DPI_MIN,
                        form.DPI_MAX,
                        value=settings.dpi,
                        step=1,
                        label="PDF render DPI",
                        elem_id="opt-dpi",
                    )
                    use_cache = gr.Checkbox(value=settings.cache_enabled, label="Cross-page vision cache")
                    engine = gr.Dropdown(
                        engine_list,
                        value=default_engine if default_engine in offered else None,
                        label="Engine",
                        info=("Cannot run here: " + "; ".join(engine_notes)) if engine_notes else None,
                        visible=len(engine_list) > 1,
                        elem_id="opt-engine",
                    )
                downloads = gr.File(
                    label="Downloads (Markdown, JSON, ZIP)",
                    file_count="multiple",
                    interactive=False,
                    elem_id="downloads",
                )
            with gr.Column(scale=2, elem_id="results-col"), gr.Tabs():
                with gr.Tab("Pages"):
                    with gr.Row(elem_id="page-picker"):
                        prev_btn = gr.Button("◀ Previous", size="sm", elem_id="page-prev", scale=1)
                        page_select = gr.Dropdown(
                            [], label="Page", elem_id="page-select", scale=4, filterable=True
                        )
                        page_number = gr.Number(
                            None, label="Go to page", precision=0, minimum=1, elem_id="page-number", scale=1
                        )
                        next_btn = gr.Button("Next ▶", size="sm", elem_id="page-next", scale=1)
                    page_status = gr.Markdown("", elem_id="page-status")
                    page_view = gr.HTML(
                        page_html.EMPTY_VIEW,
                        elem_id="page-view",
                        js_on_load=viewer_js,
                        css_template=viewer_css,
                        apply_default_css=False,
                    )
                with gr.Tab("Document"):
                    doc_md = gr.Markdown(latex_delimiters=viewer.LATEX_DELIMITERS, elem_id="doc-markdown")
                with gr.Tab("Source"):
                    doc_source = gr.Code(
                        language="markdown", label="Markdown source", wrap_lines=True, elem_id="doc-source"
                    )
                with gr.Tab("Status"):
                    status_table = gr.Dataframe(
                        headers=viewer.STATUS_HEADERS,
                        interactive=False,
                        wrap=True,
                        column_widths=["18%", "7%", "13%", "12%", "9%", "11%", "30%"],
                        elem_id="status-table",
                    )
            with (
                gr.Column(scale=1, min_width=320, elem_id="gpu-col"),
                gr.Accordion("GPU and model", open=True, elem_id="gpu-panel"),
            ):
                panel_md = gr.Markdown(first_panel, elem_id="gpu-status")
                panel_plot = gr.LinePlot(
                    first_frame,
                    visible=status_panel.plot_visible(first_frame, first_gpu),
                    elem_id="gpu-plot",
                    x="seconds",
                    y="GiB",
                    color="series",
                    x_title="seconds ago",
                    height=180,
                    label="VRAM (last 10 minutes)",
                )

        # Hidden components that give the API endpoint simple, typed outputs (and its password input).
        api_btn = gr.Button(visible=False)
        # The API takes any file type: an unsupported file in a batch gets its own error from the library
        # instead of gradio refusing the whole request (the upload widget filters by extension).
        api_upload = gr.File(visible=False, file_count="multiple", label="files")
        api_password = gr.Textbox("", visible=False, label="password", type="password")
        api_markdown = gr.Textbox(visible=False, label="markdown")
        api_json = gr.JSON(visible=False, label="result")
        api_files = gr.File(visible=False, file_count="multiple", label="files")
        api_cancel = gr.Textbox(visible=False, label="message")

        form_inputs = [files, pages, preset, custom, locate, mode, dpi, use_cache, engine]
        page_outputs = [page_select, page_number, page_view, page_status]
        view_outputs = [job_status, doc_md, doc_source, status_table, downloads, pages_state, *page_outputs]

        def page_view_of(entries: list[dict], key: str | None) -> tuple:
            """(dropdown value, page number, viewer HTML, status) of one page; all change together."""
            entry = next((viewer.PageEntry(**e) for e in entries if e["key"] == key), None)
            if entry is None:
                return None, None, page_html.EMPTY_VIEW, ""
            return entry.key, entry.page_number, entry.html(), viewer.page_status_markdown(entry)

        def view(documents: list[DocumentResult], message: str, *, final: bool) -> dict:
            """Every result component at once. While running, show the newest page; at the end, the first."""
            entries = [e.to_dict() for e in viewer.page_entries(documents)]
            key = (entries[0] if final else entries[-1])["key"] if entries else None
            selected, number, html, status = page_view_of(entries, key)
            update: dict = {
                job_status: message,
                status_table: viewer.status_rows(documents),
                pages_state: entries,
                page_select: gr.Dropdown(choices=[(e["label"], e["key"]) for e in entries], value=selected),
                page_number: number,
                page_view: html,
                page_status: status,
            }
            if final:  # the whole document is rendered once, not on every live update of a long job
                update[downloads] = viewer.download_paths(documents)
                update[doc_md] = update[doc_source] = viewer.document_markdown(documents)
            return update

        def convert_ui(
            files,
            pages,
            prompt,
            custom_prompt,
            locate_text,
            mode,
            dpi,
            use_cache,
            engine,
            passwords,
            request: gr.Request,
        ):
            values = form.FormValues(pages, prompt, custom_prompt, locate_text, mode, dpi, use_cache, engine)
            passwords = dict(passwords or {})
            live: dict[str, DocumentResult] = {}
            outcome = JobOutcome()
            last_view = last_status = 0.0
            yield {
                job_status: "Starting…",
                downloads: None,
                queue_md: "",
                cancel_btn: gr.Button(interactive=True),
            }
            job = run_job(values, files, request, passwords, idle_s=STATUS_INTERVAL_S)
            line = held = ""  # the progress line, and one not shown yet (events come faster than we draw)
            while True:
                try:
                    item = next(job)
                except StopIteration:
                    break
                except gr.Error as exc:  # refused before it started: said in the status line, no pill over it
                    yield {job_status: viewer.error_markdown(str(exc.message))}
                    return
                if item is None:  # no event for a while: show the line held back, if any
                    if held:
                        last_status, held = time.monotonic(), ""
                        yield {job_status: line}
                    continue
                if isinstance(item, JobOutcome):
                    outcome = item
                    break
                line = held = viewer.progress_markdown(item.message, item.fraction)
                result = item.event.page_result
                if result is not None:
                    doc = live.setdefault(item.event.source, DocumentResult(source=item.event.source))
                    doc.pages.append(result)
                # The full view resends every page so far: at most once per interval, so a long document
                # does not flood the browser; the progress line updates on every event.
                now = time.monotonic()
                if result is not None and now - last_view >= LIVE_VIEW_INTERVAL_S:
                    last_view = last_status = now
                    held = ""
                    yield view(list(live.values()), line, final=False)
                elif now - last_status >= STATUS_INTERVAL_S:
                    last_status, held = now, ""
                    yield {job_status: line}
            # Failures are shown in the status line (in the app's words), never raised: gradio's error pill
            # would sit over the message. The API endpoint still raises.
            documents = form.app_errors(outcome.documents, passwords)
            if any(not d.error for d in documents):  # some converted: a toast for each file that did not
                for doc in documents:
                    if doc.error:
                        gr.Warning(f"{doc.source}: {doc.error}", title="A file failed")
            update = view(documents, viewer.summary_markdown(documents, outcome.cancelled), final=True)
            if form.needs_password(documents):
                update[passwords_box] = gr.Accordion(open=True)
            yield update

        def convert_api(
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
            """Convert files; returns (Markdown of all documents, result JSON, [md, json, zip files]).

            ``password``: one password for every encrypted PDF, or a JSON object of file name → password.
            """
            values = form.FormValues(pages, prompt, custom_prompt, locate_text, mode, dpi, use_cache, engine)
            shared, per_file = form.parse_passwords(password)
            passwords = {name: shared for name in _pdf_names(files)} if shared else {}
            passwords.update(per_file)
            outcome = JobOutcome()
            for item in run_job(values, files, request, passwords):
                if isinstance(item, JobOutcome):
                    outcome = item
            documents = outcome.documents
            if documents and all(d.error for d in documents):
                raise gr.Error(_failure_message(documents), title="Conversion failed")
            result = {"cancelled": outcome.cancelled, "documents": [d.to_dict() for d in documents]}
            return viewer.document_markdown(documents), result, viewer.download_paths(documents)

        def cancel_job(request: gr.Request) -> str:
            """Toast for the tab, the same words for API clients."""
            if cancels.cancel(_session_key(request)):
                message = "Cancelling… the page in progress finishes first; finished pages are kept."
            else:
                message = "Nothing to cancel: no conversion is running in this session."
            gr.Info(message)
            return message

        def show_page(key, entries):
            return page_view_of(entries or [], key)

        def step_page(key, entries, delta: int):
            keys = [e["key"] for e in entries or []]
            if not keys:
                return page_view_of([], None)
            i = keys.index(key) if key in keys else 0
            return page_view_of(entries, keys[max(0, min(len(keys) - 1, i + delta))])

        def goto_page(number, key, entries):
            """Page ``number`` of the file being shown (the nearest page it has, for a page range)."""
            entries = entries or []
            if not entries or number is None:
                return page_view_of(entries, key)
            current = next((e for e in entries if e["key"] == key), entries[0])
            same = [e for e in entries if e["source"] == current["source"]]
            best = min(same, key=lambda e: abs(e["page_number"] - int(number)))
            return page_view_of(entries, best["key"])

        def on_preset(value):
            return gr.update(visible=value == form.CUSTOM), gr.update(visible=value == form.LOCATE)

        def on_engine(name):
            usable, note = options_state(name)
            boxes = [gr.update(interactive=usable) for _ in range(4)]
            return (*boxes, note)

        def tick():
            text, frame, has_gpu = status_panel.panel_update(history, converter.describe(), settings)
            return text, gr.LinePlot(frame, visible=has_gpu)

        def queue_tick(request: gr.Request):
            ahead = queue_words.jobs_ahead(demo, getattr(request, "session_hash", None), GPU_GROUP)
            return queue_words.queue_words(ahead)

        def on_unload(request: gr.Request):
            key = _session_key(request)
            cancels.cancel(key)
            dirs.cleanup(key)

        gpu = {"concurrency_limit": settings.concurrency_limit, "concurrency_id": GPU_GROUP}
        convert_btn.click(
            convert_ui,
            [*form_inputs, passwords_state],
            [*view_outputs, queue_md, cancel_btn, passwords_box],
            api_visibility="private",
            show_progress="hidden",  # the job draws its own progress line and bar (viewer.progress_markdown)
            **gpu,
        ).then(
            lambda: (gr.Button(interactive=False), ""),
            None,
            [cancel_btn, queue_md],
            api_visibility="private",
            show_progress="hidden",
            queue=False,
        )
        api_btn.click(
            convert_api,
            [api_upload, *form_inputs[1:], api_password],
            [api_markdown, api_json, api_files],
            api_name="convert",
            **gpu,
        )
        cancel_btn.click(cancel_job, None, api_cancel, concurrency_limit=None, api_name="cancel")
        # .input, not .change: programmatic updates from the job already carry the page they select.
        page_select.input(
            show_page,
            [page_select, pages_state],
            page_outputs,
            api_visibility="private",
            show_progress="hidden",
        )
        page_number.submit(
            goto_page,
            [page_number, page_select, pages_state],
            page_outputs,
            api_visibility="private",
            show_progress="hidden",
        )
        for button, delta in ((prev_btn, -1), (next_btn, 1)):
            button.click(
                lambda k, e, d=delta: step_page(k, e, d),
                [page_select, pages_state],
                page_outputs,
                api_visibility="private",
                show_progress="hidden",
            )
        preset.change(on_preset, preset, [custom, locate], api_visibility="private")
        engine.change(on_engine, engine, [preset, custom, locate, mode, options_md], api_visibility="private")
        timer = gr.Timer(PANEL_INTERVAL_S)
        timer.tick(
            tick,
            None,
            [panel_md, panel_plot],
            api_visibility="private",
            show_progress="hidden",
            concurrency_limit=None,
        )
        queue_timer = gr.Timer(QUEUE_INTERVAL_S)
        queue_timer.tick(
            queue_tick,
            None,
            queue_md,
            api_visibility="private",
            show_progress="hidden",
            concurrency_limit=None,
        )
        demo.load(tick, None, [panel_md, panel_plot], api_visibility="private", show_progress="hidden")
        demo.unload(on_unload)

    demo.queue(default_concurrency_limit=settings.concurrency_limit)
    demo.ocr_app_dirs = dirs  # type: ignore[attr-defined]  # so launchers/tests can remove the outputs
    return demo
