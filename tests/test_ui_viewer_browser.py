"""The reading viewer in real Chromium: hover and click tie a block on the page to its Markdown both
ways, zoom and pan, landscape and blank pages, a 300-page picker, and the page's layout and controls.

The app reads PDFs with the text-layer engine here: it gives real blocks with real boxes in seconds
(the tiny DeepSeek checkpoint writes random text without boxes), and the viewer code is the same for
every engine.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from ocr_app.settings import Settings
from tests.factories import make_pdf
from tests.ui_support import chromium, free_port, running_app

pytestmark = pytest.mark.browser

TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    settings = Settings(
        engine="textlayer",
        device="cpu",
        dpi=36,
        result_cache_mb=0,
        cache_dir=tmp_path_factory.mktemp("viewer-cache"),
        host="127.0.0.1",
        port=free_port(),
    )
    with running_app(settings) as running:
        yield running


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("viewer-docs")
    many = "\n".join(f"# Heading {i}\nBody text of section {i}." for i in range(1, 16))
    return {
        "long": make_pdf(d / "long.pdf", [many, "# Second page\nShort."], fontsize=8),
        "wide": make_pdf(d / "wide.pdf", ["# Landscape\nA wide page."], page_size=(842, 595)),
        "blank": make_pdf(d / "blank.pdf", [""]),
    }


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


def _open(browser, url: str, width: int = 1400, height: int = 1000):
    context = browser.new_context(viewport={"width": width, "height": height})
    tab = context.new_page()
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(url)
    return context, tab


def _convert(tab, files: list[Path]) -> None:
    tab.set_input_files("#input-files input[type=file]", [str(p) for p in files])
    for p in files:
        tab.locator("#input-files").get_by_text(p.stem, exact=True).first.wait_for()
    tab.click("#convert-btn")
    tab.locator("#job-status").get_by_text("Done:").wait_for()
    tab.wait_for_function("() => document.querySelector('#page-view img.ocr-page-image')?.complete")


@pytest.fixture(scope="module")
def tab(app, browser, docs):
    context, tab = _open(browser, app.url)
    _convert(tab, [docs["long"], docs["wide"], docs["blank"]])
    yield tab
    context.close()


def _watch_cancel(tab) -> None:
    """Record every change of Cancel's state from now on (a MutationObserver, no polling)."""
    assert tab.locator("#cancel-btn").is_disabled()  # nothing runs yet
    tab.evaluate(
        """() => { window.__cancelStates = [document.querySelector('#cancel-btn').disabled];
        new MutationObserver(() => { const b = document.querySelector('#cancel-btn');
          const s = window.__cancelStates; if (b && s[s.length - 1] !== b.disabled) s.push(b.disabled); })
        .observe(document.body, {subtree: true, attributes: true, childList: true}); }"""
    )


def _pick(tab, label: str) -> None:
    tab.click("#page-select input")
    tab.get_by_role("option", name=re.compile(re.escape(label))).click()
    tab.locator("#page-status").get_by_text(
        label.split(" · ")[0].replace(" · page ", ", page ")
    ).first.wait_for()


def _within(tab, inner: str, outer: str) -> bool:
    """Whether the element ``inner`` is inside the visible area of the scrolling pane ``outer``."""
    return tab.evaluate(
        """([i, o]) => { const a = document.querySelector(i).getBoundingClientRect();
        const b = document.querySelector(o).getBoundingClientRect();
        return a.top >= b.top - 1 && a.bottom <= b.bottom + 1 && a.height > 0; }""",
        [inner, outer],
    )


def _fit_width(tab) -> None:
    tab.click("#page-view [data-zoom=width]")
    tab.locator("#page-view .ocr-zoom-label").get_by_text("100%").wait_for()


def test_hovering_a_box_highlights_its_markdown_and_scrolls_to_it(tab):
    _fit_width(tab)
    n = tab.locator("#page-view rect.ocr-box").count()
    assert n >= 30  # 15 headings + 15 bodies, each its own block
    last = tab.locator("#page-view rect.ocr-box").nth(n - 1)
    block = last.get_attribute("data-block")
    md = f'#page-view .ocr-block[data-block="{block}"]'
    assert not _within(tab, md, "#page-view .ocr-md-pane")  # below the fold before the hover
    last.hover()
    tab.wait_for_selector(f"{md}.ocr-hl")
    assert _within(tab, md, "#page-view .ocr-md-pane")
    assert tab.evaluate("() => document.querySelector('#page-view .ocr-md-pane').scrollTop") > 0
    assert "Body text of section 15" in tab.inner_text(md)
    assert tab.locator("#page-view .ocr-block.ocr-hl").count() == 1  # only that block


