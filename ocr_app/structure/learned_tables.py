"""Tables read by a learned structure model, their cells filled with the page's own words.

Why: the structure model (``table_model``, SLANet-plus) sees rows without rules, wrapped cells and
spanning headers that rules over word positions miss, but its text would be OCR; here the cells get
the words the engine already has (the text layer's on born-digital pages, the light engine's on scans),
placed by where they stand on the page. A region whose predicted cells do not hold those words in a
grid (prose, a list, a figure's labels) is refused: it is not a table.

API: ``read_table(image, box, lines)`` → ``LearnedTable`` or None; ``box`` and the lines' boxes are in
the image's pixels (the page as rendered).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING

from ocr_app.structure.lines import group_rows
from ocr_app.structure.running_text import text_columns
from ocr_app.structure.slot_columns import (
    bullets_first,
    centre_spans,
    columns_from_strips,
    cuts_lines,
    drop_columns,
    empty_columns,
    fill_empty_spans,
    merge_flowing_columns,
    merge_interleaved_columns,
    split_columns,
    split_spans,
)
from ocr_app.structure.slot_rows import (
    cell_rows,
    count_header_rows,
    drop_empty_rows,
    head_over_rule,
    join_ruled_bands,
    join_wrapped_rows,
    join_wrapped_text_rows,
    lift_header_tails,
    lift_stray_lines,
    merge_header_rows,
    split_at_rules,
    split_keys,
    split_merged_rows,
)
from ocr_app.structure.table_bounds import below_top_rule, listing, snap, widen_nested
from ocr_app.structure.table_html import Cell
from ocr_app.structure.table_slots import (
    assign_words,
    is_grid,
    parse_tokens,
    refill_empty_columns,
    shape,
    spans,
)
from ocr_app.structure.table_verdict import (
    broken_sentences,
    figures_side_by_side,
    head_only_columns,
    heads_joined_to_body,
    keyed_rows,
    reading_size,
    same_words,
    split_head,
    without_sentences,
    wrapped_lines,
)

if TYPE_CHECKING:
    from PIL import Image

    from ocr_app.schema import Box
    from ocr_app.structure.lines import Rule, TextLine
    from ocr_app.structure.table_model import TableStructureModel

logger = logging.getLogger(__name__)

PAD = 0.6  # the crop around a region, in body-text heights: the model wants a little margin


@dataclass
class LearnedTable:
    box: Box
    rows: list[list[Cell]]
    header_rows: int
    lines: list[TextLine]  # the page's lines this table took
    # the model's reading before its empty columns were dropped: what tells a form's empty boxes
    # (``page_tables.form_pairs``) and what ``_read_part`` compares with the rules' reading
    as_read: list[list[Cell]] | None = None

    @property
    def read_rows(self) -> list[list[Cell]]:
        return self.rows if self.as_read is None else self.as_read


def read_table(
    image: Image.Image,
    box: Box,
    lines: Sequence[TextLine],
    *,
    model: TableStructureModel | None = None,
    body: float = 12.0,
    join: Callable[[str, str], str] | None = None,
    cuts: Sequence[Rule] = (),
) -> LearnedTable | None:
    """The table in ``box`` of the page ``image``, its cells filled with the words of ``lines``
    that lie in it; None when the model's cells do not hold those words in a grid. ``cuts``: the
    page's horizontal rules (``x0, y, x1``), which no row of cells runs across (``split_at_rules``)."""
    from ocr_app.structure.table_model import default_model

    inside = [ln for ln in lines if _centre_in(ln.box, box)]
    if len(inside) < 2:
        return None
    pad = PAD * body
    x0, y0 = max(0.0, box[0] - pad), max(0.0, box[1] - pad)
    x1, y1 = min(float(image.width), box[2] + pad), min(float(image.height), box[3] + pad)
    crop = image.crop((int(x0), int(y0), int(x1 + 0.999), int(y1 + 0.999)))
    structure = (model or default_model()).read(crop)
    slots = parse_tokens(structure.tokens)
    if len(slots) != len(structure.boxes):
        logger.debug("table model: %d cells, %d boxes", len(slots), len(structure.boxes))
    for slot, b in zip(slots, structure.boxes, strict=False):
        slot.box = (b[0] + int(x0), b[1] + int(y0), b[2] + int(x0), b[3] + int(y0))
    assign_words(slots, inside)
    slots = split_at_rules(slots, cuts)
    refill_empty_columns(slots)
    if slots and all(sl.col == 0 and sl.colspan == 1 for sl in slots):
        slots = columns_from_strips(slots, body)
    else:
        slots = merge_flowing_columns(split_spans(split_columns(slots, body), body))
        merge_interleaved_columns(slots)
        slots = merge_header_rows(lift_header_tails(split_keys(split_merged_rows(slots))), cuts)
        slots = join_wrapped_rows(fill_empty_spans(slots), cuts)
        slots = join_ruled_bands(join_wrapped_text_rows(lift_stray_lines(slots), cuts), cuts)
        slots = centre_spans(slots, body)
    head_over_rule(slots, cuts)
    if not is_grid(slots) or bullets_first(slots) or cuts_lines(slots):
        return None
    slots = drop_empty_rows(slots)
    rows = cell_rows(slots, join)
    empty = empty_columns(slots)
    if not empty:
        return LearnedTable(box, rows, count_header_rows(slots), inside)
    slots = drop_columns(slots, empty)
    return LearnedTable(box, cell_rows(slots, join), count_header_rows(slots), inside, as_read=rows)


