"""``reports/physical.md`` generator (:mod:`flows.report.physical`) and the top-level wire estimate
(:mod:`flows.pnr.wires`) on hand-made inputs: every expected number is worked out by hand here."""

import json
import math

import pytest

from flows import metric_keys as K
from flows.pnr.wires import lef_layers
from flows.report.layout_energy import column_energy_section, unit_energy_section
from flows.report.physical import (
    Run,
    best_units,
    choose,
    load_units,
    port_load,
    qor_section,
    render,
    unit_claims,
)

pytestmark = pytest.mark.quick


def _run(d, *, util=0.6, failed=0, post=1250.0, nowire=1000.0, wl=640_000.0, levels=20, date="2026-01-01",
         fmax=None, die=1_000_000.0, fmt="fp8_e4m3"):
    m = {"design": "mu", "design__params": {"width": str(d), "fmt": fmt, "acc": "exact",
                                            "block": f"mu_col_w{d}_{fmt}_r1_s2_xacc", "top": "c"},
         K.CELLS: 1000 * d, K.AREA: 500_000.0, K.DIE_AREA: die, K.UTIL: util, K.PNR_TARGET_UTIL: util,
         K.CP_PS: 900.0, K.CP_LV: levels, K.FMAX: 1e6 / 900, K.ROUTE_FAILED: failed, K.ROUTE_FAILED_STAGE1: 3,
         "flow__date": date, "flow__git_revision": "abc", "flow__runtime__seconds_total": 600.0,
         "route__steps_seconds": {"place": 60, "route": 30}}
    if not failed:
        m.update({K.ROUTE_CP_PS: post, K.ROUTE_CP_PS_NOWIRE: nowire, K.ROUTE_FMAX: fmax or 1e6 / post,
                  K.ROUTE_WL: wl, K.ROUTE_WIRE_CAP: 2.0})
    return Run(m, None, fmt, d)


def test_choose_takes_the_densest_routed_run_and_never_a_failed_one():
    runs = [_run(32, util=0.5), _run(32, util=0.7, date="2026-01-02"), _run(32, util=0.8, failed=4),
            _run(64, failed=2)]
    ch = choose(runs)
    assert set(ch) == {("fp8_e4m3", 32)}
    assert ch[("fp8_e4m3", 32)].metrics[K.UTIL] == 0.7


