"""Honest confidence on the light engine: handwriting and unread scripts are never ``ok``.

Real images: handwriting-like letters drawn glyph by glyph in a handwriting font (each letter a little
off the baseline, turned and sized differently, as a hand writes them), an Arabic page set with a real
Arabic font and shaped by PyMuPDF, and a clean printed page. The REAL light engine reads them and the
converter's own quality step (``structure.quality.assess``) gives the page status.
"""

from __future__ import annotations

import random
import subprocess

import pymupdf
import pytest
from PIL import Image, ImageDraw, ImageFont

from ocr_app.engines.light import LightOcrEngine
from ocr_app.schema import PageImage, PageRequest
from ocr_app.structure.quality import assess

LETTER = (
    "Dear Margaret, thank you so much for the lovely flowers you sent last week. They brightened up "
    "the whole kitchen and the children keep asking who they came from. We are all well here, "
    "although the weather has been cold and wet since Tuesday. I hope to visit you in the spring "
    "when the roads are better. Please give my love to Thomas and the girls. With warm wishes, Eleanor"
)
ARABIC = (
    "يستخدم سكان القرية مياه النهر للزراعة والطاقة والنقل في كل موسم من مواسم السنة. "
    "وتخطط المجالس المحلية الميزانيات لصيانة القنوات والجسور. "
    "وقد ارتفع استهلاك المياه في الربع الأخير بسبب زيادة عدد السكان وتوسع الأراضي الزراعية."
)


def font_file(family: str, package: str) -> str:
    """The installed font file of ``family`` (Debian ``package``; scripts/setup-dev installs it, the README's
    set-up command): a machine without it fails here naming the package, never further on."""
    found = subprocess.run(["fc-match", "-f", "%{family}|%{file}", family], capture_output=True, text=True)
    name, _, path = found.stdout.partition("|")
    assert family.lower() in name.lower(), (
        f"font {family!r} is not installed: run scripts/setup-dev (apt package {package})"
    )
    return path


@pytest.fixture(scope="module")
def engine() -> LightOcrEngine:
    eng = LightOcrEngine()
    eng.load()
    return eng


def read(engine: LightOcrEngine, image: Image.Image):
    page = PageImage(image=image, index=0, source="page.png", dpi=144)
    output = engine.predict_batch([PageRequest(page=page, prompt="")])[0]
    return output, assess(output.blocks or [], image, output)


def handwriting(text: str, font_path: str, seed: int = 7) -> Image.Image:
    """A handwritten-looking A4 page at 144 DPI: every glyph drawn on its own, a little higher or
    lower, turned and larger or smaller than its neighbours, lines drifting."""
    rng = random.Random(seed)
    size, width = 34, 1190
    page = Image.new("L", (width, 1684), 255)
    x, y = 100.0, 140.0
    for word in text.split():
        font = ImageFont.truetype(font_path, size)
        if x + font.getlength(word) > width - 100:
            x, y = 100.0 + rng.uniform(-8, 8), y + 1.9 * size
        drift = 0.0
        for ch in word:
            s = int(size * rng.uniform(0.88, 1.12))
            glyph_font = ImageFont.truetype(font_path, s)
            tile = Image.new("L", (3 * s, 3 * s), 0)
            ImageDraw.Draw(tile).text((s, s), ch, font=glyph_font, fill=255)
            tile = tile.rotate(rng.uniform(-10, 10), resample=Image.Resampling.BICUBIC)
            drift += rng.uniform(-1.5, 1.5)
            page.paste(0, (int(x - s), int(y - s + rng.uniform(-0.12, 0.12) * s + drift)), tile)
            x += glyph_font.getlength(ch) * rng.uniform(0.88, 1.08)
        x += size * rng.uniform(0.3, 0.6)
    return page.convert("RGB")


def html_page(text: str, font: str, size: float, rtl: bool = False) -> Image.Image:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    css = f"@font-face {{font-family: f; src: url({font});}} body {{font-family: f; font-size: {size}pt;}}"
    html = f'<p dir="rtl">{text}</p>' if rtl else f"<p>{text}</p>"
    page.insert_htmlbox(pymupdf.Rect(60, 60, 535, 780), html, css=css, archive=pymupdf.Archive("/"))
    pix = page.get_pixmap(dpi=144)
    return Image.frombytes("RGB", (pix.width, pix.height), pix.samples)


def test_handwriting_is_low_confidence_with_a_score(engine: LightOcrEngine) -> None:
    output, (quality, reason) = read(
        engine, handwriting(LETTER, font_file("DkgHandwriting", "fonts-dkg-handwriting"))
    )
    assert output.blocks, "the letter is read (as well as print models can)"
    assert quality == "low_confidence", (output.confidence, reason)
    assert reason.startswith("handwriting"), reason
    assert output.confidence is not None and 0 < output.confidence < 0.8


def test_an_arabic_page_is_low_confidence_and_names_the_script(engine: LightOcrEngine) -> None:
    amiri = font_file("Amiri", "fonts-hosny-amiri").lstrip("/")
    output, (quality, reason) = read(engine, html_page(ARABIC, amiri, 16, rtl=True))
    assert quality == "low_confidence", reason
    assert "Arabic" in reason, reason
    assert output.confidence == 0.0


def test_a_clean_printed_page_stays_ok(engine: LightOcrEngine) -> None:
    serif = font_file("Liberation Serif", "fonts-liberation").lstrip("/")
    output, (quality, reason) = read(engine, html_page(LETTER, serif, 12))
    assert quality is None, reason
    assert output.confidence is not None and output.confidence >= 0.9
    assert output.suspect is None
    assert "brightened up the whole kitchen" in " ".join(b.text for b in output.blocks)