MIN_REGION_SCORE = 0.5  # the layout model's table boxes below this are mostly a table's caption or a list
MIN_VETO_SCORE = 0.3  # a grid of words in no table box even this weak is no table (on a page the model saw)


# The rules' reading of a region's lines: rows of cells, header rows, and the lines it took.
Rules = Callable[[list["TextLine"]], "tuple[list[list[Cell]], int, list[TextLine]] | None"]


def tables_in_regions(
    image: Image.Image,
    regions: Sequence[Box],
    lines: Sequence[TextLine],
    *,
    body: float,
    model: TableStructureModel | None = None,
    join: Callable[[str, str], str] | None = None,
    rules: Rules | None = None,
    weak: Sequence[Box] = (),
    cuts: Sequence[Rule] = (),
    prose: list[Box] | None = None,
) -> tuple[list[LearnedTable], list[TextLine]]:
    """The tables read in ``regions`` (a layout model's table boxes), each from the lines it holds;
    the lines no table took. ``weak``: table boxes too weak to be read alone, which may still say
    that a box inside them is part of a wider table (``widen_nested``). ``prose``, when given, gets
    the boxes found to be columns of running text, which no later reading should take for a table.

    ``rules`` (the word-position finder over a region's lines) gives a second reading: it is kept
    when it separates at least as many rows and columns as the model sees (the model merges rows set
    without padding; the words' own gaps then say more), and when the model reads no grid. On
    ICDAR 2013's tables without rulings this choice scores adjacency F1 0.914 against the model's
    0.878 and the rules' 0.688 alone (docs/ACCURACY.md)."""
    rest = list(lines)
    tables: list[LearnedTable] = []
    for region in widen_nested(regions, rest, weak):
        snapped = snap(region, rest)
        if snapped is None:
            continue
        for part in [part for stacked in _stacked(*snapped) for part in _beside(*stacked)]:
            box, held = below_top_rule(*part, cuts, body)
            if text_columns(held, body):
                logger.debug("region %s: columns of running text side by side, not a table", box)
                if prose is not None:
                    prose.append(box)
                continue
            if listing(held):
                logger.debug("region %s: a listing in a monospaced font, kept as code", box)
                continue
            table = _read_part(image, box, held, model=model, body=body, join=join, rules=rules, cuts=cuts)
            if table is None:
                logger.debug("region %s: the model's cells do not hold its words in a grid", box)
                continue
            tables.append(table)
            taken = {id(ln) for ln in table.lines}
            rest = [ln for ln in rest if id(ln) not in taken]
    return _join_continued(tables, body), rest


