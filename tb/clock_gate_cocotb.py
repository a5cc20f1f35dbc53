"""cocotb test of :class:`tb.test_clock_gate.GateDemo` through its clock gates' cell models.

Inputs are written at falling edges (:mod:`tb.lib.clocked`'s rule); at the next falling edge the
registers must hold what the Python model says the rising edge between loaded: the reset-less group
``d`` when ``en`` was high, the group with a reset its reset value when ``rst`` was high, else ``d``'s
low bits when ``en`` was high. Knobs: ``GATE_CYCLES``, ``GATE_SEED``.
"""

import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import Immediate
from cocotb.triggers import FallingEdge

INIT = 0xA5A          # the reset group's reset value (tb.test_clock_gate.GateDemo)


@cocotb.test()
async def gated_groups(dut):
    rng = random.Random(int(os.environ.get("GATE_SEED", "1")))
    cycles = int(os.environ.get("GATE_CYCLES", "400"))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns", impl="gpi").start())
    dut.rst.value = Immediate(1)
    dut.en.value = Immediate(0)
    dut.d.value = Immediate(0)
    await FallingEdge(dut.clk)
    await FallingEdge(dut.clk)
    hold, kept = None, INIT        # hold: unknown until its first load
    loads = resets = 0
    for _ in range(cycles):
        en, rst, d = rng.random() < 0.3, rng.random() < 0.05, rng.getrandbits(20)
        dut.en.value = Immediate(int(en))
        dut.rst.value = Immediate(int(rst))
        dut.d.value = Immediate(d)
        await FallingEdge(dut.clk)
        if en:
            hold = d
            loads += 1
        kept = INIT if rst else (d & 0xFFF if en else kept)
        resets += rst
        if hold is not None:
            assert int(dut.q_hold.value) == hold, f"hold: got {int(dut.q_hold.value):#x}, want {hold:#x}"
        assert int(dut.q_rst.value) == kept, f"reset group: got {int(dut.q_rst.value):#x}, want {kept:#x}"
    assert loads > 10 and resets > 2, "the pattern exercised loads and resets"
