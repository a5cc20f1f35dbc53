"""An independent exact model of the matrix unit's numerics contract, for finite operands.

Written from the contract in the matrix-unit issue (docs/numerics.md), without looking at
``tb/mu/model.py``, so that the two can check each other on real tiles: per x beat and column j,
``S_j = sum_k x[k] * W[k, j]`` exactly (Python integers), then ``acc_j = rne_fp32(S_j)`` on a
``first`` beat, else ``acc_j = rne_fp32(acc_j + S_j)``: one rounding of the exact sum, FP32
subnormals kept, overflow to +-Inf, an exact zero gives +0.

Real tiles quantized with amax scaling never hold NaN or Inf codes, so this model refuses them
(:class:`ValueError`); the special-value semantics are the numerics model's business.
"""

import math

import numpy as np

from hw.formats import get_format

__all__ = ["rne_fp32", "matmul_tiles"]

_FP32_LSB = -149  # exponent of the smallest FP32 subnormal


def rne_fp32(n: int, exp: int) -> np.float32:
    """Round the exact value ``n * 2**exp`` (``exp >= -149``) to float32, nearest even."""
    if n == 0:
        return np.float32(0.0)
    sign = -1.0 if n < 0 else 1.0
    m = abs(n) << (exp - _FP32_LSB)
    extra = m.bit_length() - 24
    if extra > 0:
        q, r = m >> extra, m & ((1 << extra) - 1)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        m, e = q, extra + _FP32_LSB
    else:
        e = _FP32_LSB
    if m.bit_length() + e > 128:  # >= 2**128 after rounding: above the largest finite
        return np.float32(sign * math.inf)
    return np.float32(sign * math.ldexp(m, e))


def _as_ints(codes: np.ndarray, fmt: str) -> tuple:
    """Codes -> (object array of Python ints, exponent) with value = int * 2**exponent, exactly."""
    f = get_format(fmt)
    vals = f.decode(codes)
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"{fmt} operands hold NaN or Inf codes; this model covers finite tiles only "
                         "(use tb/mu/model.py for special values)")
    lsb = f.emin - f.man_bits
    ints = np.rint(np.ldexp(vals, -lsb)).astype(np.int64)
    return ints.astype(object), lsb


def matmul_tiles(x: np.ndarray, w: np.ndarray, fmt: str, width: int) -> np.ndarray:
    """FP32 results of feeding ``x`` (M, Kp) against ``w`` (Kp, width) one D x D tile at a time.

    The first K tile starts the accumulation (``first``), the last one emits the row (``last``).
    """
    xi, lx = _as_ints(x, fmt)
    wi, lw = _as_ints(w, fmt)
    m, kp = x.shape
    acc = [[None] * width for _ in range(m)]
    for t in range(kp // width):
        ks = slice(t * width, (t + 1) * width)
        s = xi[:, ks].dot(wi[ks, :])  # exact partial sums, Python ints, scale 2**(lx + lw)
        for r in range(m):
            for j in range(width):
                if t == 0:
                    acc[r][j] = rne_fp32(int(s[r, j]), lx + lw)
                else:
                    a = acc[r][j]
                    if not np.isfinite(a):
                        continue  # +-Inf + finite stays Inf
                    an, ae = _fp32_exact(a)
                    e = min(ae, lx + lw)
                    total = (an << (ae - e)) + (int(s[r, j]) << (lx + lw - e))
                    acc[r][j] = rne_fp32(total, e)
    return np.array(acc, dtype=np.float32)


def _fp32_exact(a: np.float32) -> tuple:
    """Finite float32 -> (int, exp) with a == int * 2**exp, exp = -149."""
    return int(math.ldexp(float(a), -_FP32_LSB)), _FP32_LSB
