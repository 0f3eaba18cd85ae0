"""One app, many people: sign-in, the open-instance warning, private results, bounded API leftovers,
and per-engine job slots.

The servers are the real launched app (``ui_support.running_app``, exactly what ``app.py`` starts) on
the text-layer engine, driven by gradio_client and raw HTTP; the browser test of sign-in uses Chromium.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from ocr_app.exceptions import ConfigError
from ocr_app.settings import Settings
from ocr_app.ui.access import is_loopback, resolve_access
from ocr_app.ui.slots import JobSlots
from tests.factories import make_pdf
from tests.ui_support import chromium, free_port, running_app

gradio_client = pytest.importorskip("gradio_client")


def _settings(tmp: Path, **overrides) -> Settings:
    values = {
        "engine": "textlayer",
        "host": "127.0.0.1",
        "port": free_port(),
        "cache_dir": tmp / "cache",
        "result_cache_mb": 0,
        "dpi": 72,
    }
    values.update(overrides)
    return Settings(**values)


def _call(client, files, **kwargs):
    return client.predict(
        files=[gradio_client.handle_file(str(f)) for f in files], api_name="/convert", **kwargs
    )


# --- sign-in configuration ---------------------------------------------------------------------------
def test_sign_in_pairs_come_from_the_setting_and_the_file(tmp_path):
    users = tmp_path / "users.txt"
    users.write_text("# team\ncarol:pa:ss\n\ndave:x,y\n", encoding="utf-8")
    access = resolve_access(_settings(tmp_path, auth="alice:one,bob:two", auth_file=users))
    assert access.gradio_auth == [("alice", "one"), ("bob", "two"), ("carol", "pa:ss"), ("dave", "x,y")]
    assert access.warning is None
    # the CLI joins repeated --auth with newlines, so a password may hold a comma
    assert resolve_access(_settings(tmp_path, auth="erin:a,b\nfred:c")).gradio_auth == [
        ("erin", "a,b"),
        ("fred", "c"),
    ]


@pytest.mark.parametrize(
    ("auth", "match"),
    [("alice", "expected user:password"), (":pw", "expected user:password"), ("a:1,a:2", "twice")],
)
def test_bad_sign_in_entries_are_config_errors(tmp_path, auth, match):
    with pytest.raises(ConfigError, match=match):
        resolve_access(_settings(tmp_path, auth=auth))
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_access(_settings(tmp_path, auth_file=tmp_path / "missing.txt"))


def test_an_exposed_app_without_sign_in_is_warned_about(tmp_path):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("gpu-box")
    assert resolve_access(_settings(tmp_path)).warning is None
    open_lan = resolve_access(_settings(tmp_path, host="0.0.0.0")).warning
    assert "no sign-in" in open_lan and "0.0.0.0" in open_lan and "--auth" in open_lan
    assert "share link" in resolve_access(_settings(tmp_path, share=True)).warning
    assert resolve_access(_settings(tmp_path, host="0.0.0.0", auth="a:b")).warning is None


def test_the_open_warning_is_printed_at_start_and_shown_in_the_page(tmp_path, capsys):
    with running_app(_settings(tmp_path, host="0.0.0.0")) as app:
        printed = capsys.readouterr().err
        page = httpx.get(app.url.replace("0.0.0.0", "127.0.0.1") + "config", timeout=30).json()
    assert "WARNING: This app has no sign-in" in printed
    banner = [c for c in page["components"] if c.get("props", {}).get("elem_id") == "open-warning"]
    assert banner and banner[0]["props"]["visible"] and "no sign-in" in banner[0]["props"]["value"]


def test_share_without_internet_claims_no_link_and_the_hint_names_the_apps_flag(tmp_path, capfd):
    """``--share`` on a machine that cannot reach gradio.live: the start-up lines and the page say there
    is no public link (the open warning names only what is true: the address it listens on); gradio's
    own "set `share=True` in `launch()`" hint is never printed, the app's hint names ``--share``."""
    from ocr_app.convert import Converter
    from ocr_app.stack import build_engines
    from ocr_app.ui.app import build_app
    from ocr_app.ui.launch import launch

    for share in (False, True):
        settings = _settings(tmp_path, host="0.0.0.0", share=share)
        engines = build_engines(settings)
        demo = build_app(Converter(engines, settings), settings)
        try:
            info = launch(demo, settings, prevent_thread_lock=True)
            out, err = capfd.readouterr()
            page = httpx.get(f"http://127.0.0.1:{settings.port}/config", timeout=30).json()
        finally:
            demo.close()
            engines.unload_all()
            demo.ocr_app_dirs.close()
        printed = out + err
        assert "share=True" not in printed and "launch()" not in printed
        assert f"Running on local URL: {info.local_url}" in printed
        warning = next(
            line for line in err.splitlines() if line.startswith("WARNING: This app has no sign-in")
        )
        banner = demo.ocr_app.open_warning_text()
        assert "0.0.0.0" in warning and "no sign-in" in banner
        assert "GPU" not in warning  # what anyone may do there: run conversions, not "use the GPU"
        if not share:
            assert "start the app with --share" in printed and info.share_error is None
            continue
        if info.share_url is None:  # offline, as CI is: nothing claims a link
            assert "no public link exists" in printed and "no public link exists" in info.share_error
            assert "share link" not in warning and "share link" not in banner
        else:  # a machine with internet made one: then it is said
            assert "public share link" in warning and "public share link" in banner
        props = [
            c["props"] for c in page["components"] if c.get("props", {}).get("elem_id") == "open-warning"
        ]
        assert props and "public share link" not in props[0]["value"]  # the page never claimed it early


