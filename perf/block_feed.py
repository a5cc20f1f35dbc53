"""The slice's weight feed on block-scaled formats: bytes per tile with the scales, and the knee.

A block-scaled weight tile (``docs/slice.md``, "Block-scaled formats") is ``D`` element rows of
``D * b / 8`` bytes and ``D / B`` scale rows of ``D`` one-byte codes per unit, so a unit consumes
``D * (b + 8/B) / 8`` bytes per cycle when it takes one weight row per cycle: the knee of the
unit's contract (:func:`knee_feed`). The slice's gearbox gives one row per cycle, element or scale,
so a tile holds the fork for ``D + D/B`` cycles: at full feed a unit reaches ``D / (D + D/B)`` of
its peak, and the slice's own knee is ``tile_bytes / (D + D/B)`` (:func:`slice_knee_feed`), a
factor ``B / (B + 1)`` below the contract's. :func:`block_macs_per_cycle` is the steady state of
:class:`perf.contract.Product` with that tile cost. Numbers are exact rationals as floats.
"""

from __future__ import annotations

from hw.formats import get_block_format, get_format

from .contract import Product

__all__ = ["tile_bytes", "knee_feed", "slice_knee_feed", "slice_load_cycles",
           "block_macs_per_cycle"]


def _shape(width: int, fmt: str) -> tuple:
    bf = get_block_format(fmt)
    nb = bf.check_width(width)
    return get_format(bf.element).bits, bf.block, nb


def tile_bytes(width: int, fmt: str, units: int = 1) -> int:
    """HBM bytes of one weight tile per unit, scales included, times ``units``:
    ``units * (D * D * b / 8 + D * D / B)``."""
    b, _, nb = _shape(width, fmt)
    return units * (width * width * b // 8 + nb * width)


def knee_feed(width: int, fmt: str, units: int = 1) -> float:
    """The unit contract's knee: ``units * D * (b + 8/B) / 8`` bytes per cycle (one weight row per
    cycle per unit, the scales riding along)."""
    return tile_bytes(width, fmt, units) / width


def slice_load_cycles(width: int, fmt: str, feed: float | None = None, units: int = 1) -> float:
    """Cycles the slice takes to deliver one tile to each of ``units`` units: ``D + D/B`` rows at one
    per cycle, or the feed's ``tile_bytes / feed`` if that is longer (None: unlimited feed)."""
    _, _, nb = _shape(width, fmt)
    rows = width + nb
    if feed is None:
        return float(rows)
    if not feed > 0:
        raise ValueError(f"feed must be a positive number of bytes per cycle, not {feed!r}")
    return max(float(rows), tile_bytes(width, fmt, units) / feed)


def slice_knee_feed(width: int, fmt: str, units: int = 1) -> float:
    """The slice's knee: ``tile_bytes / (D + D/B)`` bytes per cycle (rows one per cycle)."""
    return tile_bytes(width, fmt, units) / slice_load_cycles(width, fmt)


def block_macs_per_cycle(product: Product, fmt: str, feed: float | None = None) -> float:
    """Useful MACs per cycle of ``product`` on a slice of block-scaled units in steady state: the
    product's schedule with every tile loading in :func:`slice_load_cycles`."""
    load = slice_load_cycles(product.width, fmt, feed, product.units)
    return product.macs_useful / product.schedule().steady_cycles(load)
