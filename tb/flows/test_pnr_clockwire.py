"""The least wire of an unrouted clock (:mod:`flows.pnr.clockwire`) on hand-made points and DEFs."""

import pytest

from flows.pnr.clockwire import ClockWireError, min_tree_um, pin_points, rmst_um
from flows.pnr.defdb import Def

pytestmark = pytest.mark.quick

LEF = """MACRO DFF
  SIZE 10 BY 20 ;
  PIN CLK
    DIRECTION INPUT ;
    PORT
      LAYER metal1 ;
        RECT 1 2 3 4 ;
    END
  END CLK
END DFF
"""

DEF = """VERSION 5.6 ;
DESIGN t ;
UNITS DISTANCE MICRONS 100 ;
DIEAREA ( 0 0 ) ( 10000 10000 ) ;
COMPONENTS 2 ;
- f1 DFF + PLACED ( 0 0 ) N ;
- f2 DFF + PLACED ( 5000 0 ) FN ;
END COMPONENTS
PINS 1 ;
- clk + NET clk + DIRECTION INPUT + LAYER metal2 ( -15 -15 ) ( 15 15 ) + PLACED ( 2000 9000 ) N ;
END PINS
NETS 2 ;
- clk ( PIN clk ) ( f1 CLK ) ( f2 CLK ) ;
- d ( f1 D ) ;
END NETS
END DESIGN
"""


def test_spanning_tree_of_hand_points():
    assert rmst_um([(0, 0), (1, 0), (0, 1), (1, 1)]) == 3.0          # three unit edges
    assert rmst_um([(0, 0), (10, 0), (3, 0)]) == 10.0                # collinear: the span
    assert rmst_um([(5, 5)]) == 0.0 and rmst_um([]) == 0.0
    # a plus: the centre joins each arm (4 x 1); no chain of arms is shorter (their gaps are 2)
    assert rmst_um([(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]) == 4.0
    assert min_tree_um([(0, 0), (3, 0), (0, 3)]) == pytest.approx(4.0)   # 2/3 of 6


def test_clock_pins_placed_with_their_cells(tmp_path):
    f = tmp_path / "t.def"
    f.write_text(DEF)
    pts = pin_points(Def.read(f), [LEF], "clk")
    # the port at (20, 90); f1 (N) CLK centre (2, 3); f2 flipped in x: x 50 + (10 - 3 .. 10 - 1) = 57..59
    assert pts == [pytest.approx((20.0, 90.0)), pytest.approx((2.0, 3.0)), pytest.approx((58.0, 3.0))]
    assert rmst_um(pts) == pytest.approx(56 + 105)                    # f1-f2, then the port to f1
    with pytest.raises(ClockWireError, match="net ck is not in the DEF"):
        pin_points(Def.read(f), [LEF], "ck")
    with pytest.raises(ClockWireError, match="no LEF shape for pin D of DFF"):
        pin_points(Def.read(f), [LEF], "d")
