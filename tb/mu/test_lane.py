"""hw/mu/lane.py: the lane's product against ml_dtypes, with and without operand isolation.

Every code pair of the small formats (E2M1, E3M2, E2M3: all of them; E4M3 and E5M2: every pair with
a zero operand, signed zeros included, and a random sample of the rest) goes through the lane in the
Amaranth simulator. The two's-complement value the tree sees (``t`` sign-extended by ``neg``, plus
``neg``; :mod:`hw.mu.tree`) must equal the exact product from ml_dtypes in units of the lane's LSB;
with ``isolate``, a zero product must hand over ``t = 0, neg = 0`` (the isolation itself: without
it the same pairs with opposite signs give ``t = 2**P - 1, neg = 1``, which the test also checks, so
it would notice the option doing nothing).
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.formats import get_format
from hw.mu.lane import Lane
from hw.mu.numerics import dot_widths

pytestmark = pytest.mark.quick


def _pairs(fmt, rng):
    n = 1 << fmt.bits
    codes = np.arange(n)
    zeros = [0, int(fmt.sign_bit)]
    with_zero = [(z, c) for z in zeros for c in codes] + [(c, z) for z in zeros for c in codes]
    if n <= 64:
        rest = [(a, b) for a in codes for b in codes]
    else:
        rest = [tuple(p) for p in rng.integers(0, n, (1500, 2))]
    return sorted(set(with_zero + rest))


def _run(fmt, isolate, pairs):
    dut = Lane(fmt, isolate)
    out = []

    async def bench(ctx):
        for x, w in pairs:
            ctx.set(dut.x, int(x))
            ctx.set(dut.w, int(w))
            special = (ctx.get(dut.nan) if hasattr(dut, "nan") else 0) | (
                ctx.get(dut.inf) if hasattr(dut, "inf") else 0)
            out.append((ctx.get(dut.t), ctx.get(dut.neg), special))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    return out


def _value(t, neg, p):
    """The tree's view of a lane: ``t`` sign-extended by ``neg``, plus ``neg`` (two's complement)."""
    return (t - (1 << p) + 1) if neg else t


@pytest.mark.parametrize("name", ["fp4_e2m1", "fp6_e3m2", "fp6_e2m3", "fp8_e4m3", "fp8_e5m2"])
def test_lane_products(name):
    fmt = get_format(name)
    dw = dot_widths(fmt, 1)
    p, lsb = dw.prod_bits, dw.lsb_exp
    pairs = _pairs(fmt, np.random.default_rng(1))
    plain, iso = _run(fmt, False, pairs), _run(fmt, True, pairs)
    vals = np.array(pairs, dtype=np.uint8).view(fmt.ml_dtype).astype(np.float64).reshape(-1, 2)
    flipped = 0
    for (x, w), (x_f, w_f), a, b in zip(pairs, vals, plain, iso, strict=True):
        with np.errstate(invalid="ignore"):
            exact = x_f * w_f
        if not np.isfinite(exact):
            assert a[2] and b[2], (name, x, w)           # NaN or Inf flagged by both
            continue
        want = int(np.ldexp(exact, -lsb))                  # exact: the product is on the grid
        assert np.ldexp(float(want), lsb) == exact, (name, x, w)
        assert _value(a[0], a[1], p) == want, (name, x, w, "plain")
        assert _value(b[0], b[1], p) == want, (name, x, w, "isolate")
        if exact == 0:
            assert (b[0], b[1]) == (0, 0), (name, x, w)    # isolated: the tree's inputs stay at 0
            flipped += (a[0], a[1]) == ((1 << p) - 1, 1)
    assert flipped > 0, f"{name}: no signed-zero product differs without isolation"
