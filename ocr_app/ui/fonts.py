"""The app's fonts: bundled Noto slices for Latin, Cyrillic, Greek, Arabic, Hangul and CJK, served by the app.

Why bundled, and why everywhere: a browser without a CJK font showed Korean as empty boxes in the Markdown
pane, and the app must work offline (no font CDN). Why replace the theme font: gradio's bundled
"Source Sans Pro" semibold face holds only a handful of glyphs ("A", "B"), so every bold heading mixed two
fonts ("A ccounting"). One family with real 400 and 700 faces (Noto Sans) ends that. The CJK and Arabic
faces are cut into ``unicode-range`` slices (``static/fonts/fonts.json``, made by ``vendor_fonts.py``
there): a browser downloads only the slices whose characters are on the page, and a CJK font installed
on the user's machine is used first.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from importlib import resources
from pathlib import Path

logger = logging.getLogger(__name__)

FILE_ROUTE = "gradio_api/file="  # relative, like page_html.FILE_ROUTE: works behind a proxy sub-path
# System CJK fonts first (no download when the machine has one), then the bundled slices; Hangul before
# Han so that Korean text never mixes the SC face's few Hangul syllables into words.
FONT_STACK = (
    '"ocr-app Noto Sans", "ocr-app Noto Sans Arabic", "Noto Sans CJK KR", "ocr-app Noto Sans KR", '
    '"Noto Sans CJK SC", "ocr-app Noto Sans SC", ui-sans-serif, system-ui, sans-serif'
)


def font_dir() -> Path:
    """The folder the font files are served from (it must be in the app's allowed paths)."""
    return Path(str(resources.files("ocr_app.ui").joinpath("static", "fonts")))


@lru_cache(maxsize=1)
def font_css() -> str:
    """``@font-face`` rules for every bundled slice, and the theme's ``--font`` set to ``FONT_STACK``."""
    folder = font_dir()
    meta = json.loads((folder / "fonts.json").read_text("utf-8"))
    rules = []
    for face in meta["faces"]:
        url = FILE_ROUTE + (folder / face["file"]).as_posix()
        rules.append(
            f'@font-face {{ font-family: "{face["family"]}"; font-style: normal; '
            f"font-weight: {face['weight']}; font-display: swap; "
            f'src: url("{url}") format("woff2"); unicode-range: {face["unicode_range"]}; }}'
        )
    rules.append(f":root, .gradio-container {{ --font: {FONT_STACK} !important; }}")
    return "\n".join(rules)