def test_clicking_markdown_highlights_its_box_and_scrolls_the_page_to_it(tab):
    _fit_width(tab)
    for _ in range(3):  # zoom to 195 %: the page is now taller and wider than its pane
        tab.click("#page-view [data-zoom=in]")
    tab.locator("#page-view .ocr-zoom-label").get_by_text("195%").wait_for()
    tab.evaluate("() => { document.querySelector('#page-view .ocr-scroll').scrollTop = 0 }")
    target = tab.locator("#page-view .ocr-block").last
    block = target.get_attribute("data-block")
    rect = f'#page-view rect.ocr-box[data-block="{block}"]'
    assert not _within(tab, rect, "#page-view .ocr-scroll")
    target.click()
    tab.wait_for_selector(f"{rect}.ocr-active")
    assert f"{target.get_attribute('class')}".count("ocr-active") == 1
    assert _within(tab, rect, "#page-view .ocr-scroll")
    assert tab.evaluate("() => document.querySelector('#page-view .ocr-scroll').scrollTop") > 0
    # and hovering another Markdown block moves the highlight on the page
    other = tab.locator("#page-view .ocr-block").first
    other.hover()
    tab.wait_for_selector(f'#page-view rect.ocr-box[data-block="{other.get_attribute("data-block")}"].ocr-hl')
    _fit_width(tab)


def test_zoom_fit_and_pan(tab):
    _fit_width(tab)
    size = """() => { const s = document.querySelector('#page-view .ocr-scroll');
        const i = document.querySelector('#page-view img.ocr-page-image');
        return {sw: s.clientWidth, sh: s.clientHeight, iw: i.clientWidth, ih: i.clientHeight,
                left: s.scrollLeft, top: s.scrollTop}; }"""
    fit = tab.evaluate(size)
    assert abs(fit["iw"] - fit["sw"]) <= 2  # fit to width
    tab.click("#page-view [data-zoom=in]")
    tab.locator("#page-view .ocr-zoom-label").get_by_text("125%").wait_for()
    zoomed = tab.evaluate(size)
    assert abs(zoomed["iw"] - 1.25 * fit["iw"]) <= 3
    tab.click("#page-view [data-zoom=page]")
    whole = tab.evaluate(size)
    assert whole["ih"] <= whole["sh"] + 1 and whole["iw"] <= fit["iw"]  # the whole page is visible
    for _ in range(3):
        tab.click("#page-view [data-zoom=in]")
    box = tab.locator("#page-view .ocr-scroll").bounding_box()
    before = tab.evaluate(size)
    active = "() => [...document.querySelectorAll('#page-view .ocr-active')].map(e => e.dataset.block)"
    active_before = tab.evaluate(active)
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    tab.mouse.move(cx, cy)
    tab.mouse.down()
    tab.mouse.move(cx - 60, cy - 80, steps=5)
    tab.mouse.up()
    after = tab.evaluate(size)
    assert after["left"] - before["left"] >= 40 and after["top"] - before["top"] >= 60  # dragged = panned
    assert tab.evaluate(active) == active_before  # a drag is not a click on the box under the pointer
    # the zoom stays when the next page is shown, and Ctrl + wheel zooms too
    label = tab.inner_text("#page-view .ocr-zoom-label")
    shown = tab.get_attribute("#page-view .ocr-viewer", "data-page")
    tab.click("#page-next")
    tab.wait_for_function(
        "p => document.querySelector('#page-view .ocr-viewer').dataset.page !== p", arg=shown
    )
    assert tab.inner_text("#page-view .ocr-zoom-label") == label
    tab.mouse.move(cx, cy)
    tab.keyboard.down("Control")
    tab.mouse.wheel(0, 100)
    tab.keyboard.up("Control")
    smaller = f"{round(float(label.rstrip('%')) / 1.25)}%"
    tab.locator("#page-view .ocr-zoom-label").get_by_text(smaller).wait_for()
    tab.click("#page-prev")
    tab.wait_for_function(
        "p => document.querySelector('#page-view .ocr-viewer').dataset.page === p", arg=shown
    )
    _fit_width(tab)


def test_landscape_page_fills_the_width(tab):
    _pick(tab, "wide.pdf · page 1")
    tab.wait_for_function(
        """() => document.querySelector('#page-view .ocr-viewer').dataset.page === '1:0'
        && document.querySelector('#page-view img.ocr-page-image').naturalWidth > 0"""
    )
    dims = tab.evaluate(
        """() => { const s = document.querySelector('#page-view .ocr-scroll');
        const i = document.querySelector('#page-view img.ocr-page-image');
        return [s.clientWidth, i.clientWidth, i.clientHeight]; }"""
    )
    pane, width, height = dims
    assert abs(width - pane) <= 2 and pane > 300  # not a thumbnail in a tall box
    assert height < width


