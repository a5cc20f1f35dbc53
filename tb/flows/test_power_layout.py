"""Energy on a routed layout: its netlists read, its SPEF's wire capacitance on the right nets, and
the energy with wires against hand computation from the liberty (as tb/flows/test_power.py)."""

import dataclasses
import json

import numpy as np
import pytest

from flows.pnr.parasitics import ParasiticsError, spef_caps
from flows.power.cli import main as power_main
from flows.power.energy import compute
from flows.power.layout import bus_ports, layout_dir, read_structural, wire_caps
from flows.power.netlist import flatten
from flows.power.run import PowerError
from flows.power.sim import GateSim
from tb.flows import needs_osu
from tb.flows.liberty_by_hand import PERIOD, V, at, raw

pytestmark = pytest.mark.quick

# the top drives a two-inverter block and one inverter of its own; qflow's tie wires and comments
TOP_V = """module t (a, y);
  input a;  // the stimulus
  output y;
  wire n1;
  inv2 c0 (.a(a), .y(n1));
  INVX1 u3 (.A(n1), .Y(y));
endmodule
"""
BLOCK_V = """module inv2 (a, y);
input a;
output y;
wire vdd = 1'b1;
wire gnd = 1'b0;
wire m;
/* two inverters */
INVX1 INVX1_1 ( .A(a), .Y(m) );
INVX1 INVX1_2 ( .A(m), .Y(y) );
endmodule
"""


def _spef(unit, nets):
    lines = ["*SPEF \"IEEE 1481-1998\"", f"*C_UNIT {unit}", "*R_UNIT 1 OHM", ""]
    for n, c in nets.items():
        lines += [f"*D_NET {n} {c}", "*CONN", "*END", ""]
    return "\n".join(lines)


TOP_WIRES = {"a": 0.002, "n1": 0.004, "y": 0.001}          # pF
BLOCK_WIRES = {"a": 0.001, "m": 0.003, "y": 0.0005}


def test_structural_netlists_are_read_with_ties_ports_and_cells():
    mods = read_structural(TOP_V + BLOCK_V)
    assert set(mods) == {"t", "inv2"}
    b = mods["inv2"]
    assert list(b["ports"]) == ["a", "y"] and b["ports"]["y"]["direction"] == "output"
    assert set(b["netnames"]) == {"a", "y", "m"}                  # vdd and gnd are constants
    m, a, y = (b["netnames"][n]["bits"][0] for n in ("m", "a", "y"))
    assert b["cells"]["INVX1_1"] == {"type": "INVX1", "connections": {"A": [a], "Y": [m]}}
    assert b["cells"]["INVX1_2"]["connections"] == {"A": [m], "Y": [y]}
    tied = read_structural("module k (y); output y; wire vdd = 1'b1; INVX1 u (.A(vdd), .Y(y)); endmodule")
    assert tied["k"]["cells"]["u"]["connections"]["A"] == ["1"]


@pytest.mark.parametrize("text, named", [
    ("module k (a); input [3:0] a; endmodule", "[3:0] a"),
    ("module k (a, y); input a; output y; assign y = a; endmodule", "assign y = a"),
    ("module k (a, y); input a; output y; INVX1 u (.A(a[0]), .Y(y)); endmodule", "instance u"),
    ("module k (a, y); input a; INVX1 u (.A(a), .Y(y)); endmodule", "port y has no direction"),
    ("wire a;", "no module"),
])
def test_what_a_structural_netlist_cannot_hold_is_named(text, named):
    with pytest.raises(PowerError, match=named.replace("[", r"\[").replace("]", r"\]")):
        read_structural(text, "x.v")


def test_spef_totals_in_pf_from_either_unit():
    assert spef_caps(_spef("1 PF", {"a": 0.25, "b": 1e-3})) == {"a": 0.25, "b": 1e-3}
    ff = spef_caps(_spef("1 FF", {"a": 250.0}))
    assert ff["a"] == pytest.approx(0.25)
    with pytest.raises(ParasiticsError, match="C_UNIT"):
        spef_caps("*D_NET a 1\n")
    with pytest.raises(ParasiticsError, match="neither PF nor FF"):
        spef_caps(_spef("1 NF", {"a": 1}))


