"""Errors in FP32 ulps against the exact dot product (tb/tiles/exact.py ``ulp_errors``).

The measurement is checked against an independent one: the codes decoded by ``ml_dtypes``, summed
as ``Fraction``s, and the ulp of each result from ``numpy.spacing``. The results measured are the
numerics model's in both accumulate modes, on E5M2 operands spread over many binades (so the ``fp32``
mode's per-beat rounding shows), and one result deliberately off by an ulp (which the ``exact``
mode's bound must reject).
"""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from tb.mu.model import MatrixUnitModel
from tb.tiles import exact

D, M, TILES = 8, 3, 6


def _operands(seed=0):
    rng = np.random.default_rng(seed)
    codes = np.arange(256, dtype=np.uint8)
    finite = codes[np.isfinite(codes.view(ml_dtypes.float8_e5m2).astype(np.float64))]
    return rng.choice(finite, (M, D * TILES)), rng.choice(finite, (D * TILES, D))


def _model(x, w, acc):
    model = MatrixUnitModel(D, "fp8_e5m2", rows=M, acc=acc)
    rows = []
    for t in range(TILES):
        ks = slice(t * D, (t + 1) * D)
        rows += model.run(w[ks], x[:, ks], t == 0, t == TILES - 1, row=np.arange(M))
    return np.stack([r.bits for r in rows]).astype(np.uint32)


def _independent_max_ulps(x, w, bits):
    xv = x.view(ml_dtypes.float8_e5m2).astype(np.float64)
    wv = w.view(ml_dtypes.float8_e5m2).astype(np.float64)
    ys = bits.view(np.float32)
    worst = Fraction(0)
    for r in range(M):
        for j in range(D):
            ref = sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(xv[r], wv[:, j], strict=True))
            ulp = Fraction(float(np.spacing(np.abs(ys[r, j]))))
            worst = max(worst, abs(Fraction(float(ys[r, j])) - ref) / ulp)
    return worst


@pytest.mark.parametrize("seed", [0, 1])
def test_ulps_match_an_independent_measurement_in_both_modes(seed):
    x, w = _operands(seed)
    got = {}
    for acc in ("fp32", "exact"):
        bits = _model(x, w, acc)
        u = exact.ulp_errors(x, w, "fp8_e5m2", D, bits, acc)
        assert u["n"] == M * D
        assert u["max_ulps"] == pytest.approx(float(_independent_max_ulps(x, w, bits)), rel=1e-12)
        got[acc] = u
    assert got["exact"]["max_ulps"] <= 0.5 and got["exact"]["bound_ulps"] == 0.5
    assert got["exact"]["within_half"] == M * D
    # products over ~60 binades: the per-beat rounding of fp32 loses more than half an ulp somewhere
    assert got["fp32"]["max_ulps"] > 0.5
    assert got["fp32"]["max_ulps"] <= got["fp32"]["bound_ulps"]
    assert 0 < got["fp32"]["bound_used"] <= 1


def test_a_result_one_ulp_off_breaks_the_exact_bound():
    x, w = _operands(0)
    bits = _model(x, w, "exact")
    nz = np.flatnonzero(bits & 0x7FFFFFFF)[0]
    bad = bits.copy()
    bad.flat[nz] += 1                      # the next float32 away from zero: one ulp off
    with pytest.raises(AssertionError, match="exceeds the exact bound"):
        exact.ulp_errors(x, w, "fp8_e5m2", D, bad, "exact")
    with pytest.raises(ValueError, match="acc must be"):
        exact.ulp_errors(x, w, "fp8_e5m2", D, bits, "fp16")


def test_fp32_bound_is_the_sum_of_half_ulps_of_the_running_values():
    """Hand-worked: beat 0 sums to 2^25 + 1 (rounds to 2^25, ulp 4), beat 1 to -2^25. The fp32 result
    is 0 against an exact 1; the bound is (ulp(2^25) + ulp(0)) / 2 = (4 + 2^-149) / 2."""
    # E5M2: 2^15 * 2^10 = 2^25 (codes 0x78 = 2^15, 0x64 = 2^10), 1 * 1 (0x3C = 1.0)
    x = np.zeros((1, 2 * D), np.uint8)
    w = np.zeros((2 * D, D), np.uint8)
    x[0, 0], w[0, 0] = 0x78, 0x64          # 2^25
    x[0, 1], w[1, 0] = 0x3C, 0x3C          # + 1
    x[0, D], w[D, 0] = 0xF8, 0x64          # beat 1: -2^25
    bits = np.zeros((1, D), np.uint32)     # the fp32 result: 0 everywhere
    u = exact.ulp_errors(x, w, "fp8_e5m2", D, bits, "fp32")
    assert u["max_ulps"] == 2.0 ** 149     # |0 - 1| in ulps of 0 (2^-149)
    assert u["bound_ulps"] == (4 * 2.0 ** 149 + 1) / 2
    with pytest.raises(AssertionError, match="exceeds the exact bound"):
        exact.ulp_errors(x, w, "fp8_e5m2", D, bits, "exact")