# --- sign-in enforced -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("guarded")
    with running_app(_settings(tmp, auth="alice:wonderland")) as app:
        yield app


def test_without_credentials_only_the_login_page_answers(guarded, tmp_path):
    """Every route of the app, asked without signing in: the login page and its assets answer; the
    API, the config, uploads, the queue and file URLs (of a real output) are refused."""
    signed_in = gradio_client.Client(
        guarded.url, auth=("alice", "wonderland"), verbose=False, download_files=False
    )
    _call(signed_in, [make_pdf(tmp_path / "a.pdf", ["# Alpha\nOne."])])
    output = next(guarded.work_root.rglob("*.md"))
    base = guarded.url.rstrip("/")
    anonymous = httpx.Client(timeout=30)
    assert anonymous.get(base + "/").status_code == 200  # the page that shows the login form
    refused = {
        "GET /config": anonymous.get(base + "/config"),
        "GET /gradio_api/info": anonymous.get(base + "/gradio_api/info"),
        "GET /gradio_api/openapi.json": anonymous.get(base + "/gradio_api/openapi.json"),
        "GET file": anonymous.get(f"{base}/gradio_api/file={output}"),
        "POST upload": anonymous.post(base + "/gradio_api/upload", files={"files": ("x.pdf", b"%PDF-1.4")}),
        "POST queue/join": anonymous.post(base + "/gradio_api/queue/join", json={"data": [], "fn_index": 0}),
        "POST call": anonymous.post(base + "/gradio_api/call/convert", json={"data": []}),
    }
    assert {k: r.status_code in (401, 403) for k, r in refused.items()} == dict.fromkeys(refused, True), (
        refused
    )
    with pytest.raises(Exception, match=r"(?i)credentials|login|401"):
        gradio_client.Client(guarded.url, verbose=False)
    # every other GET route without a path parameter (gradio adds routes between versions)
    app_routes = [r for r in guarded.demo.app.routes if "GET" in getattr(r, "methods", set())]
    open_ok = {"/", "/login", "/logout", "/favicon.ico", "/robots.txt", "/manifest.json", "/theme.css"}
    harmless = ("login_check", "/token", "/user", "/app_id", "/startup-events", "/pwa_icon")  # login facts
    answered = []
    for route in app_routes:
        path = route.path
        if "{" in path or path in open_ok or path.startswith(("/assets", "/static", "/svelte")):
            continue
        status = anonymous.get(base + path).status_code
        if status not in (401, 403, 404, 405) and not path.rstrip("/").endswith(harmless):
            answered.append((path, status))
    assert answered == []


def test_the_browser_sees_the_login_form_until_signed_in(guarded):
    with chromium() as browser:
        page = browser.new_page()
        page.goto(guarded.url)
        page.get_by_label("username").wait_for()
        assert page.locator("#convert-btn").count() == 0
        page.get_by_label("username").fill("alice")
        page.get_by_label("password").fill("wrong")
        page.get_by_role("button", name="Login").click()
        page.get_by_text("Incorrect credentials").wait_for()
        page.get_by_label("username").fill("alice")  # a failed attempt clears the form
        page.get_by_label("password").fill("wonderland")
        page.get_by_role("button", name="Login").click()
        page.locator("#convert-btn").wait_for()


