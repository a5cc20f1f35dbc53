"""Exact integer model of the BF16 multiplier's semantics (no float arithmetic).

The model works on numpy int64 arrays of codes, vectorized, and is the reference every BF16
testbench compares against. It follows the contract in :mod:`hw.fp.bf16_mul`:

* the exact product of the two significands (8 x 8 bits, at most 16 bits) and the exact sum of the
  exponents; round to nearest even at the bfloat16 quantum of the result's binade, the quantum
  being fixed at 2^-133 below the smallest normal (gradual underflow);
* ``subnormals=False``: subnormal inputs are zeros of their sign, and a finite non-zero result
  whose *exact* magnitude is below 2^-126 is a zero of its sign (flush before rounding);
* overflow -> +-Inf, Inf x 0 -> NaN, every NaN -> 0x7FC0, signed zeros.

:func:`ml_dtypes_mul` is the independent oracle it is cross-checked with (``test_bf16_ref.py``):
``ml_dtypes`` multiplies bfloat16 through float32 and rounds the float32 result to bfloat16. The
float32 product of two bfloat16 values is exact whenever it lies in the float32 *normal* range (16
significant bits fit in 24), and the float32 -> bfloat16 rounding is then the only rounding. Below
2^-126 the float32 product is first rounded to the float32 subnormal grid (2^-149), so ``ml_dtypes``
rounds twice there (:func:`double_rounding_mask` selects these products). For bfloat16 operands the
double rounding still cannot change the result: the second rounding (to the 2^-133 grid) can only
go wrong if the first one moved a value that was not a bfloat16 midpoint onto one. That needs a 1 at
the midpoint position (2^-134), fifteen 0s and a non-zero bit below 2^-149 (17 significant bits), or
an odd kept LSB, a 0, fifteen 1s and a bit below (18 bits); an 8 x 8-bit product has at most 16.
The tests compare the two subsets separately and both must match bit for bit.
"""

import ml_dtypes
import numpy as np

__all__ = ["bf16_mul_ref", "ml_dtypes_mul", "double_rounding_mask", "NAN", "is_nan"]

NAN = 0x7FC0
_EMIN = -126  # unbiased exponent of the smallest normal
_MB = 7  # mantissa bits


def _unpack(c, subnormals):
    c = np.asarray(c, dtype=np.int64)
    sign = (c >> 15) & 1
    e = (c >> _MB) & 0xFF
    m = c & 0x7F
    nan = (e == 0xFF) & (m != 0)
    inf = (e == 0xFF) & (m == 0)
    if subnormals:
        zero = (e == 0) & (m == 0)
        sig = np.where(e == 0, m, m | 0x80)
        exp = np.maximum(e, 1) - 127
    else:
        zero = e == 0
        sig = m | 0x80
        exp = e - 127
    return sign, exp, sig, zero, inf, nan


def _bit_length(x):
    """Exact bit length of non-negative int64 values below 2^17 (integer compares only)."""
    n = np.zeros_like(x)
    for k in range(17):
        n += (x >> k) > 0
    return n


def bf16_mul_ref(a, b, subnormals: bool = True) -> np.ndarray:
    """Product codes of BF16 codes ``a`` and ``b`` (int arrays of equal shape), exactly.

    Returns
    -------
    numpy.ndarray of int64
        Result codes; every NaN is :data:`NAN`.
    """
    sa, ea, ma, za, ia, na = _unpack(a, subnormals)
    sb, eb, mb, zb, ib, nb = _unpack(b, subnormals)
    sign = sa ^ sb
    nan = na | nb | (ia & zb) | (za & ib)
    inf = (ia | ib) & ~nan
    zero = (za | zb) & ~nan & ~inf
    prod = ma * mb  # value = prod * 2^(ea + eb - 14), exact
    lsb = ea + eb - 2 * _MB  # exponent of prod's LSB
    top = lsb + _bit_length(prod) - 1  # exact value in [2^top, 2^(top+1))
    q = np.maximum(top, _EMIN) - _MB  # exponent of the result's quantum
    shift = q - lsb  # bits of prod below the quantum (>= -7)
    s_pos = np.clip(shift, 0, 40)
    kept = np.where(shift < 0, prod << np.clip(-shift, 0, 40), prod >> s_pos)
    rem = prod - (kept << s_pos)
    half = np.where(s_pos > 0, 1 << np.maximum(s_pos - 1, 0), 0)
    up = (shift > 0) & ((rem > half) | ((rem == half) & ((kept & 1) == 1)))
    kept = kept + up
    # {exponent field - 1, 0000000} + kept: the hidden bit (128) completes the exponent field,
    # a subnormal (q = -133) keeps field 0, a rounding carry moves to the next binade
    mag = ((q + _MB + 127 - 1) << _MB) + kept
    mag = np.where(mag >= 0x7F80, 0x7F80, mag)  # overflow -> Inf
    if not subnormals:
        zero = zero | (~nan & ~inf & (top < _EMIN))  # flush before rounding
    out = (sign << 15) | np.where(zero, 0, np.where(inf, 0x7F80, mag))
    return np.where(nan, NAN, out).astype(np.int64)


def is_nan(codes) -> np.ndarray:
    """True where a BF16 code is a NaN (any payload, either sign)."""
    c = np.asarray(codes, dtype=np.int64)
    return ((c & 0x7F80) == 0x7F80) & ((c & 0x7F) != 0)


def ml_dtypes_mul(a, b, subnormals: bool = True) -> np.ndarray:
    """The same products computed by ``ml_dtypes`` (float32 product rounded to bfloat16).

    With ``subnormals=False`` the inputs are flushed before and the result is flushed when the
    exact product (computed in float64, where it is exact) is below 2^-126 in magnitude.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if not subnormals:
        a = np.where((a & 0x7F80) == 0, a & 0x8000, a)
        b = np.where((b & 0x7F80) == 0, b & 0x8000, b)
    with np.errstate(all="ignore"):
        fa = a.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
        fb = b.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float32)
        p = (fa * fb).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
        if not subnormals:
            exact = fa.astype(np.float64) * fb.astype(np.float64)
            tiny = np.isfinite(exact) & (np.abs(exact) < 2.0 ** _EMIN)
            p = np.where(tiny, ((a ^ b) & 0x8000), p)
    return np.where(is_nan(p), NAN, p)


def double_rounding_mask(a, b) -> np.ndarray:
    """True where the float32 product of BF16 codes ``a``, ``b`` is not exact (so ``ml_dtypes``
    rounds twice): finite, non-zero products whose float32 value differs from the float64 one."""
    with np.errstate(all="ignore"):
        fa = np.asarray(a, dtype=np.int64).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        fb = np.asarray(b, dtype=np.int64).astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        exact = fa * fb  # exact in float64: 16 significant bits, exponents within +-266
        f32 = exact.astype(np.float32).astype(np.float64)
        return np.isfinite(exact) & (f32 != exact)
