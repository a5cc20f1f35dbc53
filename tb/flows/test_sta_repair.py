"""Drive repair and clock edges, checked against the liberty by hand.

Expected delays come from the tables as ``liberty-parser`` returns them, interpolated here with
numpy (never through :mod:`flows.synth.liberty`/:mod:`flows.synth.sta`); expected buffer counts
and areas from the cells' capacitances and areas read the same way.
"""

import math

import numpy as np
import pytest

from flows.synth import liberty as L
from flows.synth.hier import extract_model, own_area
from flows.synth.repair import REPAIR_PREFIX, repair
from flows.synth.sta import Sta
from tb.flows import OSU, needs_osu

pytestmark = [pytest.mark.quick, needs_osu]

SLEW0, OUT_LOAD = 0.1, 0.02          # ns, pF: the tests' input slew and output load


@pytest.fixture(scope="module")
def raw():
    from liberty.parser import parse_liberty

    return parse_liberty(OSU.read_text())


@pytest.fixture(scope="module")
def lib():
    return L.load(OSU)


def _cap(raw, cell, pin):
    return float(raw.get_group("cell", cell).get_group("pin", pin)["capacitance"])


def _timing(raw, cell, pin, related, kind=None):
    """{table name: (index_1, index_2, values)} of one timing group, straight from the parser."""
    for t in raw.get_group("cell", cell).get_group("pin", pin).get_groups("timing"):
        if str(t["related_pin"]).strip('"') != related:
            continue
        if kind is not None and str(t["timing_type"]).strip('"') != kind:
            continue
        out = {}
        for name in ("cell_rise", "cell_fall", "rise_transition", "fall_transition",
                     "rise_constraint", "fall_constraint"):
            gs = t.get_groups(name)
            if gs:
                g = gs[0]
                out[name] = (g.get_array("index_1")[0], g.get_array("index_2")[0], g.get_array("values"))
        return out
    raise AssertionError(f"no timing {related}->{pin} {kind} in {cell}")


def _bilinear(tab, x1, x2):
    i1, i2, v = tab
    eps = 1e-9
    assert i1[0] - eps <= x1 <= i1[-1] + eps and i2[0] - eps <= x2 <= i2[-1] + eps, \
        "hand check stays inside the grid"
    return float(np.interp(x1, i1, [np.interp(x2, i2, v[k]) for k in range(len(i1))]))


def _fanout_netlist(n):
    """input a -> INVX1 u0 -> net 3 -> n NAND2X1 (A), each with B tied to 1 and its own output."""
    mod = {"ports": {"a": {"direction": "input", "bits": [2]},
                     "y": {"direction": "output", "bits": list(range(100, 100 + n))}},
           "cells": {"u0": {"type": "INVX1", "connections": {"A": [2], "Y": [3]}}}, "netnames": {}}
    for k in range(n):
        mod["cells"][f"s{k}"] = {"type": "NAND2X1", "connections": {"A": [3], "B": ["1"], "Y": [100 + k]}}
    return mod


def test_limits_are_the_liberty_max_capacitance(lib, raw):
    for cell, pin in (("NAND2X1", "Y"), ("INVX1", "Y"), ("BUFX4", "Y"), ("DFFPOSX1", "Q")):
        want = float(raw.get_group("cell", cell).get_group("pin", pin)["max_capacitance"])
        assert lib.drive_limit(cell, pin) == pytest.approx(want)
    # a max_transition caps the load where the output transition reaches it
    cell = lib.cells["INVX1"]
    cell.max_tran = {"Y": 0.3}
    try:
        lim = lib.drive_limit("INVX1", "Y")
        tr = _timing(raw, "INVX1", "Y", "A")
        slew = lib.default_input_slew()
        worst = max(_bilinear(tr[t], lim, slew) for t in ("rise_transition", "fall_transition"))
        assert lim < 0.15 and worst == pytest.approx(0.3, abs=1e-6)
    finally:
        cell.max_tran = {}


