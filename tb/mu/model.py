"""Bit-true model of the matrix unit's numerics (the contract in ``docs/numerics.md``).

Per activation beat and column ``j`` the unit computes ``S_j = sum_k x[k] * W[k, j]`` exactly, then
in the ``fp32`` accumulate mode ``acc_j <- RNE_fp32(S_j)`` on a ``first`` beat, else
``acc_j <- RNE_fp32(acc_j + S_j)``: one rounding per beat. In the ``exact`` mode the sums of the
beats ``first..last`` are added exactly and rounded once on the ``last`` beat
(:func:`tb.mu.model_exact.exact_result`). This module computes exactly that, with integers only:

* element codes are decoded (via :mod:`hw.formats` field split) into signed integers scaled by the
  format's smallest subnormal, ``value = n * 2**lsb``;
* the D-term dot products are float64 matrix products of integer-valued arrays whose every partial
  sum stays below ``2**53`` (E5M2 operands are split into two 16-bit limbs), hence exact, then
  recombined as Python integers;
* the accumulate step adds the exact FP32 accumulator and the exact sum as integers and rounds once
  with :func:`round_fp32` (round to nearest, ties to even, subnormals kept, overflow to Inf).

Special values follow the contract: a NaN operand, ``Inf * 0`` or ``Inf - Inf`` give the canonical
NaN ``0x7FC00000``; Inf propagates with its sign; an exact zero gives ``+0``.

:func:`reference_f64` and :func:`error_metrics` give the float64 comparison and the error bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.designs import ACC_MODES
from hw.formats import CLASSES, MATRIX_FORMATS, get_format

from .model_exact import exact_result

__all__ = ["FP32_EDGES", "FP32_NAN", "FP32_PINF", "FP32_NINF", "round_fp32", "fp32_exact", "fp32_to_float",
           "ElementCodec", "exact_dot", "accumulate", "YRow", "MatrixUnitModel", "reference_f64",
           "half_ulp_fp32", "error_metrics", "fp32_add"]

FP32_NAN = 0x7FC00000
FP32_PINF = 0x7F800000
FP32_NINF = 0xFF800000

# Special-class codes of an exact sum / accumulator (beside finite).
FINITE, PINF, NINF, NAN = 0, 1, 2, 3


# --------------------------------------------------------------------------------------------------
# FP32 rounding of exact values
# --------------------------------------------------------------------------------------------------
def round_fp32(n: int, e: int) -> int:
    """FP32 bits of ``n * 2**e`` rounded to nearest, ties to even.

    Parameters
    ----------
    n : int
        Exact signed integer numerator (any size).
    e : int
        Power-of-two exponent of its least significant bit.

    Returns
    -------
    int
        FP32 bit pattern: ``+0`` for ``n == 0``, subnormals where the value is below ``2**-126``,
        ``+-Inf`` when the rounded magnitude reaches ``2**128``.
    """
    if n == 0:
        return 0
    sign = 0x80000000 if n < 0 else 0
    n = -n if n < 0 else n
    top = n.bit_length() - 1 + e          # exponent of the leading one
    q = max(top, -126) - 23               # exponent of the result's last place (subnormals: -149)
    shift = q - e
    if shift > 0:
        m = n >> shift
        rem = n & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (m & 1)):
            m += 1
        if m >> 24:                       # rounded up to the next binade
            m >>= 1
            q += 1
    else:
        m = n << -shift
    if m < (1 << 23):                     # subnormal (q == -149); m == 2**23 encodes the min normal
        return sign | m
    biased = q + 23 + 127
    if biased >= 255:
        return sign | FP32_PINF
    return sign | (biased << 23) | (m - (1 << 23))


def fp32_exact(bits: int) -> tuple[int, int, int]:
    """Split FP32 bits into ``(cls, n, e)`` with value ``n * 2**e`` for finite values.

    ``cls`` is one of ``FINITE, PINF, NINF, NAN`` (then ``n = e = 0``).
    """
    bits = int(bits)
    sign = bits >> 31
    exp = (bits >> 23) & 0xFF
    man = bits & 0x7FFFFF
    if exp == 0xFF:
        if man:
            return NAN, 0, 0
        return (NINF if sign else PINF), 0, 0
    n = man if exp == 0 else man | (1 << 23)
    e = max(exp, 1) - 150
    return FINITE, (-n if sign else n), e


def fp32_to_float(bits) -> np.ndarray:
    """View FP32 bit patterns (any integer array) as float64 values."""
    return np.asarray(bits, dtype=np.int64).astype(np.uint32).view(np.float32).astype(np.float64)


# --------------------------------------------------------------------------------------------------
# Element decode and the exact dot products
# --------------------------------------------------------------------------------------------------
class ElementCodec:
    """Integer view of one element format.

    Every finite code is ``n * 2**lsb`` with ``lsb = emin - man_bits`` (the smallest subnormal; 0 for
    an integer format) and ``|n| <= 2**(man_bits + 1 + emax - emin)``
    (:meth:`hw.formats.FloatFormat.integers`).

    Parameters
    ----------
    fmt : str
        One of :data:`hw.formats.MATRIX_FORMATS`.

    Raises
    ------
    ValueError
        For a format the matrix unit does not take.
    """

    def __init__(self, fmt: str):
        if fmt not in MATRIX_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(MATRIX_FORMATS)}, not {fmt!r}")
        self.fmt = get_format(fmt)
        f = self.fmt
        self.lsb = f.lsb
        codes = np.arange(1 << f.bits)
        sign = f.fields(codes)[0]
        cls = f.classify(codes)
        self.is_nan = cls == CLASSES.index("nan")
        self.is_inf = cls == CLASSES.index("inf")
        finite = ~(self.is_nan | self.is_inf)
        self.ints = f.integers(codes)  # two's complement for an integer row, else sign-magnitude
        self.neg = sign == 1
        self.is_zero = cls == CLASSES.index("zero")
        self.max_int = int(np.abs(self.ints).max())
        # cross-check against the format table's own decode (exact float64)
        dec = f.decode(codes)
        ok = np.where(finite, self.ints * 2.0 ** self.lsb == dec, True)
        assert ok.all(), f"{fmt}: integer decode disagrees with hw.formats"

    def value(self, codes) -> np.ndarray:
        """Exact float64 values of codes (the format table's decode)."""
        return self.fmt.decode(np.asarray(codes))

    @property
    def has_specials(self) -> bool:
        return bool(self.is_nan.any() or self.is_inf.any())


def _exact_matmul_int(a: np.ndarray, b: np.ndarray, max_a: int, max_b: int) -> np.ndarray:
    """Exact ``a @ b`` of int64 arrays as an object array of Python ints.

    float64 matrix products are exact while every partial sum stays below ``2**53``; wider operands
    are split into 16-bit limbs so that each limb product stays in range.
    """
    depth = a.shape[-1]
    if max_a * max_b * depth < (1 << 53):
        return np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64).astype(object)
    assert max_a < (1 << 32) and max_b < (1 << 32) and depth <= (1 << 20)
    sa, sb = np.sign(a), np.sign(b)
    aa, bb = np.abs(a), np.abs(b)
    ah, al = (sa * (aa >> 16)).astype(np.float64), (sa * (aa & 0xFFFF)).astype(np.float64)
    bh, bl = (sb * (bb >> 16)).astype(np.float64), (sb * (bb & 0xFFFF)).astype(np.float64)

    def mm(x, y):
        return np.rint(x @ y).astype(np.int64).astype(object)

    return (mm(ah, bh) << 32) + ((mm(ah, bl) + mm(al, bh)) << 16) + mm(al, bl)


