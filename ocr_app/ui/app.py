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
/* Phones: the page list gets a whole line, Go to page the next, Previous and Next share the last. */
@media (max-width: 600px) {
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
