"""The live GPU and model panel: VRAM numbers, a small plot, and each engine's state.

Why polled (``gr.Timer``) and read-only: the panel shows what the runtime already knows
(``ocr_app.runtime.vram`` and ``Converter.describe()``) and never touches the model itself.
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Any

from ocr_app.choices import canonical_engine, engine_kind

if TYPE_CHECKING:
    import pandas as pd

    from ocr_app.runtime.vram import VramHistory, VramSnapshot
    from ocr_app.settings import Settings

logger = logging.getLogger(__name__)

NO_GPU = "No GPU on this machine"


def engine_label(name: str, describe: dict[str, Any]) -> str:
    """Dropdown label: what the engine is (its kind's label), and for a router which OCR engine it
    routes scans to."""
    ocr = ((describe.get("engines") or {}).get(name) or {}).get("ocr")
    if ocr:
        return f"{name}: PDF text layer, else {ocr}"
    label = engine_kind(name).capabilities.label
    return f"{name}: {label}" if label and label != name else name


def engine_state(info: dict[str, Any]) -> str:
    """not loaded / loading / ready / unloaded (idle) / error — from an engine's ``describe()``."""
    state = info.get("state")
    if isinstance(state, str) and state:
        return state
    return "ready" if info.get("loaded") else "not loaded"


def engines_markdown(describe: dict[str, Any]) -> str:
    """One line per engine with its state; the default engine first, with why it is the default."""
    engines: dict[str, dict[str, Any]] = dict(describe.get("engines") or {})
    default = describe.get("default")
    lines = []
    for name in sorted(engines, key=lambda n: n != default):
        info = engines[name] or {}
        mark = " (default)" if name == default else ""
        extra = [f"routes scans to {info['ocr']}"] if info.get("ocr") else []
        for key in ("model", "device", "dtype"):
            if info.get(key):
                extra.append(f"{key} {info[key]}")
        extra += precision_notes(info)
        if info.get("budget_gib"):
            extra.append(f"memory budget {info['budget_gib']} GiB")
        dec = info.get("decoder") or {}
        if dec.get("slots"):  # what the graph decoder keeps between requests (sized once)
            extra.append(
                f"decoder: {dec['slots']} pages in flight × {dec['max_len']} tokens, "
                f"{dec['held_mib']} MiB kept, {len(dec.get('graphs') or [])} graphs"
            )
        if info.get("last_error"):
            extra.append(f"last error: {info['last_error']}")
        tail = f" — {', '.join(extra)}" if extra else ""
        lines.append(f"- **{name}**{mark}: {engine_state(info)}{tail}")
        lines.extend(pool_lines(info))
    if describe.get("default_reason"):
        lines.append(f"\nDefault engine: {default} — {describe['default_reason']}")
    for name, why in (describe.get("unavailable") or {}).items():
        lines.append(f"- ~~{name}~~: {why}")
    return "\n".join(lines)


def precision_notes(info: dict[str, Any]) -> list[str]:
    """Which preset was chosen and why, and where quantised weights came from (engine ``describe()``)."""
    notes = []
    if info.get("precision_reason"):
        notes.append(f"precision: {info['precision_reason']}")
    source = info.get("quant_source")
    if source:
        secs = info.get("quantize_seconds")
        took = f", quantised in {secs:.1f} s" if isinstance(secs, (int, float)) else ""
        notes.append(f"quantised weights: {source}{took}")
    return notes


def _pool_of(info: dict[str, Any]) -> dict[str, Any]:
    """The pool facts of an engine, through the router (``auto`` routes to a pooled engine)."""
    return dict(info.get("pool") or {})


def pool_lines(info: dict[str, Any]) -> list[str]:
    """One sub-line per GPU or endpoint of a pooled engine: state, pages in flight, pages read."""
    pool = _pool_of(info)
    lines = []
    for m in pool.get("members") or []:
        text = f"  - {pool.get('kind', 'member')} `{m['label']}`: {m['state']}, {m['in_flight']} in flight, "
        text += f"{m['pages_read']} pages read"
        inner = m.get("engine") or {}
        if inner.get("state"):
            text += f", model {inner['state']}"
        if m.get("last_error") and m["state"] != "up":
            text += f" — {m['last_error']}"
        lines.append(text)
    return lines


def gpu_devices(describe: dict[str, Any]) -> list[str]:
    """The GPUs the model engines run on when there are several (a device pool), else []."""
    for info in (describe.get("engines") or {}).values():
        pool = _pool_of(info or {})
        if pool.get("kind") == "device":
            return [str(m["label"]) for m in pool.get("members") or [] if str(m["label"]).startswith("cuda")]
    return []


def ocr_engine(describe: dict[str, Any]) -> str:
    """The engine that reads scanned pages by default (the router's OCR engine when routing)."""
    default = str(describe.get("default") or "")
    info = (describe.get("engines") or {}).get(default) or {}
    return str(info.get("ocr") or default)


def notice_markdown(describe: dict[str, Any]) -> str:
    """A banner when the preferred engine (DeepSeek-OCR-2) is not what reads the pages: what is
    missing and how to get it (the engine kind's ``help``)."""
    preferred = str(describe.get("preferred") or "")
    ocr = ocr_engine(describe)
    if not preferred or canonical_engine(ocr) == preferred:
        return ""
    best = engine_kind(preferred).capabilities
    default = str(describe.get("default") or "")
    info = (describe.get("engines") or {}).get(default) or {}
    reason = str(info.get("ocr_reason") or describe.get("default_reason") or "")
    unavailable = describe.get("unavailable") or {}
    lines = []
    if preferred in unavailable:
        lines.append(f"**{best.label} cannot run here:** {unavailable[preferred]}.")
    why = f" ({reason})." if reason else "."
    if info.get("ocr"):  # a router: what reads a page depends on the page
        lines.append(
            "PDF pages with a usable text layer are read from it (the **textlayer** engine); scans, images "
            f"and PDF pages without usable text by the **{ocr}** engine{why} Each page's engine is in the "
            "Status tab."
        )
    else:
        lines.append(f"Every page is read by the **{ocr}** engine{why}")
    if not engine_kind(ocr).capabilities.reads_scans:
        lines.append(
            "Only PDFs with embedded text can be read. Install an OCR engine: "
            '`pip install "ocr-app[light]"` (CPU) or `pip install "ocr-app[model]"` (DeepSeek-OCR-2).'
        )
    if preferred not in unavailable and best.help:  # folded: on a phone it filled the first screen
        lines.append(f"<details><summary>How to use {best.label}</summary>\n\n{best.help}\n\n</details>")
    return "\n\n".join(lines)


def vram_markdown(snap: VramSnapshot | None) -> str:
    if snap is None:
        return "GPU: not sampled yet"
    if not snap.available:
        detail = _strip_no_gpu(snap.reason)
        return f"**{NO_GPU}**" + (f" ({detail})" if detail else "") + "; pages run on the CPU."
    return f"**GPU:** {snap.summary()}"


def _strip_no_gpu(reason: str) -> str:
    """ "no GPU (NVML: not found)" → "NVML: not found": the panel already says there is no GPU."""
    text = reason.strip()
    match = re.match(r"^no GPU\s*(?:\((?P<inner>.*)\)|:\s*(?P<rest>.*))?$", text, flags=re.S)
    if match is None:
        return text
    return (match.group("inner") or match.group("rest") or "").strip()


def history_frame(history: VramHistory, now: float | None = None) -> pd.DataFrame:
    """Long-format frame (seconds ago, series, GiB) for ``gr.LinePlot``; empty without a GPU."""
    import pandas as pd

    now = time.time() if now is None else now
    rows = []
    for point in history.points():
        for series, value in (
            ("device used", point.used_gib),
            ("process allocated", point.allocated_gib),
            ("process reserved", point.reserved_gib),
        ):
            if value is not None:
                rows.append({"seconds": round(point.t - now, 1), "series": series, "GiB": round(value, 3)})
    return pd.DataFrame(rows, columns=["seconds", "series", "GiB"])


def panel_update(
    history: VramHistory, describe: dict[str, Any], settings: Settings
) -> tuple[str, pd.DataFrame, bool]:
    """Sample VRAM once; return (panel Markdown, plot frame, whether there is a GPU to plot)."""
    from ocr_app.runtime.vram import snapshot

    devices = gpu_devices(describe)  # several GPUs: one line each; the plot follows the first
    snap = history.sample(lambda: snapshot(devices[0] if devices else settings.device))
    gpus = [vram_markdown(snap)] + [vram_markdown(snapshot(d)) for d in devices[1:]]
    text = "\n\n".join(gpus) + f"\n\n**Engines**\n\n{engines_markdown(describe)}"
    return text, history_frame(history), snap.available


def plot_visible(frame: pd.DataFrame, has_gpu: bool) -> bool:
    """The VRAM chart shows once it has a line to draw (two samples); never without a GPU."""
    return has_gpu and frame["seconds"].nunique() >= 2


def engine_choices(
    engine_names: list[str], describe: dict[str, Any], missing: dict[str, str], has_gpu: bool
) -> tuple[list[tuple[str, str]], list[str]]:
    """(dropdown choices, one line per engine that cannot run here and why).

    An engine that still lacks something (``missing``: DeepSeek-OCR-2 without weights) is listed as
    unavailable instead of offered (it would fail on the first page), unless it is the default; one
    that wants a GPU is offered with a warning where there is none, since it does run on the CPU, slowly.
    """
    unavailable = dict(describe.get("unavailable") or {})
    default = str(describe.get("default") or "")
    choices = []
    for name in engine_names:
        if name in missing and name != default:
            unavailable[name] = missing[name]
            continue
        label = engine_label(name, describe)
        if engine_kind(name).capabilities.wants_gpu and not has_gpu:
            label += " — no GPU: slow on the CPU"
        choices.append((label, name))
    notes = [f"{name}: {why}" for name, why in sorted(unavailable.items())]
    return choices, notes
