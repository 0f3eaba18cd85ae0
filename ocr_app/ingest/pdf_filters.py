"""A PDF stream's filter chain, decoded in bounded steps: how many bytes it really inflates to.

Why every stage and not only the first: ``[/FlateDecode /FlateDecode]`` is 2.4 KB whose first pass is
small and whose second is 1 GiB, and ``[/ASCII85Decode /FlateDecode]`` was handed whole to MuPDF,
which decoded it into memory (958 MB, then a traceback). Each stage here is a generator over the
previous stage's chunks, yielding at most about ``CHUNK`` bytes at a time: Flate through ``zlib`` with
``max_length``, ASCII85 and ASCIIHex through ``base64``/``binascii`` group by group, LZW and RunLength
code by code. The consumer stops pulling once it has counted past its budget, so no stage ever holds
more than a chunk or two, whatever the chain. Image codecs (DCT, JPX,
CCITT, JBIG2) pass their bytes through: an image's cost is its declared size (``pdf_guard``).
Why LZW and RunLength by hand: no maintained library here decodes them in bounded steps (MuPDF decodes
a whole stream at once); both are a few lines of the PDF reference (7.4.4, 7.4.5).
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Iterable, Iterator

CHUNK = 1 << 20
_ALIASES = {
    "Fl": "FlateDecode",
    "LZW": "LZWDecode",
    "RL": "RunLengthDecode",
    "A85": "ASCII85Decode",
    "AHx": "ASCIIHexDecode",
}


def decode_chain(raw: bytes, filters: Iterable[str]) -> Iterator[bytes]:
    """Chunks of ``raw`` decoded through ``filters`` (PDF names without the slash), lazily.

    A damaged stage ends where its data stops making sense, as MuPDF's reading does."""
    chunks: Iterator[bytes] = iter((raw,))
    for name in filters:
        stage = _STAGES.get(_ALIASES.get(name, name))
        if stage is not None:
            chunks = stage(chunks)
    return chunks


def _flate(chunks: Iterator[bytes]) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    try:
        for data in chunks:
            while True:
                out = inflater.decompress(data, CHUNK)
                data = inflater.unconsumed_tail
                if out:
                    yield out
                elif not data:
                    break
            if inflater.eof:
                return
    except zlib.error:
        return


def _ascii85(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Whole 5-character groups as they arrive (``z`` is four zero bytes); the last group at the end."""
    pending = b""
    for chunk in chunks:
        text = b"".join(chunk.split())
        done = b"~>" in text
        pending += text.split(b"~>", 1)[0].replace(b"z", b"!!!!!")
        pending = pending.removeprefix(b"<~")
        whole = len(pending) - len(pending) % 5
        try:
            if whole:
                yield base64.a85decode(pending[:whole])
        except ValueError:
            return
        pending = pending[whole:]
        if done:
            break
    if pending:
        try:
            yield base64.a85decode(pending)
        except ValueError:
            return


def _asciihex(chunks: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        text = b"".join(chunk.split())
        done = b">" in text
        pending += text.split(b">", 1)[0]
        whole = len(pending) - len(pending) % 2
        try:
            if whole:
                yield binascii.unhexlify(pending[:whole])
        except binascii.Error:
            return
        pending = pending[whole:]
        if done:
            break
    if pending:
        try:
            yield binascii.unhexlify(pending + b"0")
        except binascii.Error:
            return


def _run_length(chunks: Iterator[bytes]) -> Iterator[bytes]:
    pending = b""
    for chunk in chunks:
        data = pending + chunk
        out = bytearray()
        i = 0
        while i < len(data):
            n = data[i]
            if n == 128:
                if out:
                    yield bytes(out)
                return
            step = n + 2 if n < 128 else 2
            if i + step > len(data):
                break  # the run goes on in the next chunk
            out += data[i + 1 : i + step] if n < 128 else data[i + 1 : i + 2] * (257 - n)
            i += step
            if len(out) >= CHUNK:
                yield bytes(out)
                out.clear()
        pending = data[i:]
        if out:
            yield bytes(out)


def _lzw(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """PDF LZW (MSB first, 9 to 12 bits, clear 256, end 257, EarlyChange 1)."""
    table: list[bytes] = []
    out = bytearray()
    bits, nbits, width, prev, code = 0, 0, 9, b"", 0

    def reset() -> None:
        nonlocal width, prev
        table[:] = [bytes((i,)) for i in range(256)] + [b"", b""]
        width, prev = 9, b""

    reset()
    for chunk in chunks:
        for byte in chunk:
            bits = ((bits << 8) | byte) & 0xFFFFFF
            nbits += 8
            while nbits >= width:
                nbits -= width
                code = (bits >> nbits) & ((1 << width) - 1)
                if code == 256:
                    reset()
                    continue
                if code == 257:
                    break
                if code < len(table):
                    entry = table[code]
                elif code == len(table) and prev:
                    entry = prev + prev[:1]
                else:  # a code that cannot occur here: damaged data ends the stream
                    code = 257
                    break
                if prev and len(table) < 4096:
                    table.append(prev + entry[:1])
                prev = entry
                out += entry
                if len(table) + 1 >= (1 << width) and width < 12:
                    width += 1
            if len(out) >= CHUNK or code == 257:
                yield bytes(out)
                out.clear()
                if code == 257:
                    return
    if out:
        yield bytes(out)


_STAGES = {
    "FlateDecode": _flate,
    "LZWDecode": _lzw,
    "RunLengthDecode": _run_length,
    "ASCII85Decode": _ascii85,
    "ASCIIHexDecode": _asciihex,
}

__all__ = ["CHUNK", "decode_chain"]
