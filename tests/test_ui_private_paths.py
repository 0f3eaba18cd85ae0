"""Private results hold against every way of spelling a path: another session's file is never served.

Issue 31: B asked ``/gradio_api/file=<B's folder>/a%252Fb/../../<A's file>`` and got A's Markdown: the
owner check decoded the path once more than gradio does, so the two climbed different folders. Here,
on the real launched app (signed in and not), through both file routes gradio has, every trick: raw and
encoded ``..`` (once, twice, three times), ``%2e%2e``, backslashes, overlong UTF-8, NUL, and symlinks
placed in B's own output folder. Requests go out byte for byte (``http.client``): httpx would remove
dot segments before sending them.
"""

from __future__ import annotations

import http.client
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from ocr_app.settings import Settings
from tests.factories import make_pdf
from tests.ui_support import free_port, running_app

gradio_client = pytest.importorskip("gradio_client")

SECRET = "Salaries confidential 4711"


def _raw_get(base: str, path: str, cookies: dict[str, str]) -> tuple[int, str]:
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request("GET", path, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    finally:
        conn.close()


def _convert(client, pdf: Path) -> Path:
    _, _, files = client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/convert")
    return next(Path(f["path"]) for f in files if f["path"].endswith(".md"))


@pytest.fixture(scope="module", params=[False, True], ids=["open", "signed-in"])
def two_sessions(request, tmp_path_factory):
    """A real app; A and B (each signed in as their own user when sign-in is on) converted one PDF each;
    B's folder holds two symlinks to A's Markdown (one absolute, one relative)."""
    tmp = tmp_path_factory.mktemp("paths")
    auth = "alice:wonderland,bob:builder" if request.param else None
    settings = Settings(
        engine="textlayer", host="127.0.0.1", port=free_port(), cache_dir=tmp / "cache", result_cache_mb=0,
        dpi=72, auth=auth,
    )  # fmt: skip
    with running_app(settings) as app:
        kw = {"verbose": False, "download_files": False}
        a = gradio_client.Client(app.url, auth=("alice", "wonderland") if auth else None, **kw)
        b = gradio_client.Client(app.url, auth=("bob", "builder") if auth else None, **kw)
        a_md = _convert(a, make_pdf(tmp / "salaries.pdf", [f"# Salaries\n{SECRET}."]))
        b_md = _convert(b, make_pdf(tmp / "mine.pdf", ["# Mine\nNothing secret."]))
        (b_md.parent / "link-abs.md").symlink_to(a_md)
        (b_md.parent / "link-rel.md").symlink_to(os.path.relpath(a_md, b_md.parent))
        yield app, a, b, a_md, b_md


def _tricks(a_md: Path, b_md: Path) -> dict[str, str]:
    """File-route paths, as sent on the wire, that all name A's Markdown from inside B's folder."""
    common = Path(os.path.commonpath([a_md, b_md]))
    up = len(b_md.parent.relative_to(common).parts)
    tail = a_md.relative_to(common).as_posix()
    b_dir = b_md.parent.as_posix()
    return {
        "direct": a_md.as_posix(),
        "dotdot": f"{b_dir}/" + "../" * up + tail,
        "single %2F": f"{b_dir}/" + "%2F.." * up + "/" + tail,
        "double %252F": f"{b_dir}/" + "a%252Fb/../../" * up + tail,  # the exploit of issue 31
        "triple %25252F": f"{b_dir}/" + "a%25252Fb/../../" * up + tail,
        "double dots %252F..": f"{b_dir}/x" + "%252F.." * (up + 1) + "/" + tail,
        "%2e%2e": f"{b_dir}/" + "%2e%2e/" * up + tail,
        "%252e%252e": f"{b_dir}/a%252Fb/" + "%252e%252e/" * (up + 1) + tail,
        "backslash": f"{b_dir}/" + "..\\" * up + tail,
        "%5c": f"{b_dir}/" + "..%5c" * up + tail,
        "%255c": f"{b_dir}/" + "a%255cb/../" * up + tail,
        "overlong utf-8": f"{b_dir}/" + "%c0%ae%c0%ae%c0%af" * up + tail,
        "overlong utf-8 double": f"{b_dir}/" + "%25c0%25ae%25c0%25ae/" * up + tail,
        "nul": f"{b_dir}/x%00/" + "../" * (up + 1) + tail,
        "symlink absolute": (b_md.parent / "link-abs.md").as_posix(),
        "symlink relative": (b_md.parent / "link-rel.md").as_posix(),
    }


TRICKS = list(_tricks(Path("/r/s/a/j/x.md"), Path("/r/s/b/j/y.md")))
ROUTES = {"file=": "/gradio_api/file=", "file/": "/gradio_api/file/"}


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("trick", TRICKS)
def test_no_spelling_of_a_path_serves_another_sessions_file(two_sessions, route, trick):
    app, _a, b, a_md, b_md = two_sessions
    base = app.url.rstrip("/")
    path = ROUTES[route] + _tricks(a_md, b_md)[trick]
    status, body = _raw_get(base, path, b.cookies)
    assert status == 403 and SECRET not in body, (status, body[:200])


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_session_still_reads_its_own_files_through_both_routes(two_sessions, route):
    app, a, b, a_md, b_md = two_sessions
    base = app.url.rstrip("/")
    own_a = _raw_get(base, ROUTES[route] + a_md.as_posix(), a.cookies)
    own_b = _raw_get(base, ROUTES[route] + b_md.as_posix(), b.cookies)
    assert own_a[0] == 200 and SECRET in own_a[1]
    assert own_b[0] == 200 and "Nothing secret" in own_b[1]
    assert _raw_get(base, ROUTES[route] + a_md.as_posix(), {})[0] in (401, 403)  # no cookie at all


def test_hostile_paths_are_named_and_plain_ones_pass():
    from ocr_app.ui.privacy import hostile_path

    assert hostile_path("/tmp/s/job-1/report 50%.md") is None  # a literal % that decodes to nothing
    assert hostile_path("/tmp/s/a b/x.md") is None
    assert hostile_path("/tmp/s/a%2Fb/../x") == "a parent-folder step"
    assert hostile_path("/tmp/s/a%2Fb/x") == "an encoded separator"
    assert hostile_path("/tmp/s/%2e%2e/x") == "a parent-folder step"
    assert hostile_path("/tmp/s/a\\b") == "a backslash"
    assert hostile_path("/tmp/s/\x00") == "a NUL or invalid UTF-8"
    assert hostile_path("/tmp/s/%c0%ae") == "a NUL or invalid UTF-8"
    assert hostile_path("/tmp/%" + "25" * 12 + "2e") == "encoded too many times"
