"""The activation issue's lane and scale masks against K (Amaranth's simulator, no Verilator).

The slice tests fill the padding lanes with random codes, but the gearbox also zeroes the weight
rows past K, so a padding lane left unmasked there only shows when its code is a NaN. Here the
scratchpad reads all ones and every lane and scale code of every beat is checked.
"""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from hw.mu.interface import MatrixUnitSignature
from hw.slice.sequencer import ActivationIssue


def _beats(width: int, fmt: str, m_rows: int, k: int):
    unit = MatrixUnitSignature(width, fmt)
    dut = ActivationIssue(unit=unit, addr_bits=8)
    kt = -(-k // width)
    beats = []

    async def bench(ctx):
        ctx.set(dut.rd_data, (1 << (32 * width)) - 1)
        ctx.set(dut.x.ready, 1)
        ctx.set(dut.m, m_rows)
        ctx.set(dut.k, k)
        ctx.set(dut.kt, kt)
        ctx.set(dut.n_groups, 1)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for _ in range(m_rows * kt + 8):
            if ctx.get(dut.x.valid):
                p = ctx.get(dut.x.payload)
                beats.append((int(ctx.get(dut.x.payload.data)),
                              int(ctx.get(dut.x.payload.scales)) if unit.blocks else 0,
                              bool(p.first), bool(p.last)))
            await ctx.tick()

    m = Module()
    m.submodules.dut = dut
    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return unit, kt, beats


@pytest.mark.quick
@pytest.mark.parametrize("width,fmt", [(8, "fp8_e4m3"), (16, "fp4_e2m1"), (32, "nvfp4"),
                                       (32, "mxfp8_e4m3"), (128, "mxfp4_e2m1")])
def test_lanes_and_scales_past_k_are_zero(width, fmt):
    """Every lane ``k >= K`` of every beat is zero and every other lane keeps its code (all ones);
    a block's scale code is zero exactly when the block starts at or past K. K runs over the
    k-tile edges: 1, D - 1, D, D + 1, a block edge and 3D - 5."""
    b = MatrixUnitSignature(width, fmt).bits
    for k in sorted({1, width - 1, width, width + 1, 2 * width + 16, 3 * width - 5}):
        unit, kt, beats = _beats(width, fmt, 2, k)
        assert len(beats) == 2 * kt, f"K={k}: {len(beats)} beats for {kt} k-tiles of 2 rows"
        for i, (data, scales, first, last) in enumerate(beats):
            t = i % kt          # one row per pass (R = 1): its k-tiles, then the next row
            assert (first, last) == (t == 0, t == kt - 1), f"K={k} beat {i}: flags"
            for j in range(width):
                want = (1 << b) - 1 if t * width + j < k else 0
                assert (data >> (j * b)) & ((1 << b) - 1) == want, f"K={k} tile {t} lane {j}"
            for blk in range(unit.blocks):
                start = t * width + blk * unit.block.block
                want = 0xFF if start < k else 0
                assert (scales >> (8 * blk)) & 0xFF == want, f"K={k} tile {t} block {blk}"
