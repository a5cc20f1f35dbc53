"""The matrix unit's throughput contract as code: schedules, cycles, beats and counter values.

This is the one performance model of the unit (``docs/mu_interface.md``, "Tiles" and "Latency and
throughput"); the shape costs (:mod:`perf.shapes`), the real-tile replay (``tb/tiles``), the slice's
expected counters and its starvation knee (``tb/slice``) all read it. The rules it encodes:

* A weight tile is ``D`` weight beats (rows of ``D`` elements). The unit holds two tiles: the
  *loading* one fills while the *active* one serves ``x`` beats; an ``x`` beat with ``swap`` makes
  the loaded tile active (in the cycle its row 0 of the next tile may already be taken).
* An ``x`` beat is one activation row against the active tile: ``D * D`` MACs, one per cycle.
* Hence a tile serving ``b`` beats holds the unit for ``max(L, b)`` cycles, ``L`` being the cycles
  to load the next tile: ``L = D`` at full feed (one weight beat per cycle), longer when the weight
  feed brings fewer than ``D * bits / 8`` bytes per cycle per unit.
* From the first weight beat to the last result: tile 0 loads in ``L`` cycles, tiles ``0 .. T-2``
  hold the unit ``max(L, b_t)`` each, then the last tile's ``b_{T-1}`` beats and the pipeline
  latency (``MatrixUnit.latency``) follow.
* A unit built with ``loop = 2`` (the FP32 accumulate over two cycles) takes an ``x`` beat whose row
  equals the row of the beat taken in the cycle before one cycle later (an interlock bubble). A
  tile's beats then take ``b_t`` cycles plus one per such pair inside it, plus one if the next
  tile's first beat repeats its last beat's row and would follow it at once; the rules above hold
  with these cycles in place of ``b_t`` (:meth:`Schedule.spans`). Rows in turn (``R >= 2``) pay
  nothing, and neither does a one-beat tile followed by another (it waits one cycle inside the
  ``D`` cycles the next tile's weights take to load), so a :class:`Product`'s cycles are the same
  in both modes.

A :class:`Product` turns ``y[M x N] = x[M x K] . W[K x N]`` into the schedule one unit runs: the
``ceil(N / D)`` column tiles are dealt to ``units`` units working in lockstep (``groups`` column
tiles each, the last group padded), the ``M`` rows are served in ``passes`` of at most ``rows``
(the unit's accumulator rows), and each pass walks the ``ceil(K / D)`` k-tiles, accumulating.
Numbers are exact integers where the hardware counts (beats, MACs, cycles at full feed); the
feed-bound cycles are real numbers (a rate in bytes per cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw.formats import BLOCK_FORMATS, get_block_format, get_format

__all__ = ["Schedule", "Product", "load_cycles", "tile_bytes", "knee_feed", "slice_load_cycles",
           "slice_knee_feed", "slice_macs_per_cycle"]


def _positive(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, not {value!r}")
    return value


def load_cycles(width: int, bits: int = 8, feed: float | None = None, units: int = 1) -> float:
    """Cycles to load one tile into each of ``units`` units sharing a weight feed.

    Parameters
    ----------
    width : int
        D.
    bits : int
        Element bits (a weight row is ``D * bits / 8`` bytes).
    feed : float, optional
        Weight bytes per cycle the units share (None: full feed, one weight beat per cycle each).
    units : int
        Units fed in lockstep (a super-row of ``units * D`` weights per tile row).

    Returns
    -------
    float
        ``D`` at full feed, else ``D * max(1, units * D * bits / 8 / feed)``.

    Raises
    ------
    ValueError
        If ``feed`` is not positive.
    """
    _positive("width", width)
    if feed is None:
        return width
    if not feed > 0:
        raise ValueError(f"feed must be a positive number of bytes per cycle, not {feed!r}")
    return width * max(1.0, units * width * bits / 8 / feed)


@dataclass(frozen=True)
class Schedule:
    """What one unit runs: weight tiles in order, each serving a number of ``x`` beats.

    Parameters
    ----------
    width : int
        D.
    tile_beats : tuple of int
        ``x`` beats served by tile ``t``, in order (each >= 1).
    y_beats : int
        Result rows the beats produce (beats carrying ``last``).
    rows : tuple of tuple of int, optional
        The accumulator row of each beat, per tile (needed with ``loop = 2``).
    loop : int
        The unit's accumulate loop cycles (1 or 2); 2 adds the interlock bubbles.
    """

    width: int
    tile_beats: tuple
    y_beats: int = 0
    rows: tuple | None = None
    loop: int = 1

    def __post_init__(self):
        _positive("width", self.width)
        beats = tuple(self.tile_beats)
        if not beats or any(not isinstance(b, int) or b < 1 for b in beats):
            raise ValueError(f"tile_beats must be a non-empty list of positive ints, not {beats!r}")
        object.__setattr__(self, "tile_beats", beats)
        if self.loop not in (1, 2):
            raise ValueError(f"loop must be 1 or 2, not {self.loop!r}")
        if self.rows is not None:
            rows = tuple(tuple(int(r) for r in t) for t in self.rows)
            if tuple(len(t) for t in rows) != beats:
                raise ValueError("rows must give one row per beat of every tile (lengths "
                                 f"{tuple(len(t) for t in rows)}, tile_beats {beats})")
            object.__setattr__(self, "rows", rows)
        elif self.loop == 2:
            raise ValueError("loop=2 needs the beats' rows (rows=...) to count the interlock bubbles")

    def spans(self) -> tuple:
        """Cycles each tile's beats occupy the ``x`` port at full rate: ``b_t``, plus with
        ``loop = 2`` one per beat repeating its predecessor's row, and, for ``t < T - 1``, one if
        the next tile's first beat repeats this tile's last row (it waits when it would follow at
        once, which is when the tile holds the unit for its beats)."""
        if self.loop == 1:
            return self.tile_beats
        out = []
        for t, rows in enumerate(self.rows):
            inner = sum(a == b for a, b in zip(rows, rows[1:], strict=False))
            edge = t + 1 < len(self.rows) and self.rows[t + 1][0] == rows[-1]
            out.append(len(rows) + inner + int(edge))
        return tuple(out)

    @property
    def tiles(self) -> int:
        return len(self.tile_beats)

    @property
    def w_beats(self) -> int:
        """Weight beats (``cnt_w_beats``): ``D`` per tile."""
        return self.tiles * self.width

    @property
    def x_beats(self) -> int:
        """Activation beats (``cnt_x_beats``)."""
        return sum(self.tile_beats)

    @property
    def macs(self) -> int:
        """MACs issued, padding included (``cnt_macs``): ``D * D`` per ``x`` beat."""
        return self.x_beats * self.width * self.width

    def counters(self) -> dict:
        """The unit's beat and MAC counters after the schedule ran: ``w_beats``, ``x_beats``,
        ``y_beats``, ``macs`` (``docs/mu_interface.md``, "Counters")."""
        return {"w_beats": self.w_beats, "x_beats": self.x_beats, "y_beats": self.y_beats,
                "macs": self.macs}

    def steady_cycles(self, load: float | None = None) -> float:
        """Cycles with fill and pipeline latency left out: ``sum_t max(L, b_t)`` (``b_t`` from
        :meth:`spans`).

        ``load`` is ``L`` (:func:`load_cycles`; default ``D``, full feed).
        """
        load = self.width if load is None else load
        return sum(max(load, b) for b in self.spans())

    def cycles(self, latency: int = 0, load: float | None = None) -> float:
        """Cycles from the first weight beat to the transfer of the last result, ``y`` never blocked.

        ``L + sum_{t < T-1} max(L, b_t) + b_{T-1} + latency`` (``load`` = ``L``, default ``D``;
        ``b_t`` from :meth:`spans`).
        """
        load = self.width if load is None else load
        *head, last = self.spans()
        return load + sum(max(load, b) for b in head) + last + latency


@dataclass(frozen=True)
class Product:
    """``y[M x N] = x[M x K] . W[K x N]`` on ``units`` units of width ``D`` with ``rows`` accumulator
    rows each.

    Parameters
    ----------
    m, k, n : int
        The product's shape.
    width : int
        D.
    rows : int, optional
        Accumulator rows per unit (default ``m``: one pass).
    units : int
        Units sharing the work (column tiles dealt round-robin per group).
    """

    m: int
    k: int
    n: int
    width: int
    rows: int | None = None
    units: int = 1

    def __post_init__(self):
        for name in ("m", "k", "n", "width", "units"):
            _positive(name, getattr(self, name))
        if self.rows is not None:
            _positive("rows", self.rows)

    @property
    def k_tiles(self) -> int:
        return math.ceil(self.k / self.width)

    @property
    def n_tiles(self) -> int:
        return math.ceil(self.n / self.width)

    @property
    def tiles(self) -> int:
        """Weight tiles of the padded product (``k_tiles * n_tiles``), each fetched once per pass."""
        return self.k_tiles * self.n_tiles

    @property
    def groups(self) -> int:
        """Column tiles each unit runs (the last group padded when ``units`` does not divide)."""
        return math.ceil(self.n_tiles / self.units)

    @property
    def passes(self) -> int:
        """Passes over the weights: ``ceil(M / rows)``."""
        return math.ceil(self.m / (self.rows or self.m))

    def pass_rows(self) -> list:
        """Rows served by each pass."""
        r = self.rows or self.m
        return [min(r, self.m - p * r) for p in range(self.passes)]

    def schedule(self) -> Schedule:
        """One unit's schedule: per group, per pass, the ``k_tiles`` tiles serving the pass's rows
        (a result row per row at the last k-tile)."""
        beats = [b for _ in range(self.groups) for b in self.pass_rows() for _ in range(self.k_tiles)]
        return Schedule(self.width, tuple(beats), y_beats=self.groups * self.m)

    @property
    def y_rows(self) -> int:
        """Result rows of real (not padding) column tiles, over all units: ``M * ceil(N / D)``."""
        return self.m * self.n_tiles

    @property
    def macs_useful(self) -> int:
        return self.m * self.k * self.n

    @property
    def weights_streamed(self) -> int:
        """Weight elements streamed to all units, padding included (each pass fetches again)."""
        return self.passes * self.groups * self.units * self.k_tiles * self.width * self.width

    @property
    def weights_useful(self) -> int:
        """Weight elements of ``W`` streamed (``K * N`` per pass)."""
        return self.passes * self.k * self.n

    def steady_cycles(self, bits: int = 8, feed: float | None = None) -> float:
        """Cycles of the whole product, fill and latency left out, at a weight feed of ``feed`` bytes
        per cycle shared by the units (None: full feed).

        The value of ``self.schedule().steady_cycles(load)``, computed per pass instead of per tile
        (a prefill product has tens of thousands of tiles): every group runs ``k_tiles`` tiles of
        each pass's ``b`` beats.
        """
        load = load_cycles(self.width, bits, feed, self.units)
        return self.groups * self.k_tiles * sum(max(load, b) for b in self.pass_rows())

    def macs_per_cycle(self, bits: int = 8, feed: float | None = None) -> float:
        """Useful MACs per cycle in steady state: ``M * K * N / steady_cycles``.

        At ``M = 1`` (every weight used once) this is the feed-bound line
        ``min(feed * 8 / bits, units * D) * weights_useful / weights_streamed``.
        """
        return self.macs_useful / self.steady_cycles(bits, feed)


# -- the slice's weight feed, element rows and (block-scaled formats) scale rows --------------------
# A weight tile is ``D`` element rows of ``D * b / 8`` bytes and, on a block-scaled format, ``D / B``
# scale rows of ``D`` one-byte codes per unit (``docs/slice.md``), so a unit consumes
# ``D * (b + 8/B) / 8`` bytes per cycle when it takes one weight row per cycle (:func:`knee_feed`).
# The slice's gearbox gives one element row per cycle and a tile's scale rows with its last element
# row, on their own path to the units' ``ws`` (``docs/slice.md``), so a tile holds the slice for
# ``D`` cycles at full feed and the slice's knee is the contract's (:func:`slice_knee_feed`).
# Per-tensor formats have no scale rows (``D/B = 0``).


def _shape(width: int, fmt: str) -> tuple:
    """``(b, B, D/B)`` of a block-scaled format; ``(b, None, 0)`` of a per-tensor one (no scale rows)."""
    if fmt not in BLOCK_FORMATS:
        return get_format(fmt).bits, None, 0
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
    """Cycles the slice takes to deliver one tile to each of ``units`` units: its ``D`` element rows
    at one per cycle (the scale rows ride beside them), or the feed's ``tile_bytes / feed`` if that
    is longer (None: unlimited feed)."""
    _shape(width, fmt)   # checks fmt and D
    rows = width
    if feed is None:
        return float(rows)
    if not feed > 0:
        raise ValueError(f"feed must be a positive number of bytes per cycle, not {feed!r}")
    return max(float(rows), tile_bytes(width, fmt, units) / feed)


def slice_knee_feed(width: int, fmt: str, units: int = 1) -> float:
    """The slice's knee: ``tile_bytes / D`` bytes per cycle (element rows one per cycle, the scale
    rows beside them), the contract's :func:`knee_feed`."""
    return tile_bytes(width, fmt, units) / slice_load_cycles(width, fmt)


def slice_macs_per_cycle(product: Product, fmt: str, feed: float | None = None) -> float:
    """Useful MACs per cycle of ``product`` on a slice in steady state: the product's schedule with
    every tile loading in :func:`slice_load_cycles` (scale bytes included for block-scaled formats)."""
    load = slice_load_cycles(product.width, fmt, feed, product.units)
    return product.macs_useful / product.schedule().steady_cycles(load)
