"""STA against hand computation: a chain of cells timed from the liberty's own table values.

The expected delay is computed here from the tables as ``liberty-parser`` returns them, with this
file's own bilinear interpolation (numpy), never through :mod:`flows.synth.liberty`/:mod:`flows.synth.sta`.
"""

import numpy as np
import pytest

from flows.synth import liberty as L
from flows.synth.sta import Sta
from tb.flows import OSU, needs_osu

pytestmark = pytest.mark.quick



def _raw_tables(cell_name, out_pin, related):
    """(pin caps, {table: (index_1, index_2, values)}) straight from liberty-parser."""
    from liberty.parser import parse_liberty

    lib = parse_liberty(OSU.read_text())
    cell = lib.get_group("cell", cell_name)
    caps = {str(p.args[0]): float(p["capacitance"]) for p in cell.get_groups("pin")
            if str(p["direction"]) == "input"}
    pin = cell.get_group("pin", out_pin)
    tg = next(t for t in pin.get_groups("timing") if str(t["related_pin"]).strip('"') == related)
    tabs = {}
    for name in ("cell_rise", "cell_fall", "rise_transition", "fall_transition"):
        g = tg.get_group(name)
        tabs[name] = (g.get_array("index_1")[0], g.get_array("index_2")[0], g.get_array("values"))
    return caps, tabs, str(tg["timing_sense"])


def _bilinear(tab, load, slew):
    """OSU tables: index_1 = load (pF), index_2 = input transition (ns); inside the grid."""
    i1, i2, v = tab
    assert i1[0] <= load <= i1[-1] and i2[0] <= slew <= i2[-1], "hand check stays inside the grid"
    along_slew = np.array([np.interp(slew, i2, v[k]) for k in range(len(i1))])
    return float(np.interp(load, i1, along_slew))


def _chain_netlist(cells, out_load_ports=1):
    """Yosys-JSON-like module: input a -> cells[0] -> ... -> output y (single-input pin A)."""
    mod = {"ports": {"a": {"direction": "input", "bits": [2]},
                     "y": {"direction": "output", "bits": [2 + len(cells)]}},
           "cells": {}, "netnames": {}}
    for k, (ctype, pin_in, pin_out, extra) in enumerate(cells):
        conns = {pin_in: [2 + k], pin_out: [3 + k]}
        conns.update(extra)
        mod["cells"][f"u{k}"] = {"type": ctype, "connections": conns}
    return mod


@needs_osu
def test_inverter_chain_matches_hand_computation():
    lib = L.load(OSU)
    caps, tabs, sense = _raw_tables("INVX1", "Y", "A")
    assert sense == "negative_unate"
    slew0, out_load = 0.1, 0.03            # ns, pF: documented test conditions
    n = 3
    mod = _chain_netlist([("INVX1", "A", "Y", {})] * n)
    # each internal net also drives 3 side inverters (fanout 4) so slews stay inside the grid
    for k in range(n - 1):
        for j in range(3):
            conns = {"A": [3 + k], "Y": [200 + 3 * k + j]}
            mod["cells"][f"side{k}_{j}"] = {"type": "INVX1", "connections": conns}
    res = Sta(lib, mod, input_slew=slew0, output_load=out_load).run()

    best = 0.0
    for first_edge in ("rise", "fall"):
        t, slew, edge = 0.0, slew0, first_edge
        for k in range(n):
            load = out_load if k == n - 1 else 4 * caps["A"]
            edge = "fall" if edge == "rise" else "rise"       # negative unate
            t += _bilinear(tabs[f"cell_{edge}"], load, slew)
            slew = _bilinear(tabs[f"{edge}_transition"], load, slew)
        best = max(best, t)
    expected_ps = best * 1000.0
    assert res.kind == "in->out"
    assert res.levels == n
    assert res.delay_ps == pytest.approx(expected_ps, rel=0.005)
    assert [s.point.split()[0] for s in res.steps] == ["input", "u0", "u1", "u2"]


