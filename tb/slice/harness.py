"""Build a slice for simulation and run cases on it (shared by the tests and the knee sweep)."""

import json
import os
from dataclasses import asdict

from hw import hier
from hw.slice.slice import Slice
from tb import sim
from tb.mu.harness import SIM_BUILD_ARGS, SIM_HIER_BLOCKS
from tb.slice.layout import SliceGeometry

__all__ = ["make_slice", "run_cases"]


def make_slice(numerics: str = "mu", **params):
    """A :class:`Slice` with real (``mu``), stub (``stub``: integer numerics) or timing-only
    (``timing``: no arithmetic, results not checked) units, and the tb geometry."""
    unit = None
    if numerics == "stub":
        from tb.slice.stub_unit import StubUnit
        unit = StubUnit
    elif numerics == "timing":
        from tb.slice.stub_unit import TimingStubUnit
        unit = TimingStubUnit
    dut = Slice(unit=unit, **params)
    geom = SliceGeometry(units=dut.units, width=dut.width, fmt=dut.fmt, feed_bytes=dut.feed_bytes,
                         rows=dut.rows, addr_bits=dut.addr_bits, hbm_addr_bits=dut.hbm_addr_bits,
                         burst=dut.burst, acc=dut.acc)
    return dut, geom


def run_cases(name: str, cases: list, numerics: str = "mu", out: str | None = None, **params):
    """Generate, build (cached under build/sim/<name>) and run ``cases``; return the measurements."""
    dut, geom = make_slice(numerics, **params)
    verilog = hier.emit(dut, "slice").verilog
    cases = [dict(c, numerics=numerics) for c in cases]
    out = out or str(sim.BUILD / name / "results.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    sim.run(name, verilog, "slice", "tb.slice.slice_cocotb",
            env={"SLICE_CFG": json.dumps(asdict(geom)), "SLICE_CASES": json.dumps(cases),
                 "SLICE_OUT": out},
            hier_blocks=SIM_HIER_BLOCKS if numerics == "mu" else (), build_args=SIM_BUILD_ARGS)
    with open(out) as fh:
        return json.load(fh), dut
