"""Energy against hand computation: tiny netlists whose energy is worked out here from the liberty.

The expected numbers come from the tables as ``liberty-parser`` returns them, with this file's own
interpolation (numpy), never through :mod:`flows.power.libpower` or :mod:`flows.power.energy`.
Conditions are chosen on grid points of the tables where possible (input slew 0.06 or 0.18 ns,
output load 0.025 pF), and the toggle counts are derived here from the stimulus.
"""

import numpy as np
import pytest

from flows.power.energy import compute
from flows.power.libpower import load_power, lookup
from flows.power.netlist import NetlistError, flatten
from flows.power.sim import GateSim, truth_table
from flows.synth import liberty as L
from tb.flows import OSU, needs_osu

pytestmark = pytest.mark.quick

V = 1.8           # OSU 0.18 um nom_voltage (V); pF x V^2 = pJ
PERIOD = 10.0     # ns, for the leakage time


def _raw(cell_name):
    """(input pin caps, {(pin, related): {"rise_power"/"fall_power": (i1, i2, values)}}, leakage)."""
    from liberty.parser import parse_liberty

    lib = parse_liberty(OSU.read_text())
    cell = lib.get_group("cell", cell_name)
    caps, power = {}, {}
    for p in cell.get_groups("pin"):
        name = str(p.args[0])
        if str(p["direction"]) == "input":
            caps[name] = float(p["capacitance"])
        for ig in p.get_groups("internal_power"):
            rel = str(ig["related_pin"]).strip('"') if "related_pin" in ig else None
            d = {}
            for k in ("rise_power", "fall_power"):
                g = ig.get_group(k)
                i2 = g.get_array("index_2")[0] if "index_2" in g else None
                d[k] = (g.get_array("index_1")[0], i2, g.get_array("values"))
            power[(name, rel)] = d
    return caps, power, float(cell["cell_leakage_power"])


def _at(tab, load, slew):
    """A table at (load, slew): 2-D tables are (load, slew); 1-D passive tables are slew only."""
    i1, i2, v = tab
    if i2 is None:
        return float(np.interp(slew, i1, np.ravel(v)))
    along = np.array([np.interp(slew, i2, v[k]) for k in range(len(i1))])
    return float(np.interp(load, i1, along))


def _module(inputs, outputs, cells):
    """Yosys-JSON module: ``inputs``/``outputs`` name -> bit, ``cells`` [(type, {pin: bit})]."""
    ports = {n: {"direction": "input", "bits": [b]} for n, b in inputs.items()}
    ports.update({n: {"direction": "output", "bits": [b]} for n, b in outputs.items()})
    return {"ports": ports, "cells": {f"u{k}": {"type": t, "connections": {p: [b] for p, b in c.items()}}
                                      for k, (t, c) in enumerate(cells)}}


@pytest.fixture(scope="module")
def libs():
    return L.load(OSU), load_power(OSU)


def _simulate(libs, mod, stimulus, out_load=0.025, slew=0.06):
    """Drive ``stimulus`` (list of {input: 0/1}) one cycle each; returns (flat, sim, energy, trace)."""
    lib, plib = libs
    flat = flatten({"t": mod}, "t", plib.cells)
    sim = GateSim(flat, plib)
    trace = []
    first = True
    for vec in stimulus:
        for n, v in vec.items():
            sim.vals[flat.ports[n][1]] = v
        sim.settle()
        if first:
            sim.start_counting()
            first = False
        trace.append({n: int(sim.vals[nets][0]) for n, (d, nets) in flat.ports.items() if d == "output"})
        sim.clock()
    return flat, sim, compute(flat, sim, lib, plib, PERIOD, input_slew=slew, output_load=out_load), trace


def _leak(cells_leak, cycles):
    return sum(cells_leak) * 1e-9 * cycles * PERIOD * 1e-9 * 1e12  # nW x s -> pJ