@pytest.mark.parametrize("cell,related", [("NAND2X1", "A"), ("INVX1", "A")])
def test_delay_is_monotonic_across_the_table_edge(lib, cell, related):
    """Through the top of the load axis (0.15 pF) up to the max_capacitance: no drop."""
    ins = {"NAND2X1": {"A": [2], "B": [5]}, "INVX1": {"A": [2]}}[cell]
    mod = {"ports": {"a": {"direction": "input", "bits": [2]}, "b": {"direction": "input", "bits": [5]},
                     "y": {"direction": "output", "bits": [3]}},
           "cells": {"u": {"type": cell, "connections": dict(ins, Y=[3])}}, "netnames": {}}
    loads = np.linspace(0.10, 0.50, 81)
    d = [Sta(lib, mod, input_slew=0.18, output_load=c).run(inputs={"a"}).delay_ps for c in loads]
    assert all(b > a for a, b in zip(d, d[1:], strict=False)), d
    # the example: NAND2X1 rising at 0.149 vs 0.151 pF must not drop
    if cell == "NAND2X1":
        lo, hi = (Sta(lib, mod, input_slew=0.18, output_load=c).run(inputs={"a"}).delay_ps
                  for c in (0.149, 0.151))
        assert hi > lo


def test_fanout_64_net_gets_real_buffers(lib, raw):
    n = 64
    mod = _fanout_netlist(n)
    before = Sta(lib, mod, input_slew=SLEW0, output_load=OUT_LOAD)
    cap_a = _cap(raw, "NAND2X1", "A")
    assert before.load[3] == pytest.approx(n * cap_a)
    assert before.load[3] > float(raw.get_group("cell", "INVX1").get_group("pin", "Y")["max_capacitance"])
    assert before.run(inputs={"a"}).overloaded_nets == 1

    fixed, rep = repair(lib, mod, output_load=OUT_LOAD)
    # BUFX4 groups of up to 0.6 pF (the top of its tables): 48 and 16 NAND inputs
    per_buf = math.floor(0.6 / cap_a + 1e-9)
    want = math.ceil(n / per_buf)
    bufs = {k: c for k, c in fixed["cells"].items() if k.startswith(REPAIR_PREFIX)}
    assert rep.buffers == len(bufs) == want == 2 and rep.nets == 1 and rep.cell == "BUFX4"
    assert {c["type"] for c in bufs.values()} == {"BUFX4"}
    # area: the buffers are counted
    a0, _, n0 = own_area(lib, mod)
    a1, _, n1 = own_area(lib, fixed)
    assert n1 == n0 + want
    assert a1 - a0 == pytest.approx(want * float(raw.get_group("cell", "BUFX4")["area"]))
    # function: every NAND input now hangs off one buffer whose input is the inverter's output
    buf_out = {c["connections"]["Y"][0]: c["connections"]["A"][0] for c in bufs.values()}
    for k in range(n):
        src = fixed["cells"][f"s{k}"]["connections"]["A"][0]
        assert buf_out[src] == 3
    assert mod["cells"]["s0"]["connections"]["A"] == [3], "the input netlist is not modified"

    res = Sta(lib, fixed, input_slew=SLEW0, output_load=OUT_LOAD).run(inputs={"a"})
    assert res.overloaded_nets == 0
    assert res.levels == 3
    assert [s.point.split()[1] for s in res.steps[1:]] == ["(INVX1)", "(BUFX4)", "(NAND2X1)"]
    # hand NLDM: INV drives two buffer inputs, the first buffer 48 NAND inputs, NAND drives OUT_LOAD
    inv, buf = _timing(raw, "INVX1", "Y", "A"), _timing(raw, "BUFX4", "Y", "A")
    nand = _timing(raw, "NAND2X1", "Y", "A")
    cin_buf = _cap(raw, "BUFX4", "A")
    best = 0.0
    for e0 in ("rise", "fall"):
        e1 = "fall" if e0 == "rise" else "rise"          # inverter output edge (= buffer output)
        t = _bilinear(inv[f"cell_{e1}"], 2 * cin_buf, SLEW0)
        s = _bilinear(inv[f"{e1}_transition"], 2 * cin_buf, SLEW0)
        t += _bilinear(buf[f"cell_{e1}"], per_buf * cap_a, s)
        s = _bilinear(buf[f"{e1}_transition"], per_buf * cap_a, s)
        e2 = e0
        t += _bilinear(nand[f"cell_{e2}"], OUT_LOAD, s)
        best = max(best, t)
    assert res.delay_ps == pytest.approx(best * 1000.0, rel=0.005)