@needs_osu
def test_nand_chain_with_side_input_matches_hand_computation():
    """NAND2 (A driven, B from a second input) then INV: arcs chosen by related_pin."""
    lib = L.load(OSU)
    ncaps, ntabs, _ = _raw_tables("NAND2X1", "Y", "A")
    icaps, itabs, _ = _raw_tables("INVX1", "Y", "A")
    mod = {"ports": {"a": {"direction": "input", "bits": [2]}, "b": {"direction": "input", "bits": [9]},
                     "y": {"direction": "output", "bits": [4]}},
           "cells": {"n0": {"type": "NAND2X1", "connections": {"A": [2], "B": [9], "Y": [3]}},
                     "i1": {"type": "INVX1", "connections": {"A": [3], "Y": [4]}}},
           "netnames": {}}
    slew0, out_load = 0.2, 0.05
    res = Sta(lib, mod, input_slew=slew0, output_load=out_load).run(inputs={"a"})
    best = 0.0
    for e0 in ("rise", "fall"):
        e1 = "fall" if e0 == "rise" else "rise"
        d1 = _bilinear(ntabs[f"cell_{e1}"], icaps["A"], slew0)
        s1 = _bilinear(ntabs[f"{e1}_transition"], icaps["A"], slew0)
        e2 = e0
        d2 = _bilinear(itabs[f"cell_{e2}"], out_load, s1)
        best = max(best, d1 + d2)
    assert res.delay_ps == pytest.approx(best * 1000.0, rel=0.005)
    assert res.levels == 2


@needs_osu
def test_delay_grows_with_load_and_fanout():
    lib = L.load(OSU)
    mod = _chain_netlist([("INVX1", "A", "Y", {})] * 2)
    delays = [Sta(lib, mod, input_slew=0.1, output_load=c).run().delay_ps for c in (0.005, 0.02, 0.08, 0.3)]
    assert all(b > a for a, b in zip(delays, delays[1:], strict=False)), delays
    # fanout: the same chain with 4 extra inverters hanging on the middle net
    fan = _chain_netlist([("INVX1", "A", "Y", {})] * 2)
    for k in range(4):
        fan["cells"][f"f{k}"] = {"type": "INVX1", "connections": {"A": [3], "Y": [100 + k]}}
    d_fan = Sta(lib, fan, input_slew=0.1, output_load=0.02).run().delay_ps
    assert d_fan > delays[1]
    # an optional wire estimate adds load too
    d_wire = Sta(lib, mod, input_slew=0.1, output_load=0.02, wire_cap_per_fanout=0.02).run().delay_ps
    assert d_wire > delays[1]


def test_table_extrapolates_linearly_outside_the_grid():
    t = L.Table([1.0, 2.0], [10.0, 20.0], [[1.0, 2.0], [3.0, 4.0]])
    assert t.lookup(1.5, 15.0) == pytest.approx(2.5)
    assert t.lookup(3.0, 10.0) == pytest.approx(5.0)      # beyond index_1: slope 2 per unit
    assert t.lookup(1.0, 0.0) == pytest.approx(0.0)       # below index_2: slope 0.1 per unit
    swapped = L.Table([10.0, 20.0], [1.0, 2.0], [[1.0, 3.0], [2.0, 4.0]], load_first=False)
    assert swapped.lookup(1.5, 15.0) == pytest.approx(2.5)


@needs_osu
def test_unknown_cell_and_loop_are_clear_errors():
    from flows.synth.sta import StaError

    lib = L.load(OSU)
    with pytest.raises(StaError, match="NOPE.*not a cell of the liberty"):
        Sta(lib, _chain_netlist([("NOPE", "A", "Y", {})]))
    loop = {"ports": {}, "netnames": {}, "cells": {
        "u0": {"type": "INVX1", "connections": {"A": [5], "Y": [6]}},
        "u1": {"type": "INVX1", "connections": {"A": [6], "Y": [5]}}}}
    with pytest.raises(StaError, match="combinational loop"):
        Sta(lib, loop).run()


