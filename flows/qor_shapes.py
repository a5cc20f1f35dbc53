"""Real model matmul shapes and their cycle counts on a D-wide unit, for equal-silicon comparisons.

The shapes come from the tile catalog of the real-tiles work (:mod:`tb.tiles.shapes`); this module only
adapts it. Cycles follow the matrix unit's throughput contract (docs/mu_interface.md, and
``tb.tiles.replay.contract_cycles``): a matmul of ``M`` rows (the batch), contraction ``K`` and ``N``
outputs is ``T = ceil(K/D) * ceil(N/D)`` weight tiles, each costing ``max(D, M)`` cycles (a tile
loads in D cycles while the previous one serves its M beats), plus the first load and the last
beats. The unit is assumed to have at least M accumulator rows; padding is included because K and N
are rounded up to whole tiles.
"""

import math
from dataclasses import dataclass

__all__ = ["Shape", "catalog", "cycles", "useful_macs", "padding_waste"]


@dataclass(frozen=True)
class Shape:
    """One matmul of a model per token step: ``count`` of them with contraction ``k`` and ``n`` outputs."""

    model: str
    op: str
    k: int
    n: int
    count: int = 1


def catalog():
    """The model shapes, or None when the tile catalog does not exist yet."""
    try:
        from tb.tiles import shapes as tshapes
    except ImportError:
        return None
    out = []
    for s in getattr(tshapes, "matmuls", lambda: [])():
        out.append(Shape(s.model, s.op, int(s.k), int(s.n), int(getattr(s, "count", 1))))
    return out or None


def cycles(shape: Shape, batch: int, width: int) -> int:
    """Cycles of ``shape.count`` matmuls of ``batch`` rows on a unit of width ``width``."""
    d, m = width, batch
    tiles = math.ceil(shape.k / d) * math.ceil(shape.n / d)
    one = d + (tiles - 1) * max(d, m) + m
    return shape.count * one


def useful_macs(shape: Shape, batch: int) -> int:
    """MACs the model needs (no padding)."""
    return shape.count * batch * shape.k * shape.n


def padding_waste(length: int, width: int) -> tuple:
    """Padding of a ``length``-wide slice to whole ``width`` tiles.

    Returns
    -------
    (fraction of fetched bytes, relative to useful bytes)
    """
    padded = math.ceil(length / width) * width
    return (padded - length) / padded, (padded - length) / length
