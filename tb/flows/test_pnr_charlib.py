"""The routed block's timing model (:func:`flows.pnr.charlib.block_liberty`) on a hand-written block
with a clock gate: an input that reaches the gate's latch must be required before the clock's rise
by its path through the latch, whatever the period the block is measured at. OpenSTA (Debian
``opensta``) is installed by ``.ci/run``: without it these tests fail, they do not skip."""

import re

import pytest

from flows.pnr.charlib import block_liberty
from tb.flows import OSU, needs_osu

pytestmark = pytest.mark.quick

# en -> two buffers -> the gate's latch (transparent while clk is low) -> AND with clk -> the flop's
# clock; d -> the flop directly
GATED = """module g (clk, en, d, q);
input clk;
input en;
input d;
output q;
wire clkb, e1, e2, enl, gclk;
INVX1 i0 (.A(clk), .Y(clkb));
BUFX2 b0 (.A(en), .Y(e1));
BUFX2 b1 (.A(e1), .Y(e2));
LATCH l0 (.D(e2), .CLK(clkb), .Q(enl));
AND2X2 a0 (.A(clk), .B(enl), .Y(gclk));
DFFPOSX1 f0 (.D(d), .CLK(gclk), .Q(q));
endmodule
"""

# one wire (1 fF between the buffers); the block model needs a SPEF
SPEF = """*SPEF "IEEE 1481-1998"
*DESIGN "g"
*DATE ""
*VENDOR ""
*PROGRAM ""
*VERSION ""
*DESIGN_FLOW ""
*DIVIDER /
*DELIMITER :
*BUS_DELIMITER [ ]
*T_UNIT 1 NS
*C_UNIT 1 PF
*R_UNIT 1 OHM
*L_UNIT 1 HENRY

*D_NET e1 0.001
*CONN
*I b0:Y O
*I b1:A I
*CAP
1 b1:A 0.001
*END
"""


def _model(tmp_path, text, period_ps, name):
    from flows.synth import liberty as L

    lib = L.load(OSU)
    (tmp_path / f"{name}.v").write_text(text)
    (tmp_path / f"{name}.spef").write_text(SPEF)
    caps = {(c, p): v * lib.cap_pf for c, cell in lib.cells.items() for p, v in cell.inputs.items()}
    return block_liberty(tmp_path / f"{name}.v", "g", tmp_path / f"{name}.spef", OSU, caps,
                         ["clk", "en", "d"], ["q"], "clk", tmp_path / name, slew_ps=148.0,
                         period_ps=period_ps)


@needs_osu
def test_an_input_through_a_clock_gates_latch_is_required_by_its_path_not_the_period(tmp_path):
    text, a = _model(tmp_path, GATED, 100_000.0, "p100")
    _, b = _model(tmp_path, GATED, 20_000.0, "p20")
    assert a.setup["en"] == pytest.approx(b.setup["en"], abs=1e-4)     # not half the period
    assert a.setup["d"] == pytest.approx(b.setup["d"], abs=1e-4)
    # more than the arrival at the latch's D (OpenSTA's path to it, checked at the latch's opening
    # edge, half a period after the rise), by the latch's D -> Q delay: well under a nanosecond
    (slack,) = re.findall(r"^PATH en l0/D (\S+)", (tmp_path / "p100" / "measure_0.log").read_text(), re.M)
    at_d = 50.0 - float(slack)
    assert 0.1 < at_d < a.setup["en"] < at_d + 0.5
    assert re.search(r'pin \(en\) \{ direction : input;.*?setup_rising;\s+rise_constraint \(scalar\) '
                     rf'\{{ values \("{a.setup["en"]:.5f}"\)', text, re.S)


@needs_osu
def test_a_latch_open_while_the_clock_is_high_is_refused(tmp_path):
    with pytest.raises(ValueError, match="reaches latch l0, which is transparent while the clock is high"):
        _model(tmp_path, GATED.replace(".CLK(clkb)", ".CLK(clk)"), 100_000.0, "high")
