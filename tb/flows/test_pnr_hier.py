"""Hierarchical place and route (``make pnr HIER=1``): the pieces on hand-made layouts, then one
design end to end.

The pieces are checked against hand computation: the extracted SPEF against resistances and
capacitances computed from the technology LEF's per-square values, the LEF abstract against the
shapes the DEF holds, the pin plan and the placement against their own rules (edges, tracks, no
overlaps), the tie-offs and the connectivity check against small netlists with a planted open and
short. End to end, the BF16 bank's multiplier is laid out once and four copies are routed in the
top: qflow's DRC and netgen's LVS on the block, magic's DRC and a connectivity comparison on the top
with the block's real layout (independent of the abstract the router saw), every top net extracted
with every pin on its wires, and OpenSTA reading the block's model without a warning.
"""

import re
from pathlib import Path

import pytest

from flows import metric_keys as K
from flows.pnr import tools
from flows.pnr.abstract import PinPlanError, lef_abstract, plan_pins
from flows.pnr.defdb import Def, lef_macros
from flows.pnr.extract import extract
from flows.pnr.hierflow import tie_offs, unread_outputs, wrapper_verilog
from flows.pnr.qflow import stage1_failed
from flows.pnr.top import connectivity, floorplan, port_slots, top_route_script

pytestmark = pytest.mark.quick

TECH_LEF = tools.TECH / "osu018_stdcells.lef"


def _def(body: str, die=(0, 0, 4000, 3000)) -> str:
    return ("VERSION 5.6 ;\nDESIGN t ;\nUNITS DISTANCE MICRONS 100 ;\n"
            f"DIEAREA ( {die[0]} {die[1]} ) ( {die[2]} {die[3]} ) ;\n"
            "TRACKS Y 0 DO 31 STEP 100 LAYER metal1 ;\nTRACKS X 0 DO 51 STEP 80 LAYER metal2 ;\n"
            "TRACKS Y 0 DO 31 STEP 100 LAYER metal3 ;\n" + body + "END DESIGN\n")


#: u0/Y drives u1/A over metal1 (11.2 -> 30.4 um at y 2.3), a via at x 20 up to metal2 and a metal2
#: wire to the port p at (20, 20); n2's wire touches none of its pins.
ROUTED = _def("""COMPONENTS 2 ;
- u0 INVX1 + PLACED ( 1000 0 ) N ;
- u1 INVX1 + PLACED ( 3000 0 ) N ;
END COMPONENTS
PINS 1 ;
- p + NET n1 + DIRECTION OUTPUT
  + LAYER metal2 ( -15 -15 ) ( 15 15 )
  + PLACED ( 2000 2000 ) N ;
END PINS
NETS 2 ;
- n1
  ( u0 Y )
  ( u1 A )
  ( PIN p )
+ ROUTED metal1 ( 1120 230 ) ( 3040 * )
  NEW metal1 ( 2000 230 ) M2_M1
  NEW metal2 ( 2000 230 ) ( 2000 2000 ) ;
- n2
  ( u1 Y ) ;
- n3
  ( u0 A )
  ( u1 Y )
+ ROUTED metal3 ( 500 2500 ) ( 900 * ) ;
END NETS
""")


def test_extraction_matches_the_lef_by_hand(tmp_path):
    """R = RPERSQ x length / width, C = length x (width x CPERSQDIST + EDGECAPACITANCE) per piece,
    each wire cut where the via lands; the pins join the nodes on their shapes."""
    (tmp_path / "t.def").write_text(ROUTED)
    ex = extract(Def.read(tmp_path / "t.def"), TECH_LEF.read_text(), design="t")
    m1 = 0.3 * 3.8e-5 + 8e-5           # metal1 pF/um from the LEF (WIDTH 0.3)
    m2 = 0.3 * 1.9e-5 + 6e-5
    total = 19.2 * m1 + 17.7 * m2
    net = re.search(r"\*D_NET n1 (\S+)\n(.*?)\*END", ex.spef, re.S)
    assert float(net[1]) == pytest.approx(total, rel=1e-5)
    m3 = 0.3 * 1.3e-5 + 5.4e-5
    assert ex.wire_cap_pf == pytest.approx(total + 4.0 * m3, rel=1e-5)     # n3's 4 um of metal3 too
    res = sorted(float(r) for r in re.findall(r"^\d+ \S+ \S+ (\S+)$", net[2].split("*RES")[1], re.M))
    hand = [0.08 * 8.8 / 0.3, 0.08 * 10.4 / 0.3, 0.08 * 17.7 / 0.3, 0.0]    # RPERSQ x l / w; the via
    assert res == pytest.approx(sorted(hand), abs=1e-4)
    assert "*I u0:Y O" in net[2] and "*I u1:A I" in net[2] and "*P p O" in net[2]
    for pin in ("u0:Y", "u1:A", " p "):
        assert pin in net[2].split("*RES")[1] + " "    # each pin is a node of the RC network
    assert ex.unrouted == ["n2"]
    assert ex.unattached == ["n3:u0:A", "n3:u1:Y"]