@needs_osu
@pytest.mark.parametrize("n_toggles", [10, 11])
def test_inverter_chain_toggled_n_times(libs, n_toggles):
    caps, power, leak = _raw("INVX1")
    mod = _module({"a": 2}, {"y": 5}, [("INVX1", {"A": 2, "Y": 3}), ("INVX1", {"A": 3, "Y": 4}),
                                       ("INVX1", {"A": 4, "Y": 5})])
    stim = [{"a": k % 2} for k in range(n_toggles + 1)]      # a starts at 0, toggles n times
    flat, sim, e, trace = _simulate(libs, mod, stim)
    assert [t["y"] for t in trace] == [1 - k % 2 for k in range(n_toggles + 1)]
    cycles = n_toggles
    ups_a = (n_toggles + 1) // 2            # a: 0 -> 1 on odd steps
    downs_a = n_toggles // 2
    pw = power[("Y", "A")]
    e_int = 0.0
    for k in range(3):                      # inverter k output: rises when its input falls
        load = caps["A"] if k < 2 else 0.025
        in_rises = ups_a if k % 2 == 0 else downs_a
        in_falls = n_toggles - in_rises
        e_int += in_falls * _at(pw["rise_power"], load, 0.06) + in_rises * _at(pw["fall_power"], load, 0.06)
    cap_total = 3 * caps["A"] + 0.025       # nets a, n1, n2 (one INVX1 input each) and y (output load)
    e_sw = 0.5 * cap_total * V * V * n_toggles
    assert e.cycles == cycles
    assert e.internal == pytest.approx(e_int, rel=1e-9)
    assert e.switching == pytest.approx(e_sw, rel=1e-9)
    assert e.leakage == pytest.approx(_leak([leak] * 3, cycles), rel=1e-9)


@needs_osu
def test_flip_flop_with_constant_data_pays_the_clock_only(libs):
    caps, power, leak = _raw("DFFPOSX1")
    mod = _module({"clk": 2, "d": 3}, {"q": 4}, [("DFFPOSX1", {"CLK": 2, "D": 3, "Q": 4})])
    n = 20
    flat, sim, e, trace = _simulate(libs, mod, [{"d": 0}] * (n + 1))
    assert all(t["q"] == 0 for t in trace)
    per_cycle = (_at(power[("CLK", None)]["rise_power"], 0, 0.06)
                 + _at(power[("CLK", None)]["fall_power"], 0, 0.06))
    assert e.internal == pytest.approx(n * per_cycle, rel=1e-9)
    # only the clock net switches: one rise and one fall per cycle on the CLK pin's capacitance
    assert e.switching == pytest.approx(n * caps["CLK"] * V * V, rel=1e-9)
    assert e.by_block["clock"]["switching"] == pytest.approx(e.switching)
    assert e.leakage == pytest.approx(_leak([leak], n), rel=1e-9)


def _full_adder_sequence():
    """A walk through all 64 ordered pairs of the 8 input states (an Euler circuit of the complete
    digraph with self loops), starting and ending at state 0."""
    edges = {s: list(range(8)) for s in range(8)}
    stack, path = [0], []
    while stack:
        s = stack[-1]
        if edges[s]:
            stack.append(edges[s].pop())
        else:
            path.append(stack.pop())
    return path[::-1]


@needs_osu
def test_full_adder_through_all_input_transitions(libs):
    caps, power, leak = _raw("FAX1")
    seq = _full_adder_sequence()
    assert len(seq) == 65 and len({(a, b) for a, b in zip(seq, seq[1:], strict=False)}) == 64
    mod = _module({"a": 2, "b": 3, "c": 4}, {"s": 5, "co": 6},
                  [("FAX1", {"A": 2, "B": 3, "C": 4, "YS": 5, "YC": 6})])
    stim = [{"a": s & 1, "b": (s >> 1) & 1, "c": (s >> 2) & 1} for s in seq]
    flat, sim, e, trace = _simulate(libs, mod, stim, out_load=0.025, slew=0.18)
    total = [(s & 1) + ((s >> 1) & 1) + ((s >> 2) & 1) for s in seq]
    assert [t["s"] + 2 * t["co"] for t in trace] == total
    bits = {"A": [s & 1 for s in seq], "B": [(s >> 1) & 1 for s in seq], "C": [(s >> 2) & 1 for s in seq],
            "YS": [v & 1 for v in total], "YC": [v >> 1 for v in total]}

    def edges(v):
        d = np.diff(v)
        return int((d > 0).sum()), int((d < 0).sum())

    tog = {p: sum(edges(v)) for p, v in bits.items()}
    share = {p: tog[p] / (tog["A"] + tog["B"] + tog["C"]) for p in "ABC"}
    e_int = 0.0
    for out in ("YS", "YC"):
        up, down = edges(bits[out])
        for p in "ABC":
            pw = power[(out, p)]
            e_int += share[p] * (up * _at(pw["rise_power"], 0.025, 0.18)
                                 + down * _at(pw["fall_power"], 0.025, 0.18))
    e_sw = 0.5 * V * V * (sum(caps[p] * tog[p] for p in "ABC") + 0.025 * (tog["YS"] + tog["YC"]))
    assert e.internal == pytest.approx(e_int, rel=1e-9)
    assert e.switching == pytest.approx(e_sw, rel=1e-9)
    assert e.leakage == pytest.approx(_leak([leak], 64), rel=1e-9)


