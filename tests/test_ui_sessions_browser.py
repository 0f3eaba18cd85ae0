"""Two people convert at the same time in two browser sessions, each seeing only their own job.

The app runs the tiny random checkpoint with the graph decoder (eager on the CPU), whose capabilities
let it serve several jobs at once: both jobs run side by side (the app's slots say so) and share the
decoder. Each tab records every progress line it showed; at the end each tab's progress, page list,
status table and downloads name only its own file, and each tab's downloads are refused to the other.
"""

from __future__ import annotations

import re

import httpx
import pytest

from tests.factories import make_pdf
from tests.ui_support import chromium, running_app, tiny_settings

pytestmark = pytest.mark.browser

TIMEOUT_MS = 180_000

RECORD_STATUS = """() => {
  window.__statuses = [];
  const node = document.querySelector('#job-status');
  new MutationObserver(() => window.__statuses.push(node.innerText)).observe(
    node, {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def app(random_checkpoint, tmp_path_factory):
    settings = tiny_settings(
        random_checkpoint, tmp_path_factory.mktemp("sessions-cache"), decoder="graph", decode_max_slots=4
    )
    with running_app(settings) as running:
        yield running


def test_two_sessions_convert_side_by_side_and_each_sees_only_its_own(app, tmp_path):
    assert app.demo.ocr_app.slots.limit("deepseek") == 4  # the engine batches: several jobs at once
    docs = {
        "alpha": make_pdf(
            tmp_path / "alpha.pdf", [f"# Alpha {i}\nFirst person's page {i}." for i in range(1, 4)]
        ),
        "beta": make_pdf(
            tmp_path / "beta.pdf", [f"# Beta {i}\nSecond person's page {i}." for i in range(1, 3)]
        ),
    }
    with chromium() as browser:
        tabs = {}
        for name, pdf in docs.items():
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            tab = context.new_page()
            tab.set_default_timeout(TIMEOUT_MS)
            tab.goto(app.url)
            tab.set_input_files("#input-files input[type=file]", [str(pdf)])
            tab.locator("#input-files").get_by_text(name, exact=True).first.wait_for()
            tab.evaluate(RECORD_STATUS)
            tabs[name] = (context, tab)
        for _, tab in tabs.values():
            tab.click("#convert-btn")
        for _, tab in tabs.values():
            tab.locator("#job-status").get_by_text("Done:").wait_for()
        seen = {name: tab.evaluate("() => window.__statuses") for name, (_, tab) in tabs.items()}
        pages, status = {}, {}
        for name, (_, tab) in tabs.items():
            tab.click("#page-select input")  # the page list: every page this tab can show
            tab.get_by_role("option").first.wait_for()
            pages[name] = tab.get_by_role("option").all_inner_texts()
            tab.keyboard.press("Escape")
            tab.get_by_role("tab", name="Status").click()
            status[name] = tab.inner_text("#status-table")
        links = {
            name: tab.eval_on_selector_all("#downloads a", "els => els.map(a => a.href)")
            for name, (_, tab) in tabs.items()
        }
        jars = {name: {c["name"]: c["value"] for c in ctx.cookies()} for name, (ctx, _) in tabs.items()}
        fetched = {  # while the tabs are open (closing a tab removes its outputs)
            (me, who): httpx.get(
                next(u for u in links[me] if u.endswith(".zip")), cookies=jars[who]
            ).status_code
            for me in tabs
            for who in tabs
        }
    assert app.demo.ocr_app.slots.peak("deepseek") == 2  # both jobs held a slot at the same time
    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        assert any(re.search(r"Recogni[sz]ing page", s) for s in seen[me]), seen[me]  # its own live progress
        assert not any(f"{other}.pdf" in s for s in seen[me])  # and nothing of the other job
        assert f"{me}.pdf" in status[me] and f"{other}.pdf" not in status[me]
        assert len(pages[me]) == (3 if me == "alpha" else 2)
        assert all(p.strip(" ✓\n").startswith(f"{me}.pdf · page") for p in pages[me]), pages
        names = sorted(link.rsplit("/", 1)[-1] for link in links[me])
        assert names == sorted([f"{me}.md", f"{me}.json", f"{me}_searchable.pdf", f"{me}.zip"])
        assert fetched[(me, me)] == 200 and fetched[(me, other)] == 403  # its ZIP, for it only