# --- private results -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shared")
    with running_app(_settings(tmp)) as app:
        yield app


def _fetch(client, url: str) -> int:
    return httpx.get(url, cookies=client.cookies, timeout=30).status_code


def test_one_sessions_files_are_refused_to_another(shared, tmp_path):
    a = gradio_client.Client(shared.url, verbose=False, download_files=False)
    b = gradio_client.Client(shared.url, verbose=False, download_files=False)
    assert a.cookies.get("ocr_app_client") and a.cookies["ocr_app_client"] != b.cookies.get("ocr_app_client")
    _, _, files = _call(a, [make_pdf(tmp_path / "private.pdf", ["# Salaries\nConfidential."])])
    urls = {Path(f["path"]).name: f["url"] for f in files}
    assert set(urls) == {"private.md", "private.json", "private_searchable.pdf", "private.zip"}
    base = shared.url.rstrip("/")
    overlay = next(p for p in shared.work_root.rglob("*.png") if "overlay" in p.name or "page" in p.name)
    upload = next(p for p in Path(shared.demo.ocr_app.owners.roots[1]).rglob("private.pdf"))
    asked = {"zip": urls["private.zip"], "overlay": f"{base}/gradio_api/file={overlay}",
             "upload": f"{base}/gradio_api/file={upload}"}  # fmt: skip
    assert {k: _fetch(b, u) for k, u in asked.items()} == dict.fromkeys(asked, 403)
    assert httpx.get(urls["private.zip"], timeout=30).status_code == 403  # no cookie at all
    assert {k: _fetch(a, u) for k, u in asked.items()} == dict.fromkeys(asked, 200)


def test_api_calls_leave_a_bounded_temp_folder(tmp_path, monkeypatch):
    """The issue's bar is ≤ 20 MB after 200 calls, 100 kB a call: asserted per call over 8 calls of
    distinct 4-page PDFs in the app's own temp folder (outputs go once fetched; the uploads are the
    few kB that stay until the TTL)."""
    temp = tmp_path / "gradio-temp"
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(temp))

    def size() -> int:
        return sum(p.stat().st_size for p in temp.rglob("*") if p.is_file())

    with running_app(_settings(tmp_path)) as app:
        client = gradio_client.Client(app.url, verbose=False, download_files=str(tmp_path / "dl"))
        pdfs = [make_pdf(tmp_path / f"d{n}.pdf", [f"# Doc {n} page {i}\nText {n}.{i}." for i in range(4)]) for n in range(8)]  # fmt: skip
        _call(client, [pdfs[0]])
        before = size()
        for pdf in pdfs[1:]:
            _, result, files = _call(client, [pdf])
            assert result["documents"][0]["error"] is None and len(files) == 4
        grown = size() - before
        assert list(app.work_root.rglob("*.zip")) == []  # every output fetched, so removed
    assert grown <= 7 * 100_000, grown


# --- per-engine slots -----------------------------------------------------------------------------------
def test_slots_admit_per_engine_in_order_and_estimate_the_wait():
    now = [0.0]
    slots = JobSlots({"deepseek": 2, "light": 1}, clock=lambda: now[0])
    assert slots.total() == 3
    a, b, c = (slots.enter("deepseek") for _ in range(3))
    light = slots.enter("light")
    assert a.admitted and b.admitted and not c.admitted and light.admitted  # engines do not block each other
    assert slots.place(c) == (2, None)  # no finished job yet: no estimate
    now[0] = 10.0
    slots.leave(a)  # a took 10 s; c gets its slot at once
    assert c.admitted and slots.place(c) == (0, 0.0)
    d = slots.enter("deepseek")
    slots.progress(b, 0.5)  # b: 10 s for half its pages -> 10 s left; c just started: a mean job, 10 s
    assert slots.place(d) == (2, pytest.approx(10.0))
    e = slots.enter("deepseek")
    assert slots.place(e) == (3, pytest.approx(10.0))  # d takes the first free slot, e the second
    slots.leave(d)  # d gave up waiting: e moves up
    assert slots.place(e) == (2, pytest.approx(10.0)) and slots.peak("deepseek") == 2