def exact_dot(codec: ElementCodec, x: np.ndarray, w: np.ndarray):
    """Exact per-beat column sums ``S = x @ W``.

    Parameters
    ----------
    codec : ElementCodec
    x : ndarray, shape (N, D)
        Activation codes, one beat per row.
    w : ndarray, shape (D, D)
        Weight codes ``W[k, j]``.

    Returns
    -------
    num : ndarray of object, shape (N, D)
        Python-int numerators; the value is ``num * 2**(2 * codec.lsb)``.
    cls : ndarray of int8, shape (N, D)
        ``FINITE``, ``PINF``, ``NINF`` or ``NAN`` (then ``num`` is meaningless).
    """
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    num = _exact_matmul_int(codec.ints[x], codec.ints[w], codec.max_int, codec.max_int)
    cls = np.zeros(num.shape, dtype=np.int8)
    if codec.has_specials:
        xs = codec.is_nan[x] | codec.is_inf[x]
        ws = codec.is_nan[w] | codec.is_inf[w]
        beats = np.nonzero(xs.any(axis=1) | ws.any())[0]
        for i in beats:           # rare: only beats that meet a NaN/Inf code
            xi, wc = x[i][:, None], w
            nanp = (codec.is_nan[xi] | codec.is_nan[wc] | (codec.is_inf[xi] & codec.is_zero[wc])
                    | (codec.is_zero[xi] & codec.is_inf[wc]))
            infp = (codec.is_inf[xi] | codec.is_inf[wc]) & ~nanp
            negp = codec.neg[xi] ^ codec.neg[wc]
            pos = (infp & ~negp).any(axis=0)
            neg = (infp & negp).any(axis=0)
            c = np.where(pos, PINF, np.where(neg, NINF, FINITE))
            c = np.where(nanp.any(axis=0) | (pos & neg), NAN, c)
            cls[i] = c
    return num, cls


