"""Definition lists: the terms of a glossary or an option list read as short bold lines, but they are
no headings. A heading heads a section that runs on at its own left edge; a term stands over its
definition, and the terms of one list follow one another in one style at one left edge.

Why a module of its own: the heading rules only ask whether a row is a term (``RowContext.term``);
that is decided over a section's rows, not one row.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from ocr_app.structure.headings import NUMBERED_HEADING, SECTION_NUMBER
from ocr_app.structure.lines import LayoutConfig, Row, Table, accent

BLACK = 0x000000
DEFINITION_INDENT = 1.5  # × type size: a definition set in from its term by at least this much
MAX_INDENTED_ROWS = 20  # an indented definition runs this many lines at most (a section runs on)


def definition_terms(units: Sequence[Row | Table], config: LayoutConfig) -> set[int]:
    """ids of the rows that are the terms of a definition list (units sorted top to bottom): those
    over a definition of a line or two (``glossary_terms``) and those over a definition set in from
    them (``indented_terms``)."""
    return glossary_terms(units, config) | indented_terms(units, config)


def _term_like(unit: Row | Table, config: LayoutConfig, colored: bool = False) -> bool:
    """A short line that may be a term: bold, or (``colored``) all in one colour that is no grey."""
    return (
        isinstance(unit, Row)
        and (unit.weight >= 600 or (colored and accent(unit.color, BLACK)))
        and len(unit.text.split()) <= config.max_term_words
        and sum(c.isalpha() for c in unit.text) >= 2
        and not SECTION_NUMBER.match(unit.text)  # "2.1 Scope": a numbered section's title
        and not NUMBERED_HEADING.match(unit.text)
    )


def _same_style(term: Row, last: Row) -> bool:
    """Whether two terms are set alike: weight, size, typefaces and left edge."""
    return (
        term.weight == last.weight
        and abs(term.size - last.size) <= 0.05 * term.size
        and {i.font for i in term.items} == {i.font for i in last.items}
        and abs(term.box[0] - last.box[0]) <= 0.5 * term.size
    )


Entry = tuple[Row, list[Row]]  # a term and its definition's rows


def _runs(
    units: Sequence[Row | Table],
    config: LayoutConfig,
    entry: Callable[[int, list[Entry]], tuple[list[Row], bool] | None],
    colored: bool = False,
) -> set[int]:
    """ids of the terms of every run of ``min_definition_entries`` or more entries one after another.
    ``entry(k, run)`` reads the entry that the term-like row ``units[k]`` opens: its definition's rows
    and whether it goes on the open ``run`` (else a new run starts with it), or None: no entry."""
    found: set[int] = set()
    run: list[Entry] = []

    def close() -> None:
        if len(run) >= config.min_definition_entries:
            found.update(id(term) for term, _ in run)
        run.clear()

    k = 0
    while k < len(units):
        term = units[k]
        read = entry(k, run) if isinstance(term, Row) and _term_like(term, config, colored) else None
        if read is None:
            close()
            k += 1
            continue
        definition, follows = read
        if not follows:
            close()
        run.append((term, definition))  # type: ignore[arg-type]
        k += 1 + len(definition)
    close()
    return found


def glossary_terms(units: Sequence[Row | Table], config: LayoutConfig) -> set[int]:
    """A glossary: a short bold line with no section number right above its definition, a few lines of a
    lighter weight in its size that start no further left, with ``min_definition_entries`` or more
    such entries one after another in one style at one left edge, none set off from the entry above
    by a blank line more than its term is from its definition. A heading stands apart from the text
    above it and heads a section longer than a line or two; a glossary's terms follow one another at
    the list's pitch."""

    def entry(k: int, run: list[Entry]) -> tuple[list[Row], bool] | None:
        term = units[k]
        assert isinstance(term, Row)
        size = term.size
        definition: list[Row] = []
        for unit in units[k + 1 :]:
            above = definition[-1] if definition else term
            if (
                not isinstance(unit, Row)
                or _term_like(unit, config)
                or unit.weight >= term.weight
                or abs(unit.size - size) > 0.1 * size
                or unit.box[0] < term.box[0] - 0.5 * size
                or unit.box[1] - above.box[3] >= config.isolation_gap_ratio * size
            ):
                break
            definition.append(unit)
        if not 1 <= len(definition) <= config.max_definition_rows:
            return None
        if not run:
            return definition, False
        last_term, last_definition = run[-1]
        inner = definition[0].box[1] - term.box[3]
        apart = term.box[1] - last_definition[-1].box[3]
        return definition, _same_style(term, last_term) and apart < inner + config.isolation_gap_ratio * size

    return _runs(units, config, entry)


def indented_terms(units: Sequence[Row | Table], config: LayoutConfig) -> set[int]:
    """An option list (DocBook's variable lists, man pages, rustdoc's item lists):
    ``min_definition_entries`` or more short bold (or coloured) lines in one style at one left edge,
    each over a definition whose every line is set in from it by ``DEFINITION_INDENT`` or more, in a
    lighter weight (or another colour) and no smaller type, and nothing else at the terms' edge between
    them. A definition may run to paragraphs; the indent bounds it. A section under a heading runs on
    at the heading's edge, and a heading outdented over its text is set larger than that text."""

    def entry(k: int, run: list[Entry]) -> tuple[list[Row], bool] | None:
        term = units[k]
        assert isinstance(term, Row)
        definition = _indented_definition(units, k)
        last = k == len(units) - 1  # the page's last term: its definition goes on over the page
        if not definition and not (last and run):
            return None
        return definition, bool(run) and _same_style(term, run[-1][0])

    return _runs(units, config, entry, colored=True)


def _indented_definition(units: Sequence[Row | Table], k: int) -> list[Row]:
    """The rows under ``units[k]`` set in from it as its definition, or [] where they are none."""
    term = units[k]
    assert isinstance(term, Row)
    rows: list[Row] = []
    for unit in units[k + 1 :]:
        if not isinstance(unit, Row) or unit.box[0] < term.box[0] + DEFINITION_INDENT * max(
            term.size, unit.size
        ):
            break
        rows.append(unit)
    if not rows or len(rows) > MAX_INDENTED_ROWS:
        return []
    size = statistics.median(r.size for r in rows)
    # lighter than its term, or its term in a colour of its own (rustdoc's item names, links in their
    # kind's colour over a summary set in: round 33)
    lighter = rows[0].weight < term.weight or accent(term.color, rows[0].color)
    near = rows[0].box[1] - term.box[3] <= 2.5 * size
    return rows if lighter and near and term.size <= 1.05 * size else []