@needs_osu
def test_table_interpolation_at_and_between_grid_points(libs):
    _, plib = libs
    tab = next(en for en in plib.cells["INVX1"].entries if en.pin == "Y").rise
    _, power, _ = _raw("INVX1")
    i1, i2, v = power[("Y", "A")]["rise_power"]
    for a in range(len(i1)):
        for b in range(len(i2)):
            assert lookup(tab, i1[a], i2[b]) == pytest.approx(v[a][b], rel=1e-12)
    load, slew = (i1[1] + i1[2]) / 2, 0.25 * i2[2] + 0.75 * i2[3]
    hand = 0.5 * (0.25 * v[1][2] + 0.75 * v[1][3]) + 0.5 * (0.25 * v[2][2] + 0.75 * v[2][3])
    assert lookup(tab, load, slew) == pytest.approx(hand, rel=1e-12)
    assert float(lookup(tab, [load], [slew])[0]) == pytest.approx(tab.lookup(load, slew), rel=1e-12)
    passive = next(en for en in plib.cells["DFFPOSX1"].entries if en.pin == "CLK").fall
    j1, _, pv = _raw("DFFPOSX1")[1][("CLK", None)]["fall_power"]
    mid = 0.5 * (j1[0] + j1[1])
    assert lookup(passive, 0.0, mid) == pytest.approx(0.5 * (pv[0] + pv[1]) if np.ndim(pv) == 1
                                                      else 0.5 * (np.ravel(pv)[0] + np.ravel(pv)[1]))


