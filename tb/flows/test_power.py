"""Energy against hand computation: tiny netlists whose energy is worked out here from the liberty.

The expected numbers come from the tables as ``liberty-parser`` returns them, with the tests' own
interpolation (:mod:`tb.flows.liberty_by_hand`), never through :mod:`flows.power.libpower` or
:mod:`flows.power.energy`.
Conditions are chosen on grid points of the tables where possible (input slew 0.06 or 0.18 ns,
output load 0.025 pF), and the toggle counts are derived here from the stimulus.
"""

import numpy as np
import pytest

from flows.power.energy import compute
from flows.power.libpower import lookup
from flows.power.netlist import NetlistError, flatten
from flows.power.sim import GateSim, truth_table
from tb.flows import needs_osu
from tb.flows.liberty_by_hand import PERIOD, V, at, raw

pytestmark = pytest.mark.quick

def _module(inputs, outputs, cells):
    """Yosys-JSON module: ``inputs``/``outputs`` name -> bit, ``cells`` [(type, {pin: bit})]."""
    ports = {n: {"direction": "input", "bits": [b]} for n, b in inputs.items()}
    ports.update({n: {"direction": "output", "bits": [b]} for n, b in outputs.items()})
    return {"ports": ports, "cells": {f"u{k}": {"type": t, "connections": {p: [b] for p, b in c.items()}}
                                      for k, (t, c) in enumerate(cells)}}


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
    caps, power, leak = raw("INVX1")
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
        e_int += in_falls * at(pw["rise_power"], load, 0.06) + in_rises * at(pw["fall_power"], load, 0.06)
    cap_total = 3 * caps["A"] + 0.025       # nets a, n1, n2 (one INVX1 input each) and y (output load)
    e_sw = 0.5 * cap_total * V * V * n_toggles
    assert e.cycles == cycles
    assert e.internal == pytest.approx(e_int, rel=1e-9)
    assert e.switching == pytest.approx(e_sw, rel=1e-9)
    assert e.leakage == pytest.approx(_leak([leak] * 3, cycles), rel=1e-9)


@needs_osu
def test_flip_flop_with_constant_data_pays_the_clock_only(libs):
    caps, power, leak = raw("DFFPOSX1")
    mod = _module({"clk": 2, "d": 3}, {"q": 4}, [("DFFPOSX1", {"CLK": 2, "D": 3, "Q": 4})])
    n = 20
    flat, sim, e, trace = _simulate(libs, mod, [{"d": 0}] * (n + 1))
    assert all(t["q"] == 0 for t in trace)
    per_cycle = (at(power[("CLK", None)]["rise_power"], 0, 0.06)
                 + at(power[("CLK", None)]["fall_power"], 0, 0.06))
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
    caps, power, leak = raw("FAX1")
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
            e_int += share[p] * (up * at(pw["rise_power"], 0.025, 0.18)
                                 + down * at(pw["fall_power"], 0.025, 0.18))
    e_sw = 0.5 * V * V * (sum(caps[p] * tog[p] for p in "ABC") + 0.025 * (tog["YS"] + tog["YC"]))
    assert e.internal == pytest.approx(e_int, rel=1e-9)
    assert e.switching == pytest.approx(e_sw, rel=1e-9)
    assert e.leakage == pytest.approx(_leak([leak], 64), rel=1e-9)