#: A block: two inverters, pin a on the upper edge with its wire down to the core, a wire of net n
#: inside the core on metal3 and one on metal5 above it, a vdd stripe on metal6.
BLOCK = _def("""COMPONENTS 2 ;
- u0 INVX1 + PLACED ( 1000 1000 ) N ;
- u1 INVX1 + PLACED ( 2000 1000 ) N ;
END COMPONENTS
PINS 3 ;
- a + NET a
  + LAYER metal2 ( -15 -15 ) ( 15 15 )
  + PLACED ( 1520 3000 ) N ;
- y + NET y
  + LAYER metal2 ( -15 -15 ) ( 15 15 )
  + PLACED ( 2120 3000 ) N ;
- vdd + NET vdd + USE POWER
  + LAYER metal6 ( -80 -40 ) ( 80 40 )
  + PLACED ( 3000 1500 ) N ;
END PINS
SPECIALNETS 1 ;
- vdd
+ ROUTED metal6 160 ( 3000 0 ) ( 3000 3000 ) ;
END SPECIALNETS
NETS 3 ;
- a
  ( PIN a )
  ( u0 A )
+ ROUTED metal2 ( 1520 3000 ) ( 1520 1230 ) ;
- n
  ( u0 Y )
  ( u1 A )
+ ROUTED metal3 ( 1120 1500 ) ( 2040 * )
  NEW metal5 ( 1200 1600 ) ( 1900 * ) ;
- y
  ( u1 Y )
  ( PIN y ) ;
END NETS
""")


def test_lef_abstract_shapes(tmp_path):
    """SIZE is the die; a pin's own wire out of the core is port geometry (not an obstruction over
    the pin); the core, bloated by the cells' rail overhang, obstructs metal1-4; a wire above those
    layers inside the core and the power stripe stay as they are; the abstract reads back."""
    (tmp_path / "b.def").write_text(BLOCK)
    lef = lef_abstract(Def.read(tmp_path / "b.def"), "blk", ["a"], ["y"], TECH_LEF.read_text())
    (size, pins), = lef_macros(lef).values()
    assert size == (40.0, 30.0)
    assert pins["a"].direction == "INPUT" and pins["y"].direction == "OUTPUT"
    # the wire from the pin to the core: x 15.2 +- 0.15, from the core's top (20.3) up to the pin
    assert ("metal2", 15.05, 12.15, 15.35, 30.15) in pins["a"].shapes
    assert ("metal2", 15.05, 29.85, 15.35, 30.15) in pins["a"].shapes
    assert pins["y"].shapes == (("metal2", 21.05, 29.85, 21.35, 30.15),)
    assert pins["vdd"].shapes == (("metal6", 29.2, 0.0, 30.8, 30.0),)
    obs = lef.split("  OBS")[1]
    core = "RECT 9.800 9.700 21.800 20.300"      # INVX1 1.6 x 10 at x 10 and 20, rails 0.2 / 0.3 out
    for layer in ("metal1", "metal2", "metal3", "metal4"):
        assert re.search(rf"LAYER {layer} ;\n\s+{core}", obs)
    assert "RECT 11.850 15.850 19.150 16.150" in obs.split("LAYER metal5")[1]    # above the core layers
    # n's metal3 wire lies inside the core: the core rectangle is metal3's only obstruction
    assert "LAYER metal3 ;\n      RECT 9.800 9.700 21.800 20.300 ;\n    LAYER" in obs


def test_pin_plan_moves_pins_to_the_upper_edge(tmp_path):
    """Pins go to every other metal2 track of the upper edge, in the order of the cells they reach,
    clear of the power stripes; both DEF copies are rewritten; too many pins is a clear error."""
    paths = [tmp_path / "b.def", tmp_path / "b_unroute.def"]
    for p in paths:
        p.write_text(BLOCK)
    assert plan_pins(paths) == {"T": 2}
    for p in paths:
        d = Def.read(p)
        xa, xy = ((d.pins[n]["rect"][0] + d.pins[n]["rect"][2]) / 2 for n in ("a", "y"))
        assert [d.pins[n]["rect"][3] for n in ("a", "y")] == pytest.approx([30.15, 30.15])
        assert xa < xy                              # a reaches u0 (x 10), y reaches u1 (x 20)
        assert all(round(x / 0.8) % 2 == 0 and abs(x - 30) > 2 for x in (xa, xy))
    with pytest.raises(PinPlanError, match="pin sides"):
        plan_pins(paths, "a=X")
    narrow = tmp_path / "n.def"
    narrow.write_text(BLOCK.replace("TRACKS X 0 DO 51", "TRACKS X 0 DO 5"))
    with pytest.raises(PinPlanError, match="2 pins for side T but 1 free metal2 track slots"):
        plan_pins([narrow])