def _gated_netlist(gate_by_latch=True):
    """clk -> INVX1 -> LATCH (D = en) -> AND2X2 (clk, held) -> DFFPOSX1 clock; d -> D, Q -> y.
    Without ``gate_by_latch`` the AND takes ``en`` straight from the input."""
    ports = {"clk": 2, "en": 3, "d": 4}
    mod = {"ports": {n: {"direction": "input", "bits": [b]} for n, b in ports.items()},
           "cells": {}, "netnames": {}}
    mod["ports"]["y"] = {"direction": "output", "bits": [8]}
    cells = [("INVX1", {"A": [2], "Y": [5]}), ("LATCH", {"D": [3], "CLK": [5], "Q": [6]}),
             ("AND2X2", {"A": [2], "B": [6 if gate_by_latch else 3], "Y": [7]}),
             ("DFFPOSX1", {"CLK": [7], "D": [4], "Q": [8]})]
    for k, (t, c) in enumerate(cells):
        mod["cells"][f"u{k}"] = {"type": t, "connections": c}
    return mod


@needs_osu
def test_gated_clock_latency_and_latch_capture_edge():
    """A flop behind a clock gate launches after the gate's delay (hand computation: AND2X2
    A->Y rise at the flop's clock pin load, then the flop's CLK->Q); the gate's latch, clocked by
    the inverted clock, captures its enable at the rising edge (a full period, not half), the
    inverter's delay late."""
    lib = L.load(OSU)
    slew0, out_load = 0.1, 0.03
    sta = Sta(lib, _gated_netlist(), input_slew=slew0, output_load=out_load)
    ff_caps, ff_tabs, _ = _raw_tables("DFFPOSX1", "Q", "CLK")
    _, and_tabs, sense = _raw_tables("AND2X2", "Y", "A")
    assert sense == "positive_unate"
    latency = _bilinear(and_tabs["cell_rise"], ff_caps["CLK"], slew0) * 1000.0
    assert sta.clock_of["u3"] == (0, pytest.approx(latency, rel=0.005))
    assert sta.clock_of["u1"][0] == 1          # the latch sees the inverted clock
    clk_to_q = max(_bilinear(ff_tabs[t], out_load, slew0) for t in ("cell_rise", "cell_fall")) * 1000.0
    res = sta.run(inputs=set(), regs=True)
    assert res.kind == "reg->out"
    assert res.delay_ps == pytest.approx(latency + clk_to_q, rel=0.005)
    en_path = sta.run(inputs={"en"}, regs=False)
    assert en_path.kind == "in->reg" and en_path.factor == 1
    # the same latch on the clock itself (transparent while the clock is high) captures at the
    # falling edge: half a period, so the path needs twice its arrival; on the inverted clock it
    # captures at the rising edge, the inverter's delay after it (its latency, credited)
    plain = _gated_netlist()
    plain["cells"]["u1"]["connections"]["CLK"] = [2]
    half = Sta(lib, plain, input_slew=slew0, output_load=out_load).run(inputs={"en"}, regs=False)
    lat_caps, _, _ = _raw_tables("LATCH", "Q", "CLK")
    _, inv_tabs, _ = _raw_tables("INVX1", "Y", "A")
    inv_delay = _bilinear(inv_tabs["cell_fall"], lat_caps["CLK"], slew0) * 1000.0
    assert sta.clock_of["u1"][1] == pytest.approx(inv_delay, rel=0.005)
    assert half.factor == 2
    assert en_path.delay_ps == pytest.approx(half.delay_ps / 2 - inv_delay, rel=0.01)
    # into the gated flop: its setup less the gate's latency (the same flop on the clock itself)
    ungated = _gated_netlist()
    ungated["cells"]["u3"]["connections"]["CLK"] = [2]
    d_plain = Sta(lib, ungated, input_slew=slew0, output_load=out_load).run(inputs={"d"}, regs=False)
    d_gated = sta.run(inputs={"d"}, regs=False)
    assert d_gated.delay_ps == pytest.approx(d_plain.delay_ps - latency, rel=0.005)


@needs_osu
def test_clock_gated_by_an_unlatched_input_is_refused():
    from flows.synth.sta import StaError

    with pytest.raises(StaError, match="latched enables"):
        Sta(L.load(OSU), _gated_netlist(gate_by_latch=False))
