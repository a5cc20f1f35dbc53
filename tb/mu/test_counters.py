"""Segmented event counters (hw/mu/counters.py) against a plain running count, every cycle.

Narrow counters with short segments reach every segment's wrap, the all-ones chains and the wrap of
the whole count in a few hundred cycles; events come in bursts (long runs of 1s drive carries through
every segment back to back) and at random.
"""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.mu.counters import event_counter

pytestmark = pytest.mark.quick


@pytest.mark.parametrize("gate", [None, "sim"], ids=["plain", "gated"])
@pytest.mark.parametrize("bits,shift,seg,low", [(9, 0, 2, 2), (10, 3, 1, 1), (11, 0, 4, 1), (7, 0, 8, 2),
                                                (12, 5, 3, 3), (8, 0, 3, 9)])
def test_counter_matches_plain_count(bits, shift, seg, low, gate):
    """``gate``: the gated counter's enables (its simulation view: each segment and increment loads
    only under its enable), the same count every cycle."""
    m = Module()
    ev = Signal()
    out = Signal(bits)
    m.d.comb += out.eq(event_counter(m, "c", bits, ev, shift=shift, seg_bits=seg, low_bits=low,
                                     gate=gate))
    rng = random.Random(bits * 100 + seg * 10 + low)
    pattern = [1] * (3 << (bits - shift)) + [rng.random() < 0.7 for _ in range(2000)]
    seen = []

    async def bench(ctx):
        for e in pattern:
            ctx.set(ev, e)
            seen.append(ctx.get(out))
            await ctx.tick()
        seen.append(ctx.get(out))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    expect, count = [], 0
    for e in pattern + [0]:
        expect.append((count << shift) % (1 << bits))
        count += e
    assert seen == expect


def test_bad_counter_parameters():
    with pytest.raises(ValueError, match="shift < bits"):
        event_counter(Module(), "c", 8, Signal(), shift=8)
    with pytest.raises(ValueError, match="seg_bits >= 1"):
        event_counter(Module(), "c", 8, Signal(), seg_bits=0)
    with pytest.raises(ValueError, match="low_bits >= 1"):
        event_counter(Module(), "c", 8, Signal(), low_bits=0)