def test_scalar_ports_regroup_into_the_synthesized_buses():
    lay = {"x_0_": {"direction": "input", "bits": [5]}, "x_1_": {"direction": "input", "bits": [6]},
           "v": {"direction": "input", "bits": [7]}, "c_1_": {"direction": "output", "bits": [8]}}
    ref = {"x": {"direction": "input", "bits": [2, 3]}, "v": {"direction": "input", "bits": [4]},
           "c": {"direction": "output", "bits": ["0", 9]}}
    out = bus_ports(lay, ref)
    assert out == {"x": {"direction": "input", "bits": [5, 6]}, "v": {"direction": "input", "bits": [7]},
                   "c": {"direction": "output", "bits": ["0", 8]}}     # the dropped constant comes back
    with pytest.raises(PowerError, match="no port c_0_"):
        bus_ports(lay, dict(ref, c={"direction": "output", "bits": [10, 9]}))
    with pytest.raises(PowerError, match="'z'"):
        bus_ports(dict(lay, z={"direction": "input", "bits": [11]}), ref)


def test_spef_nets_land_on_their_bits_and_strangers_are_refused():
    mods = read_structural(BLOCK_V)
    (bits, caps), unwired = wire_caps(mods["inv2"], {"m": 0.003}, cap_unit_pf=1.0)
    assert bits.tolist() == [mods["inv2"]["netnames"]["m"]["bits"][0]] and caps.tolist() == [0.003]
    assert unwired == ["a", "y"]                    # a port and one pin each: two connections
    (_, caps), _ = wire_caps(mods["inv2"], {"m": 0.003}, cap_unit_pf=1e-3)
    assert caps.tolist() == [pytest.approx(3.0)]    # in the library's unit (here fF)
    with pytest.raises(PowerError, match="not nets of the netlist"):
        wire_caps(mods["inv2"], {"q": 0.001}, cap_unit_pf=1.0)


def _layout_flat(plib, cap_pf):
    mods = read_structural(TOP_V + BLOCK_V)
    caps = {"t": wire_caps(mods["t"], TOP_WIRES, cap_pf)[0],
            "inv2": wire_caps(mods["inv2"], BLOCK_WIRES, cap_pf)[0]}
    return flatten(mods, "t", plib.cells, wire_caps=caps)


@needs_osu
def test_wires_of_both_sides_of_a_block_pin_add_up(libs):
    lib, plib = libs
    flat = _layout_flat(plib, lib.cap_pf)
    a, y = flat.ports["a"][1][0], flat.ports["y"][1][0]
    assert flat.wire[a] * lib.cap_pf == pytest.approx(0.003)            # top 0.002 + block 0.001
    assert flat.wire[y] * lib.cap_pf == pytest.approx(0.001)
    wired = flat.wire[flat.wire > 0] * lib.cap_pf      # nets a, m, n1 (top 0.004 + block 0.0005), y
    assert sorted(np.round(wired, 6).tolist()) == [0.001, 0.003, 0.003, 0.0045]
    assert flat.wire.sum() * lib.cap_pf == pytest.approx(sum(TOP_WIRES.values()) + sum(BLOCK_WIRES.values()))


@needs_osu
def test_a_replaced_block_still_loads_its_input_with_its_wire(libs):
    """Sampling keeps one of two copies of the block; the other's input is a phantom load that must be
    its pin and its wire (``port_caps`` with the wires), like the kept copy's: the column runs' energy
    counts the unsimulated columns' wires so."""
    from flows.power.energy import net_loads
    from flows.power.run import port_caps

    lib, plib = libs
    two = """module t2 (a, b, y, z);
  input a;
  input b;
  output y;
  output z;
  inv2 c0 (.a(a), .y(y));
  inv2 c1 (.a(b), .y(z));
endmodule
"""
    mods = read_structural(two + BLOCK_V)
    caps = {"inv2": wire_caps(mods["inv2"], BLOCK_WIRES, lib.cap_pf)[0]}
    flat = flatten(mods, "t2", plib.cells, sample=("inv2", 1), wire_caps=caps,
                   port_caps=port_caps(mods, lib, plib, caps))
    load = net_loads(flat, lib) * lib.cap_pf
    pin = raw("INVX1")[0]["A"]
    for port in ("a", "b"):                                  # one kept, one replaced: the same load
        assert load[flat.ports[port][1][0]] == pytest.approx(pin + BLOCK_WIRES["a"], rel=1e-9)
    bare = flatten(mods, "t2", plib.cells, sample=("inv2", 1), wire_caps=caps,
                   port_caps=port_caps(mods, lib, plib))     # without the wires: the replaced copy lacks it
    assert sorted(net_loads(bare, lib)[[bare.ports[p][1][0] for p in "ab"]] * lib.cap_pf) == \
        [pytest.approx(pin), pytest.approx(pin + BLOCK_WIRES["a"])]