def _covers(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] >= b[0] and a[1] >= b[1]


def _centre_in(b: Box, region: Box) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


def _label_row(row: Sequence[Cell]) -> bool:
    """A row whose only text is its first cell (a section label or a bar across the table)."""
    return bool(row) and bool(row[0].text.strip()) and not any(c.text.strip() for c in row[1:])


def _across(row: list[Cell], width: int) -> list[Cell]:
    """A label row whose label the model spans over some columns but not all → one cell across the
    table: nothing else stands in the row, so no column boundary is read where its span stops."""
    if len(row) > 1 and row[0].colspan > 1 and _label_row(row):
        return [Cell(row[0].text, width, row[0].rowspan)]
    return row


def _join_continued(tables: list[LearnedTable], body: float) -> list[LearnedTable]:
    """Tables read in two layout regions one right under the other, where the lower one starts with a
    label row (one label, no column heads: a bar or section label across the table) and both have the
    same columns and edges → one table. A table's first row names its columns; a part that starts with
    a label across is the rest of the table above (the layout model cut it at a filled bar)."""
    out: list[LearnedTable] = []
    for t in sorted(tables, key=lambda t: t.box[1]):
        t.rows = [_across(r, shape(t.rows)[1]) for r in t.rows]
        up = out[-1] if out else None
        if (
            up is not None
            and t.rows
            and _label_row(t.rows[0])
            and shape(up.rows)[1] == shape(t.rows)[1]
            and 0 <= t.box[1] - up.box[3] <= 2 * body
            and abs(t.box[0] - up.box[0]) <= body
            and abs(t.box[2] - up.box[2]) <= body
        ):
            out[-1] = LearnedTable(
                (up.box[0], up.box[1], max(up.box[2], t.box[2]), t.box[3]),
                [*up.rows, *t.rows],
                up.header_rows,
                [*up.lines, *t.lines],
            )
            continue
        out.append(t)
    return out


def _read_part(
    image: Image.Image,
    box: Box,
    held: list[TextLine],
    *,
    model: TableStructureModel | None,
    body: float,
    join: Callable[[str, str], str] | None,
    rules: Rules | None,
    cuts: Sequence[Rule] = (),
) -> LearnedTable | None:
    table = read_table(image, box, held, model=model, body=body, join=join, cuts=cuts)
    other = rules(held) if rules else None
    if table is not None and other is not None and (kept := without_sentences(held, other[2], body)):
        # the region took in the sentences over (or under) the table the word grid reads: the model
        # reads the table alone
        from ocr_app.schema import union_box

        box, held = union_box([ln.box for ln in kept]), kept
        table = read_table(image, box, held, model=model, body=body, join=join, cuts=cuts)
    # Rows under a key the model spans over them count as one where the word grid holds all the
    # words the model's reading does (not where it left the heads out: eu-026 on a scan).
    whole = (
        other is not None and table is not None and reading_size(other[0]) >= reading_size(table.read_rows)
    )
    if other is not None and (
        table is None
        or (figures_side_by_side(table.read_rows) and shape(other[0])[1] >= shape(table.read_rows)[1])
        or (whole and broken_sentences(table.read_rows) > broken_sentences(other[0]))
        or (whole and heads_joined_to_body(table.read_rows, other[0], other[1]))
        or (
            # the model gave a head a column of its own and its values to the next head's span
            # (owners set flush right under a "Budget" spanning two columns): every column of the
            # word grid holds body cells, in as many rows
            whole
            and head_only_columns(table.rows, table.header_rows)
            and not head_only_columns(other[0], other[1])
            and len(other[0]) >= keyed_rows(table.rows, table.header_rows)
        )
        or (
            _covers(
                shape(other[0]),
                (
                    keyed_rows(table.read_rows, table.header_rows)
                    - wrapped_lines(table.read_rows, other[0], table.header_rows)
                    - split_head(table.read_rows, other[0], table.header_rows)
                    if whole
                    else len(table.read_rows),
                    shape(table.read_rows)[1],
                ),
            )
            and not head_only_columns(other[0], other[1])
            # the same grid: spanning cells the model reads (a header over column groups, a bar
            # across the body) are structure the word positions cannot see
            and not (
                shape(other[0]) == shape(table.read_rows)
                and spans(table.read_rows) > spans(other[0])
                and same_words(table.read_rows, other[0], max(table.header_rows, other[1]))
            )
        )
    ):
        table = LearnedTable(box, other[0], other[1], other[2])
    return table