@needs_osu
def test_table_interpolation_at_and_between_grid_points(libs):
    _, plib = libs
    tab = next(en for en in plib.cells["INVX1"].entries if en.pin == "Y").rise
    _, power, _ = raw("INVX1")
    i1, i2, v = power[("Y", "A")]["rise_power"]
    for a in range(len(i1)):
        for b in range(len(i2)):
            assert lookup(tab, i1[a], i2[b]) == pytest.approx(v[a][b], rel=1e-12)
    load, slew = (i1[1] + i1[2]) / 2, 0.25 * i2[2] + 0.75 * i2[3]
    hand = 0.5 * (0.25 * v[1][2] + 0.75 * v[1][3]) + 0.5 * (0.25 * v[2][2] + 0.75 * v[2][3])
    assert lookup(tab, load, slew) == pytest.approx(hand, rel=1e-12)
    assert float(lookup(tab, [load], [slew])[0]) == pytest.approx(tab.lookup(load, slew), rel=1e-12)
    passive = next(en for en in plib.cells["DFFPOSX1"].entries if en.pin == "CLK").fall
    j1, _, pv = raw("DFFPOSX1")[1][("CLK", None)]["fall_power"]
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
    _, power, _ = raw("INVX1")
    mod = _module({"a": 2}, {"y": 3}, [("INVX1", {"A": 2, "Y": 3})])
    e = _simulate(libs, mod, [{"a": k % 2} for k in range(5)], slew=50.0)[2]
    pw = power[("Y", "A")]
    top = pw["rise_power"][1][-1]           # the largest characterised input transition
    hand = 2 * at(pw["rise_power"], 0.025, top) + 2 * at(pw["fall_power"], 0.025, top)
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

    def run(fmt, blocks, tags=""):
        total = sum(blocks.values())
        return {"variant": f"mu-w8-{fmt}{tags}-osu018", "workload": "tiles", "width": 8, "fmt": fmt,
                "rows": 1, "columns_simulated": 8, "columns": 8, "useful_macs": 5000,
                "energy_pj": {"total": total}, "pj_per_useful_mac": total / 5000,
                "by_block_pj": {b: {"internal": e, "switching": 0.0} for b, e in blocks.items()}}

    lines = summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6}),
                                     run("mxfp8_e4m3", {"mu": 1e6, "mu_lane_w8_mxfp8_e4m3": 5e5})])
    assert len(lines) == 1
    assert "300.0 pJ per useful MAC against 200.0 for plain fp8_e4m3 (+50%)" in lines[0]
    assert "multipliers (+100.0 pJ/MAC)" in lines[0]
    assert summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6})]) == []
    # a gated exact-mode block unit meets only the gated exact plain unit, never another mode's
    lines = summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6}),
                                     run("fp8_e4m3", {"mu": 4e5}, "-xacc"),
                                     run("fp8_e4m3", {"mu": 2e5}, "-xacc-cg"),
                                     run("mxfp8_e4m3", {"mu": 3e5}, "-s4-xacc-cg")])
    assert len(lines) == 1
    assert "`exact` mode, clock gates) costs 60.0 pJ per useful MAC against 40.0 " in lines[0]
    assert summary._block_vs_plain([run("fp8_e4m3", {"mu": 1e6}),
                                    run("mxfp8_e4m3", {"mu": 3e5}, "-s4-xacc-cg")]) == []


def _gated_flop(en_pattern, d_pattern, libs):
    """A clock gate of OSU cells (INVX1, LATCH on the enable, AND2X2) clocking a DFFPOSX1 that sits
    in a child module ``ff``: one cycle per pattern entry."""
    top = _module({"clk": 2, "en": 3, "d": 4}, {"q": 8},
                  [("INVX1", {"A": 2, "Y": 5}), ("LATCH", {"D": 3, "CLK": 5, "Q": 6}),
                   ("AND2X2", {"A": 2, "B": 6, "Y": 7})])
    top["cells"]["f"] = {"type": "ff", "connections": {"c": [7], "d": [4], "q": [8]}}
    ff = _module({"c": 2, "d": 3}, {"q": 4}, [("DFFPOSX1", {"CLK": 2, "D": 3, "Q": 4})])
    lib, plib = libs
    flat = flatten({"t": top, "ff": ff}, "t", plib.cells)
    sim = GateSim(flat, plib)
    trace = []
    for i, (en, d) in enumerate(zip(en_pattern, d_pattern, strict=True)):
        sim.vals[flat.ports["en"][1]] = en
        sim.vals[flat.ports["d"][1]] = d
        sim.settle()
        if i == 0:
            sim.start_counting()
        trace.append(int(sim.vals[flat.ports["q"][1]][0]))
        sim.clock()
    return flat, sim, compute(flat, sim, lib, plib, PERIOD, input_slew=0.06, output_load=0.025), trace