def test_qor_row_has_wire_per_mac_and_the_wires_share():
    (row,) = [ln for ln in qor_section({("fp8_e4m3", 32): _run(32)}) if ln.startswith("| fp8_e4m3")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[5] == "2.00"              # die / cell area: 1e6 / 5e5
    assert cells[10] == "20.0%"            # (1250 - 1000) / 1250
    assert cells[11] == "1,111.1 / 800.0"   # 1e6 / 900 ps, 1e6 / 1250 ps
    assert cells[12] == "640.0" and cells[13] == "20,000"   # 640 mm of wire over D = 32 MACs


def test_choose_prefers_fewer_unrouted_nets_over_density():
    a, b = _run(32, util=0.5), _run(32, util=0.7)
    b.metrics[K.ROUTE_FAILED] = 2            # timed, with two nets left unrouted by a bounded route
    assert choose([a, b])[("fp8_e4m3", 32)] is a


def test_claims_on_two_widths():
    runs = [_run(32, post=1000.0, levels=20), _run(64, post=1250.0, levels=24)]
    text = render(runs, {}, ["- provenance"])
    assert "fmax falls with every doubling" in text and "column alone: agree" in text
    assert "(4.00 per doubling;" in text          # 24 - 20 levels over one doubling
    assert "post-route delay 250 ps per doubling" in text
    assert "*64 beats 128 at equal silicon*: D = 128 not routed: not decided" in text
    first = text.split("## Provenance")[0]
    assert "**Partial**: no run at all of fp8_e4m3 D = 128, fp4_e2m1 D = 32" in first
    assert "| fp8_e4m3 | 128 | 128,000 (D=64: 64,000) | 20 min (D=64: 10.0 min) |" in text
    assert "The clock is ideal" in text


def test_claims_disagree_when_the_wider_column_is_faster():
    text = render([_run(32, post=1300.0), _run(64, post=1200.0)], {}, [])
    assert "column alone: disagree" in text and "does not fall" in text


def test_equal_silicon_ratio_follows_fmax_over_area():
    # Same routed die per column and the same fmax: D x die is the unit's area, so the ratio is the
    # tile costs' MACs/cycle ratio alone; doubling D=64's fmax must double its side of the ratio.
    base = render([_run(32), _run(64)], {}, [])
    fast64 = render([_run(32), _run(64, post=625.0)], {}, [])

    def ratio(text):
        line = next(ln for ln in text.splitlines() if ln.startswith("- *32 edges out 64"))
        return float(line.split("column, decode 1: 32/64 = ")[1].split()[0])

    assert ratio(fast64) == pytest.approx(ratio(base) / 2, rel=0.02)


def test_lef_layers_wire_r_and_c_per_um():
    lef = ("LAYER metal1\n  TYPE ROUTING ;\n  DIRECTION HORIZONTAL ;\n  WIDTH 0.3 ;\n"
           "  RESISTANCE RPERSQ 0.08 ;\n  CAPACITANCE CPERSQDIST 3.8e-05 ;\n  EDGECAPACITANCE 8e-05 ;\n"
           "END metal1\nLAYER via\n  TYPE CUT ;\nEND via\n")
    (m1,) = lef_layers(lef).values()
    assert m1.direction == "horizontal"
    assert m1.r_ohm_um == pytest.approx(0.08 / 0.3)
    assert m1.c_pf_um == pytest.approx(3.8e-5 * 0.3 + 2 * 8e-5)
    with pytest.raises(ValueError, match="metal2: no WIDTH"):
        lef_layers("LAYER metal2\n  TYPE ROUTING ;\nEND metal2\n")


class _Lib:
    cap_pf = 1.0

    class _Cell:
        def __init__(self, caps):
            self.inputs = caps

    def cell(self, name):
        return self._Cell({"A": 0.01, "B": 0.02})


def test_port_load_adds_wire_and_sink_pins():
    spef = ("*D_NET x_0_ 0.005\n*CONN\n*P x_0_ I\n*I u1:A I\n*I u2:B I\n*CAP\n1 u1:A 0.005\n*RES\n*END\n\n"
            "*D_NET n7 0.1\n*CONN\n*I u1:Y O\n*CAP\n*RES\n*END\n")
    verilog = ("module c (x_0_);\n  NAND2X1 u1 (.A(x_0_), .B(n1), .Y(n7));\n"
               "  NOR2X1 u2 (.A(n7), .B(x_0_), .Y(n2));\n")
    (load,) = port_load(spef, verilog, _Lib(), "x_")
    assert load == pytest.approx(0.005 + 0.01 + 0.02)
    assert not math.isnan(load)


def test_cel_to_pin_lists_each_nets_pins_without_feedthroughs():
    from flows.pnr.qflow import cel_to_pin

    cel = ("cell 0 FILL.80X2.INVX1_1\nleft -160 right 160 bottom -500 top 500\n"
           "pin name twfeed1 signal TW_PASS_THRU layer 1 -40 -500\n   equiv name twfeed1 layer 1 -40 500\n"
           "pin name A signal x_0_ layer 1 -40 -270\npin name Y signal n3 layer 1 40 0\n"
           "cell 1 NAND2X1_2\nleft -120 right 120 bottom -500 top 500\n"
           "pin name A signal n3 layer 1 -40 -270\npin name B signal x_0_ layer 1 0 0\n"
           "pin name Y signal y layer 1 40 0\n\npad 1 name twpin_x_0_\n"
           "corners 4 -40 -50 -40 50 40 50 40 -50\n"
           "pin name x_0_ signal x_0_ layer 1 0 0\n")
    lines = [ln.split() for ln in cel_to_pin(cel).splitlines()]
    nets = [w[0] for w in lines]
    assert nets == ["x_0_"] * 3 + ["n3"] * 2 + ["y"]          # grouped by net: place2def counts changes
    assert [(w[2], w[3]) for w in lines if w[0] == "x_0_"] == [("FILL.80X2.INVX1_1", "A"), ("NAND2X1_2", "B"),
                                                              ("twpin_x_0_", "x_0_")]
    assert all(w[1].isdigit() and len(w) == 9 for w in lines) and "twfeed1" not in cel_to_pin(cel)


def test_a_retimed_layout_keeps_the_times_of_the_run_that_made_it(tmp_path):
    """``--reuse-layout`` redoes SPEF and timing on an earlier layout: the earlier run's revision and
    step times are carried along (also through a second re-timing) and the report shows them."""
    import json

    from flows.pnr.flow import _layout_run

    first = _run(64).metrics
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps(first))
    lay = _layout_run(path)
    assert lay == {"revision": "abc", "date": "2026-01-01", "steps_seconds": {"place": 60, "route": 30},
                   "seconds_total": 600.0}
    retimed = dict(_run(64).metrics, route__reused_layout=True, route__layout_run=lay,
                   flow__git_revision="def", route__steps_seconds={}, **{K.PNR_RUNTIME: 2.0})
    path.write_text(json.dumps(retimed))
    assert _layout_run(path) == lay                       # a second re-timing keeps the first run's
    path.write_text(json.dumps(dict(retimed, route__layout_run=None)))
    assert _layout_run(path) is None                      # a re-timing without them: nothing to carry
    text = render([_run(32), Run(retimed, None, "fp8_e4m3", 64)], {}, ["- provenance"])
    row = next(ln for ln in text.splitlines() if ln.startswith("| fp8_e4m3 | 64 |") and "(layout abc)" in ln)
    assert "| 60 | 30 |" in row and "| 600 | def (layout abc) |" in row
    assert "| 60 | 30 | 2 | 600 |" in row               # STA: the re-timing's own 2 s
    assert "| fp8_e4m3 | 128 | 128,000 (D=64: 64,000) | 20 min (D=64: 10.0 min) |" in text


