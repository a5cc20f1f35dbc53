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


def make_slice(numerics: str = "mu", tree: str | None = None, **params):
    """A :class:`Slice` with real (``mu``) or stub (``stub``: integer numerics) units, and the tb
    geometry.

    ``tree`` picks the real units' column tree (:data:`hw.mu.tree.TREE_ARCHS`; None: the unit's
    default, the Dadda tree synthesis maps). ``words`` computes the same function
    (``docs/verification.md``) and builds and simulates far faster at large D.

    Raises
    ------
    ValueError
        If ``numerics`` is neither, or ``tree`` is given with stub units.
    """
    if numerics not in ("mu", "stub"):
        raise ValueError(f"numerics must be 'mu' (matrix units) or 'stub' (integer stub units), "
                         f"not {numerics!r}")
    unit = None
    if numerics == "stub":
        if tree is not None:
            raise ValueError(f"tree={tree!r} applies to the matrix unit; the stub unit has no tree "
                             "(use numerics='mu')")
        from tb.slice.stub_unit import StubUnit
        unit = StubUnit
    elif tree is not None:
        params["tree"] = tree
    dut = Slice(unit=unit, **params)
    geom = SliceGeometry(units=dut.units, width=dut.width, fmt=dut.fmt, feed_bytes=dut.feed_bytes,
                         rows=dut.rows, addr_bits=dut.addr_bits, hbm_addr_bits=dut.hbm_addr_bits,
                         burst=dut.burst, acc=dut.acc)
    return dut, geom


def run_cases(name: str, cases: list, numerics: str = "mu", out: str | None = None,
              tree: str | None = None, **params):
    """Generate, build (cached under build/sim/<name>) and run ``cases``; return the measurements
    and the slice (``tree``: as :func:`make_slice`)."""
    dut, geom = make_slice(numerics, tree, **params)
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
