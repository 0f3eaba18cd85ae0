"""Document structure from positioned lines: reading order, headings, lists, tables and page quality.

Why a room of its own: the text layer and the light engine (and any engine that returns positioned
lines) share these passes; none of them is an engine. Pure Python over words and boxes, no torch."""