def test_runs_table_names_the_nets_left_out_of_the_route():
    left = dict(_run(64).metrics, route__qrouter__ignored_nets=["clk"])
    text = render([_run(32), Run(left, None, "fp8_e4m3", 64)], {}, ["- provenance"])
    header = next(ln for ln in text.splitlines() if ln.startswith("| format | D | cells | effort"))
    col = [c.strip() for c in header.strip("|").split("|")].index("left out")
    rows = {ln.split("|")[2].strip(): [c.strip() for c in ln.strip("|").split("|")]
            for ln in text.splitlines() if ln.startswith("| fp8_e4m3 |") and "| abc |" in ln}
    assert rows["32"][col] == "none" and rows["64"][col] == "`clk`"


def test_a_layout_timed_from_its_logs_has_no_revision_and_scales_by_its_steps():
    lay = {"revision": None, "seconds_total": None, "steps_seconds": {"place": 60.0, "route": 540.0}}
    m = dict(_run(64).metrics, route__reused_layout=True, route__layout_run=lay)
    text = render([Run(m, None, "fp8_e4m3", 64)], {}, ["- provenance"])
    assert "| abc (layout revision not recorded) |" in text
    assert "| fp8_e4m3 | 128 | 128,000 (D=64: 64,000) | 20 min (D=64: 10.0 min) |" in text   # 600 s