def test_ports_sit_above_what_they_connect_to():
    """Each port takes the upper-edge slot nearest the x it wants; ports wanting the same x line up
    side by side in order; ports pushed past the die's end shift back; more ports than slots is an
    error."""
    fp = floorplan(["m0"], (100.0, 50.0), 0.0, util=0.5)            # slots at 11.2 + 1.6 k
    at = port_slots({"a": 50.0, "b": 50.0, "c": 20.5, "z": 500.0, "y": 499.0}, fp)
    assert [at[p] for p in "cab"] == pytest.approx([20.8, 49.6, 51.2])
    assert at["y"] < at["z"] <= fp.width - fp.margin
    assert len(set(at.values())) == 5 and all(round(x / 1.6, 6) % 1 == 0 for x in at.values())
    with pytest.raises(ValueError, match="pin slots"):
        port_slots({f"p{k}": 0.0 for k in range(100)}, fp)


def test_top_route_gives_up_on_a_hopeless_first_stage():
    """The rip-up passes run only when the first stage leaves at most ``give_up`` nets unrouted (a
    top that fails thousands of nets would spend hours in them); the routed DEF and the Final line
    are written either way."""
    fp = floorplan(["m0"], (100.0, 50.0), 0.0, util=0.5)
    script = top_route_script("t", ["a.lef"], fp, strip=6.5, ignore=("clk",), give_up=37)
    lines = script.splitlines()
    gate = next(i for i, ln in enumerate(lines) if ln.startswith("if {$result > 37}"))
    stage2 = lines.index("if {$result > 0} { set result [stage2 mask 10 effort 10] }")
    assert lines.index("set result [stage1]") < gate < stage2
    assert lines.index("}") > gate and "write_def t_route.def" in lines and "ignore clk" in lines
    assert "cleanup all" not in lines       # it moved a pin's segment off the pin's layer
    x, y = fp.macros[0][1:]                # metal5 over the block's pin strip only
    assert [ln for ln in lines if ln.startswith(f"obstruction {x} ")] == [
        f"obstruction {x} {y + 50.0 - 6.5} {x + 100.0} {y + 50.0} metal5"]


def _cell(typ, **conn):
    return {"type": typ, "connections": conn}


def test_first_stage_count_from_qrouter_log():
    """The first stage's count is the one printed right after its progress line, not a later
    stage's; a log whose first stage did not finish has none."""
    log = ("*** Running stage1 routing with defaults\nFinished routing net a\n"
           "Progress: Stage 1 total routes completed: 17189\nFailed net routes: 227\n"
           "Progress: Stage 2 total routes completed: 17211\nFailed net routes: 228\n"
           "Final: No failed routes!\n")
    assert stage1_failed(log) == 227
    assert stage1_failed("Progress: Stage 1 total routes completed: 120\nNo failed routes!\n") == 0
    assert stage1_failed("*** Running stage1 routing with defaults\nNets remaining: 5\n") is None


def test_tie_offs_and_unread_outputs_make_the_hard_wrapper():
    """An input tied alike in every copy goes inside the wrapper; one tied in some copies only is
    refused; an output nothing reads is left unconnected; the wrapper keeps the other ports."""
    ports = {"a": {"direction": "input", "bits": [2, 3]}, "v": {"direction": "input", "bits": [4]},
             "y": {"direction": "output", "bits": [5]}, "r": {"direction": "output", "bits": [6]}}
    top = {"ports": {"q": {"direction": "output", "bits": [20, 21]}},
           "cells": {"b0": _cell("blk", a=[7, 8], v=["1"], y=[20], r=[30]),
                     "b1": _cell("blk", a=[9, 10], v=["1"], y=[21], r=[31])}}
    assert tie_offs(top, "blk") == {("v", 0): "1"}
    assert unread_outputs(top, "blk", ports) == {"r"}
    name, text = wrapper_verilog("blk", ports, {("v", 0): "1"}, {"r"})
    assert name == "blk_hard"
    assert "module blk_hard (a, y);" in text and ".v(1'b1)" in text and "input [1:0] a;" in text
    assert ".r(" not in text and "output y;" in text
    mixed = {"ports": {}, "cells": {"b0": _cell("blk", v=["1"]), "b1": _cell("blk", v=[40])}}
    with pytest.raises(tools.ToolError, match="some instances only"):
        tie_offs(mixed, "blk")


