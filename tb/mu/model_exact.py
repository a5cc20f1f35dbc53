"""Bit-true model of the ``exact`` accumulate mode (``docs/numerics.md``, the ``exact`` mode).

An accumulation is the exact sum of the beats' dot products ``S`` (integers in units of the
format's product LSB ``2**lsb_exp``, see :mod:`hw.mu.numerics`) from its ``first`` beat to its
``last`` beat, kept as a Python integer (no width limit), and rounded once to FP32 by
:func:`rne_fp32`. Specials are sticky over the accumulation. An accumulation longer than
``2**guard_bits`` beats gives NaN with the overflow flag.

:func:`rne_fp32` is written from the definition of binary32 (it does not use the RTL's rounder nor
``tb.mu.model``); ``tb/mu/test_exact_acc.py`` checks it against numpy's float64 -> float32 cast and
an exact :class:`fractions.Fraction` nearest-neighbour search. :func:`exact_result` (the rounding
and the specials of one finished accumulation) is shared with the whole-unit model
(:class:`tb.mu.model.MatrixUnitModel` with ``acc="exact"``).
"""

from dataclasses import dataclass, field

from hw.mu.numerics import dot_widths

__all__ = ["NAN", "PINF", "NINF", "rne_fp32", "fp32_value", "exact_result", "Beat", "ExactAccModel"]

NAN = 0x7FC00000
PINF = 0x7F800000
NINF = 0xFF800000


def rne_fp32(n: int, e: int = 0) -> int:
    """FP32 code of ``n * 2**e`` rounded to nearest, ties to even (+0 for zero, +-Inf on overflow).

    Parameters
    ----------
    n, e : int
        The exact value ``n * 2**e``.

    Returns
    -------
    int
        The 32-bit code.
    """
    if n == 0:
        return 0
    sign = 0x80000000 if n < 0 else 0
    mag = abs(n)
    top = mag.bit_length() - 1 + e  # 2**top <= |v| < 2**(top + 1)
    q = max(top, -126) - 23  # the FP32 spacing at |v| is 2**q (subnormals: 2**-149)
    if q <= e:  # exactly representable
        units = mag << (e - q)
    else:
        sh = q - e
        units, rem = mag >> sh, mag & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if rem > half or (rem == half and units & 1):
            units += 1
    # units * 2**q: units < 2**24, or == 2**24 after a carry into the next binade
    if units == 1 << 24:
        units, q = 1 << 23, q + 1
    if units < 1 << 23:  # subnormal (q == -149)
        return sign | units
    biased = q + 23 + 127
    if biased >= 255:
        return sign | PINF
    return sign | (biased << 23) | (units - (1 << 23))


def fp32_value(code: int):
    """The exact value of a finite FP32 code as ``(n, e)`` (``n * 2**e``); None for Inf/NaN."""
    sign = -1 if code >> 31 else 1
    exp, man = (code >> 23) & 0xFF, code & 0x7FFFFF
    if exp == 0xFF:
        return None
    if exp == 0:
        return sign * man, -149
    return sign * (man | 1 << 23), exp - 150


def exact_result(total: int, beats: int, nan: bool, pinf: bool, ninf: bool, *, guard_bits: int,
                 lsb_exp: int) -> tuple:
    """``(code, overflow)`` of a finished accumulation, by the contract's table of specials.

    Parameters
    ----------
    total : int
        The exact sum of the finite beats, in units of ``2**lsb_exp``.
    beats : int
        Beats from ``first`` to ``last``.
    nan, pinf, ninf : bool
        A beat's sum was NaN / +Inf / -Inf.
    guard_bits, lsb_exp : int
        The accumulator's range (``2**guard_bits`` beats) and the sums' LSB exponent.
    """
    over = beats > (1 << guard_bits)
    if nan or over or (pinf and ninf):
        return NAN, over
    if pinf:
        return PINF, False
    if ninf:
        return NINF, False
    return rne_fp32(total, lsb_exp), False


@dataclass
class Beat:
    """One beat at the accumulate stage: ``s`` in product-LSB units and its special flags."""

    s: int = 0
    nan: bool = False
    inf: bool = False
    inf_neg: bool = False
    first: bool = False
    last: bool = False
    row: int = 0


@dataclass
class _Row:
    total: int = 0
    beats: int = 0
    nan: bool = False
    pinf: bool = False
    ninf: bool = False


@dataclass
class ExactAccModel:
    """Rows of exact accumulators for one column (format ``fmt``, D = ``width``).

    :meth:`beat` takes one beat and returns ``(code, overflow)`` when it has ``last``, else None.
    A row that never saw ``first`` starts from zero.
    """

    fmt: str
    width: int
    rows: int = 1
    guard_bits: int = 16
    _rows: list = field(default_factory=list, init=False, repr=False)

    def __post_init__(self):
        self.dw = dot_widths(self.fmt, self.width)
        self._rows = [_Row() for _ in range(self.rows)]

    @property
    def s_limit(self) -> int:
        """``|S| < s_limit`` for every beat (two's complement W bits, one sign bit of headroom)."""
        return 1 << (self.dw.sum_bits - 1)

    def beat(self, b: Beat):
        if not -self.s_limit < b.s < self.s_limit:
            raise ValueError(f"S = {b.s} is outside the W = {self.dw.sum_bits} bit range")
        r = self._rows[min(b.row, self.rows - 1)]
        if b.first:
            self._rows[min(b.row, self.rows - 1)] = r = _Row()
        r.beats += 1
        r.nan |= b.nan
        if b.inf and not b.nan:
            r.pinf |= not b.inf_neg
            r.ninf |= b.inf_neg
        if not (b.nan or b.inf):
            r.total += b.s
        if not b.last:
            return None
        return self.result(r)

    def result(self, r: _Row):
        return exact_result(r.total, r.beats, r.nan, r.pinf, r.ninf, guard_bits=self.guard_bits,
                            lsb_exp=self.dw.lsb_exp)
