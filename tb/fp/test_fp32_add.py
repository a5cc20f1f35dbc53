"""The slice's FP32 adder (Amaranth simulator) against the bit-true model and numpy's float32 add."""

import itertools

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.fp.add import Fp32Adder
from tb.mu.rounding import FP32_EDGES, FP32_NAN, fp32_add

pytestmark = pytest.mark.quick

EDGES = list(FP32_EDGES)


def _vectors(n_random: int, seed: int):
    rng = np.random.default_rng(seed)
    pairs = list(itertools.product(EDGES, EDGES))
    a = rng.integers(0, 1 << 32, size=n_random, dtype=np.uint64)
    # near-cancellation and ties: b close to -a, and exponents a few binades apart
    b = a ^ 0x80000000 ^ rng.integers(0, 4, size=n_random, dtype=np.uint64)
    # exponents 0..29 binades apart, either sign: effective additions and subtractions with
    # renormalization and sticky bits
    c = (a & 0x007FFFFF) | ((((a >> 23) & 0xFF) + rng.integers(0, 30, size=n_random,
                                                               dtype=np.uint64)) % 255) << 23
    c |= ((a >> 31) ^ rng.integers(0, 2, size=n_random, dtype=np.uint64)) << 31
    for i in range(n_random):
        pairs.append((int(a[i]), int(rng.integers(0, 1 << 32))))
        pairs.append((int(a[i]), int(b[i]) & 0xFFFFFFFF))
        pairs.append((int(c[i]) & 0xFFFFFFFF, int(a[i])))
    return pairs


@pytest.mark.parametrize("stages", [0, 1, 2, 3, 4])
def test_fp32_add_against_model(stages):
    """Every sum equals the model, exactly ``stages`` clocks after its operands: a new pair every
    cycle, and the output is checked every cycle against the pair ``stages`` cycles back (before
    the pipeline is full, the output is whatever it holds and not checked)."""
    dut = Fp32Adder(stages=stages)
    assert dut.latency == stages
    # the staged adders are the same logic with registers: the edge pairs and fewer random ones
    pairs = _vectors(1500 if stages == 0 else 300, seed=11)
    errors = []

    async def bench(ctx):
        wants = []
        for i, (a, b) in enumerate(pairs + [(0, 0)] * stages):
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            wants.append(fp32_add(a, b))
            if i >= stages:
                got, want = ctx.get(dut.y), wants[i - stages]
                if got != want:
                    errors.append((i - stages, hex(pairs[i - stages][0]), hex(pairs[i - stages][1]),
                                   hex(got), hex(want)))
            if stages:
                await ctx.tick()

    sim = Simulator(dut)
    if stages:
        sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert not errors, f"{len(errors)} of {len(pairs)} sums wrong, first {errors[0]}"


@pytest.mark.parametrize("stages", [5, -1, True, "1", 1.0])
def test_fp32_add_bad_stages(stages):
    with pytest.raises(ValueError, match="stages must be an integer from 0 to 4"):
        Fp32Adder(stages=stages)


def test_model_add_is_ieee_float32_add():
    """The model's add equals numpy's IEEE float32 add, up to NaN canonicalization and -0 + -0."""
    pairs = _vectors(3000, seed=12)
    a = np.array([p[0] for p in pairs], dtype=np.uint32)
    b = np.array([p[1] for p in pairs], dtype=np.uint32)
    with np.errstate(all="ignore"):
        ieee = (a.view(np.float32) + b.view(np.float32)).view(np.uint32)
    for x, y, want in zip(a, b, ieee, strict=True):
        got = fp32_add(int(x), int(y))
        if np.isnan(np.uint32(want).view(np.float32)):
            assert got == FP32_NAN, (hex(x), hex(y), hex(got))
        elif x == y == 0x80000000:
            assert got == 0, "an exact zero is +0 (IEEE: -0 + -0 = -0)"
        else:
            assert got == int(want), (hex(x), hex(y), hex(got), hex(want))
