"""An independent exact model of the matrix unit's numerics contract, for finite operands.

Written from the contract in the matrix-unit issue (docs/numerics.md), without looking at
``tb/mu/model.py``, so that the two can check each other on real tiles: per x beat and column j,
``S_j = sum_k x[k] * W[k, j]`` exactly (Python integers), then ``acc_j = rne_fp32(S_j)`` on a
``first`` beat, else ``acc_j = rne_fp32(acc_j + S_j)``: one rounding of the exact sum, FP32
subnormals kept, overflow to +-Inf, an exact zero gives +0.

Real tiles quantized with amax scaling never hold NaN or Inf codes, so this model refuses them
(:class:`ValueError`); the special-value semantics are the numerics model's business.

:func:`ulp_errors` measures given FP32 results in ulps against the exact rational dot product of
the codes (integer arithmetic, so the measurement does not depend on either model) and checks
them against the bound of their accumulate mode: ``exact`` rounds the K-long sum once, so each
result is within half an ulp of it; ``fp32`` rounds once per beat, and the rounding at beat ``t``
moves the running value by at most half an ulp of the rounded value ``acc_t`` (RNE of a value in
``[2^e, 2^(e+1))`` lands in ``[2^e, 2^(e+1)]``, whose ulp is at least that of ``2^e``), so
``|y - exact| <= sum_t ulp(acc_t) / 2`` over the beats of the accumulation.

:func:`block_ulp_errors` does the same for a block-scaled format (OCP MX, NVFP4): the exact value is
the K-long sum of the scaled products ``sum_b s_x(r, b) s_w(b, j) sum_{k in b} x[r, k] w[k, j]``, the
scales split into integer significand and exponent by the format table's own rule
(:meth:`hw.format_types.ScaleFormat.split`); ``exact`` results must be within half an ulp of it.
"""

import math

import numpy as np

from hw.formats import get_block_format, get_format

__all__ = ["rne_fp32", "matmul_tiles", "ulp_errors", "block_ulp_errors"]

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