def test_a_point_stopped_at_its_limit_says_how_far_it_got():
    """A run stopped by its step time limit is no routed point; the runs table and the not-routed
    table say what it got done (75,627 - 53,347 = 22,280 nets routed)."""
    stop = {k: v for k, v in _run(128, failed=1).metrics.items()
            if k not in (K.ROUTE_FAILED, K.ROUTE_FAILED_STAGE1)}
    stop.update(route__status="timeout", route__steps_seconds={"place": 2862.0},
                route__timeout={"step": "route", "limit_seconds": 3600.0, "nets": 75627, "remaining": 53347,
                                "stage": 1})
    runs = [_run(64), Run(stop, None, "fp8_e4m3", 128)]
    assert set(choose(runs)) == {("fp8_e4m3", 64)}
    text = render(runs, {}, ["- provenance"])
    said = "route stopped at its 3,600 s limit: 22,280 of 75,627 nets routed, in stage 1"
    row = next(ln for ln in text.splitlines() if ln.startswith("| fp8_e4m3 | 128 | 128,000 | "))
    assert said in row
    missing = next(ln for ln in text.splitlines() if ln.startswith("| fp8_e4m3 | 128 | 128,000 (D=64"))
    assert missing.endswith(f"| {said} (place 2,862 s, revision abc) |")


def _study_run(tmp_path, d=32):
    """A timed column run's build folder: metrics, routed DEF (a 400 x 250 um die), SPEF (two ``x``
    bits) and routed netlist, and a qrouter project whose fail.out names one net."""
    import json

    from flows.report.physical import load_runs

    build = tmp_path / "build"
    folder = build / f"mu-w{d}-run"
    proj = tmp_path / "proj"
    (proj / "layout").mkdir(parents=True)
    (proj / "layout" / "fail.out").write_text("Failed nets\nn9\n")
    folder.mkdir(parents=True)
    m = dict(_run(d).metrics, route__project=str(proj))
    (folder / "metrics.json").write_text(json.dumps(m))
    (folder / "c.def").write_text("UNITS DISTANCE MICRONS 100 ;\nDIEAREA ( 0 0 ) ( 40000 25000 ) ;\n")
    (folder / "c.spef").write_text("*D_NET x_0_ 0.005\n*CONN\n*I u1:A I\n*CAP\n*END\n\n"
                                   "*D_NET x_1_ 0.007\n*CONN\n*I u1:B I\n*CAP\n*END\n")
    (folder / "c.routed.v").write_text("module c (x_0_, x_1_);\n  NAND2X1 u1 (.A(x_0_), .B(x_1_), .Y(n7));\n")
    return build, load_runs(build)


def test_published_runs_carry_their_layout_facts_and_need_no_build_folder(tmp_path):
    """``pnr-study`` publishes each run's metrics with the die size, the activation input loads and
    the unrouted nets read from its layout files; the report's estimate then reads the published
    copy alone (the build folder removed), and a run never published says how to publish it."""
    import shutil

    from flows.pnr.wires import lef_layers as layers_of
    from flows.pnr_study import estimate, publish
    from flows.report.physical import load_runs
    from flows.synth import liberty

    lib = liberty.load("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")
    build, runs = _study_run(tmp_path)
    with pytest.raises(ValueError, match="no die size or input loads; publish it"):
        estimate(runs[0], lib, {})
    (f,) = publish(runs, lib, tmp_path / "pub")
    shutil.rmtree(build)
    (run,) = load_runs(tmp_path / "pub")
    m = run.metrics
    assert f == tmp_path / "pub" / "mu-w32-run" / "metrics.json"
    assert (m[K.DIE_WIDTH], m[K.DIE_HEIGHT]) == (400.0, 250.0)
    pins = lib.cell("NAND2X1").inputs
    assert m[K.X_PIN_LOADS] == pytest.approx([0.005 + pins["A"] * lib.cap_pf, 0.007 + pins["B"] * lib.cap_pf])
    assert m[K.ROUTE_UNROUTED] == ["n9"] and run.extra["unrouted"] == ["n9"]
    shutil.rmtree(tmp_path / "proj")                       # the published list outlives the project
    assert load_runs(tmp_path / "pub")[0].extra["unrouted"] == ["n9"]
    way = {1: "HORIZONTAL", 0: "VERTICAL"}
    lef = "\n".join(f"LAYER metal{i}\n  TYPE ROUTING ;\n  DIRECTION {way[i % 2]} ;\n"
                    "  WIDTH 0.3 ;\n  RESISTANCE RPERSQ 0.07 ;\n  CAPACITANCE CPERSQDIST 4e-05 ;\n"
                    "  EDGECAPACITANCE 4e-05 ;\nEND metal" + str(i) for i in range(1, 7))
    est = estimate(run, lib, layers_of(lef))
    assert (est["w"], est["h"], est["length"]) == (400.0, 250.0, 32 * 400.0)
    assert est["c_in"] == pytest.approx(sum(m[K.X_PIN_LOADS]) / 2)