# --------------------------------------------------------------------------------------------------
# One rounding per beat
# --------------------------------------------------------------------------------------------------
def accumulate(acc_bits: int | None, num: int, cls: int, e: int) -> int:
    """One accumulate step: FP32 bits of ``RNE(acc + S)`` (or ``RNE(S)`` if ``acc_bits`` is None).

    Parameters
    ----------
    acc_bits : int or None
        Current accumulator (FP32 bits); None on a ``first`` beat.
    num, cls, e : int
        The exact sum ``S = num * 2**e`` and its class (``FINITE``, ``PINF``, ``NINF``, ``NAN``).
    """
    if acc_bits is None:
        if cls == FINITE:
            return round_fp32(num, e)
        return (FP32_PINF, FP32_NINF, FP32_NAN)[cls - 1]
    acls, an, ae = fp32_exact(acc_bits)
    if acls == NAN or cls == NAN:
        return FP32_NAN
    if acls != FINITE or cls != FINITE:
        infs = {c for c in (acls, cls) if c != FINITE}
        if len(infs) == 2:
            return FP32_NAN
        return FP32_PINF if PINF in infs else FP32_NINF
    if ae <= e:
        return round_fp32(an + (num << (e - ae)), ae)
    return round_fp32((an << (ae - e)) + num, e)


#: FP32 edge codes for adder and accumulate tests, both signs: zero, min/max subnormal, min normal
#: and its neighbour, 1 and its neighbours, 2^-24 (half an ulp of 1) and its neighbour, 2^24, max
#: finite and its neighbour, Inf, NaN (quiet and signalling patterns).
_EDGES = (0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x00800001, 0x3F800000, 0x3F800001,
          0x3F7FFFFF, 0x33800000, 0x33800001, 0x4B800000, 0x7F7FFFFF, 0x7F7FFFFE, 0x7F800000,
          0x7FC00000, 0x7F800001)
FP32_EDGES = _EDGES + tuple(v | 0x80000000 for v in _EDGES)


def fp32_add(a_bits: int, b_bits: int) -> int:
    """FP32 bits of ``RNE(a + b)``: the slice's ``y +=`` write-back (``docs/numerics.md`` section 5).

    The same step as :func:`accumulate` with the exact sum replaced by the FP32 value ``b``: one
    rounding of the exact ``a + b``, canonical NaN, Inf rules as there, an exact zero is ``+0``.
    """
    cls, n, e = fp32_exact(b_bits)
    return accumulate(int(a_bits), n, cls, e)


@dataclass
class YRow:
    """One result row of the model.

    Attributes
    ----------
    row : int
        Accumulator row index.
    bits : ndarray of uint32 (D,)
        FP32 results (the bit-true contract).
    ref : ndarray of float64 (D,)
        float64 reference of the same accumulation (sum of float64 dot products).
    bound : ndarray of float64 (D,)
        ``|bits - ref|`` allowed: the contract's rounding bound (``fp32``: the sum of half-ulp(acc)
        over the accumulation's beats; ``exact``: half an ulp of the result), plus the float64
        reference's own error bound.
    overflow : bool
        ``exact`` mode: the accumulation was longer than ``2**guard_bits`` beats (every column NaN,
        one count of ``cnt_acc_overflow``).
    """

    row: int
    bits: np.ndarray
    ref: np.ndarray
    bound: np.ndarray
    overflow: bool = False


