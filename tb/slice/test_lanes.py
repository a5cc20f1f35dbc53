"""The slice's lane masks against Python integers (Amaranth's simulator, no Verilator)."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.slice.lanes import thermometer


def _check_thermometer(lanes, width, values):
    n = Signal(width)
    below, full = thermometer(n, lanes)
    assert len(below) == lanes
    m = Module()
    out_below, out_full = Signal(lanes), Signal()
    m.d.comb += [out_below.eq(below), out_full.eq(full)]
    wrong = []

    async def bench(ctx):
        for v in values:
            ctx.set(n, v)
            got = ctx.get(out_below)
            want = sum(1 << j for j in range(lanes) if v > j)
            if got != want or ctx.get(out_full) != (v >= lanes):
                wrong.append((v, got, want))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not wrong, f"lanes={lanes} width={width}: first wrong n={wrong[0][0]}"


@pytest.mark.quick
@pytest.mark.parametrize("lanes,width", [(1, 1), (1, 16), (2, 2), (3, 16), (16, 5), (16, 16),
                                         (24, 16), (128, 16), (141, 9), (960, 16)])
def test_thermometer_is_n_above_each_lane(lanes, width):
    """``below[j] = n > j`` and ``full = n >= lanes`` for every n around the lanes and the
    power-of-two edges, the largest n and random ones (lanes not a power of two included, and
    ``n`` narrower or wider than the lanes need)."""
    top = (1 << width) - 1
    vals = set(range(min(top, lanes + 2) + 1)) | {top}
    vals |= {v for k in range(width + 1) for v in ((1 << k) - 1, 1 << k, (1 << k) + 1) if v <= top}
    rng = random.Random(lanes * 131 + width)
    vals |= {rng.randrange(top + 1) for _ in range(64)}
    _check_thermometer(lanes, width, sorted(vals))