def test_connectivity_finds_an_open_a_short_and_a_missing_pin():
    spice = """.subckt INVX1 A Y vdd gnd
.ends
.subckt top
Xu0 n1 n2 vdd gnd INVX1
Xu1 n2 n9 vdd gnd INVX1
Xu2 n3 n2 vdd gnd INVX1
.ends
"""
    expected = {("u0", "A"): "a", ("u0", "Y"): "b", ("u1", "A"): "b", ("u1", "Y"): "c",
                ("u2", "A"): "b", ("u2", "Y"): "d", ("u3", "A"): "c"}
    missing, opens, shorts = connectivity(spice, "top", expected)
    assert missing == ["u3/A"]
    assert opens == {"b": ["n2", "n3"]}
    assert shorts == {"n2": ["b", "d"]}
    assert connectivity(spice, "top", {("u0", "A"): "a", ("u0", "Y"): "b"}) == ([], {}, {})


@pytest.mark.parametrize("args, says", [(["--verilog", "x.v"], "leave out --verilog"),
                                        (["--top-util", "lots"], "--top-util must be a number"),
                                        (["--gap", "-3"], "gap between macros must be >= 0")])
def test_hier_cli_refuses_bad_input(args, says, capsys):
    """Refused before anything is synthesized, naming the option and the fix."""
    from flows.__main__ import main

    assert main(["pnr", "--hier", "--design", "bf16_bank"] + args) == 2
    assert says in capsys.readouterr().err


def test_no_rebuffer_without_hier_is_refused(capsys):
    """A flat run has no top to buffer: the option is refused, not ignored."""
    from flows.__main__ import main

    assert main(["pnr", "--design", "bf16_mul", "--no-rebuffer"]) == 2
    assert "add --hier" in capsys.readouterr().err


def test_hierarchical_bf16_bank(tmp_path):
    """Four BF16 multipliers laid out once and routed as macros in the top: block DRC/LVS clean, top
    routed with no failed net, DRC-clean and connected as its netlist says in magic with the block's
    real layout, every top net extracted, post-route timing at least the unwired and in a band of
    the pre-route number; the block's model is OpenSTA's own measure of the routed block."""
    from flows.pnr.hierflow import run_pnr_hier

    tools.require()
    with pytest.raises(tools.ToolError, match="one block type"):
        run_pnr_hier("bf16_mul", {}, outdir=tmp_path / "x", log=lambda *_: None)
    with pytest.raises(ValueError, match="top's target utilization"):
        run_pnr_hier("bf16_bank", {}, top_util=2, outdir=tmp_path / "x", log=lambda *_: None)
    m = run_pnr_hier("bf16_bank", {"lanes": "4", "stages": "1"}, fast=4, outdir=tmp_path / "rep",
                     log=lambda *_: None)
    assert m["hier__instances"] == 4 and m["hier__tied_input_bits"] == 2      # i.valid, o.ready
    assert m["hier__block__drc_errors"] == 0 and m["hier__block__lvs_match"] is True
    assert m[K.ROUTE_FAILED] == 0 and m["hier__top__drc_errors"] == 0
    assert m[K.ROUTE_FAILED_STAGE1] is not None and m[K.ROUTE_FAILED_STAGE1] >= m[K.ROUTE_FAILED]
    c = m["hier__top__connectivity"]
    assert c["pins"] > 4 * 33 + 100 and c["missing"] == c["opens"] == c["shorts"] == 0
    assert m["route__qrouter__ignored_nets"] == ["clk"]          # left for a clock tree: ideal clock
    assert m[K.ROUTE_SPEF_NETS] == m[K.ROUTE_NETS] - 1
    assert m["route__timing__unrouted_nets_without_wires"] == 0
    assert m[K.ROUTE_CP_PS] >= m[K.ROUTE_CP_PS_NOWIRE]
    assert 0.9 < m[K.ROUTE_CP_PS] / m[K.CP_PS] < 1.3
    lib = (tmp_path / "rep" / f"{m['hier__block']}.lib").read_text()
    setup = r"setup_rising;\n\s+rise_constraint \(scalar\) \{ values \(\"(\S+)\""
    setups = [float(v) for v in re.findall(setup, lib)]
    # the block's worst input-to-register path (inputs arrive at 0) is its post-route critical path
    assert max(setups) * 1000 == pytest.approx(m["hier__block__critical_path_ps_post"], abs=1.0)
    assert Path(tmp_path / "rep" / "sta_routed" / "sta.log").read_text().count("Warning") == 0
    # the block's clock left unrouted (ideal): no LVS (it needs every net), DRC and the top's check still
    m = run_pnr_hier("bf16_bank", {"lanes": "4", "stages": "1"}, fast=4, route_clock=False,
                     outdir=tmp_path / "nclk", log=lambda *_: None)
    assert m["hier__block__lvs_match"] is None and m["hier__block__drc_errors"] == 0
    c = m["hier__top__connectivity"]
    assert m[K.ROUTE_FAILED] == 0 and c["pins"] > 4 * 33 + 100 and c["opens"] == c["shorts"] == 0