class MatrixUnitModel:
    """Cycle-free functional model of the matrix unit: tiles, rows, first/last, and one rounding per
    beat (``fp32``) or per accumulation (``exact``).

    Parameters
    ----------
    width : int
        D.
    fmt : str
        Element format.
    rows : int
        Accumulator rows R.
    acc : str
        Accumulate mode, one of :data:`hw.designs.ACC_MODES`.
    guard_bits : int
        ``exact`` mode: accumulations longer than ``2**guard_bits`` beats overflow (NaN).

    Raises
    ------
    ValueError
        Bad width, format, rows, mode or guard bits.
    """

    def __init__(self, width: int, fmt: str, rows: int = 1, acc: str = "fp32", guard_bits: int = 16):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be an integer >= 1, not {rows!r}")
        if acc not in ACC_MODES:
            raise ValueError(f"acc must be one of {', '.join(ACC_MODES)}, not {acc!r}")
        if not isinstance(guard_bits, int) or guard_bits < 1:
            raise ValueError(f"guard_bits must be an integer >= 1, not {guard_bits!r}")
        self.width, self.rows, self.mode, self.guard_bits = width, rows, acc, guard_bits
        self.codec = ElementCodec(fmt)
        self.e = 2 * self.codec.lsb
        self.acc = [[0] * width for _ in range(rows)]
        # exact mode: per row the exact sums (Python ints), sticky NaN / +Inf / -Inf per column
        self.total = [np.zeros(width, dtype=object) for _ in range(rows)]
        self.special = np.zeros((rows, 3, width), dtype=bool)
        # float64 shadow per row: reference sum, sum of |products|, beats, sum of half-ulps
        self.ref = np.zeros((rows, width))
        self.absum = np.zeros((rows, width))
        self.beats = np.zeros(rows, dtype=np.int64)
        self.halfulps = np.zeros((rows, width))

    def run(self, w: np.ndarray, x: np.ndarray, first, last, row=None):
        """Run a block of beats against one weight tile.

        Parameters
        ----------
        w : ndarray (D, D)
            The active tile's codes.
        x : ndarray (N, D)
            Activation codes.
        first, last : array-like of bool, length N (or scalars)
        row : array-like of int, length N, optional
            Accumulator row per beat (default 0).

        Returns
        -------
        list of YRow
            One result row per ``last`` beat, in order.
        """
        x = np.atleast_2d(np.asarray(x))
        n = x.shape[0]
        if x.shape[1] != self.width or np.shape(w) != (self.width, self.width):
            raise ValueError(f"x must be (N, {self.width}) and w ({self.width}, {self.width}); "
                             f"got {x.shape} and {np.shape(w)}")
        first = np.broadcast_to(np.asarray(first, dtype=bool), (n,))
        last = np.broadcast_to(np.asarray(last, dtype=bool), (n,))
        row = np.broadcast_to(np.asarray(0 if row is None else row, dtype=np.int64), (n,))
        if n and (row.min() < 0 or row.max() >= self.rows):
            raise ValueError(f"row index must lie in [0, {self.rows - 1}]")
        num, cls = exact_dot(self.codec, x, w)
        with np.errstate(invalid="ignore", over="ignore"):
            xv, wv = self.codec.value(x), self.codec.value(w)
            ref = xv @ wv
            absum = np.abs(xv) @ np.abs(wv)
        out = []
        for i in range(n):
            r = int(row[i])
            if first[i]:
                self.ref[r], self.absum[r], self.beats[r], self.halfulps[r] = 0.0, 0.0, 0, 0.0
            with np.errstate(invalid="ignore"):
                self.ref[r] = self.ref[r] + ref[i]
                self.absum[r] = self.absum[r] + absum[i]
            self.beats[r] += 1
            if self.mode == "exact":
                bits, overflow = self._exact_beat(r, num[i], cls[i], first[i], last[i])
            else:
                bits, overflow = self._fp32_beat(r, num[i], cls[i], first[i]), False
            if last[i]:
                # float64 reference error: D products + beats additions, each <= 2^-53 relative
                ref_err = (self.width + self.beats[r]) * 2.0 ** -52 * self.absum[r]
                out.append(YRow(r, bits, self.ref[r].copy(), self.halfulps[r] + ref_err, overflow))
        return out

    def _fp32_beat(self, r: int, num, cls, first: bool) -> np.ndarray:
        """One rounding per beat: row r's accumulators after this beat (FP32 bits)."""
        acc = None if first else self.acc[r]
        new = [accumulate(None if acc is None else acc[j], num[j], cls[j], self.e)
               for j in range(self.width)]
        self.acc[r] = new
        bits = np.array(new, dtype=np.uint32)
        self.halfulps[r] = self.halfulps[r] + half_ulp_fp32(bits)
        return bits

    def _exact_beat(self, r: int, num, cls, first: bool, last: bool):
        """Add this beat exactly into row r; on ``last`` return ``(bits, overflow)`` of the row's one
        rounding (``halfulps`` becomes the result's half-ulp), else ``(None, False)``."""
        if first:
            self.total[r] = np.zeros(self.width, dtype=object)
            self.special[r] = False
        self.total[r] = self.total[r] + np.where(cls == FINITE, num, 0)
        self.special[r] |= cls[None, :] == np.array([NAN, PINF, NINF])[:, None]
        if not last:
            return None, False
        nan, pinf, ninf = self.special[r]
        res = [exact_result(int(self.total[r][j]), int(self.beats[r]), nan[j], pinf[j], ninf[j],
                            guard_bits=self.guard_bits, lsb_exp=self.e) for j in range(self.width)]
        bits = np.array([c for c, _ in res], dtype=np.uint32)
        self.halfulps[r] = half_ulp_fp32(bits)
        return bits, bool(res[0][1])