def test_repair_builds_levels_until_the_driver_is_within_its_limit(lib, raw):
    n = 4000                                   # 50 pF: 84 leaf buffers, whose inputs need a second level
    fixed, rep = repair(lib, _fanout_netlist(n), output_load=OUT_LOAD)
    assert rep.max_levels == 2
    sta = Sta(lib, fixed, input_slew=SLEW0, output_load=OUT_LOAD)
    assert sta.run(inputs={"a"}).overloaded_nets == 0
    res = sta.run(inputs={"a"})
    assert res.levels == 4 and sum("(BUFX4)" in s.point for s in res.steps) == 2


def test_block_input_cap_reflects_the_repair(lib, raw):
    """A block whose input fans out to 64 gates shows its parent the buffers' input caps only."""
    mod = _fanout_netlist(64)
    del mod["cells"]["u0"]
    mod["ports"]["a"]["bits"] = [3]
    fixed, rep = repair(lib, mod, output_load=OUT_LOAD)
    model, _ = extract_model(Sta(lib, fixed, input_slew=SLEW0, output_load=OUT_LOAD), "blk")
    assert rep.buffers == 2
    assert model.in_cap["a"] == pytest.approx(2 * _cap(raw, "BUFX4", "A"))
    assert model.in2out["a"]["y[0]"][1] == 2         # buffer + NAND


def _flop_netlist(launch, capture):
    """clk -> flop f0 (launch) -> Q -> INVX1 -> flop f1 (capture) D; Q and D each also drive 3 side
    inverters (so that slews stay inside the tables)."""
    mod = {"ports": {"clk": {"direction": "input", "bits": [2]}, "d": {"direction": "input", "bits": [3]}},
           "cells": {"f0": {"type": launch, "connections": {"CLK": [2], "D": [3], "Q": [4]}},
                     "u": {"type": "INVX1", "connections": {"A": [4], "Y": [5]}},
                     "f1": {"type": capture, "connections": {"CLK": [2], "D": [5], "Q": [6]}}},
           "netnames": {}}
    for k in range(3):
        mod["cells"][f"side{k}"] = {"type": "INVX1", "connections": {"A": [5], "Y": [20 + k]}}
        mod["cells"][f"qside{k}"] = {"type": "INVX1", "connections": {"A": [4], "Y": [30 + k]}}
    return mod


def _hand_flop_path(raw, launch, capture):
    """Worst launch clock-to-Q + INV + capture setup, in ns, from the raw tables."""
    edge_l = "rising_edge" if launch == "DFFPOSX1" else "falling_edge"
    edge_c = "setup_rising" if capture == "DFFPOSX1" else "setup_falling"
    q = _timing(raw, launch, "Q", "CLK", edge_l)
    inv = _timing(raw, "INVX1", "Y", "A")
    su = _timing(raw, capture, "D", "CLK", edge_c)
    qload = 4 * _cap(raw, "INVX1", "A")
    dload = _cap(raw, capture, "D") + 3 * _cap(raw, "INVX1", "A")
    best = 0.0
    for eq in ("rise", "fall"):
        t = _bilinear(q[f"cell_{eq}"], qload, SLEW0)
        s = _bilinear(q[f"{eq}_transition"], qload, SLEW0)
        ed = "fall" if eq == "rise" else "rise"
        t += _bilinear(inv[f"cell_{ed}"], dload, s)
        s = _bilinear(inv[f"{ed}_transition"], dload, s)
        t += _bilinear(su[f"{ed}_constraint"], SLEW0, s)
        best = max(best, t)
    return best * 1000.0


@pytest.mark.parametrize("launch,capture,factor", [
    ("DFFPOSX1", "DFFPOSX1", 1), ("DFFPOSX1", "DFFNEGX1", 2),
    ("DFFNEGX1", "DFFPOSX1", 2), ("DFFNEGX1", "DFFNEGX1", 1)])
def test_falling_edge_flops_have_half_a_period(lib, raw, launch, capture, factor):
    res = Sta(lib, _flop_netlist(launch, capture), input_slew=SLEW0, output_load=OUT_LOAD).run()
    hand = _hand_flop_path(raw, launch, capture)
    assert res.kind == "reg->reg" and res.end == "f1/D"
    assert res.factor == factor
    assert res.delay_ps == pytest.approx(factor * hand, rel=0.005)
    if "DFFNEGX1" in (launch, capture):
        names = {"DFFPOSX1": "rise", "DFFNEGX1": "fall"}
        assert res.edges == f"{names[launch]}->{names[capture]}"