def _beats(x: np.ndarray, w: np.ndarray, fmt: str, width: int) -> tuple:
    """Exact partial sums per K tile (object arrays (M, D) of Python ints) and their exponent."""
    xi, lx = _as_ints(x, fmt)
    wi, lw = _as_ints(w, fmt)
    sums = [xi[:, t * width:(t + 1) * width].dot(wi[t * width:(t + 1) * width, :])
            for t in range(x.shape[1] // width)]
    return sums, lx + lw


def _ulp_units(a: np.float32) -> int:
    """ulp of the finite float32 ``a`` in units of 2**-149 (1 for zero and the subnormals)."""
    return 1 << max(math.frexp(float(a))[1] + 125, 0) if a else 1


def _fp32_path(sums: list, e: int) -> tuple:
    """The per-beat FP32 accumulation of ``sums``: results (object array of float32) and, per result,
    the sum of the ulps (units of 2**-149) of every rounded running value."""
    m, width = sums[0].shape
    acc = np.empty((m, width), dtype=object)
    ulps = np.zeros((m, width), dtype=object)
    for t, s in enumerate(sums):
        for r in range(m):
            for j in range(width):
                if t == 0:
                    a = rne_fp32(int(s[r, j]), e)
                else:
                    a = acc[r, j]
                    if not np.isfinite(a):
                        continue  # +-Inf + finite stays Inf
                    an, ae = _fp32_exact(a)
                    lo = min(ae, e)
                    a = rne_fp32((an << (ae - lo)) + (int(s[r, j]) << (e - lo)), lo)
                acc[r, j] = a
                if np.isfinite(a):
                    ulps[r, j] += _ulp_units(a)
    return acc, ulps


def matmul_tiles(x: np.ndarray, w: np.ndarray, fmt: str, width: int) -> np.ndarray:
    """FP32 results of feeding ``x`` (M, Kp) against ``w`` (Kp, width) one D x D tile at a time.

    The first K tile starts the accumulation (``first``), the last one emits the row (``last``).
    """
    sums, e = _beats(x, w, fmt, width)
    return _fp32_path(sums, e)[0].astype(np.float32)


def ulp_errors(x: np.ndarray, w: np.ndarray, fmt: str, width: int, bits: np.ndarray, acc: str) -> dict:
    """Errors of the FP32 results ``bits`` ((M, D) uint32, ``acc`` mode) in ulps of each result.

    Returns ``{"max_ulps", "bound_ulps", "bound_used", "within_half", "n"}``: the largest error of a
    result against the exact K-long dot product of the codes, in ulps of that result; that result's
    bound in the same unit (0.5 for ``exact``; for ``fp32`` ``sum_t ulp(acc_t) / (2 ulp(y))``, see
    the module docstring); the largest share of its bound a result's error takes; how many of the
    ``n`` results are within half an ulp of the exact value.

    Raises
    ------
    AssertionError
        A result outside its mode's bound, or not finite (real tiles do not overflow).
    ValueError
        An unknown mode.
    """
    if acc not in ("fp32", "exact"):
        raise ValueError(f"acc must be 'fp32' or 'exact', not {acc!r}")
    sums, e = _beats(x, w, fmt, width)
    total = sum(sums[1:], sums[0])
    bound2 = _fp32_path(sums, e)[1] if acc == "fp32" else None   # twice the bound, units of 2**-149
    return _measure(bits, total, e, acc, bound2)


def _measure(bits, total, e: int, acc: str, bound2=None, check: bool = True) -> dict:
    """The ulp measurement of :func:`ulp_errors` / :func:`block_ulp_errors`: FP32 results ``bits``
    against the exact values ``total * 2**e`` (object array of Python ints), in units of
    ``2**lo``, ``lo = min(e, -149)``. ``bound2``: per result, twice its bound in those units (None:
    half an ulp, the ``exact`` mode's); ``check``: assert every result within its bound."""
    lo = min(e, _FP32_LSB)
    ys = np.asarray(bits, dtype=np.uint32).view(np.float32)
    worst = at_worst = used = 0.0
    half = 0
    for (r, j), y in np.ndenumerate(ys):
        assert np.isfinite(y), f"result ({r}, {j}) is {y}; real tiles stay finite"
        err = abs((_fp32_exact(y)[0] << (_FP32_LSB - lo)) - (int(total[r, j]) << (e - lo)))
        u = _ulp_units(y) << (_FP32_LSB - lo)
        b2 = u if bound2 is None else bound2[r, j]
        assert not check or 2 * err <= b2, (f"result ({r}, {j}): error {err / u:.3f} ulp exceeds the "
                                            f"{acc} bound {b2 / (2 * u):.3f} ulp")
        if err / u > worst or not worst:
            worst, at_worst = err / u, b2 / (2 * u)
        used = max(used, 2 * err / b2 if b2 else 0.0)
        half += 2 * err <= u
    return {"max_ulps": worst, "bound_ulps": at_worst, "bound_used": used, "within_half": half,
            "n": int(ys.size)}


def _scale_ints(codes: np.ndarray, sf) -> tuple:
    """Scale codes -> (object array of Python ints, exponent), value = int * 2**exponent exactly."""
    m, e, nan = sf.split(np.asarray(codes))
    if nan.any():
        raise ValueError("scale codes hold NaN; this model covers finite tiles only")
    lo = int(e.min()) if e.size else 0
    return np.vectorize(lambda mm, ee: int(mm) << int(ee - lo), otypes=[object])(m, e), lo


def block_ulp_errors(x, xs, w, ws, fmt: str, width: int, bits, acc: str, bound=None) -> dict:
    """Errors of block-scaled ``fmt``'s FP32 results ``bits`` ((M, D) uint32) in ulps of each result,
    against the exact K-long sum of the scaled products (Python integers).

    Parameters
    ----------
    x, w : ndarray of uint8
        Element codes, (M, Kp) and (Kp, D).
    xs, ws : ndarray of uint8
        Scale codes, (M, Kp / B) and (Kp / B, D).
    acc : str
        ``exact`` (asserted within half an ulp) or ``fp32`` (its bound, docs/numerics.md 7.4, is the
        model's: ``bound``, float64 absolute per result, reported in ulps of the result).

    Returns
    -------
    dict
        As :func:`ulp_errors`.

    Raises
    ------
    AssertionError
        An ``exact`` result more than half an ulp from the exact value, or a result not finite.
    """
    if acc not in ("fp32", "exact"):
        raise ValueError(f"acc must be 'fp32' or 'exact', not {acc!r}")
    bf = get_block_format(fmt)
    xi, lx = _as_ints(x, bf.element)
    wi, lw = _as_ints(w, bf.element)
    sxi, ex = _scale_ints(xs, bf.scale_format)
    swi, ew = _scale_ints(ws, bf.scale_format)
    B = bf.block
    total = np.zeros((x.shape[0], w.shape[1]), dtype=object)
    for b in range(x.shape[1] // B):
        s = xi[:, b * B:(b + 1) * B].dot(wi[b * B:(b + 1) * B, :])
        total = total + s * sxi[:, b:b + 1] * swi[b:b + 1, :]
    e = lx + lw + ex + ew                       # total = exact value / 2**e
    if acc == "exact":
        return _measure(bits, total, e, acc)
    # fp32: the model's bound (float64, docs/numerics.md 7.4), asserted by the model; reported here
    scale = math.ldexp(2.0, -min(e, _FP32_LSB))
    return _measure(bits, total, e, acc, np.asarray(bound, dtype=np.float64) * scale, check=False)


def _fp32_exact(a: np.float32) -> tuple:
    """Finite float32 -> (int, exp) with a == int * 2**exp, exp = -149."""
    return int(math.ldexp(float(a), -_FP32_LSB)), _FP32_LSB
