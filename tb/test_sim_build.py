"""The simulation build folder (tb/sim.py): a folder an interrupted build left behind builds again,
and the build options' optimization level reaches the block and the top."""

import itertools
import os
import re

import pytest

from tb import sim

pytestmark = pytest.mark.quick

VERILOG = """
module leaf(input clk, input [3:0] d, output reg [3:0] q);
  always @(posedge clk) q <= d + 4'd1;
endmodule
module top(input clk, input [3:0] d, output [3:0] q);
  wire [3:0] m;
  leaf a(.clk(clk), .d(d), .q(m));
  leaf b(.clk(clk), .d(m), .q(q));
endmodule
"""


def test_a_folder_left_without_its_makefile_builds_again():
    """A hierarchical build whose makefile is gone (the state a killed build leaves: Verilator's
    dependency files say up to date, ``Vtop.mk`` was never written) is rebuilt from scratch."""
    name = "test-sim-build-stale-folder"
    sim.build(name, VERILOG, "top", hier_blocks=["leaf"], fresh=True)
    mk = sim.BUILD / name / "sim" / "Vtop.mk"
    assert mk.is_file()
    mk.unlink()
    sim.build(name, VERILOG, "top", hier_blocks=["leaf"])
    assert mk.is_file()


def _compiled_at(output: str) -> dict:
    """``{source file name: optimization flag}`` of the C++ compiles in a build's output."""
    out = {}
    for m in re.finditer(r"\+\+ (-O\w*)?[^\n]* -c -o \S+ (\S+)", output):
        out[os.path.basename(m.group(2))] = m.group(1) or ""
    return out


@pytest.mark.parametrize("hier", [True, False], ids=["hierarchical", "flat"])
def test_fast_build_compiles_the_design_at_its_level(capfd, hier):
    """``FAST_BUILD_ARGS``' ``OPT_FAST`` reaches every compile of the design: Verilator's own
    ``--build`` of a hierarchical build (blocks and top), and cocotb's make of a flat build's top,
    which gets it through ``MAKEFLAGS`` (no level is left there after the build)."""
    level = dict(itertools.pairwise(sim.FAST_BUILD_ARGS))["-MAKEFLAGS"].split("=")[1]
    assert level != "-Os"   # the level Verilator's makefile uses by itself
    assert "OPT_" not in os.environ.get("MAKEFLAGS", "")
    sim.build(f"test-sim-build-opt-{'hier' if hier else 'flat'}", VERILOG, "top",
              hier_blocks=["leaf"] if hier else (), build_args=sim.FAST_BUILD_ARGS, fresh=True)
    assert "OPT_" not in os.environ.get("MAKEFLAGS", "")
    flags = _compiled_at(capfd.readouterr().out)
    design = {f: o for f, o in flags.items() if f.startswith(("Vtop", "Vleaf", "leaf"))}
    assert any(f.startswith("Vtop") for f in design), flags
    assert any(f.startswith("Vleaf") for f in design) == hier, flags
    assert set(design.values()) == {level}, design
