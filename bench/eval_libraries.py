"""Measure maintained libraries against ocr-app's own code where issue 13 asked (item 8).

    python -m bench.eval_libraries [--quick]

1. file sniffing: ``ingest/sniff.py`` vs ``filetype`` and ``puremagic`` — which heads each gets right
   (what we accept must map to the decoder that opens it) and microseconds per call;
2. HTML table repair: ``render/markdown.close_open_table`` vs ``lxml.html`` and ``html5lib`` — does a
   truncated model table come back closed, is a complete one left byte-identical, and how fast;
3. bounded disk cache: ``runtime/diskstore`` (as the result cache uses it) vs ``diskcache.Cache`` with a
   size limit — put/get per second and bytes on disk after eviction, single process.

Libraries that are not installed are reported as such. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path


def _heads() -> dict[str, tuple[bytes, str | None]]:
    """name -> (first bytes, the format ocr-app must report: None = not supported)."""
    from PIL import Image

    out: dict[str, tuple[bytes, str | None]] = {}
    img = Image.new("RGB", (32, 24), "white")
    for fmt, name in (("PNG", "png"), ("JPEG", "jpeg"), ("WEBP", "webp"), ("GIF", "gif"), ("TIFF", "tiff")):
        buf = io.BytesIO()
        img.save(buf, format=fmt)
        out[name] = (buf.getvalue()[:1024], name)
    buf = io.BytesIO()
    img.save(buf, format="BMP")
    out["bmp"] = (buf.getvalue()[:1024], "bmp")
    import pymupdf

    doc = pymupdf.open()
    doc.new_page()
    pdf = doc.tobytes()
    out["pdf"] = (pdf[:1024], "pdf")
    out["pdf after 200 junk bytes"] = ((b"\x00" * 200 + pdf)[:1024], "pdf")  # readers accept it
    out["zip/docx"] = (b"PK\x03\x04" + b"\x14\x00" * 40, None)
    out["gzip"] = (b"\x1f\x8b\x08\x00" + b"\x00" * 60, None)
    out["html error page"] = (b"<!DOCTYPE html><html><body>404</body></html>", None)
    out["plain text"] = (b"just some notes\nsecond line\n", None)
    out["heic"] = (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic", None)
    return out


def _time(fn, arg, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(arg)
    return (time.perf_counter() - t0) / n * 1e6


def sniffing(n: int) -> dict:
    from ocr_app.ingest.sniff import describe_content, sniff_format

    heads = _heads()
    tools: dict[str, object] = {"ocr_app": sniff_format}
    try:
        import filetype

        def ft(head: bytes) -> str | None:
            kind = filetype.guess(head)
            return (
                None if kind is None else {"jpg": "jpeg", "tif": "tiff"}.get(kind.extension, kind.extension)
            )

        tools["filetype"] = ft
    except ImportError:
        tools["filetype"] = "not installed"
    try:
        import puremagic

        def pm(head: bytes) -> str | None:
            try:
                ext = puremagic.from_string(head)
            except puremagic.PureError:
                return None
            ext = ext.lstrip(".").lower()
            return {"jpg": "jpeg", "tif": "tiff", "jfif": "jpeg"}.get(ext, ext)

        tools["puremagic"] = pm
    except ImportError:
        tools["puremagic"] = "not installed"
    result: dict[str, object] = {}
    for name, fn in tools.items():
        if isinstance(fn, str):
            result[name] = fn
            continue
        answers = {case: fn(head) for case, (head, _) in heads.items()}
        supported = {"pdf", "png", "jpeg", "webp", "gif", "tiff", "bmp"}
        wrong = {
            case: got
            for case, got in answers.items()
            if (got if got in supported else None) != heads[case][1]
        }
        result[name] = {
            "wrong": wrong,
            "us_per_call": round(sum(_time(fn, h, n) for h, _ in heads.values()) / len(heads), 2),
        }
    result["ocr_app_describe_unsupported"] = {
        case: describe_content(head) for case, (head, want) in heads.items() if want is None
    }
    return result


def table_repair(n: int) -> dict:
    from ocr_app.render.markdown import close_open_table

    complete = "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2</td></tr></table>"
    truncated = "<table><tr><td>a</td><td>b</td></tr><tr><td>1</td><td>2"
    tools: dict[str, object] = {"ocr_app": close_open_table}
    try:
        import lxml.html

        def lx(text: str) -> str:
            frag = lxml.html.fragment_fromstring(text, create_parent="div")
            inner = "".join(lxml.html.tostring(c, encoding="unicode") for c in frag)
            return (frag.text or "") + inner

        tools["lxml"] = lx
    except ImportError:
        tools["lxml"] = "not installed"
    try:
        import html5lib

        def h5(text: str) -> str:
            frag = html5lib.parseFragment(text, namespaceHTMLElements=False)
            return html5lib.serialize(frag, omit_optional_tags=False, quote_attr_values="always")

        tools["html5lib"] = h5
    except ImportError:
        tools["html5lib"] = "not installed"
    result: dict[str, object] = {}
    for name, fn in tools.items():
        if isinstance(fn, str):
            result[name] = fn
            continue
        fixed = fn(truncated)
        result[name] = {
            "truncated_closed": fixed.lower().count("<table") == fixed.lower().count("</table>"),
            "truncated_out": fixed,
            "complete_unchanged": fn(complete) == complete,
            "us_per_call": round(_time(fn, truncated, n), 2),
        }
    return result


def disk_cache(n: int) -> dict:
    from ocr_app.runtime.result_cache import ResultCache
    from ocr_app.schema import EngineOutput

    payload = EngineOutput(engine="x", raw_text="y" * 20_000)
    bound = 40 * 20_000  # ~40 entries
    result: dict[str, object] = {}
    root = Path(tempfile.mkdtemp(prefix="ocr-eval-"))
    try:
        ours = ResultCache(root / "ours", bound)
        t0 = time.perf_counter()
        for i in range(n):
            ours.put(f"{i:040x}", payload)
        put_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = sum(ours.get(f"{i:040x}") is not None for i in range(n))
        get_s = time.perf_counter() - t0
        result["ocr_app"] = {
            "puts_per_s": round(n / put_s),
            "gets_per_s": round(n / get_s),
            "hits": hits,
            "bytes_on_disk": ours.size_bytes(),
        }
        try:
            import diskcache
        except ImportError:
            result["diskcache"] = "not installed"
            return result
        from ocr_app.runtime.result_cache import output_to_dict

        dc = diskcache.Cache(str(root / "dc"), size_limit=bound, eviction_policy="least-recently-used")
        t0 = time.perf_counter()
        for i in range(n):
            dc.set(f"{i:040x}", json.dumps(output_to_dict(payload)))
        put_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = sum(dc.get(f"{i:040x}") is not None for i in range(n))
        get_s = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in (root / "dc").rglob("*") if f.is_file())
        result["diskcache"] = {
            "puts_per_s": round(n / put_s),
            "gets_per_s": round(n / get_s),
            "hits": hits,
            "bytes_on_disk": size,
        }
        dc.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run)")
    args = ap.parse_args(argv)
    n = 20 if args.quick else 2000
    disk_n = 60 if args.quick else 200  # more entries than the ~40 the bound holds: eviction runs
    report = {"sniffing": sniffing(n), "table_repair": table_repair(n), "disk_cache": disk_cache(disk_n)}
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
