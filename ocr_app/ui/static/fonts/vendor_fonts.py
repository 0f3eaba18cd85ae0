"""Refresh the bundled fallback fonts of the web app from Fontsource's npm packages.

Why bundled: the Markdown pane must show Korean, Chinese, Japanese kana, Arabic and Cyrillic on a browser
that has no such font, and the app works offline (no font CDN). Fontsource packages Google's Noto fonts
(SIL Open Font License 1.1, which allows bundling) already cut into ``unicode-range`` slices, so a
browser downloads only the slices of the characters on the page. What is kept (weight 400 everywhere,
700 where headings need it; CJK headings use synthetic bold):

- Noto Sans: latin, latin-ext, cyrillic, cyrillic-ext, greek, greek-ext, vietnamese (400, 700)
- Noto Sans Arabic: arabic (400, 700)
- Noto Sans KR: every numbered slice (all 11,172 Hangul syllables, kana, 4,620 Hanja) (400)
- Noto Sans SC: every numbered slice (12,258 ideographs, simplified Chinese) (400)

Run from the repository root (needs ``npm``): ``python ocr_app/ui/static/fonts/vendor_fonts.py``. It
rewrites the ``*.woff2`` files, ``fonts.json`` (family, weight, file, unicode-range; read by
``ocr_app/ui/fonts.py``) and ``OFL.txt`` in this folder.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "5.3.0"
NOTO_SANS_SUBSETS = ("latin", "latin-ext", "cyrillic", "cyrillic-ext", "greek", "greek-ext", "vietnamese")
# (npm package, family name in our CSS, subsets (None: the numbered slices), weights)
PACKAGES = (
    ("noto-sans", "ocr-app Noto Sans", NOTO_SANS_SUBSETS, (400, 700)),
    ("noto-sans-arabic", "ocr-app Noto Sans Arabic", ("arabic",), (400, 700)),
    ("noto-sans-kr", "ocr-app Noto Sans KR", None, (400,)),
    ("noto-sans-sc", "ocr-app Noto Sans SC", None, (400,)),
)


def _unpack(package: str, work: Path) -> Path:
    subprocess.run(
        ["npm", "pack", "--silent", f"@fontsource/{package}@{VERSION}"],
        cwd=work,
        check=True,
        stdout=subprocess.PIPE,
    )
    target = work / package
    with tarfile.open(work / f"fontsource-{package}-{VERSION}.tgz") as tar:
        tar.extractall(target, filter="data")
    return target / "package"


def main() -> int:
    for old in HERE.glob("*.woff2"):
        old.unlink()
    faces = []
    licences: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for package, family, subsets, weights in PACKAGES:
            root = _unpack(package, Path(tmp))
            ranges: dict[str, str] = json.loads((root / "unicode.json").read_text("utf-8"))
            names = subsets or [k for k in ranges if re.fullmatch(r"\[\d+\]", k)]
            for weight in weights:
                for name in names:
                    slug = name.strip("[]")
                    src = root / "files" / f"{package}-{slug}-{weight}-normal.woff2"
                    dst = HERE / src.name
                    shutil.copyfile(src, dst)
                    faces.append(
                        {"family": family, "weight": weight, "file": dst.name, "unicode_range": ranges[name]}
                    )
            licences.append(
                f"== @fontsource/{package} {VERSION} ==\n\n" + (root / "LICENSE").read_text("utf-8")
            )
    (HERE / "OFL.txt").write_text("\n\n".join(licences), "utf-8")
    meta = {"source": f"@fontsource/* {VERSION} (npm), SIL Open Font License 1.1 (OFL.txt)", "faces": faces}
    (HERE / "fonts.json").write_text(json.dumps(meta, indent=0) + "\n", "utf-8")
    size = sum(p.stat().st_size for p in HERE.glob("*.woff2"))
    print(f"{len(faces)} font files, {size / 2**20:.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
