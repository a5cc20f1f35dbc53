"""FP32 rounding of exact values: the accumulate step of the matrix unit's contract (``docs/numerics.md``).

* :func:`round_fp32` rounds an exact ``n * 2**e`` to FP32 (nearest, ties to even, subnormals kept,
  overflow to Inf); :func:`accumulate` is one beat's ``RNE(acc + S)`` on exact integers with the
  contract's specials; :func:`fp32_add` the same with an FP32 addend.
* :func:`window_sum` sums a column's block terms ``p_i * 2^e_i`` in the fixed-point window of a
  block-scaled format (``docs/numerics.md`` section 7): a term with ``e_i >= Emax - F`` (``F`` =
  ``frac_bits``, default :data:`WINDOW_FRAC_BITS`) enters exactly, a term below it is rounded to
  odd at ``2^(Emax - F - 1)``, the window's last bit (an arithmetic right shift of its
  two's-complement value, with the last bit set if any bit was shifted out: a sticky bit);
  ``frac_bits=None`` keeps every term exact. A per-tensor format is one term per column.
* :func:`beat` is the same accumulate step for many (row, column) pairs at once: a vectorised filter
  evaluates the window and the accumulate in float64 with a rigorous error bound and takes its FP32
  result only when no FP32 rounding boundary lies within that bound; every other element goes
  through the scalar path (:func:`window_sum`, :func:`accumulate`), so whole matmuls run bit-true
  at numpy speed.

Both paths are checked against each other and against ``Fraction`` arithmetic in
``tb/mu/test_model.py``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FP32_EDGES", "FP32_NAN", "FP32_PINF", "FP32_NINF", "FINITE", "PINF", "NINF", "NAN",
           "round_fp32", "fp32_exact", "fp32_to_float", "accumulate", "fp32_add", "half_ulp_fp32",
           "WINDOW_FRAC_BITS", "Terms", "window_sum", "beat"]


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



def half_ulp_fp32(bits) -> np.ndarray:
    """Half a unit in the last place of FP32 values (as float64): the most one RNE step can move."""
    b = np.asarray(bits, dtype=np.int64) & 0x7FFFFFFF
    exp = np.maximum(b >> 23, 1)
    return np.ldexp(1.0, (exp - 150 - 1).astype(np.int64))



# --------------------------------------------------------------------------------------------------
# The block-sum window and the vectorised accumulate
# --------------------------------------------------------------------------------------------------
#: Fraction bits F of the block-sum window below the unit of the largest block term.
WINDOW_FRAC_BITS = 32

_NO_EXP = np.iinfo(np.int64).min // 4


class Terms:
    """Block terms of N beats against C columns: ``p`` (N, nb, C) int64 or object (Python ints),
    ``e`` (N, nb, C) int64 exponents, ``cls`` (N, C) class of each column's sum (``FINITE``,
    ``PINF``, ``NINF``, ``NAN``)."""

    def __init__(self, p, e, cls):
        self.p, self.e, self.cls = p, e, cls


def window_sum(p, e, frac_bits: int | None = WINDOW_FRAC_BITS) -> tuple[int, int]:
    """The window's value ``num * 2**lo`` of one column's block terms ``p[i] * 2**e[i]``.

    Terms with ``p == 0`` are ignored (they neither set the alignment nor add anything); with no
    nonzero term the result is ``(0, 0)``. ``frac_bits=None``: the exact sum.
    """
    nz = [(int(pi), int(ei)) for pi, ei in zip(p, e, strict=True) if pi != 0]
    if not nz:
        return 0, 0
    top = max(ei for _, ei in nz)
    if frac_bits is None:
        lo = min(ei for _, ei in nz)
        return sum(pi << (ei - lo) for pi, ei in nz), lo
    lo = top - frac_bits - 1                  # the sticky position, below every exact term
    return sum(pi << (ei - lo) if ei > lo else _to_odd(pi, lo - ei) for pi, ei in nz), lo


def _to_odd(p: int, k: int) -> int:
    """``p / 2**k`` rounded to odd: the floor, with its last bit set if any bit was dropped."""
    q = p >> k
    return q | 1 if (q << k) != p else q


def _exact_beat(acc, terms: Terms, n: int, j: int, frac_bits) -> int:
    num, lo = window_sum(terms.p[n, :, j], terms.e[n, :, j], frac_bits)
    return accumulate(acc, num, int(terms.cls[n, j]), lo)


def _two_sum(a, b):
    """``a + b`` in float64 and its exact rounding error (Knuth's TwoSum)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def _window_f64(terms: Terms, frac_bits):
    """float64 value of each window sum, the sum of its terms' magnitudes, whether the float64 sum
    is exact (else it is within ``nb * 2^-53`` of the sum of magnitudes), and whether the value is
    usable (not: Python-int terms that the window truncates, left to the integer path)."""
    p, e = terms.p, terms.e
    nz = p != 0
    top = np.where(nz, e, _NO_EXP).max(axis=1)
    lo = np.where(nz, e, -_NO_EXP).min(axis=1) if frac_bits is None else top - frac_bits - 1
    d = e - lo[:, None, :]
    if p.dtype == object:
        usable = ~(nz & (d < 0)).any(axis=1)
        t, te = np.where(nz & (d >= 0), p, 0).astype(np.float64), e
    else:
        usable = np.ones(terms.cls.shape, dtype=bool)
        k = np.clip(-d, 0, 63)
        dropped = (p & ((np.int64(1) << np.minimum(k, 62)) - 1)) != 0     # |p| < 2^62
        t = np.where(nz, np.where(d >= 0, p, (p >> k) | dropped), 0)
        te = np.where(d >= 0, e, lo[:, None, :])
    tf = np.ldexp(t.astype(np.float64), np.clip(te, -1100, 1100))   # within 2^-53 relative
    s, exact = tf[:, 0], (np.abs(t) < 2.0 ** 53).all(axis=1)
    for i in range(1, tf.shape[1]):
        s, err = _two_sum(s, tf[:, i])
        exact &= err == 0
    return s, np.abs(tf).sum(axis=1), exact, usable


def beat(acc_bits, first, terms: Terms, frac_bits=WINDOW_FRAC_BITS):
    """One beat for many (row, column) pairs: new FP32 accumulator bits.

    Parameters
    ----------
    acc_bits : ndarray of uint32 (N, C)
        Accumulators before the beat (ignored where ``first``).
    first : ndarray of bool, broadcastable to (N, C)
    terms : Terms
        This beat's block terms, N beats against C columns.
    frac_bits : int or None
        Window fraction bits F (None: exact sums).
    """
    nb = terms.p.shape[1]
    first = np.broadcast_to(first, terms.cls.shape)
    acc = np.where(first, 0.0, fp32_to_float(acc_bits))
    out = np.zeros(terms.cls.shape, dtype=np.uint32)
    s, absum, exact, usable = _window_f64(terms, frac_bits)
    with np.errstate(invalid="ignore", over="ignore"):
        v, rest = _two_sum(acc, s)
        exact &= rest == 0                    # then v is the exact acc + S: the cast rounds it
        err = (nb + 2) * 2.0 ** -52 * (np.abs(acc) + absum)
        r = v.astype(np.float32)
        lo = np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        hi = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
        rf = r.astype(np.float64)
        near = (v - (rf + lo) / 2 > err) & ((rf + hi) / 2 - v > err) & (r != 0)
        safe = (usable & (terms.cls == FINITE) & np.isfinite(acc) & (np.abs(v) < 2.0 ** 126)
                & (exact | near))
    out = np.where(safe, np.where(v == 0, np.uint32(0), r.view(np.uint32)), out)
    for n, j in zip(*np.nonzero(~safe), strict=True):
        a = None if first[n, j] else int(acc_bits[n, j])
        out[n, j] = _exact_beat(a, terms, n, j, frac_bits)
    return out