def test_a_slot_freed_by_one_thread_admits_a_waiting_one():
    slots = JobSlots({"e": 1})
    first = slots.enter("e")
    second = slots.enter("e")
    got = []
    waiter = threading.Thread(target=lambda: got.append(slots.wait(second, 60)))
    waiter.start()
    slots.leave(first)
    waiter.join(timeout=60)
    assert got == [True] and second.admitted


def test_the_heap_is_trimmed_once_the_last_job_has_left_not_after_each(monkeypatch):
    """``malloc_trim`` locks glibc's arenas: 16 jobs ending at once each paid it on their result's path.
    The app trims a moment after no job of any engine runs or waits, on a timer thread, and not if a
    job came in meanwhile."""
    from types import SimpleNamespace

    import ocr_app.ui.blocks as blocks

    trimmed = threading.Event()
    calls = []

    def trim():
        calls.append(threading.current_thread().name)
        trimmed.set()

    monkeypatch.setattr(blocks, "TRIM_AFTER_S", 0.3)
    slots = JobSlots({"deepseek": 2, "light": 1})
    app = SimpleNamespace(slots=slots, trim_heap=trim)
    app._trim_if_idle = lambda: blocks.OcrApp._trim_if_idle(app)
    first, second, light = slots.enter("deepseek"), slots.enter("deepseek"), slots.enter("light")
    for ticket in (first, light):
        slots.leave(ticket)
        blocks.OcrApp._trim_when_idle(app)
        assert not slots.idle()
    slots.leave(second)
    assert slots.idle()
    blocks.OcrApp._trim_when_idle(app)
    again = slots.enter("light")  # a job came before the timer fired: no trim under it
    assert not trimmed.wait(1.0) and calls == []
    slots.leave(again)
    blocks.OcrApp._trim_when_idle(app)
    assert trimmed.wait(10)
    assert calls == ["ocr-app-trim"]  # once, and not on the job's own thread


def test_the_ui_command_refuses_a_malformed_sign_in_before_it_starts(tmp_path):
    from click.testing import CliRunner

    from ocr_app.cli import main

    bad = CliRunner().invoke(main, ["ui", "--engine", "textlayer", "--auth", "alice"])
    assert bad.exit_code == 2 and "expected user:password" in bad.output
    missing = CliRunner().invoke(main, ["ui", "--engine", "textlayer", "--auth-file", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


def test_the_owner_registry_checks_folders_and_files_and_forgets_deleted_ones(tmp_path):
    from ocr_app.ui.privacy import Owners, file_route_path

    root = tmp_path / "gradio"
    job, upload, stray = root / "s" / "job-1", root / "abc" / "in.pdf", root / "x" / "other.pdf"
    for f in (job / "doc" / "doc.zip", upload, stray):
        f.parent.mkdir(parents=True)
        f.write_bytes(b"x")
    owners = Owners([root])
    owners.claim(job, "a")
    owners.claim(upload, "a")
    owners.claim(upload, "b")  # gradio stores equal uploads once: both uploaders own it
    assert owners.allows(job / "doc" / "doc.zip", "a") and not owners.allows(job / "doc" / "doc.zip", "b")
    assert owners.allows(upload, "b") and not owners.allows(upload, None)
    assert not owners.allows(stray, "a")  # under the guarded folder, claimed by nobody
    assert not owners.allows(root / "s" / "job-1" / ".." / ".." / "x" / "other.pdf", "a")  # no way around
    assert owners.allows(tmp_path / "elsewhere.css", None)  # outside: gradio's own rules apply
    assert file_route_path("/gradio_api/file=/tmp/a b.zip") == "/tmp/a b.zip"  # the server decoded it once
    assert file_route_path("/gradio_api/file=/tmp/a%20b.zip") == "/tmp/a%20b.zip"  # as gradio takes it
    assert file_route_path("/gradio_api/info") is None
    upload.unlink()
    for n in range(Owners.PRUNE_EVERY):  # claims go on; deleted files are forgotten as they do
        owners.claim(root / "s" / f"job-{n + 2}", "a")
    assert upload.resolve() not in {p for p in owners._owners}