# --------------------------------------------------------------------------------------------------
# float64 reference and error metrics
# --------------------------------------------------------------------------------------------------
def reference_f64(codec: ElementCodec, xs: list, ws: list) -> np.ndarray:
    """float64 reference of a whole accumulation: ``sum_t x_t @ W_t`` in float64 arithmetic.

    Parameters
    ----------
    xs : list of ndarray (N_t, D)
        Activation codes per tile; every beat adds to the same output row.
    ws : list of ndarray (D, D)

    Returns
    -------
    ndarray (D,)
    """
    total = 0.0
    for x, w in zip(xs, ws, strict=True):
        total = total + (codec.value(x) @ codec.value(w)).sum(axis=0)
    return np.asarray(total, dtype=np.float64)


def half_ulp_fp32(bits) -> np.ndarray:
    """Half a unit in the last place of FP32 values (as float64): the most one RNE step can move."""
    b = np.asarray(bits, dtype=np.int64) & 0x7FFFFFFF
    exp = np.maximum(b >> 23, 1)
    return np.ldexp(1.0, (exp - 150 - 1).astype(np.int64))


def error_metrics(got_bits, ref, bound) -> dict:
    """Relative/absolute error of FP32 results against a float64 reference, and the bound check.

    Parameters
    ----------
    got_bits : array of FP32 bits
    ref : array of float64
    bound : array of float64
        Allowed ``|got - exact|`` (see ``docs/numerics.md``), plus the reference's own error.

    Returns
    -------
    dict
        ``max_rel``, ``mean_rel``, ``max_abs``, ``within_bound`` (bool), ``n``.
    """
    got = fp32_to_float(got_bits)
    ref = np.asarray(ref, dtype=np.float64)
    fin = np.isfinite(ref) & np.isfinite(got)
    err = np.abs(got[fin] - ref[fin])
    scale = np.abs(ref[fin])
    rel = np.where(scale > 0, err / np.where(scale > 0, scale, 1), err)
    same_special = np.array_equal(np.isnan(got), np.isnan(ref)) and np.array_equal(
        got[np.isinf(ref)], ref[np.isinf(ref)])
    return {
        "n": int(fin.sum()),
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "mean_rel": float(rel.mean()) if rel.size else 0.0,
        "max_abs": float(err.max()) if err.size else 0.0,
        "within_bound": bool(same_special and (err <= np.asarray(bound)[fin]).all()),
    }
