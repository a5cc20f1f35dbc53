"""The simulation build folder (tb/sim.py): a folder an interrupted build left behind builds again."""

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
