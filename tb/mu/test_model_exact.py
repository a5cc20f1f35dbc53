"""The ``exact`` accumulate mode of the model on a block-scaled format (docs/numerics.md section 7.5)
against the contract written in Fractions: scale and element values decoded by ``ml_dtypes``, the
K-long sum of the scaled products summed exactly and rounded once (``rne_oracle``)."""

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from hw.formats import get_block_format
from tb.mu.model import MatrixUnitModel
from tb.mu.rounding import FP32_NAN

from .test_model import rne_oracle

pytestmark = pytest.mark.quick


def _e4m3(code) -> Fraction:
    return Fraction(float(np.uint8(code).view(ml_dtypes.float8_e4m3fn)))


def _nvfp4_oracle(x, xs, w, ws, row, first, last, rows):
    """Per ``last`` beat (row, FP32 bits of every column), from Fractions."""
    bf = get_block_format("nvfp4")
    el = np.asarray(x).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    wl = np.asarray(w).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    d, b = wl.shape[1], bf.block
    state = {r: ([Fraction(0)] * d, [False] * d) for r in range(rows)}
    out = []
    for t in range(len(x)):
        r = int(row[t])
        if first[t]:
            state[r] = ([Fraction(0)] * d, [False] * d)
        sums, nan = state[r]
        for j in range(d):
            for i in range(d // b):
                sx, sw = int(xs[t, i]), int(ws[i, j])
                if sx >= 0x7F or sw >= 0x7F:  # sign bit set, or the E4M3 NaN pattern 0x7F
                    nan[j] = True
                    continue
                p = sum(Fraction(el[t, k]) * Fraction(wl[k, j]) for k in range(i * b, (i + 1) * b))
                sums[j] += p * _e4m3(sx) * _e4m3(sw)
        if last[t]:
            out.append((r, [FP32_NAN if nan[j] else rne_oracle(sums[j]) for j in range(d)]))
    return out


@pytest.mark.parametrize("width", [16, 32, 64])
def test_nvfp4_exact_mode_matches_fractions(width):
    """Every result is the correctly rounded exact K-long sum, over the whole UE4M3 range (the
    smallest and largest scales in one accumulation), with rows, first/last and NaN scales."""
    rng = np.random.default_rng(width)
    nb, rows, n = width // 16, 2, 40
    m = MatrixUnitModel(width, "nvfp4", rows, acc="exact")
    got, want = [], []
    for _ in range(2):
        w = rng.integers(0, 16, (width, width))
        ws = rng.integers(0, 0x7F, (nb, width))
        ws[0, :2] = (0x01, 0x7E)                       # smallest subnormal and largest scale
        x = rng.integers(0, 16, (n, width))
        xs = rng.integers(0, 0x7F, (n, nb))
        xs[rng.random((n, nb)) < 0.02] = 0x80 | rng.integers(0, 0x80)   # a few NaN scales
        row, first, last = rng.integers(0, rows, n), rng.random(n) < 0.15, rng.random(n) < 0.3
        first[:rows], row[:rows] = True, np.arange(rows)
        got += [(o.row, o.bits.tolist()) for o in m.run(w, x, first, last, row, ws=ws, xs=xs)]
        want += _nvfp4_oracle(x, xs, w, ws, row, first, last, rows)
    assert got == want


def test_exact_mode_on_mx_is_the_window():
    """E8M0 scales span 508 binades: no fixed-point grid (the message names the window), and the
    model's exact mode on MX is the window's (tb/mu/model_window.py)."""
    from hw.mu.scales import fixed_sum_widths
    with pytest.raises(ValueError, match=r"nvfp4.*mxfp8_e4m3's e8m0 scales span 508.*the window"):
        fixed_sum_widths("mxfp8_e4m3", 64)
    assert MatrixUnitModel(64, "mxfp8_e4m3", acc="exact").window is not None
    assert MatrixUnitModel(32, "nvfp4", acc="exact").window is None
