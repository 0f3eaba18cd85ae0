"""Build the Gradio app over a ``Converter``.

Why a builder that takes its dependencies: the app holds no model and does no OCR; it renders the
library's results. The launcher (``app.py``) and the tests pass in a converter built from settings, so
the same Blocks run on a GPU server, a CPU laptop, or against the tiny test checkpoint. The Blocks
themselves are ``ui.blocks.OcrApp``; this module stays importable without gradio (the CLI reads it).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import gradio as gr

    from ocr_app.convert import Converter
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

# Wide screens: inputs and the GPU panel on the left, results on the right. Narrow screens: inputs,
# then results, then the GPU panel (a grid, since the panel sits in the left column when wide).
CSS = """
/* Text readable by everyone (WCAG AA, 4.5:1 against its background; tests/test_ui_contrast_browser.py):
   gradio's light theme sets hints, placeholders, the footer and line numbers in #bbbbc2 (1.9:1 on white)
   and white on orange-500 (2.8:1); a disabled button was the same colours at half opacity. The dark theme
   is left as gradio draws it. */
body:not(.dark) {
  --body-text-color-subdued: #52525b; --block-info-text-color: #52525b; --input-placeholder-color: #52525b;
  --block-label-text-color: #3f3f46; --color-accent: #c2410c; --color-accent-soft: #ffedd5;
  --button-primary-background-fill: #c2410c; --button-primary-background-fill-hover: #9a3412;
  --button-primary-border-color: #c2410c; --button-primary-text-color: #ffffff;
  --button-cancel-background-fill: #b91c1c; --button-cancel-background-fill-hover: #991b1b;
  --button-cancel-text-color: #ffffff; --link-text-color: #1d4ed8;
}
body:not(.dark) button:disabled { opacity: 1 !important; background: #e4e4e7 !important; color: #3f3f46 !important;
  border-color: #d4d4d8 !important; transition: none !important; }
body:not(.dark) #cancel-btn, body:not(.dark) #convert-btn { transition: none !important; }
body:not(.dark) footer, body:not(.dark) footer * { color: #52525b !important; }
body:not(.dark) #doc-source .cm-gutters, body:not(.dark) #doc-source .cm-gutters * { color: #52525b !important; }
body:not(.dark) #doc-source .cm-content * { color: #1f2937 !important; }
/* Status lines take room only while they say something (no empty band under Convert before a job). */
#queue-status:has(span.md:empty), #job-status:has(span.md:empty) { display: none !important; }
#job-status { min-height: 3.5em; }
/* The job draws its own progress and errors in this line: gradio's tracker never covers it. */
#job-status [data-testid=status-tracker] { display: none !important; }
#job-status progress { width: 100%; height: 8px; accent-color: #ea580c; }
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
#header-row { align-items: start; }
#engine-notice summary { cursor: pointer; font-weight: 600; }
/* Phones: the page list gets a whole line, Go to page the next, Previous and Next share the last; the
   title, the banner and the upload box leave Convert on the first screen. */
@media (max-width: 600px) {
  #app-title h2 { font-size: 1.25rem !important; margin: 0 0 4px !important; }
  #app-title p { display: none; }
  #engine-notice { font-size: 0.875rem; }
  #input-files .upload-container .wrap { min-height: 96px !important; }
  #input-files .upload-container { height: auto !important; }
  #page-picker { flex-wrap: wrap !important; }
  #page-picker > .form { order: 1; flex: 1 1 100% !important; flex-wrap: wrap !important; }
  #page-picker > .form > * { flex: 1 1 100% !important; min-width: 0 !important; }
  #page-prev { order: 2; flex: 1 1 40% !important; min-width: 0 !important; }
  #page-next { order: 3; flex: 1 1 40% !important; min-width: 0 !important; }
}
"""


def build_app(converter: Converter, settings: Settings, *, work_dir: Path | None = None) -> gr.Blocks:
    """Return the app's ``gr.Blocks`` (queue configured); call ``launch`` on it or use ``ui.launch``."""
    from ocr_app.ui.blocks import OcrApp

    return OcrApp(converter, settings, work_dir=work_dir).build()