@needs_osu
@pytest.mark.parametrize("n_toggles", [6, 7])
def test_energy_with_wires_against_the_liberty_by_hand(libs, n_toggles):
    lib, plib = libs
    flat = _layout_flat(plib, lib.cap_pf)
    sim = GateSim(flat, plib)
    a = flat.ports["a"][1]
    for k in range(n_toggles + 1):          # a starts at 0 and toggles n times
        sim.vals[a] = k % 2
        sim.settle()
        if k == 0:
            sim.start_counting()
        assert sim.vals[flat.ports["y"][1]][0] == 1 - k % 2
        sim.clock()
    out_load, slew = 0.025, 0.06
    wired = compute(flat, sim, lib, plib, PERIOD, input_slew=slew, output_load=out_load)
    bare = compute(dataclasses.replace(flat, wire=None), sim, lib, plib, PERIOD, input_slew=slew,
                   output_load=out_load)
    caps, power, _ = raw("INVX1")
    pin = caps["A"]
    wire = {"a": 0.003, "m": 0.003, "n1": 0.0045, "y": 0.001}
    pw = power[("Y", "A")]
    ups, downs = (n_toggles + 1) // 2, n_toggles // 2
    for w, e in ((wire, wired), (dict.fromkeys(wire, 0.0), bare)):
        loads = [pin + w["m"], pin + w["n1"], out_load + w["y"]]     # the three inverters' outputs
        e_int = 0.0
        for k, load in enumerate(loads):                             # output rises when input falls
            in_rises = ups if k % 2 == 0 else downs
            e_int += (n_toggles - in_rises) * at(pw["rise_power"], load, slew) \
                + in_rises * at(pw["fall_power"], load, slew)
        e_sw = 0.5 * V * V * n_toggles * (3 * pin + out_load + sum(w.values()))
        assert e.internal == pytest.approx(e_int, rel=1e-9)
        assert e.switching == pytest.approx(e_sw, rel=1e-9)
    assert wired.switching - bare.switching == pytest.approx(0.5 * V * V * n_toggles * 0.0115, rel=1e-9)


def test_the_layout_command_names_what_is_wrong(tmp_path, capsys):
    assert power_main(["--layout", str(tmp_path)]) == 2
    assert "metrics.json is missing" in capsys.readouterr().err
    (tmp_path / "metrics.json").write_text(json.dumps({"design": "mu", "flow__hierarchical": False}))
    assert layout_dir(tmp_path) == tmp_path
    assert power_main(["--layout", str(tmp_path)]) == 2
    assert "needs a run of the matrix unit, hierarchical (make pnr DESIGN=mu HIER=1) or of its column" \
        in capsys.readouterr().err
    assert power_main(["--layout", str(tmp_path), "--width", "16"]) == 2
    assert "--width cannot be combined with --layout" in capsys.readouterr().err
    (tmp_path / "metrics.json").write_text(json.dumps({"design": "mu", "flow__hierarchical": True,
                                                       "hier__block": "blk", "design__params": {}}))
    assert power_main(["--layout", str(tmp_path)]) == 2
    assert "names no width or format" in capsys.readouterr().err
    (tmp_path / "metrics.json").write_text(json.dumps({"design": "mu", "flow__hierarchical": True,
                                                       "hier__block": "blk",
                                                       "design__params": {"width": "8", "fmt": "fp4_e2m1"}}))
    assert power_main(["--layout", str(tmp_path)]) == 2
    assert "mu.routed.v is missing" in capsys.readouterr().err
    (tmp_path / "metrics.json").write_text(json.dumps({"design": "mu", "design__params": {
        "width": "32", "fmt": "fp4_e2m1", "block": "mu_col_w32"}}))           # a column macro run
    assert power_main(["--layout", str(tmp_path)]) == 2
    assert "mu_col_w32.routed.v is missing" in capsys.readouterr().err