def test_blank_page_says_blank_page(tab):
    _pick(tab, "blank.pdf · page 1")
    tab.locator("#page-view .ocr-blank").get_by_text("blank page").wait_for()
    assert tab.locator("#page-view .ocr-block").count() == 0


def test_status_table_headers_do_not_wrap_and_tokens_show_a_dash(tab):
    tab.get_by_role("tab", name="Status").click()
    table = tab.locator("#status-table")
    table.get_by_text("Tokens/s").first.wait_for()
    heights = tab.evaluate(
        """() => [...document.querySelectorAll('#status-table th')].map(th => {
            const t = th.querySelector('span, div') || th; return [t.getBoundingClientRect().height,
            parseFloat(getComputedStyle(t).lineHeight) || 20, getComputedStyle(t).whiteSpace]; })"""
    )
    assert heights and all(ws == "nowrap" for _, _, ws in heights)
    assert all(h < 2 * lh for h, lh, _ in heights), heights  # one line each
    clipped = tab.evaluate(
        """() => [...document.querySelectorAll('#status-table th')].filter(th => {
            const r = document.createRange(); r.selectNodeContents(th);
            return r.getBoundingClientRect().right > th.getBoundingClientRect().right + 1; })
            .map(th => th.innerText)"""
    )
    assert clipped == []  # and none is cut off instead
    assert "—" in tab.inner_text("#status-table")  # the text layer decodes no tokens
    tab.get_by_role("tab", name="Pages").click()


def test_options_an_engine_ignores_are_disabled_with_a_reason(tab):
    tab.get_by_text("Options").first.click()
    tab.locator("#options-note").get_by_text("Prompt and resolution mode are off").wait_for()
    assert tab.locator("#opt-prompt input").is_disabled()
    assert tab.locator("#opt-mode input").is_disabled()
    assert tab.get_attribute("#opt-dpi input[type=range]", "min") == "36"
    assert tab.get_attribute("#opt-dpi input[type=range]", "max") == "600"
    tab.get_by_text("Options").first.click()


def test_narrow_screens_show_results_before_the_gpu_panel(app, browser):
    context, tab = _open(browser, app.url, width=700, height=1000)
    try:
        tab.locator("#gpu-status").wait_for()
        tops = tab.evaluate(
            """() => ['#inputs-col', '#results-col', '#gpu-col'].map(
                s => document.querySelector(s).getBoundingClientRect().top)"""
        )
        assert tops[0] < tops[1] < tops[2], tops
    finally:
        context.close()
    context, tab = _open(browser, app.url, width=1400, height=1000)
    try:  # wide screens keep the panel beside the results
        tab.locator("#gpu-status").wait_for()
        left = tab.evaluate(
            """() => ['#results-col', '#gpu-col'].map(s => document.querySelector(s).getBoundingClientRect().left)"""
        )
        assert left[1] < left[0]
    finally:
        context.close()


def test_300_pages_cancel_is_live_while_they_run_and_the_picker_reaches_every_page(app, browser, tmp_path):
    pdf = make_pdf(tmp_path / "p300.pdf", [f"# Page {i}\nLine {i}." for i in range(1, 301)])
    context, tab = _open(browser, app.url)
    try:
        _watch_cancel(tab)
        _convert(tab, [pdf])
        # Cancel is enabled while the job runs and disabled again when it is done (checked on this job: 300
        # pages take long enough for the browser to draw the running state; a 4-page job can finish within
        # one frame, and then the browser never shows Cancel enabled, which is right but proves nothing)
        tab.wait_for_function("() => document.querySelector('#cancel-btn').disabled")
        states = tab.evaluate("() => window.__cancelStates")
        assert states[0] is True and False in states and states[-1] is True, states  # off → on → off
        tab.fill("#page-number input", "300")
        tab.press("#page-number input", "Enter")
        tab.locator("#page-status").get_by_text("p300.pdf, page 300").wait_for()
        # (the "Page N" line at the top of every page is a running header: kept out of the Markdown)
        assert "Line 300." in tab.inner_text("#page-view .ocr-md")
        tab.click("#page-prev")
        tab.locator("#page-status").get_by_text("p300.pdf, page 299").wait_for()
        tab.click("#page-next")
        tab.locator("#page-status").get_by_text("p300.pdf, page 300").wait_for()
        # the list itself shows 100 choices at a time and loads the rest as it is scrolled
        tab.click("#page-select input")
        last = tab.get_by_role("option", name=re.compile(r"p300\.pdf · page 300 ·"))
        for _ in range(10):
            if last.count():
                break
            tab.evaluate(
                "() => { const u = document.querySelector('ul[role=listbox]'); u.scrollTop = u.scrollHeight; }"
            )
            tab.wait_for_timeout(300)
        last.click()
        tab.click("#page-prev")
        expect(tab.locator("#page-status")).to_contain_text("p300.pdf, page 299", timeout=TIMEOUT_MS)
        assert tab.input_value("#page-number input") == "299"
    finally:
        context.close()


