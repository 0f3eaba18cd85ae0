"""Running text: columns whose sentences run on from one line to the next (issue 30 item 3).

Why: columns of prose set side by side (a sidebar beside two body columns, a newsletter's three
columns) line up like the columns of a table, and a narrow column has few words a line and a ragged
edge, so word counts and line lengths alone do not tell them apart. What a reader sees is that the
sentences carry on: a line that does not close its sentence is followed, right under it, by a line
that starts in lower case. A table's cell may wrap too, but a column of labels or figures does not
run on, and the next row's cell starts an entry of its own.

Duck-typed over lines or pieces with ``text``, ``box``, ``bold`` and ``weight``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

SENTENCE_END = (".", "!", "?", ":", ";")
RUN_ON_SHARE = 0.5  # this share of a column's plain lines running on into the next: running text
MIN_RUN_ONS = 2


def _heavy(line: Any) -> bool:
    return bool(getattr(line, "bold", False) or getattr(line, "weight", 400) >= 600)


def runs_on(upper: Any, lower: Any) -> bool:
    """Whether ``lower`` carries on the sentence of ``upper``: right under it (a gap under a line's
    height), ``upper`` not closing a sentence, ``lower`` starting in lower case."""
    top, bottom = upper.text.rstrip(), lower.text.lstrip()
    if not top or not bottom or top.endswith(SENTENCE_END) or not bottom[0].islower():
        return False
    height = upper.box[3] - upper.box[1]
    return -0.5 * height <= lower.box[1] - upper.box[3] <= height


def running_text(column: Sequence[Any]) -> bool:
    """Whether one column's lines (any order) are running text: half or more of its plain lines
    (headings set heavy do not count) run on into the line under them."""
    lines = sorted(column, key=lambda ln: (ln.box[1], ln.box[0]))
    plain = [ln for ln in lines if not _heavy(ln)]
    ons = sum(1 for a, b in itertools.pairwise(lines) if not _heavy(a) and runs_on(a, b))
    return ons >= MIN_RUN_ONS and ons >= RUN_ON_SHARE * len(plain)


MIN_COLUMN_LINES = 3  # lines starting at one x that make a column
COVER_SHARE = 0.8  # the columns of running text hold this share of the lines: the whole is text


def text_columns(lines: Sequence[Any], body: float) -> bool:
    """Whether ``lines`` (a layout model's table region) are two or more columns of running text
    side by side: the lines grouped by where they start (within a body height), each group of
    three or more running text, together nearly all the lines. A table's column of labels or
    figures does not run on, and figures set flush right start at no shared x."""
    groups: list[list[Any]] = []
    for ln in sorted(lines, key=lambda ln: ln.box[0]):
        if groups and ln.box[0] - groups[-1][0].box[0] <= body:
            groups[-1].append(ln)
        else:
            groups.append([ln])
    columns = [g for g in groups if len(g) >= MIN_COLUMN_LINES]
    return (
        len(columns) >= 2
        and sum(len(g) for g in columns) >= COVER_SHARE * len(lines)
        and all(running_text(g) for g in columns)
    )