def test_the_clocks_least_wire_from_the_runs_placed_defs(tmp_path, monkeypatch):
    """The column's and the top's least clock trees from the DEFs in the run's work folder, at
    each part's mean extracted pF per um, the column's counted D times; none without the folder."""
    import flows.power.layout as lay
    from tb.flows.test_pnr_clockwire import DEF, LEF

    run = tmp_path / "build" / "reports" / "pnr" / "r"
    run.mkdir(parents=True)
    assert lay.clock_tree(run, "blk", 4, {}, {}) is None
    work = tmp_path / "build" / "pnr" / "r"
    (work / "block" / "layout").mkdir(parents=True)
    (work / "top").mkdir()
    (work / "block" / "layout" / "blk.def").write_text(DEF)                     # 2/3 x 161 um
    (work / "top" / "mu_route.def").write_text(DEF.replace("( 5000 0 )", "( 2000 0 )"))
    (run / "blk.lef").write_text("")
    monkeypatch.setattr(lay, "tech_lef", lambda: type("L", (), {"read_text": lambda self: LEF})())
    c = lay.clock_tree(run, "blk", 4, {"column": 2.0, "top": 1.0}, {"column": 1000.0, "top": 500.0})
    # top: port (20, 90), f1 CLK (2, 3), f2 flipped at x 20: CLK (28, 3): f1-f2 26 + port-f2 95 = 121 um
    assert c["min_tree_um"] == {"column": pytest.approx(2 * 161 / 3), "top": pytest.approx(2 * 121 / 3)}
    assert c["pf"] == pytest.approx(4 * (2 * 161 / 3) * 2.0 / 1000 + (2 * 121 / 3) * 1.0 / 500)


def test_the_page_says_what_a_column_layout_leaves_out():
    """The Markdown page of a unit and of a column run: figures per useful MAC, the parts, and for a
    column run the top's wire named as not laid out (never a number)."""
    from flows.power.layout import markdown

    s = {"run": "r", "workload": "tiles", "width": 32, "fmt": "fp4_e2m1", "layout": "column", "runs": ["a"],
         "cycles": 10, "results_checked": 8, "columns_simulated": 8, "cells": 5, "nets": 6,
         "layout_revision": "abc", "useful_macs": 100,
         "pj_per_useful_mac": {"synthesized": 1.0, "pins": 2.0, "wires": 3.0, "wires_x2": 4.0,
                               "wires_clock": 5.0, "wires_clock_tree": 6.0},
         "by_part_pj": {"pins": {"columns": 100.0, "top": 50.0, "clock net": 25.0},
                        "wires": {"columns": 150.0, "top": 50.0, "clock net": 25.0}},
         "wire_pf": {"top": None, "column": 2.5, "columns": 80.0},
         "wire_ff_per_um": {"column": 0.0625, "top": None}, "nets_without_wire": ["blk/clk"],
         "clock_wire": {"min_tree_um": {"column": 8000.0, "top": None}, "pf": 16.0, "tree": {
             "cell": "BUFX4", "levels": [90, 7, 1], "buffer_load_pf": 0.2166, "slew_ns": 0.148,
             "load_pf": 19.5, "pj_per_cycle": 25.5, "internal_pj": 21.0, "input_pins_pj": 4.5,
             "at_2x_slew": {"cell": "INVX1", "levels": [150, 10, 1], "pj_per_cycle": 12.0}}}}
    page = markdown(s, {"git_revision": "x"})
    assert "| routed, pins + wires + the clock's least wire | 5.00 |" in page
    assert "| columns | 1.00 | 1.50 | 80.00 |" in page
    assert "| top | 0.50 | 0.50 | none: not laid out |" in page
    assert "none in the top (not laid out)" in page
    assert "8.00 mm per column, the top not laid out) is 16.00 pF" in page
    assert "| routed, pins + wires + the clock's least wire and least tree | 6.00 |" in page
    assert ("least tree at the clock slew 148 ps (flows/power/clocktree.py): BUFX4, 90 + 7 + 1 cells from "
            "the leaves up, each taking at most 0.217 pF, on 19.5 pF of clock pins and least wire: 25.5 pJ "
            "per cycle (21.0 internal, 4.5 its input pins); at twice that slew 12.0 pJ per cycle (INVX1, 161 "
            "cells)") in page
    s.update(layout="unit", wire_pf={"top": 40.0, "column": 2.5, "columns": 80.0},
             wire_ff_per_um={"column": 0.0625, "top": 0.05}, clock_wire=None)
    del s["pj_per_useful_mac"]["wires_clock"], s["pj_per_useful_mac"]["wires_clock_tree"]
    page = markdown(s, {"git_revision": "x"})
    assert "| top | 0.50 | 0.50 | 40.00 |" in page and "0.0500 fF in the top" in page
    assert "not estimated (placed DEFs gone)" in page
