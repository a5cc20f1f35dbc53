"""Bit-true model of the ``exact`` mode on OCP MX formats: the window (``docs/numerics.md`` 7.7).

Written from the contract's rules on Python integers (no carry-pending form, no chunks other than
the anchor's unit): a row keeps its sum ``V`` in units of ``2**L(b)``, its anchor ``b`` and a lost
bit. Per beat the nonzero block terms ``P_i * 2**(e_i + lsb)`` give the beat's anchor ``need``, the
largest ``ceil((e_i + 254) / Q)``; the row's anchor rises to it (its sum floor-divided by
``2**(Q (need - b))``), and each term is placed at ``e_i + 254 + H - Q b`` under the row's anchor
``b`` (``>>`` on a negative ``int`` is the floor). Every dropped nonzero remainder sets the lost
bit. The result is ``RNE_fp32((2 V + lost) * 2**(L(b) - 1))`` with the ``exact`` mode's specials and
beat limit (:func:`tb.mu.model_exact.exact_result`).
"""

import math
from dataclasses import dataclass, field

from hw.mu.window import window_widths

from .model_exact import exact_result
from .rounding import NAN as NAN_CLS
from .rounding import NINF as NINF_CLS
from .rounding import PINF as PINF_CLS

__all__ = ["WindowRow", "WindowAccModel", "WindowColumns"]


@dataclass
class WindowRow:
    """One row: sum ``v`` (units of ``2**L(b)``), anchor ``b``, lost bit, beats, specials."""

    v: int = 0
    b: int = 0
    lost: bool = False
    beats: int = 0
    nan: bool = False
    pinf: bool = False
    ninf: bool = False


@dataclass
class WindowAccModel:
    """Rows of window accumulators for one column of MX format ``fmt`` at D = ``width``.

    :meth:`beat` takes the beat's block terms (integers ``P_i``, their exponent sums ``e(sx) + e(sw)``
    without the element LSB) and its specials, and returns ``(code, overflow)`` on ``last``.
    """

    fmt: str
    width: int
    rows: int = 1
    guard_bits: int = 16
    chunk_bits: int = 8
    _rows: list = field(default_factory=list, init=False, repr=False)

    def __post_init__(self):
        self.ww = window_widths(self.fmt, self.width, self.guard_bits, self.chunk_bits)
        self._rows = [WindowRow() for _ in range(self.rows)]

    def need(self, terms, exps) -> int:
        """The beat's anchor: the largest ``ceil((e_i + 254) / Q)`` of its nonzero terms (0 if
        none)."""
        ww = self.ww
        if len(terms) != ww.blocks or len(exps) != ww.blocks:
            raise ValueError(f"a beat has {ww.blocks} block terms and exponents, not "
                             f"{len(terms)} and {len(exps)}")
        lim = 1 << (ww.term_bits - 1)
        for p in terms:
            if not -lim <= p < lim:
                raise ValueError(f"block term {p} is outside {ww.term_bits} bits")
        return max([ww.need(e) for p, e in zip(terms, exps, strict=True) if p] or [0])

    def place(self, terms, exps, b: int) -> tuple:
        """``(T, lost)``: the beat's terms floor-shifted to their positions under anchor ``b`` and
        summed (units of ``2**L(b)``), and whether a term lost bits below the window."""
        ww = self.ww
        total, lost = 0, False
        for p, e in zip(terms, exps, strict=True):
            pos = e - ww.exp_min + ww.top - ww.chunk_bits * b
            if pos >= 0:
                total += p << pos
            else:
                total += p >> -pos
                lost |= (p & ((1 << -pos) - 1)) != 0
        return total, lost

    def beat(self, terms, exps, *, nan=False, inf=False, inf_neg=False, first=False, last=False,
             row=0):
        ww = self.ww
        r = min(row, self.rows - 1)
        if first:
            self._rows[r] = WindowRow()
        st = self._rows[r]
        need = self.need(terms, exps)
        st.beats += 1
        st.nan |= nan
        if inf and not nan:
            st.pinf |= not inf_neg
            st.ninf |= inf_neg
        if need > st.b:
            st.v, st.lost = _floor_shift(st.v, ww.chunk_bits * (need - st.b), st.lost)
            st.b = need
        t, tlost = self.place(terms, exps, st.b)
        st.lost |= tlost
        st.v += t
        assert abs(st.v) <= 1 << (ww.acc_bits - 2) or st.beats > 1 << self.guard_bits, \
            "the window's sum left its range"
        if not last:
            return None
        return self.result(st)

    def result(self, st: WindowRow) -> tuple:
        code, over = exact_result(2 * st.v + st.lost, st.beats, st.nan, st.pinf, st.ninf,
                                  guard_bits=self.guard_bits, lsb_exp=self.ww.lsb(st.b) - 1)
        return code, over


def _floor_shift(v: int, s: int, lost: bool) -> tuple:
    """``(floor(v / 2**s), lost or a nonzero remainder)``."""
    if s == 0:
        return v, lost
    return v >> s, lost or (v & ((1 << s) - 1)) != 0


class WindowColumns:
    """The window of every column of a unit (:class:`tb.mu.model.MatrixUnitModel` with an MX format
    and ``acc="exact"``): one :class:`WindowAccModel` per column, fed from block terms."""

    def __init__(self, fmt: str, width: int, rows: int, guard_bits: int, lsb: int):
        self.cols = [WindowAccModel(fmt, width, rows, guard_bits) for _ in range(width)]
        self.lsb = lsb  # the element product's LSB exponent, part of every block term's e

    def beat(self, p, e, cls, first: bool, last: bool, row: int):
        """One beat: ``p`` and ``e`` (nb, D) the block terms and their exponents (with the element
        LSB), ``cls`` (D,) the columns' special classes. On ``last``: ``(codes, bounds,
        overflow)``, ``bounds`` the most the window dropped (a unit of the final LSB per floor)
        plus half an ulp of the result's magnitude, as float64; else None."""
        codes, bounds, over = [], [], False
        for j, col in enumerate(self.cols):
            c = int(cls[j])
            got = col.beat([int(v) for v in p[:, j]], [int(v) - self.lsb for v in e[:, j]],
                           nan=c == NAN_CLS, inf=c in (PINF_CLS, NINF_CLS), inf_neg=c == NINF_CLS,
                           first=first, last=last, row=row)
            if got is None:
                continue
            st = col._rows[min(row, col.rows - 1)]
            drops = st.beats * (1 + col.ww.blocks) if st.lost else 0
            codes.append(got[0])
            bounds.append(math.ldexp(drops, max(col.ww.lsb(st.b), -1074)))
            over = got[1]
        return (codes, bounds, over) if last else None