def _vals(codes, dtype):
    """Codes -> float64 values through ``ml_dtypes`` (the independent decode)."""
    return np.asarray(codes, np.uint8).view(dtype).astype(np.float64)


def _block_operands(fmt, d, tiles, seed, spread):
    """Random finite element codes and scale codes of block-scaled ``fmt`` (E8M0 scales within
    ``spread`` binades of 1; UE4M3 scales any finite code) and their ``ml_dtypes`` types."""
    from hw.formats import get_block_format

    bf = get_block_format(fmt)
    rng = np.random.default_rng(seed)
    el = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp4_e2m1": ml_dtypes.float4_e2m1fn}[bf.element]
    codes = np.arange(16 if bf.element == "fp4_e2m1" else 256, dtype=np.uint8)
    finite = codes[np.isfinite(_vals(codes, el))]
    k, nb = d * tiles, d * tiles // bf.block
    x, w = rng.choice(finite, (M, k)), rng.choice(finite, (k, d))
    if bf.scale == "e8m0":
        xs, ws = ((127 + rng.integers(-spread, spread + 1, s)).astype(np.uint8) for s in ((M, nb), (nb, d)))
        sc = ml_dtypes.float8_e8m0fnu
    else:
        xs, ws = (rng.integers(0, 0x7F, s).astype(np.uint8) for s in ((M, nb), (nb, d)))
        sc = ml_dtypes.float8_e4m3fn
    return x, xs, w, ws, el, sc


def _block_model(fmt, d, tiles, x, xs, w, ws, acc):
    from hw.formats import get_block_format

    nb = d // get_block_format(fmt).block
    model = MatrixUnitModel(d, fmt, rows=M, acc=acc)
    rows = []
    for t in range(tiles):
        ks, bs = slice(t * d, (t + 1) * d), slice(t * nb, (t + 1) * nb)
        rows += model.run(w[ks], x[:, ks], t == 0, t == tiles - 1, row=np.arange(M), ws=ws[bs], xs=xs[:, bs])
    return np.stack([r.bits for r in rows]).astype(np.uint32), np.stack([r.bound for r in rows])


def _block_independent_max_ulps(B, x, xs, w, ws, el, sc, bits):
    xv, wv, xsv, wsv = _vals(x, el), _vals(w, el), _vals(xs, sc), _vals(ws, sc)
    ys = bits.view(np.float32)
    worst = Fraction(0)
    for r in range(ys.shape[0]):
        for j in range(ys.shape[1]):
            ref = sum(Fraction(xv[r, k]) * Fraction(wv[k, j]) * Fraction(xsv[r, k // B])
                      * Fraction(wsv[k // B, j]) for k in range(x.shape[1]))
            ulp = Fraction(float(np.spacing(np.abs(ys[r, j]))))
            worst = max(worst, abs(Fraction(float(ys[r, j])) - ref) / ulp)
    return worst


@pytest.mark.parametrize("fmt,d,spread", [("nvfp4", 16, 0), ("mxfp8_e4m3", 32, 30)])
def test_block_ulps_match_an_independent_measurement(fmt, d, spread):
    """Block-scaled results measured against the exact sum of the scaled products: the same worst
    error as ``Fraction`` arithmetic on ``ml_dtypes`` values (elements and scales); NVFP4 in the
    ``exact`` mode within half an ulp, and one ulp off rejected."""
    from hw.formats import get_block_format

    tiles = 3
    x, xs, w, ws, el, sc = _block_operands(fmt, d, tiles, 0, spread)
    for acc in ("fp32", "exact") if fmt == "nvfp4" else ("fp32",):
        bits, bound = _block_model(fmt, d, tiles, x, xs, w, ws, acc)
        u = exact.block_ulp_errors(x, xs, w, ws, fmt, d, bits, acc, bound)
        assert u["n"] == M * d
        ref = _block_independent_max_ulps(get_block_format(fmt).block, x, xs, w, ws, el, sc, bits)
        assert u["max_ulps"] == pytest.approx(float(ref), rel=1e-12)
        if acc == "exact":
            assert u["max_ulps"] <= 0.5 and u["within_half"] == M * d
            bad = bits.copy()
            bad.flat[np.flatnonzero(bits & 0x7FFFFFFF)[0]] += 1
            with pytest.raises(AssertionError, match="exceeds the exact bound"):
                exact.block_ulp_errors(x, xs, w, ws, fmt, d, bad, acc)
        else:
            assert u["max_ulps"] <= u["bound_ulps"] * (1 + 1e-9)