_LETTERS = re.compile(r"[^0-9a-z]+")
HEAD_ROWS = 3  # a repeated header is looked for among a region's first rows (a caption may come first)
STACK_GAP = 1.5  # × the region's median gap between rows: the white space that ends one table


def _stacked(box: Box, held: list[TextLine]) -> list[tuple[Box, list[TextLine]]]:
    """A region the layout model boxed over tables set one under the other → one part per table.

    Why: the model boxes two tables a little apart as one, and the structure model then reads one
    grid for both (the second's header becomes a body row, its rows drift). A table does not repeat
    its header row in its body: a row of words (no figures) that repeats one of the region's first
    rows, after a gap wider than the rows' usual gap, starts the next table."""
    from ocr_app.schema import union_box

    rows = sorted(group_rows(held), key=lambda r: r.box[1])
    if len(rows) < 4:
        return [(box, held)]

    def key(row) -> str:
        return _LETTERS.sub("", " ".join(i.text for i in sorted(row.items, key=lambda i: i.box[0])).lower())

    gaps = [max(b.box[1] - a.box[3], 0.0) for a, b in pairwise(rows)]
    usual = sorted(gaps)[len(gaps) // 2]
    heads = [key(r) for r in rows[:HEAD_ROWS]]
    cuts = [
        k
        for k in range(2, len(rows) - 1)
        if key(rows[k])
        and key(rows[k]) in heads[: k - 1]
        and not any(ch.isdigit() for ch in key(rows[k]))
        and gaps[k - 1] > max(STACK_GAP * usual, 0.0)
    ]
    if not cuts:
        return [(box, held)]
    parts = []
    for a, b in zip([0, *cuts], [*cuts, len(rows)], strict=True):
        lines = [i for r in rows[a:b] for i in r.items]
        parts.append((union_box([ln.box for ln in lines]), lines))
    logger.debug("region %s: %d tables one under the other", box, len(parts))
    return parts


def _beside(box: Box, held: list[TextLine]) -> list[tuple[Box, list[TextLine]]]:
    """A region the layout model boxed over two tables set side by side → one part per table, each
    from its row of heads down (``borderless.side_by_side``: the first head comes again after the
    row's widest gap). A line above the heads on one side alone is that table's title: left as text.
    Why: the structure model reads one grid of both, their titles as heads over column groups
    (issue 30, round 11)."""
    from ocr_app.schema import union_box
    from ocr_app.structure.borderless import side_by_side

    rows = sorted(group_rows(held), key=lambda r: r.box[1])
    pair = side_by_side([r.items for r in rows])
    if pair is not None and pair[1] <= HEAD_ROWS:
        split, row = pair[0], rows[pair[1]]
        parts = []
        for left in (True, False):
            lines = [
                ln for ln in held if ((ln.box[0] + ln.box[2]) / 2 < split) == left and ln.box[3] > row.box[1]
            ]
            if lines:
                parts.append((union_box([ln.box for ln in lines]), lines))
        logger.debug("region %s: two tables side by side", box)
        return parts
    return [(box, held)]