@needs_osu
def test_doubling_the_toggle_rate_doubles_dynamic_energy(libs):
    mod = _module({"a": 2}, {"y": 4}, [("INVX1", {"A": 2, "Y": 3}), ("NAND2X1", {"A": 3, "B": 2, "Y": 4})])
    n = 40
    slow = [{"a": (k // 2) % 2} for k in range(n + 1)]
    fast = [{"a": k % 2} for k in range(n + 1)]
    e1 = _simulate(libs, mod, slow)[2]
    e2 = _simulate(libs, mod, fast)[2]
    assert e2.dynamic == pytest.approx(2 * e1.dynamic, rel=1e-12)
    assert e2.leakage == pytest.approx(e1.leakage, rel=1e-12)


def test_liberty_functions_become_truth_tables():
    assert truth_table("(!((S A) + (!S B)))", ["A", "B", "S"]).tolist() == [
        1 - ((s and a) or ((not s) and b)) for s in (0, 1) for b in (0, 1) for a in (0, 1)] * 2
    assert truth_table("((A^B)^C)", ["A", "B", "C"])[:8].tolist() == [0, 1, 1, 0, 1, 0, 0, 1]
    # postfix not, '*' and '|', a constant: (A*B)' | (C & 0) is NAND2
    assert truth_table("(A*B)' | (C & 0)", ["A", "B", "C"])[:4].tolist() == [1, 1, 1, 0]
    with pytest.raises(NetlistError, match="cannot parse"):
        truth_table("A # B", ["A", "B"])


@needs_osu
def test_unknown_and_unsupported_cells_are_named(libs):
    _, plib = libs
    with pytest.raises(NetlistError, match="FOO.*neither a library cell"):
        flatten({"t": _module({"a": 2}, {"y": 3}, [("FOO", {"A": 2, "Y": 3})])}, "t", plib.cells)
    flat = flatten({"t": _module({"a": 2, "e": 4}, {"y": 3}, [("TBUFX1", {"A": 2, "EN": 4, "Y": 3})])},
                   "t", plib.cells)
    with pytest.raises(NetlistError, match="TBUFX1 cannot be simulated: tristate"):
        GateSim(flat, plib)


@needs_osu
def test_slews_beyond_the_tables_are_clamped_to_their_last_point(libs):
    _, power, _ = _raw("INVX1")
    mod = _module({"a": 2}, {"y": 3}, [("INVX1", {"A": 2, "Y": 3})])
    e = _simulate(libs, mod, [{"a": k % 2} for k in range(5)], slew=50.0)[2]
    pw = power[("Y", "A")]
    top = pw["rise_power"][1][-1]           # the largest characterised input transition
    hand = 2 * _at(pw["rise_power"], 0.025, top) + 2 * _at(pw["fall_power"], 0.025, top)
    assert e.internal == pytest.approx(hand, rel=1e-9)


def test_summary_per_token_ratio_in_the_feed_bound_regime(tmp_path, monkeypatch):
    """At batch 1 every MiniLM product has M <= D = 8: each D x D tile costs D cycles and D^2 bytes
    (FP8), so HBM / unit = pJ_per_byte * D / pJ_per_cycle, whatever the shapes."""
    import json

    from flows.power import summary

    # MiniLM only: the contract's cycle count of the big models' shapes takes tens of seconds
    monkeypatch.setattr(summary, "MODELS", ("MiniLM-L6",))
    monkeypatch.setattr(summary, "ABS_MODEL", "MiniLM-L6")

    run = {"variant": "mu-w8-fp8_e4m3-osu018", "workload": "tiles", "runs": [], "width": 8,
           "fmt": "fp8_e4m3", "rows": 1, "columns_simulated": 8, "columns": 8, "cycles": 1000,
           "results_checked": 1, "toggles": 1, "nets": 1, "cells": 1, "useful_macs": 5000,
           "issued_macs": 6400, "energy_pj": {"internal": 6e5, "switching": 4e5, "leakage": 0.0,
                                              "total": 1e6},
           "pj_per_useful_mac": 200.0, "pj_per_issued_mac": 1e6 / 6400, "fmax_mhz": 50.0,
           "mw_at_fmax": 50.0, "by_block_pj": {"mu": {"internal": 1e6, "switching": 0, "leakage": 0}},
           "seconds": {"synth": 1, "stimulus": 1, "build": 1, "sim": 1, "energy": 1, "total": 5},
           "peak_mb": 10, "area_um2": 1e6, "pj_per_cycle": 1000.0}
    (tmp_path / run["variant"]).mkdir()
    (tmp_path / run["variant"] / "energy-tiles.json").write_text(json.dumps(run))
    text = summary.write_summary(tmp_path, hbm_pj=40.0).read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| mu-w8-fp8_e4m3-osu018 | 1000 |"))
    ratio_minilm = float(row.split("|")[5])
    assert ratio_minilm == pytest.approx(40.0 * 8 / 1000.0, abs=0.005)
    assert (tmp_path / "energy_per_mac.png").is_file()


def test_summary_compares_block_scaled_with_plain_element_format():
    """MXFP8 at 300 pJ/MAC (200 in the top, 100 in a lane) against plain E4M3 at 200 (all in the
    top): +50%, and the multipliers are the block that added the most (+100 pJ/MAC)."""
    from flows.power import summary

    def run(fmt, blocks):
        total = sum(blocks.values())
        return {"variant": f"mu-w8-{fmt}-osu018", "workload": "tiles", "width": 8, "fmt": fmt,
                "rows": 1, "columns_simulated": 8, "columns": 8, "useful_macs": 5000,
                "energy_pj": {"total": total}, "pj_per_useful_mac": total / 5000,
                "by_block_pj": {b: {"internal": e, "switching": 0.0} for b, e in blocks.items()}}

    lines = summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6}),
                                     run("mxfp8_e4m3", {"mu": 1e6, "mu_lane_w8_mxfp8_e4m3": 5e5})])
    assert len(lines) == 1
    assert "300.0 pJ per useful MAC against 200.0 for plain fp8_e4m3 (+50%)" in lines[0]
    assert "multipliers (+100.0 pJ/MAC)" in lines[0]
    assert summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6})]) == []
