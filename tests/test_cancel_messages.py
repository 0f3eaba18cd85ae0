"""What the CLI says after a signal matches what is on disk.

Issue 31: after a second SIGINT the CLI said "The document in progress was not written" while the
incomplete documents had been written (and printed no summary); Ctrl-C on a remote run said "marked
incomplete" while its JSON said ``complete: true``. The messages are now built from the documents the
converter reports as published (the ``published`` progress event); here the real converter (text
layer) is cancelled at chosen points and each message is checked against the folders and JSON on disk.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ocr_app.cli import cancelled_message, stopped_message
from ocr_app.convert import CancelEvent, Converter, ConvertOptions
from ocr_app.exceptions import ConversionCancelled
from ocr_app.settings import Settings
from ocr_app.stack import build_engines
from tests.factories import make_pdf


@pytest.fixture(scope="module")
def converter():
    settings = Settings(engine="textlayer", result_cache_mb=0)
    engines = build_engines(settings)
    yield Converter(engines, settings)
    engines.unload_all()


def _docs(tmp_path: Path) -> list[Path]:
    return [
        make_pdf(tmp_path / f"f{i}.pdf", [f"# F{i} p{p}\nText." for p in range(n)])
        for i, n in ((1, 2), (2, 6))
    ]


def _run(converter, files, out, stop_when):
    """Convert one file at a time; cancel once ``stop_when(event)``; return (error, published)."""
    cancel = CancelEvent()
    published = []

    def progress(event):
        if event.stage == "published":
            published.append(event.document)
        if stop_when(event):
            cancel.cancel("cancelled by SIGINT")

    options = ConvertOptions(formats=frozenset({"md", "json"}), files_at_once=1)
    with pytest.raises(ConversionCancelled) as info:
        converter.convert(files, out, options, progress=progress, cancel=cancel)
    return info.value, published


def _on_disk(out: Path) -> dict[str, bool]:
    return {d.name: json.loads((d / f"{d.name}.json").read_text())["complete"] for d in out.iterdir()}


def test_a_cancel_mid_document_says_marked_incomplete_and_it_is(converter, tmp_path):
    out = tmp_path / "out"
    exc, published = _run(converter, _docs(tmp_path), out, lambda e: e.source == "f2.pdf" and e.done == 3)
    assert _on_disk(out) == {"f1": True, "f2": False}
    assert [(d.source, d.complete) for d in published] == [("f1.pdf", True), ("f2.pdf", False)]
    message = cancelled_message("cancelled by SIGINT", exc.documents, exc.partial, out)
    assert (
        message
        == f"Cancelled by SIGINT: the document in progress was written with the pages done, marked incomplete, to {out}."
    )
    # a second signal right after: the summary lists what was published, the message names it
    later = stopped_message("SIGINT", published, out)
    assert "Written before the stop, marked incomplete: f2.pdf" in later and "was not written" not in later


def test_a_cancel_after_the_last_page_says_complete_as_the_json_does(converter, tmp_path):
    """The remote case of the issue: every page had its answer when the signal came."""
    out = tmp_path / "out"
    files = _docs(tmp_path)[:1]
    exc, _ = _run(converter, files, out, lambda e: e.stage == "page_done" and e.done == e.total)
    assert _on_disk(out) == {"f1": True} and exc.partial is not None and exc.partial.complete
    message = cancelled_message("cancelled by SIGINT", exc.documents, exc.partial, out)
    assert (
        message
        == f"Cancelled by SIGINT: every page of the document in progress had finished; it was written complete to {out}."
    )
    assert "incomplete" not in message


def test_a_cancel_before_any_page_says_nothing_was_written(converter, tmp_path):
    out = tmp_path / "out"
    exc, published = _run(converter, _docs(tmp_path), out, lambda e: e.stage == "open")
    assert not out.exists() or _on_disk(out) == {}
    assert published == [] and exc.partial is None
    message = cancelled_message("cancelled by SIGINT", exc.documents, exc.partial, out)
    assert "was not written" in message and "incomplete" not in message
    assert "was not written" in stopped_message("SIGINT", published, out)
