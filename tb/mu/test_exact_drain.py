"""The exact mode's drain steps (:mod:`hw.mu.exact_drain`) on their own: the buffered left shift
against Python integers. The whole drain is checked bit for bit against the model through
:class:`hw.mu.exact_acc.ExactAccumulator` (``tb/mu/test_exact_acc.py``)."""

import random
import re

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.clock_gate import CELLS, FANOUT_BUFFER
from hw.mu.exact_drain import shift_left

WIDTH, SHIFT_BITS = 40, 6  # wider than one buffer's share, and shifts past the whole width


class ShiftDemo(wiring.Component):
    """``q = (x << sh) mod 2**WIDTH`` through :func:`shift_left`."""

    x: In(WIDTH)
    sh: In(SHIFT_BITS)
    q: Out(WIDTH)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.q.eq(shift_left(m, self.x, self.sh, platform, name="t"))
        return m


def test_shift_left_every_amount():
    """Every shift amount (0 .. 63, most of them past the 40-bit width) on random and edge words
    equals Python's ``(x << sh) mod 2**40``."""
    dut = ShiftDemo()
    sim = Simulator(dut)
    rng = random.Random(11)
    words = [0, 1, (1 << WIDTH) - 1, 1 << (WIDTH - 1)] + [rng.getrandbits(WIDTH) for _ in range(12)]

    async def bench(ctx):
        for x in words:
            for sh in range(1 << SHIFT_BITS):
                ctx.set(dut.x, x)
                ctx.set(dut.sh, sh)
                assert ctx.get(dut.q) == (x << sh) % (1 << WIDTH), (x, sh)

    sim.add_testbench(bench)
    sim.run()


def test_shift_left_buffers_every_level():
    """With the liberty cells each of the six shift bits reaches its 40 selects through two
    buffers (32 + 8 loads); a plain conversion has none."""
    text = verilog.convert(ShiftDemo(), name="shift_demo", platform=CELLS, emit_src=False)
    assert len(re.findall(rf"^\s*{FANOUT_BUFFER}\s+\S+", text, re.M)) == 2 * SHIFT_BITS
    assert FANOUT_BUFFER not in verilog.convert(ShiftDemo(), name="shift_demo", emit_src=False)
