"""Clock gates (hw/clock_gate.py): both views of a gated register group against a Python model.

The Verilog view (the liberty cells, simulated by Verilator with :data:`hw.clock_gate.SIM_MODELS`)
runs ``tb/clock_gate_cocotb.py``; the Amaranth simulator runs the same pattern on its view
(registers under the enable). The emitted Verilog has one gate (inverter, latch, AND) per
:data:`LATCH_FANOUT` groups of flops, a clock buffer per group behind a gate of several groups, and
registers with and without a reset in separate groups.
"""

import random
import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from flows.synth.flow import resolve_library
from hw.clock_gate import (
    CELLS,
    CLOCK_BUFFER,
    FANOUT_BUFFER,
    GATE_CELLS,
    LATCH_FANOUT,
    SIM_MODELS,
    fanout,
    gated_assign,
    with_cell_models,
)
from tb import sim

pytestmark = pytest.mark.quick
INIT = 0xA5A
GROUP = 2     # small groups, so 20 bits need more than LATCH_FANOUT of them
assert 20 // GROUP > LATCH_FANOUT


class GateDemo(wiring.Component):
    """A reset-less 20-bit register and a 12-bit register with a reset, both loading ``d`` while
    ``en`` through clock gates (groups of 2 flops: several groups share a latch)."""

    def __init__(self):
        super().__init__({"en": In(1), "d": In(20), "q_hold": Out(20), "q_rst": Out(12)})

    def elaborate(self, platform):
        m = Module()
        hold = Signal(20, reset_less=True)
        kept = Signal(12, init=INIT)
        gated_assign(m, platform, self.en, [(hold, self.d), (kept, self.d)], "g", group=GROUP)
        m.d.comb += [self.q_hold.eq(hold), self.q_rst.eq(kept)]
        return m


def test_cells_view_groups_and_models():
    text = verilog.convert(GateDemo(), name="gate_demo", platform=CELLS, emit_src=False)
    ands = re.findall(r"^\s*AND2X2\s", text, re.M)
    latches = re.findall(r"^\s*LATCH\s", text, re.M)
    bufs = re.findall(rf"^\s*{CLOCK_BUFFER}\s", text, re.M)
    # 20 reset-less bits and 12 bits with a reset, packed separately in groups of GROUP (10 and 6
    # groups), one gate per LATCH_FANOUT groups of each (8 + 2, and 6), a buffer per group
    groups = [-(-20 // GROUP), -(-12 // GROUP)]
    assert groups == [10, 6] and LATCH_FANOUT == 8
    assert len(ands) == len(latches) == 3 and len(bufs) == 16
    for cell in GATE_CELLS + (CLOCK_BUFFER,):
        assert re.search(rf"^\s*{cell}\s", text, re.M)
    assert with_cell_models(text).endswith(SIM_MODELS)
    plain = verilog.convert(GateDemo(), name="gate_demo", emit_src=False)
    assert not re.search(r"^\s*LATCH\s", plain, re.M) and with_cell_models(plain) == plain


def test_cells_view_in_verilator():
    text = verilog.convert(GateDemo(), name="gate_demo", platform=CELLS, emit_src=False)
    sim.run("clock_gate_demo", text, "gate_demo", "tb.clock_gate_cocotb",
            env={"GATE_CYCLES": 400, "GATE_SEED": 3})


def test_amaranth_view_matches_the_model():
    dut = GateDemo()
    s = Simulator(dut)
    s.add_clock(1e-8)
    rng = random.Random(3)
    seen = {"loads": 0}

    async def bench(ctx):
        hold, kept = None, INIT
        for _ in range(300):
            en, d = rng.random() < 0.3, rng.getrandbits(20)
            ctx.set(dut.en, en)
            ctx.set(dut.d, d)
            await ctx.tick()
            if en:
                hold, kept = d, d & 0xFFF
                seen["loads"] += 1
            if hold is not None:
                assert ctx.get(dut.q_hold) == hold
            assert ctx.get(dut.q_rst) == kept

    s.add_testbench(bench)
    s.run()
    assert seen["loads"] > 10


class FanoutDemo(wiring.Component):
    """``q = d & s`` for a 70-bit ``d``, the select ``s`` replicated by :func:`fanout`."""

    def __init__(self):
        super().__init__({"s": In(1), "d": In(70), "q": Out(70)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.q.eq(self.d & fanout(m, platform, self.s, 70, "sel"))
        return m


def test_fanout_buffers_each_share():
    """With the liberty cells a 70-bit select is three buffers (32 + 32 + 6 loads), each driving
    its own bits; without them it is a plain replication. The buffer's simulation model is the
    liberty's function."""
    text = verilog.convert(FanoutDemo(), name="fanout_demo", platform=CELLS, emit_src=False)
    bufs = re.findall(rf"^\s*{FANOUT_BUFFER}\s+(\S+)", text, re.M)
    assert len(bufs) == 3
    assert with_cell_models(text).endswith(SIM_MODELS)
    plain = verilog.convert(FanoutDemo(), name="fanout_demo", emit_src=False)
    assert FANOUT_BUFFER not in plain and with_cell_models(plain) == plain
    lib = resolve_library(None, log=lambda s: None)
    if lib.generic:
        pytest.fail("the OSU 0.18 um liberty is missing: apt-get install qflow-tech-osu018")
    cell = lib.cell(FANOUT_BUFFER)
    assert cell.functions[cell.outputs[0]].strip("() ") == next(iter(cell.inputs))
    assert re.search(rf"module {FANOUT_BUFFER}\(input A, output Y\);\s*assign Y = A;", SIM_MODELS)

    dut = FanoutDemo()
    s = Simulator(dut)
    rng = random.Random(5)

    async def bench(ctx):
        for _ in range(50):
            sel, d = rng.getrandbits(1), rng.getrandbits(70)
            ctx.set(dut.s, sel)
            ctx.set(dut.d, d)
            assert ctx.get(dut.q) == (d if sel else 0)

    s.add_testbench(bench)
    s.run()