@needs_osu
def test_gated_flop_loads_and_pays_its_clock_only_in_enabled_cycles(libs):
    """The flop takes d at an edge only after a cycle with en high; its clock pin's internal
    energy and the gated clock net's switching count only those cycles, the clock and the
    gate's inverter every cycle (hand computation from the liberty text)."""
    en = [1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0]
    d = [1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1]
    flat, sim, e, trace = _gated_flop(en, d, libs)
    q, want = 0, []
    for k in range(len(en)):
        want.append(q)
        q = d[k] if en[k] else q
    assert trace == want
    # counted cycles: the edges after cycles 0 .. n-2 (the last cycle's edge is not simulated)
    n = len(en) - 1
    k_on = sum(en[:n])
    caps_ff, power_ff, _ = raw("DFFPOSX1")
    caps_inv, _, _ = raw("INVX1")
    caps_and, _, _ = raw("AND2X2")
    caps_lat, _, _ = raw("LATCH")
    clk_pin = power_ff[("CLK", None)]
    per_pulse = at(clk_pin["rise_power"], 0, 0.06) + at(clk_pin["fall_power"], 0, 0.06)
    ff_int = e.by_block["ff"]["internal"]
    # d and q internal energy on top of the clock pin's: bounded below by the clock pin alone
    assert ff_int >= k_on * per_pulse * (1 - 1e-9)
    assert sim.toggles[flat.ports["clk"][1]][0] == 2 * n
    sw_clock = 0.5 * V * V * (2 * n * (caps_inv["A"] + caps_and["A"])   # clk
                              + 2 * n * caps_lat["CLK"]                   # inverted clock
                              + 2 * k_on * caps_ff["CLK"])                # gated clock
    assert e.by_block["clock"]["switching"] == pytest.approx(sw_clock, rel=1e-9)


@needs_osu
def test_gated_flop_with_constant_data_pays_only_enabled_clock_pulses(libs):
    """With d constant the flop's whole energy is its clock pin's, once per enabled cycle."""
    en = [0, 1, 1, 0, 0, 0, 1, 0, 1]
    flat, sim, e, trace = _gated_flop(en, [0] * len(en), libs)
    assert trace == [0] * len(en)
    _, power_ff, _ = raw("DFFPOSX1")
    clk_pin = power_ff[("CLK", None)]
    per_pulse = at(clk_pin["rise_power"], 0, 0.06) + at(clk_pin["fall_power"], 0, 0.06)
    assert e.by_block["ff"]["internal"] == pytest.approx(sum(en[:-1]) * per_pulse, rel=1e-9)
    assert e.by_block["ff"]["switching"] == 0.0


def test_summary_pairs_gated_runs_with_their_ungated_twin():
    """A gated unit at 100 pJ/MAC (zeros 20) against its twin at 400 (zeros 300): 0.25x, the
    zero-data ratios 0.75 and 0.20; a gated run without a twin adds no row."""
    from flows.power import summary

    def run(variant, workload, pj, area, fmax):
        return {"variant": variant, "workload": workload, "columns": 64, "columns_simulated": 8,
                "pj_per_useful_mac": pj, "energy_pj": {"total": pj * 1000.0}, "area_um2": area,
                "fmax_mhz": fmax}

    runs = [run("mu-w64-fp8_e4m3-xacc-osu018", "tiles", 400.0, 89.5e6, 203.8),
            run("mu-w64-fp8_e4m3-xacc-osu018", "zeros", 300.0, 89.5e6, 203.8),
            run("mu-w64-fp8_e4m3-xacc-cg-osu018", "tiles", 100.0, 84.5e6, 217.0),
            run("mu-w64-fp8_e4m3-xacc-cg-osu018", "zeros", 20.0, 84.5e6, 217.0),
            run("mu-w32-fp8_e4m3-xacc-cg-osu018", "tiles", 50.0, 20e6, 220.0)]
    rows = [r for r in summary._gating(runs) if r.startswith("| 64 |")]
    assert rows[0] == ("| 64 | w64-fp8_e4m3-xacc | tiles | 400.0 / 100.0 | 0.25x | 0.75 / 0.20 | "
                       "89.50 / 84.50 | 203.8 / 217.0 |")
    assert len(rows) == 2 and not any("w32" in r for r in summary._gating(runs))
    assert summary._gating(runs[:2]) == ["No clock-gated run is published with its ungated twin."]


def test_published_file_names_count_the_tile_runs():
    """The stimulus names its tile runs; the file name carries their count, and only when it is
    not the default."""
    from flows.power.cli import RUNS, file_tag

    ids = [f"op{i}-decode" for i in range(RUNS)]
    assert file_tag("tiles", 8, ids) == "tiles-sample8"
    assert file_tag("zeros", None, ids[:3]) == "zeros-runs3"
    assert file_tag("random", None, RUNS) == "random"


@needs_osu
def test_latch_on_a_data_enable_is_refused(libs):
    """Latches are simulated as the latch of a clock gate: one enabled by data logic is an error."""
    _, plib = libs
    mod = _module({"clk": 2, "a": 3, "b": 4, "d": 5}, {"q": 8},
                  [("AND2X2", {"A": 3, "B": 4, "Y": 6}), ("LATCH", {"D": 5, "CLK": 6, "Q": 8})])
    with pytest.raises(NetlistError, match="not a clock gate"):
        GateSim(flatten({"t": mod}, "t", plib.cells), plib)