def test_a_timed_run_without_its_layout_files_is_not_published(tmp_path):
    from flows.pnr_study import publish
    from flows.synth import liberty

    lib = liberty.load("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")
    build, runs = _study_run(tmp_path)
    (build / "mu-w32-run" / "c.spef").unlink()
    with pytest.raises(ValueError, match=r"layout files are missing .*c\.spef.*--run fp8_e4m3:32"):
        publish(runs, lib, tmp_path / "pub")
    assert not (tmp_path / "pub").exists()


def test_a_report_of_every_study_point_is_not_marked_partial():
    """One run per study point (one of them stopped at its limit: tried, so not absent): no
    **Partial** line; drop one point and the line names it."""
    from flows.report.physical import FORMATS, WIDTHS

    runs = [_run(d, fmt=f) for f in FORMATS for d in WIDTHS]
    stop = {"step": "route", "limit_seconds": 3600.0}
    runs[-1].metrics.update(route__status="timeout", route__timeout=stop)
    assert "**Partial**" not in render(runs, {}, ["- provenance"])
    text = render(runs[1:], {}, ["- provenance"])
    assert f"**Partial**: no run at all of {FORMATS[0]} D = {WIDTHS[0]} (neither" in text


def test_whole_unit_row_by_hand():
    """A hierarchical unit's row: unit die against D column dies, top wire routed against the
    section-4 estimate for its own column width, per-MAC wire, the unit's fmax from the longer of the
    top's and the column's paths; a column-only report has no such section."""
    m = {"design": "mu", "design__params": {"width": "8", "fmt": "fp4_e2m1", "acc": "exact"},
         "flow__hierarchical": True, "hier__block__cells": 2762, "hier__block__die_width_um": 536.0,
         "hier__block__die_height_um": 376.0, "hier__block__drc_errors": 0, "hier__block__lvs_match": True,
         "hier__block__critical_path_ps_post": 4066.6, "hier__top__cells": 5312,
         "hier__top__die_width_um": 4308.8, "hier__top__die_height_um": 550.0, "hier__top__drc_errors": 0,
         "hier__top__target_util": 0.5,
         "hier__top__connectivity": {"pins": 16611, "missing": 0, "opens": 1, "shorts": 2},
         K.ROUTE_WL: 789_221.8, K.ROUTE_FAILED: 0, K.ROUTE_CP_PS: 5000.0, K.ROUTE_CP_PS_NOWIRE: 3002.5,
         K.CP_PS: 3726.4, "flow__runtime__seconds_total": 600.0, "flow__git_revision": "abc"}
    text = render([_run(32)], {}, ["- provenance"], [Run(m, None, "fp4_e2m1", 8)])
    (row,) = [ln for ln in text.splitlines() if ln.startswith("| fp4_e2m1 | 8 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[6] == "0.50" and cells[7] == "as synthesized" and cells[8] == "4.31 x 0.55"
    assert cells[9] == "1.47"                     # 4308.8 x 550 / (8 x 536 x 376) = 1.4699
    # estimate: (8 x 4 + 8 + 6) nets x 4,288 um + 8 x (4 + 32) nets x 2,144 um = 814,720 um
    assert cells[10] == "789 / 815"
    assert cells[11] == "12,332"                   # 789,221.8 um / 64 MACs
    assert cells[12] == "not recorded / 0"        # runs before the first stage's count was kept
    assert cells[14] == "1 / 2 / 0 of 16,611"
    assert cells[17] == "200.0" and cells[18] == "10.0"   # 1e6 / max(5000, 4066.6); 600 s
    assert "## 5. The whole unit" in text
    m["hier__top__rebuffer"] = {"segment_um": 3402.9, "nets": 263, "repeaters": 1813,
                                "repair_buffers_removed": 201}
    text = render([_run(32)], {}, ["- provenance"], [Run(m, None, "fp4_e2m1", 8)])
    (row,) = [ln for ln in text.splitlines() if ln.startswith("| fp4_e2m1 | 8 |")]
    assert row.split("|")[8].strip() == "by position: 263 nets, 1,813 repeaters every <= 3.4 mm"
    m[K.ROUTE_FAILED_STAGE1] = 1227
    text = render([_run(32)], {}, ["- provenance"], [Run(m, None, "fp4_e2m1", 8)])
    (row,) = [ln for ln in text.splitlines() if ln.startswith("| fp4_e2m1 | 8 |")]
    assert row.split("|")[13].strip() == "1,227 / 0"
    assert "## 5. The whole unit" not in render([_run(32)], {}, ["- provenance"])


def test_whole_unit_claim_by_hand():
    """Section 5's claim line: per format the fastest run of each D with no failed net, its fmax from
    the longer of the top's and the column's paths and which one it is; a run with failed nets does
    not count however fast; one width decides nothing."""
    def unit(d, top, col, failed=0, util=0.5):
        return Run({K.ROUTE_CP_PS: top, "hier__block__critical_path_ps_post": col, K.ROUTE_FAILED: failed,
                    "hier__top__target_util": util}, None, "fp4_e2m1", d)

    lines = unit_claims([unit(8, 3000.0, 4000.0), unit(8, 3500.0, 4100.0),
                         unit(16, 5000.0, 4400.0, util=0.15), unit(16, 1000.0, 1000.0, failed=3)])
    (claim,) = [ln for ln in lines if ln.startswith("- **fp4_e2m1**")]
    # 1e6 / 4000 = 250.0 (column, 3000 / 4000 = 0.75); 1e6 / 5000 = 200.0 (top, 5000 / 4400 = 1.14)
    assert claim == ("- **fp4_e2m1**: D=8 250.0 MHz (column; top/column 0.75, top util 0.50), D=16 200.0 MHz "
                     "(top; top/column 1.14, top util 0.15) -> agree (fmax falls with every doubling)")
    (claim,) = [ln for ln in unit_claims([unit(8, 3000.0, 4000.0), unit(16, 3000.0, 3900.0)]) if "**" in ln]
    assert claim.endswith("-> disagree (fmax does not fall with every doubling)")
    # the same period: the shorter top path (3,200 / 4,000 = 0.80, not 3,600 / 4,000 = 0.90)
    (claim,) = [ln for ln in unit_claims([unit(8, 3600.0, 4000.0), unit(8, 3200.0, 4000.0)]) if "**" in ln]
    assert "D=8 250.0 MHz (column; top/column 0.80" in claim
    (claim,) = [ln for ln in unit_claims([unit(8, 3000.0, 4000.0)]) if "**" in ln]
    assert claim.endswith("-> one width only: not decided")
    assert unit_claims([unit(8, 3000.0, 4000.0, failed=1)]) == []


def test_energy_on_a_routed_unit_row_by_hand(tmp_path):
    """Section 5's energy table: a unit folder's ``energy-tiles.json`` is read beside its metrics,
    each figure per useful MAC, the wires' share, the parts per MAC; units without one have no row
    and a report without any has no table."""
    m = {"design": "mu", "design__params": {"width": "8", "fmt": "fp4_e2m1", "acc": "exact"},
         "flow__hierarchical": True, "hier__top__target_util": 0.5, "flow__git_revision": "lay"}
    e = {"workload": "tiles", "runs": ["a", "b"], "results_checked": 16, "useful_macs": 1000,
         "pj_per_useful_mac": {"synthesized": 101.0, "pins": 100.0, "wires": 104.0, "wires_x2": 108.5,
                               "wires_clock": 105.25, "wires_clock_tree": 117.0},
         "clock_wire": {"min_tree_um": {"column": 12_000.0, "top": 15_000.0}, "pf": 6.75,
                        "tree": {"cell": "BUFX4", "levels": [588, 38, 3, 1], "pj_per_cycle": 164.0,
                                 "at_2x_slew": {"pj_per_cycle": 77.1}}},
         "wire_share": 1 - 100.0 / 104.0,
         "by_part_pj": {"pins": {"columns": 60_000.0, "top": 10_000.0, "clock net": 30_000.0},
                        "wires": {"columns": 62_500.0, "top": 11_500.0, "clock net": 30_000.0}},
         "wire_pf": {"columns": 96.0, "top": 40.25, "column": 12.0},
         "wire_ff_per_um": {"column": 0.0626, "top": 0.0507}, "provenance": {"git_revision": "nrg"}}
    for name, energy in (("u8", e), ("u16", None)):
        (tmp_path / name).mkdir()
        mm = dict(m, design__params=dict(m["design__params"], width=name[1:]))
        (tmp_path / name / "metrics.json").write_text(json.dumps(mm))
        if energy:
            (tmp_path / name / "energy-tiles.json").write_text(json.dumps(energy))
    units = load_units(tmp_path)
    assert sorted(("energy" in u.extra, u.width) for u in units) == [(False, 16), (True, 8)]
    lines = unit_energy_section(units, best_units)
    (row,) = [ln for ln in lines if ln.startswith("| fp4_e2m1 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:11] == ["fp4_e2m1", "8", "top util 0.50, trees as synthesized", "tiles x 2 (16)", "101.0",
                          "100.0", "**104.0**", "3.8%", "108.5", "105.2", "117.0 (BUFX4: 630)"]
    assert cells[11:] == ["60.0 / 62.5", "10.0 / 11.5", "30.0", "96.0 / 40.2 / 6.8", "0.063 / 0.051",
                          "lay / nrg"]
    del e["pj_per_useful_mac"]["wires_clock"], e["pj_per_useful_mac"]["wires_clock_tree"], e["clock_wire"]
    (tmp_path / "u8" / "energy-tiles.json").write_text(json.dumps(e))
    lines = unit_energy_section(load_units(tmp_path), best_units)
    (row,) = [ln for ln in lines if ln.startswith("| fp4_e2m1 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[9:11] == ["not measured"] * 2 and cells[14] == "96.0 / 40.2 / not measured"
    assert unit_energy_section([u for u in units if u.width == 16], best_units) == []
    assert "The extracted wires are 3.8-3.8% of the energy per MAC." in " ".join(lines)
    assert "least tree adds" not in " ".join(lines)
    e["pj_per_useful_mac"].update(wires_clock=100.0, wires_clock_tree=112.5)
    e["clock_wire"] = {"pf": 1.0, "tree": {"cell": "BUFX4", "levels": [2, 1], "pj_per_cycle": 8.0,
                                           "at_2x_slew": {"pj_per_cycle": 3.0}}}
    (tmp_path / "u8" / "energy-tiles.json").write_text(json.dumps(e))
    assert ("The clock's least tree adds 12.5-12.5% to the figure with the clock's least wire; a clock of "
            "twice the slew needs a tree of 0.38-0.38x that energy"
            in " ".join(unit_energy_section(load_units(tmp_path), best_units)))
    assert not [ln for ln in lines if ln.startswith("- **")]     # no routed paths: no run to compare

    def timed(r, top, width, pj):
        r.metrics.update({K.ROUTE_FAILED: 0, K.ROUTE_CP_PS: top,
                          "hier__block__critical_path_ps_post": 4000.0})
        r.width = width
        r.extra["energy"] = dict(e, pj_per_useful_mac=dict(e["pj_per_useful_mac"], wires=pj))
        return r

    a, b, c = (Run(dict(m), None, "fp4_e2m1", 8) for _ in range(3))
    lines = unit_energy_section([timed(a, 3000.0, 8, 100.0), timed(b, 3500.0, 16, 130.0),
                                 timed(c, 3400.0, 16, 150.0)], best_units)
    # at D = 16 both runs are set by the column (4,000 ps): the shorter top path (3,400 ps) is quoted
    assert ("- **fp4_e2m1**, pJ per useful MAC with wires: D=8 100.0, D=16 150.0 (1.50x from D=8 to D=16)"
            in lines)


def test_energy_with_the_routed_columns_by_hand(tmp_path):
    """The column table: a column run's sampled energy file is read, its top has no wires ("not laid
    out"), the line across D compares the chosen runs, and a report states that the top's wires are
    in none of the figures."""
    e = {"workload": "tiles", "runs": ["a"], "results_checked": 8, "useful_macs": 2000,
         "columns_simulated": 8,
         "pj_per_useful_mac": {"synthesized": 50.0, "pins": 51.0, "wires": 52.5, "wires_x2": 54.0},
         "wire_share": 1 - 51.0 / 52.5,
         "by_part_pj": {"pins": {"columns": 60_000.0, "top": 20_000.0, "clock net": 22_000.0},
                        "wires": {"columns": 63_000.0, "top": 20_000.0, "clock net": 22_000.0}},
         "wire_pf": {"columns": 640.0, "top": None, "column": 20.0},
         "wire_ff_per_um": {"column": 0.0625, "top": None}, "provenance": {"git_revision": "nrg"}}
    runs = {}
    for d, pj in ((32, 52.5), (64, 63.0)):
        folder = tmp_path / f"c{d}"
        folder.mkdir()
        (folder / "energy-tiles-sample8.json").write_text(json.dumps(
            dict(e, pj_per_useful_mac=dict(e["pj_per_useful_mac"], wires=pj))))
        from flows.report.layout_energy import attach_energy
        runs[("fp4_e2m1", d)] = attach_energy(Run({"flow__git_revision": "lay"}, folder, "fp4_e2m1", d))
    lines = column_energy_section(runs)
    assert "**the top's wires (activation broadcast, weight rows, results) are in none of these figures**" \
        in lines[2]
    row = [c.strip() for c in lines[6].strip("|").split("|")]          # D = 32
    assert row[:3] == ["fp4_e2m1", "32", "column (8 of 32 simulated)"]
    assert row[9:11] == ["not measured"] * 2
    assert row[11] == "30.0 / 31.5" and row[12] == "10.0 / 10.0"        # 60,000 / 2,000; 63,000; 20,000
    assert row[14] == "640.0 / not laid out / not measured" and row[15] == "0.062 / not laid out"
    assert lines[-2] == ("- **fp4_e2m1**, pJ per useful MAC with wires: D=32 52.5, D=64 63.0 (1.20x from "
                         "D=32 to D=64)")
    assert column_energy_section({("fp4_e2m1", 32): Run({}, tmp_path, "fp4_e2m1", 32)}) == []


def test_units_with_clock_gates_are_their_own_kind():
    """A unit built with clock gates is labelled so and is compared only with gated units: the
    fastest run per (format, D) is chosen within each kind."""
    def unit(gate, top):
        p = {"width": "8", "fmt": "fp4_e2m1", "acc": "exact", **({"gate": gate} if gate else {})}
        return Run({"design": "mu", "design__params": p, "flow__hierarchical": True, K.ROUTE_FAILED: 0,
                    K.ROUTE_CP_PS: top, "hier__block__critical_path_ps_post": 4000.0}, None, "fp4_e2m1", 8)

    gated, plain = unit("True", 3000.0), unit(None, 4500.0)
    assert gated.label == "fp4_e2m1 + clock gates" and plain.label == "fp4_e2m1"
    assert unit("False", 1.0).label == "fp4_e2m1"
    best = best_units([gated, plain])
    assert best[("fp4_e2m1", 8)][0] is plain and best[("fp4_e2m1 + clock gates", 8)][0] is gated
    from flows.report.layout_energy import label_key

    labels = ["fp4_e2m1 + clock gates", "fp8_e4m3 + clock gates", "fp4_e2m1", "fp8_e4m3"]
    order = sorted(labels, key=lambda f: label_key(f, ("fp8_e4m3", "fp4_e2m1")))
    assert order == [labels[3], labels[1], labels[2], labels[0]]
