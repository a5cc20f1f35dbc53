"""Wire RC from the technology LEF and the repeater chain model (flows.pnr.wires), by hand."""

import pytest

from flows.pnr.wires import WireRC, broadcast, lef_layers, repeater_spacing
from flows.synth import liberty

LEF = """
LAYER metal5
  TYPE ROUTING ;
  DIRECTION HORIZONTAL ;
  WIDTH 0.3 ;
  RESISTANCE RPERSQ 0.07 ;
  CAPACITANCE CPERSQDIST 8e-06 ;
  EDGECAPACITANCE 2.400000e-05 ;
END metal5

LAYER via5
  TYPE CUT ;
END via5
"""

#: BUFX4 of the OSU 0.18 um liberty: its input pin capacitance (pF); a load limit of 0.3 pF for the
#: hand computations (the flow gives it the drive repair's target, 0.6 pF).
BUFX4_CIN = 0.0139855
BUFX4 = ("BUFX4", "Y", 0.3)


@pytest.fixture(scope="module")
def lib():
    return liberty.load("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")


def test_layer_rc_and_unbuffered_elmore_by_hand(lib):
    (rc,) = lef_layers(LEF).values()
    # R = 0.07 ohm/sq / 0.3 um; C = 8e-6 pF/um^2 x 0.3 um + 2 x 2.4e-5 pF/um (two edges)
    assert rc.layer == "metal5" and rc.direction == "horizontal"
    assert rc.r_ohm_um == pytest.approx(0.07 / 0.3)
    assert rc.c_pf_um == pytest.approx(5.04e-5)
    # 500 um, 8 taps of 10 fF: r L (c L / 2 + taps C / 2) = 116.67 ohm x (12.6 fF + 40 fF) = 6.137 ps
    b = broadcast(500.0, 8, 0.01, rc, lib)
    assert b.wire_cap_pf == pytest.approx(0.0252)
    assert b.load_cap_pf == pytest.approx(0.08)
    assert b.elmore_ps == pytest.approx(6.1367, abs=1e-3)
    with pytest.raises(ValueError, match="positive length"):
        broadcast(0.0, 8, 0.01, rc, lib)


def test_repeater_spacing_without_resistance_is_the_load_limit(lib):
    # No wire resistance: a buffer's delay per um falls with its segment's length (its intrinsic
    # delay spread over more wire), so the fastest segment is the longest its limit allows:
    # (0.3 pF - its successor's 13.99 fF) / 50.4 fF per mm = 5,674.9 um; with 50 fF per mm of taps
    # (0.3 - 0.0139855) / 100.4e-6 = 2,848.8 um (the spacing is given to 0.1 um).
    ideal = WireRC("m", "horizontal", 0.0, 5.04e-5)
    assert repeater_spacing(lib, ideal, 0.0, BUFX4) == pytest.approx((0.3 - BUFX4_CIN) / 5.04e-5, abs=0.1)
    assert repeater_spacing(lib, ideal, 5e-5, BUFX4) == pytest.approx((0.3 - BUFX4_CIN) / 10.04e-5, abs=0.1)


def test_repeater_spacing_shortens_as_the_wire_resists(lib):
    segs = [repeater_spacing(lib, WireRC("m", "horizontal", r, 5.04e-5), 2e-5, BUFX4)
            for r in (0.05, 0.2333, 0.5, 1.0, 2.0)]
    longest = (0.3 - BUFX4_CIN) / 7.04e-5
    assert segs[0] == pytest.approx(longest, abs=0.1)   # the limit binds before the wire's RC
    assert all(a > b for a, b in zip(segs, segs[1:], strict=False)) and segs[-1] < longest / 2
    with pytest.raises(ValueError, match="must not be negative"):
        repeater_spacing(lib, WireRC("m", "horizontal", 0.1, 5.04e-5), -1e-5, BUFX4)