def test_falling_edge_launch_to_an_output_has_half_a_period(lib, raw):
    """A falling-edge flop driving an output (captured on the next rising edge)."""
    mod = _flop_netlist("DFFNEGX1", "DFFNEGX1")
    mod["ports"]["q"] = {"direction": "output", "bits": [4]}
    res = Sta(lib, mod, input_slew=SLEW0, output_load=OUT_LOAD).run()
    q = _timing(raw, "DFFNEGX1", "Q", "CLK", "falling_edge")
    qload = 4 * _cap(raw, "INVX1", "A") + OUT_LOAD
    clk2q = max(_bilinear(q[f"cell_{e}"], qload, SLEW0) for e in ("rise", "fall")) * 1000.0
    sta = Sta(lib, mod, input_slew=SLEW0, output_load=OUT_LOAD)
    sta.run()
    assert sta.end_by_output["q"][0] == pytest.approx(2 * clk2q, rel=0.005)
    assert res.delay_ps >= sta.end_by_output["q"][0]


def test_block_output_drive_follows_the_parent_load(lib, raw):
    """A block whose output is an INVX1: the parent's load changes the output's arrival by the
    inverter's own slope, and its limit is the inverter's max_capacitance."""
    from flows.synth.blockmodel import BlockTiming

    blk = {"ports": {"a": {"direction": "input", "bits": [2]}, "y": {"direction": "output", "bits": [3]}},
           "cells": {"u": {"type": "INVX1", "connections": {"A": [2], "Y": [3]}}}, "netnames": {}}
    model, _ = extract_model(Sta(lib, blk, input_slew=SLEW0, output_load=OUT_LOAD), "blk")
    slope, limit = model.out_drive["y"]
    assert limit == pytest.approx(
        float(raw.get_group("cell", "INVX1").get_group("pin", "Y")["max_capacitance"]))
    inv = _timing(raw, "INVX1", "Y", "A")
    hand = max((_bilinear(inv[t], 0.025, SLEW0) - _bilinear(inv[t], OUT_LOAD, SLEW0)) / 0.005
               for t in ("cell_rise", "cell_fall")) * 1000.0
    assert slope == pytest.approx(hand, rel=0.01)

    def parent(n):
        top = {"ports": {"a": {"direction": "input", "bits": [2]},
                         "z": {"direction": "output", "bits": list(range(100, 100 + n))}},
               "cells": {"b0": {"type": "blk", "connections": {"a": [2], "y": [3]}}}, "netnames": {}}
        for k in range(n):
            top["cells"][f"s{k}"] = {"type": "INVX1", "connections": {"A": [3], "Y": [100 + k]}}
        return top

    models = {"blk": BlockTiming.from_json(model.to_json())}
    cin = _cap(raw, "INVX1", "A")
    arr = {}
    for n in (1, 4, 8):
        sta = Sta(lib, parent(n), models=models, input_slew=SLEW0, output_load=OUT_LOAD)
        sta.run()
        arr[n] = max(sta.arr[(3, rf)][0] for rf in (0, 1))
    assert arr[8] - arr[4] == pytest.approx(slope * 4 * cin, rel=1e-6)
    # one INVX1 input is lighter than the load the block was timed with: no gain
    assert cin < OUT_LOAD and arr[1] == pytest.approx(model.in2out["a"]["y"][0])
    # 60 INVX1 inputs (0.56 pF) exceed the inverter's limit: the parent's repair buffers the net
    fixed, rep = repair(lib, parent(60), models=models, output_load=OUT_LOAD)
    assert rep.nets == 1 and rep.buffers >= 1


def test_within_tables_buffers_beyond_the_characterized_range(lib):
    """16 NAND inputs (0.2 pF) are within INVX1's max_capacitance but beyond its tables' 0.15 pF."""
    mod = _fanout_netlist(16)
    _, rep = repair(lib, mod, output_load=OUT_LOAD)
    assert rep.nets == 0
    fixed, rep = repair(lib, mod, output_load=OUT_LOAD, within_tables=True)
    assert rep.nets == 1 and rep.buffers == 1
    assert Sta(lib, fixed).load[3] <= 0.15
