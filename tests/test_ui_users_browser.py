"""What a new user meets in the app (issue 34, items 4-6), in real Chromium against the launched app at
1366×768 and 390×844: every text readable (WCAG AA contrast, computed from the browser's own styles),
the banner's engine line true to what reads each page, options that do nothing switched off, a way to
sign out, no empty band under Convert, and Convert on a phone's first screen.

The app is started as a new user starts it: ``engine=auto`` without DeepSeek-OCR-2 weights (the banner
shows), unless a test needs the tiny checkpoint.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ocr_app.settings import Settings
from tests.factories import make_pdf
from tests.ui_support import chromium, free_port, running_app

pytestmark = pytest.mark.browser

SIZES = [(1366, 768), (390, 844)]
TIMEOUT_MS = 120_000
AA = 4.5

# Every visible text node (and every shown placeholder): its colour, with the opacity of it and its
# ancestors, laid over its background (the ancestors' background colours composited from the first
# opaque one), and the WCAG 2 contrast ratio of the two.
CONTRAST_JS = """() => {
  const parse = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1}; };
  const over = (t, b) => { const a = t.a + b.a * (1 - t.a); if (a === 0) return {r: 0, g: 0, b: 0, a: 0};
    const mix = k => (t[k] * t.a + b[k] * b.a * (1 - t.a)) / a; return {r: mix('r'), g: mix('g'), b: mix('b'), a}; };
  const lum = c => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const opacity = el => { let o = 1; for (let e = el; e; e = e.parentElement) o *= parseFloat(getComputedStyle(e).opacity); return o; };
  const background = el => { const layers = [];
    for (let e = el; e; e = e.parentElement) { const bg = parse(getComputedStyle(e).backgroundColor);
      if (bg && bg.a > 0) { layers.push(bg); if (bg.a >= 1) break; } }
    let c = {r: 255, g: 255, b: 255, a: 1}; for (let i = layers.length - 1; i >= 0; i--) c = over(layers[i], c); return c; };
  const shown = el => { const r = el.getBoundingClientRect(); const cs = getComputedStyle(el);
    return r.width >= 1 && r.height >= 1 && cs.visibility !== 'hidden' && cs.display !== 'none' && opacity(el) > 0.05; };
  const measure = (el, text, css) => { const bg = background(el); const fg = parse(css);
    const drawn = over({...fg, a: fg.a * opacity(el)}, bg);
    return {text: text.slice(0, 60), ratio: ratio(drawn, bg), color: css, size: getComputedStyle(el).fontSize,
            where: (el.closest('[id]') || {}).id || el.tagName}; };
  const out = [], seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.trim(), el = n.parentElement;
    if (!text || !el || seen.has(el) || el.closest('script,style,noscript,svg') || !shown(el)) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    const box = range.getBoundingClientRect(); if (box.width < 1 || box.height < 1) continue;
    seen.add(el); out.push(measure(el, text, getComputedStyle(el).color));
  }
  for (const el of document.querySelectorAll('input[placeholder], textarea[placeholder]')) {
    if (el.placeholder && !el.value && shown(el)) out.push(measure(el, 'placeholder: ' + el.placeholder,
                                                                   getComputedStyle(el, '::placeholder').color));
  }
  return out;
}"""


def _settings(tmp: Path, **overrides) -> Settings:
    values = {
        "engine": "auto",
        "model": str(tmp / "no-weights-here"),
        "device": "cpu",
        "dpi": 72,
        "result_cache_mb": 0,
        "cache_dir": tmp / "cache",
        "host": "127.0.0.1",
        "port": free_port(),
    }
    values.update(overrides)
    return Settings(**values)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(_settings(tmp_path_factory.mktemp("users"))) as running:
        yield running


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    return make_pdf(
        tmp_path_factory.mktemp("docs") / "report.pdf",
        ["# Quarterly report\nRevenue grew in every region.", "# Outlook\nThe board meets in May."],
    )


def _open(browser, url: str, size: tuple[int, int]):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(url)
    tab.locator("#gpu-status").wait_for()
    return context, tab


def _convert(tab, pdf: Path) -> None:
    tab.set_input_files("#input-files input[type=file]", [str(pdf)])
    tab.locator("#input-files").get_by_text(pdf.stem, exact=True).first.wait_for()
    tab.click("#convert-btn")
    tab.locator("#job-status").get_by_text("Done:").wait_for()


def _low_contrast(tab) -> list[dict]:
    found = tab.evaluate(CONTRAST_JS)
    assert len(found) > 20  # the walk saw the page's text
    return [f for f in found if f["ratio"] < AA]


@pytest.mark.parametrize("size", SIZES)
def test_every_text_in_the_app_meets_wcag_aa_contrast(app, browser, report, size):
    context, tab = _open(browser, app.url, size)
    try:
        tab.get_by_text("Options", exact=True).click()  # the hints under the options, the placeholder
        tab.locator("#opt-engine").wait_for()
        assert _low_contrast(tab) == []
        _convert(tab, report)
        tab.wait_for_function("() => document.querySelector('#page-view img.ocr-page-image')")
        assert _low_contrast(tab) == []  # the page viewer, its labels, the downloads
        for name in ("Document", "Source", "Status"):
            tab.get_by_role("tab", name=name).click()
            tab.wait_for_timeout(300)
            assert _low_contrast(tab) == [], name
    finally:
        context.close()


@pytest.mark.parametrize("size", SIZES)
def test_the_first_screen_before_a_job(app, browser, size):
    """No empty band between Convert and Options before the first job; on a phone the title, the banner
    and the upload box leave Convert on the first screen (they filled it: Convert was at 899-939 px)."""
    context, tab = _open(browser, app.url, size)
    try:
        tab.wait_for_timeout(500)
        place = tab.evaluate(
            """() => { const r = s => document.querySelector(s).getBoundingClientRect();
            const options = [...document.querySelectorAll('#inputs-col .gr-accordion')].pop();
            return {convert: r('#convert-btn').bottom, options: options.getBoundingClientRect().top,
                    cancel: r('#cancel-btn').bottom, files: r('#input-files').height, notice: r('#engine-notice').height,
                    width: document.documentElement.scrollWidth}; }"""
        )
        gap = place["options"] - max(place["convert"], place["cancel"])
        assert 0 <= gap <= 24, place  # the flex gap between them, nothing more
        assert place["cancel"] <= size[1], place  # Convert and Cancel on the first screen
        assert place["width"] <= size[0]  # and nothing runs off to the side
        assert tab.locator("#engine-notice").get_by_text("How to use DeepSeek-OCR-2").is_visible()
        if size[0] < 600:
            assert place["files"] + place["notice"] <= 0.5 * size[1], place
    finally:
        context.close()


def test_the_banner_names_what_reads_each_page_and_the_job_says_it(app, browser, report):
    context, tab = _open(browser, app.url, SIZES[0])
    try:
        banner = tab.inner_text("#engine-notice")
        assert "PDF pages with a usable text layer are read from it" in banner and "light engine" in banner
        _convert(tab, report)
        assert "Read by: textlayer 2 pages." in tab.inner_text("#job-status")  # what the banner said
    finally:
        context.close()


def test_the_vision_cache_is_off_with_engines_that_ignore_it(trained_checkpoint, browser, tmp_path):
    """With DeepSeek-OCR-2 (the tiny checkpoint) offered, the cross-page vision cache can be chosen; with
    the light engine or the text layer, which read no page through it, it is off like prompt and mode."""
    with running_app(_settings(tmp_path, model=str(trained_checkpoint))) as running:
        context, tab = _open(browser, running.url, SIZES[0])
        try:
            tab.get_by_text("Options", exact=True).click()
            cache = tab.locator("#opt-cache input[type=checkbox]")
            prompt = tab.locator("#opt-prompt input")
            assert cache.is_enabled() and prompt.is_enabled()  # auto: scans go to DeepSeek-OCR-2
            for label, enabled in (("light", False), ("textlayer", False), ("deepseek", True)):
                tab.locator("#opt-engine input").click()
                tab.get_by_role("option", name=label, exact=False).first.click()
                tab.wait_for_function(
                    f"() => document.querySelector('#opt-cache input').disabled === {str(not enabled).lower()}"
                )
                assert cache.is_enabled() == enabled == prompt.is_enabled(), label
                note = tab.inner_text("#options-note")
                assert ("vision cache is off" in note) != enabled, note
        finally:
            context.close()


def test_a_signed_in_user_can_sign_out(browser, tmp_path):
    with running_app(_settings(tmp_path, auth="alice:wonderland")) as running:
        context = browser.new_context(viewport={"width": 1366, "height": 768})
        tab = context.new_page()
        tab.set_default_timeout(TIMEOUT_MS)
        try:
            tab.goto(running.url)
            tab.get_by_label("username").fill("alice")
            tab.get_by_label("password").fill("wonderland")
            tab.get_by_role("button", name="Login").click()
            tab.locator("#sign-out").wait_for()
            tab.click("#sign-out")
            tab.get_by_label("username").wait_for()  # back at the sign-in form
            tab.reload()
            tab.get_by_label("username").wait_for()  # and the session is gone, not just the view
            assert tab.locator("#convert-btn").count() == 0
        finally:
            context.close()


def test_an_app_without_sign_in_shows_no_sign_out(app, browser):
    context, tab = _open(browser, app.url, SIZES[0])
    try:
        assert tab.locator("#sign-out").count() == 0
    finally:
        context.close()


def test_every_result_tab_is_in_reach_on_a_phone(app, browser):
    """On a 360 px phone (the commonest Android width; at 390 px they fit by 3 px) the four result tabs
    wrap onto a second row instead of hiding in a "More tabs" menu: Source and Status are in sight and
    each opens on one tap."""
    context, tab = _open(browser, app.url, (360, 780))
    try:
        names = ("Pages", "Document", "Source", "Status")
        tabs = tab.locator("#results-tabs").get_by_role("tab")
        tabs.first.wait_for()
        assert [t.strip() for t in tabs.all_inner_texts()] == list(names)
        assert all(t.is_visible() for t in tabs.all())
        assert tab.get_by_role("button", name="More tabs").filter(visible=True).count() == 0
        for name in names[::-1]:
            tab.get_by_role("tab", name=name).click(timeout=5_000)
            assert tab.get_by_role("tab", name=name).get_attribute("aria-selected") == "true"
    finally:
        context.close()