def test_previous_right_after_a_pick_from_the_list_shows_the_page_before_the_pick(
    app, browser, docs, monkeypatch
):
    """Navigation answers come back in the order of the clicks, whichever takes longer to render."""
    picked = threading.Event()
    for block_fn in app.demo.fns.values():
        if getattr(block_fn.fn, "__name__", "") == "show_page":
            show = block_fn.fn

            def slow_show(key, entries, show=show):
                time.sleep(1.5)  # the picked page renders slowly (a big page on a busy server)
                try:
                    return show(key, entries)
                finally:
                    picked.set()

            monkeypatch.setattr(block_fn, "fn", slow_show)
    context, tab = _open(browser, app.url)
    try:
        _convert(tab, [docs["long"]])
        tab.locator("#page-status").get_by_text("long.pdf, page 1").wait_for()
        tab.click("#page-select input")
        tab.get_by_role("option", name=re.compile(r"long\.pdf · page 2 ·")).click()
        tab.click("#page-prev")
        assert picked.wait(TIMEOUT_MS / 1000)
        tab.wait_for_timeout(1000)  # time for the pick's late answer to reach the page, had it come last
        expect(tab.locator("#page-status")).to_contain_text("long.pdf, page 1")
        assert tab.input_value("#page-number input") == "1"
    finally:
        context.close()


def _small_png(src: Path, dst: Path, colors: int = 96) -> Path:
    """Palette PNG: screenshots of a UI have few colours, so docs stay small."""
    from PIL import Image

    with Image.open(src) as img:
        img.convert("RGB").quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)
    return dst


SAMPLE = [
    "# Quarterly report\nRevenue grew by 12 % over the quarter, led by the new product line.\n"
    "Costs stayed flat while headcount rose by four people.\n\n"
    "# Outlook\nWe expect the second half to follow the same trend.\nRisks are listed in the appendix.\n\n"
    "# Appendix\nCurrency effects are not included in the figures above.",
]


def test_screenshots_for_the_docs(app, browser, tmp_path):
    """The pictures in docs/UI.md (a page at the default 144 DPI). OCR_APP_UPDATE_SCREENSHOTS=1 writes them
    to docs/img."""
    import os
    import shutil

    from PIL import Image

    pdf = make_pdf(tmp_path / "report.pdf", SAMPLE, fontsize=12)
    context, tab = _open(browser, app.url, width=1400, height=900)
    try:
        tab.get_by_text("Options").first.click()
        tab.fill("#opt-dpi input[type=number]", "144")
        tab.press("#opt-dpi input[type=number]", "Enter")
        tab.get_by_text("Options").first.click()
        _convert(tab, [pdf])
        tab.locator("#page-view .ocr-block").nth(3).click()  # an active block stays marked on both sides
        tab.wait_for_selector("#page-view rect.ocr-box.ocr-active")
        tab.mouse.move(5, 5)
        tab.evaluate("() => window.scrollTo(0, 0)")
        saved = []
        raw = tmp_path / "raw-app.png"
        tab.screenshot(path=str(raw))
        saved.append(_small_png(raw, tmp_path / "ui-app.png"))
        tab.get_by_role("tab", name="Status").click()
        tab.locator("#status-table").get_by_text("Tokens/s").first.wait_for()
        raw = tmp_path / "raw-status.png"
        tab.locator("#results-col").screenshot(path=str(raw))
        saved.append(_small_png(raw, tmp_path / "ui-status.png"))
    finally:
        context.close()
    for path in saved:
        with Image.open(path) as img:
            assert img.width >= 600 and img.height >= 150
        assert path.stat().st_size < 400_000, (path.name, path.stat().st_size)
    target = Path(__file__).resolve().parents[1] / "docs" / "img"
    if os.environ.get("OCR_APP_UPDATE_SCREENSHOTS") == "1":
        Path(target).mkdir(parents=True, exist_ok=True)
        for path in saved:
            shutil.copy(path, Path(target) / path.name)
