"""The app in a real browser: Playwright driving Debian Chromium against the launched Gradio app.

One upload (a generated two-page PDF plus a corrupt PDF) is converted once per module; the tests then
read the page it left behind. Expected text comes from the library with the same settings (the tiny
model's output is random but deterministic).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from ocr_app.runtime.vram import snapshot
from ocr_app.ui import viewer
from tests.factories import make_pdf
from tests.ui_support import chromium, running_app, tiny_settings

pytestmark = pytest.mark.browser

TIMEOUT_MS = 120_000  # generous: a loaded 2-core CI box can be several times slower


def _words(markdown: str) -> list[str]:
    """Alphanumeric runs a reader sees once the Markdown is rendered (tags and markup dropped)."""
    return re.findall(r"[A-Za-z0-9]{3,}", re.sub(r"<[^>]+>", " ", markdown))


def _alnum(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "", text)


@pytest.fixture(scope="module")
def app(random_checkpoint, tmp_path_factory):
    # random weights: on these arbitrary pages their capped output always carries readable words, while the
    # trained model's is an unfinished grounding block (no Markdown yet); the UI path is the same
    with running_app(
        tiny_settings(random_checkpoint, tmp_path_factory.mktemp("ui-browser-cache"))
    ) as running:
        yield running


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("ui-browser-docs")
    report = make_pdf(d / "report.pdf", ["# Quarterly report\nRevenue grew.", "# Appendix\nTables follow."])
    corrupt = d / "corrupt.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    return report, corrupt


@pytest.fixture(scope="module")
def expected(app, inputs, tmp_path_factory):
    return app.expected(list(inputs), tmp_path_factory.mktemp("ui-browser-lib"))


@pytest.fixture(scope="module")
def browser():
    with chromium() as launched:
        yield launched


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    tab = context.new_page()
    tab.requested = []  # every URL the page asks for, to prove nothing leaves the machine
    context.on("request", lambda request: tab.requested.append(request.url))
    tab.set_default_timeout(TIMEOUT_MS)
    tab.goto(url)
    return context, tab


def _upload(tab, files: list[Path]) -> None:
    tab.set_input_files("#input-files input[type=file]", [str(p) for p in files])
    for p in files:  # the file list shows "report" and ".pdf" in separate elements
        tab.locator("#input-files").get_by_text(p.stem, exact=True).first.wait_for()


@pytest.fixture(scope="module")
def page(app, browser, inputs, tmp_path_factory):
    """A browser tab after one click on Convert with the default options."""
    context, tab = _open(browser, app.url)
    _upload(tab, list(inputs))
    tab.evaluate(  # every text the status line shows during the job (a MutationObserver: nothing is missed)
        """() => { window.__statusTexts = []; new MutationObserver(() => {
          const el = document.querySelector('#job-status'); if (el) window.__statusTexts.push(el.innerText); })
        .observe(document.body, {subtree: true, childList: true, characterData: true}); }"""
    )
    tab.click("#convert-btn")
    tab.locator("#job-status").get_by_text("Done:").wait_for()
    # Per-page progress from the library showed while the job ran (model load + two pages: seconds).
    texts = tab.evaluate("() => window.__statusTexts")
    assert any(re.search(r"Recogni[sz](ing|ed) page 1\b", t) for t in texts), texts[-5:]
    # The polled panel catches up with the model state within a tick or two.
    tab.locator("#gpu-status").get_by_text(re.compile(r"deepseek \(default\): ready")).first.wait_for()
    shot = tmp_path_factory.mktemp("ui-browser-shots") / "after-convert.png"
    tab.screenshot(path=str(shot), full_page=True)
    if os.environ.get("OCR_APP_UI_SCREENSHOT"):
        shutil.copy(shot, os.environ["OCR_APP_UI_SCREENSHOT"])
    tab.screenshot_path = shot
    yield tab
    context.close()


def test_the_browser_paints_the_page_image(page, expected, tmp_path):
    """The pixels on screen where the page image sits are the page's overlay, not a blank or broken image:
    the visible part of it matches the same part of the overlay file (blurred, so that resampling does not
    count), and matches it clearly better than the overlay moved by 40 px."""
    import numpy as np

    page.wait_for_function("() => document.querySelector('#page-view img.ocr-page-image').naturalWidth > 0")
    clip = page.evaluate(
        """() => { const img = document.querySelector('#page-view img.ocr-page-image');
        const i = img.getBoundingClientRect();
        const s = document.querySelector('#page-view .ocr-scroll').getBoundingClientRect();
        const x = Math.max(i.left, s.left), y = Math.max(i.top, s.top);
        return {x, y, width: Math.min(i.right, s.right) - x, height: Math.min(i.bottom, s.bottom) - y,
                left: i.left, top: i.top, scale: i.width / img.naturalWidth}; }"""
    )
    assert clip["width"] > 200 and clip["height"] > 200, clip
    shot = tmp_path / "page-image.png"
    page.screenshot(path=str(shot), clip={k: clip[k] for k in ("x", "y", "width", "height")})

    def blurred(img: Image.Image) -> np.ndarray:
        return np.asarray(
            img.resize((img.width // 16, img.height // 16), Image.Resampling.BOX), dtype=float
        ).ravel()

    with Image.open(shot) as got_img, Image.open(expected[0].pages[0].overlay_path) as overlay:
        s = clip["scale"]
        x0, y0 = (clip["x"] - clip["left"]) / s, (clip["y"] - clip["top"]) / s
        crop = (x0, y0, x0 + clip["width"] / s, y0 + clip["height"] / s)
        got = blurred(got_img.convert("L"))
        want = blurred(overlay.convert("L").crop(crop).resize(got_img.size))
        moved = blurred(
            overlay.convert("L").crop((crop[0], crop[1] + 40, crop[2], crop[3] + 40)).resize(got_img.size)
        )
    assert want.std() > 1 and got.std() > 1  # there is something on the page to compare
    match, wrong = np.corrcoef(got, want)[0, 1], np.corrcoef(got, moved)[0, 1]
    assert match > 0.7 and match > wrong + 0.4, (match, wrong)


def test_the_page_loads_nothing_from_outside_the_machine(app, page):
    host = app.url.split("/")[2]
    assert page.requested and all(u.split("/")[2] == host for u in page.requested if "://" in u)


def test_markdown_of_first_page_is_shown(page, expected):
    first = expected[0].pages[0]
    words = _words(first.markdown)
    assert words, "the tiny model produced no readable words; the check would be empty"
    page.locator("#page-status").get_by_text("report.pdf, page 1").wait_for()
    assert page.locator("#page-select input").input_value().startswith("report.pdf · page 1")
    shown = _alnum(page.inner_text("#page-view .ocr-md"))
    assert all(w in shown for w in words), (words, shown)
    status = page.inner_text("#page-status")
    assert "report.pdf, page 1" in status
    assert {"ok": "ok", "length": "token cap hit", "repetition": "repetition"}[first.status] in status


def test_source_tab_holds_the_document_markdown(page, expected):
    page.get_by_role("tab", name="Source").click()
    source = _alnum(page.inner_text("#doc-source"))
    page.get_by_role("tab", name="Pages").click()
    for p in expected[0].pages:
        assert all(w in source for w in _words(p.markdown))


def test_overlay_image_of_the_page_is_shown(page, expected):
    img = page.locator("#page-view img.ocr-page-image").first
    img.wait_for()
    page.wait_for_function("() => document.querySelector('#page-view img.ocr-page-image').naturalWidth > 0")
    size = img.evaluate("el => [el.naturalWidth, el.naturalHeight]")
    with Image.open(expected[0].pages[0].overlay_path) as overlay:
        assert tuple(size) == overlay.size
    # one box per block box, on the page's own pixel grid
    first = expected[0].pages[0]
    assert page.locator("#page-view rect.ocr-box").count() == sum(len(b.boxes) for b in first.blocks)
    assert page.get_attribute("#page-view svg.ocr-boxes", "viewBox") == f"0 0 {first.width} {first.height}"


def test_page_switcher_flips_pages(page, expected):
    overlay = page.locator("#page-view img.ocr-page-image").first
    first_src = overlay.get_attribute("src")
    page.click("#page-next")
    page.locator("#page-status").get_by_text("report.pdf, page 2").wait_for()
    assert page.locator("#page-select input").input_value().startswith("report.pdf · page 2")
    page.wait_for_function(
        "src => document.querySelector('#page-view img.ocr-page-image')?.getAttribute('src') !== src",
        arg=first_src,
    )
    shown = _alnum(page.inner_text("#page-view .ocr-md"))
    assert all(w in shown for w in _words(expected[0].pages[1].markdown))
    page.click("#page-prev")
    page.locator("#page-status").get_by_text("report.pdf, page 1").wait_for()
    page.click("#page-select input")  # picking a page from the list works too
    page.get_by_role("option", name=re.compile(r"report\.pdf · page 2")).click()
    page.locator("#page-status").get_by_text("report.pdf, page 2").wait_for()
    page.click("#page-prev")
    page.locator("#page-status").get_by_text("report.pdf, page 1").wait_for()


def test_failing_file_shows_its_error_while_the_good_one_converts(page, expected):
    bad = expected[1]
    assert bad.error and not expected[0].error
    status = page.inner_text("#job-status")
    assert "2 page(s) from 1 file(s):" in status
    counts = {}
    for p in expected[0].pages:
        counts[p.status] = counts.get(p.status, 0) + 1
    assert all(f"{n} {viewer.status_label(s)}" in status for s, n in counts.items()), (counts, status)
    assert f"Failed: {bad.source}" in status and bad.error in status
    page.get_by_role("tab", name="Status").click()
    table = page.inner_text("#status-table")
    page.get_by_role("tab", name="Pages").click()
    assert "corrupt.pdf" in table and bad.error[:40] in table


def test_zip_download_holds_the_library_outputs(page, expected, tmp_path):
    downloads = page.locator("#downloads")
    links = downloads.locator("a[download]")
    links.first.wait_for()
    names = [links.nth(i).get_attribute("download") for i in range(links.count())]
    assert names == ["report.md", "report.json", "report_searchable.pdf", "report.zip"]
    with page.expect_download() as info:
        downloads.locator('a[download="report.zip"]').click()
    saved = tmp_path / "report.zip"
    info.value.save_as(saved)
    with zipfile.ZipFile(saved) as got, zipfile.ZipFile(expected[0].outputs["zip"]) as want:
        assert sorted(got.namelist()) == sorted(want.namelist())
        md = next(n for n in want.namelist() if n.endswith("report.md"))
        assert got.read(md) == want.read(md)


def test_gpu_panel_reports_the_machine_and_the_model_state(page):
    panel = page.locator("#gpu-status")
    snap = snapshot("cpu")
    if snap.available:
        panel.get_by_text("GPU:").first.wait_for()
    else:
        panel.get_by_text("No GPU on this machine").first.wait_for()
    # The model served the conversion, so the manager reports it loaded.
    panel.get_by_text(re.compile(r"deepseek \(default\): ready")).first.wait_for()


def test_closing_the_tab_deletes_the_session_outputs(app, page):
    sessions = [p for p in app.work_root.iterdir() if p.is_dir()]
    assert sessions and any(any(s.iterdir()) for s in sessions)
    page.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(p.exists() for p in sessions):
        time.sleep(0.2)
    assert not any(p.exists() for p in sessions)


def test_second_tab_waits_in_the_queue_and_cancel_stops_the_first(app, browser, tmp_path):
    """concurrency_limit=1: tab B shows its queue position while tab A converts; A's Cancel keeps A's
    finished pages, then B's job runs to the end."""
    # 72 pages: long enough that the cancel lands while A still has pages to read (with 8, a busy CI box
    # once delivered the click after A's last page; with 24, an idle one read them all before B's queue
    # line showed, and A's Cancel was already off). The cancel stops A early: the pages cost no time.
    long_pdf = make_pdf(tmp_path / "long.pdf", [f"# Section {i}\nBody text {i}." for i in range(1, 73)])
    short_pdf = make_pdf(tmp_path / "short.pdf", ["# Short\nOne page."])
    ctx_a, a = _open(browser, app.url)
    ctx_b, b = _open(browser, app.url)
    try:
        _upload(a, [long_pdf])
        _upload(b, [short_pdf])
        a.click("#convert-btn")
        a.locator("#job-status").get_by_text(re.compile(r"Recogni[sz]")).first.wait_for()
        b.click("#convert-btn")
        # A's job holds the GPU: B reads its place in words, not as gradio's "queue: 1/1".
        b.locator("#queue-status").get_by_text("waiting: 1 job ahead").wait_for()
        assert a.locator("#cancel-btn").is_enabled()
        a.click("#cancel-btn")
        a.locator("#job-status").get_by_text("Cancelled.").wait_for()
        kept = int(re.search(r"(\d+) page\(s\) finished", a.inner_text("#job-status")).group(1))
        assert 1 <= kept < 72
        assert a.locator("#page-select input").input_value().startswith("long.pdf · page 1")
        b.locator("#job-status").get_by_text("Done: 1 page(s) from 1 file(s)").wait_for()
        # the queue line clears once B's job ends (gradio may show its "0.0s" timer there for a moment)
        b.wait_for_function("() => document.querySelector('#queue-status').innerText.trim() === ''")
    finally:
        ctx_a.close()
        ctx_b.close()


def test_a_password_per_pdf_opens_an_encrypted_one(app, browser, tmp_path):
    secret = "s3cret-browser-pw"
    locked = make_pdf(tmp_path / "locked.pdf", ["# Locked\nFigures."], password=secret)
    plain = make_pdf(tmp_path / "plain.pdf", ["# Plain\nOpen."])
    context, tab = _open(browser, app.url)
    try:
        _upload(tab, [locked, plain])
        tab.click("#passwords")
        box = tab.get_by_label("Password for locked.pdf")
        tab.get_by_label("Password for plain.pdf").wait_for()  # one box per PDF
        assert box.get_attribute("type") == "password"  # masked
        with tab.expect_response(lambda r: "/gradio_api/run/predict" in r.url or "queue/join" in r.url):
            box.fill(secret)  # the box tells the server (memory only) as it is typed in
        tab.click("#convert-btn")
        tab.locator("#job-status").get_by_text("Done:").wait_for()
        status = tab.inner_text("#job-status")
        assert "2 page(s) from 2 file(s)" in status and "Failed" not in status
    finally:
        context.close()
