"""Runs that can differ never share a report folder, and what the summary says about them.

A two-lane BF16 bank (two blocks) synthesized hierarchically (its default), flat, and with a clock
target below and above its critical path: four folders; the second flow's run is compared with the
first; the slack is the target minus the critical path, with MET / VIOLATED on screen, in
``timing.txt`` and ``metrics.json``.
"""

import json
import re

import pytest

from flows import metric_keys as K
from flows.synth import liberty as L
from flows.synth.flow import run
from flows.synth.metrics import add_rates
from flows.synth.sta import Sta
from tb.flows import OSU, needs_osu, quiet

PARAMS = {"lanes": 2, "stages": 0, "arch": "booth4"}


@needs_osu
@pytest.mark.quick
def test_flows_and_targets_land_in_their_own_folders(tmp_path):
    lib = L.load(OSU)
    hier = run("bf16_bank", PARAMS, lib=lib, reports_dir=tmp_path, log=quiet)
    flat = run("bf16_bank", PARAMS, flow="flat", lib=lib, reports_dir=tmp_path, log=quiet)
    variant = hier.metrics["variant"]
    assert hier.outdir.name == variant and hier.metrics["flow__mode"] == "hier"   # the default keeps its name
    assert flat.outdir.name == variant + "-flat" and flat.metrics["variant"] == variant
    on_disk = {p.parent.name: json.loads(p.read_text())["flow__mode"]
               for p in tmp_path.glob("*/metrics.json")}
    assert on_disk == {variant: "hier", variant + "-flat": "flat"}

    other = flat.metrics["flow__other_flow"]
    assert other["flow"] == "hier" and other["fmax_mhz"] == hier.metrics[K.FMAX]
    want = 100 * (flat.metrics[K.FMAX] / hier.metrics[K.FMAX] - 1)
    assert other["fmax_mhz_diff_pct"] == pytest.approx(want, abs=0.051)
    assert other["area_diff_pct"] == pytest.approx(100 * (flat.metrics[K.AREA] / hier.metrics[K.AREA] - 1),
                                                   abs=0.051)
    assert "vs hier" in flat.summary and "why: the hierarchical flow maps each distinct block" in flat.summary
    assert "flow__other_flow" not in hier.metrics     # no flat run existed when it ran

    # the whole worst path: library cells only, from a flop's clock to a flop's setup, through a lane
    for r in (hier, flat):
        rows = r.path
        cells = [re.search(r"\((\w+)\) \S+->\S+$", x.point) for x in rows[:-1]]
        assert all(c and c[1] in lib.cells for c in cells), [x.point for x in rows]
        assert lib.cells[cells[0][1]].is_seq and rows[0].point.endswith("CLK->Q")
        assert rows[-1].point.startswith("setup of ") and rows[-1].point.endswith("/D")
        assert sum(x.incr_ps for x in rows) == pytest.approx(r.metrics[K.CP_PS], abs=0.2)
        assert len(cells) - 1 == r.metrics[K.CP_LV]     # levels: the cells after the launch flop
        assert "critical path, launch to capture" in r.summary
    assert any(x.block.startswith("lane") for x in hier.path), [x.block for x in hier.path]

    cp = hier.metrics[K.CP_PS]
    for clock, status in ((round(cp / 2), "VIOLATED"), (round(cp * 2), "MET")):
        r = run("bf16_bank", PARAMS, lib=lib, reports_dir=tmp_path, clock_ps=clock, log=quiet)
        assert r.outdir.name == f"{variant}-clk{clock}"
        m = r.metrics
        assert m[K.SETUP_WS] == pytest.approx(clock - m[K.CP_PS], abs=0.1)
        assert m[K.SETUP_STATUS] == status and (m[K.SETUP_WS] < 0) == (status == "VIOLATED")
        assert f"slack {m[K.SETUP_WS]:+.1f} ps, {status}" in r.summary
        assert f"slack {m[K.SETUP_WS]:+.1f} ps, {status}" in (r.outdir / "timing.txt").read_text()
        assert json.loads((r.outdir / "metrics.json").read_text())[K.SETUP_STATUS] == status
        effect = m["flow__clock_target_effect"]
        assert effect["netlist_changed"] == (m[K.NETLIST_SHA] != hier.metrics[K.NETLIST_SHA])
        assert ("identical to the one without a target" in r.summary) == (not effect["netlist_changed"])
    assert len(list(tmp_path.glob("*/metrics.json"))) == 4


def test_rates_of_the_matrix_unit():
    """D = 8: 64 MACs per cycle; area per MAC and GMAC/s at fmax by hand."""
    m = {K.AREA: 6400.0, K.FMAX: 50.0}
    add_rates(m, "mu", {"width": 8})
    assert (m[K.MACS], m[K.AREA_PER_MAC], m[K.PEAK_GMACS]) == (64, 100.0, 3.2)
    assert not any(k.startswith(K.BLOCK_AREA) for k in m)   # not read as a block's area
    m = {K.AREA: 10.0, K.FMAX: 50.0}
    add_rates(m, "slice", {})
    assert K.MACS not in m     # no MAC rate known: nothing made up


@needs_osu
@pytest.mark.quick
def test_the_tables_drive_limit_buffers_more_in_its_own_folder(tmp_path):
    """``drive_limit="tables"`` also buffers nets loaded past their driver's load tables (the BF16
    bank has nets between a driver's table top and its liberty limit): more buffers, its own folder,
    the limit in the metrics and in the STA's assumptions; a bad limit is refused by name."""
    lib = L.load(OSU)
    base = run("bf16_bank", PARAMS, lib=lib, reports_dir=tmp_path, log=quiet)
    tab = run("bf16_bank", PARAMS, lib=lib, reports_dir=tmp_path, log=quiet, drive_limit="tables")
    variant = base.metrics["variant"]
    assert base.outdir.name == variant and tab.outdir.name == variant + "-tables"
    rb, rt = base.metrics["flow__drive_repair"], tab.metrics["flow__drive_repair"]
    assert "limit" not in rb and rt["limit"] == "tables"
    assert rt["buffers"] > rb["buffers"], (rb, rt)
    assert tab.metrics[K.AREA] - base.metrics[K.AREA] == pytest.approx(rt["area"] - rb["area"], abs=0.01)
    assert "load tables" in (tab.outdir / "timing.txt").read_text()
    assert "load tables" not in (base.outdir / "timing.txt").read_text()
    assert "load tables" in tab.metrics["flow__caveat"] and "load tables" not in base.metrics["flow__caveat"]
    # the flat flow takes it too
    fb = run("bf16_bank", PARAMS, flow="flat", lib=lib, reports_dir=tmp_path, log=quiet)
    ft = run("bf16_bank", PARAMS, flow="flat", lib=lib, reports_dir=tmp_path, log=quiet,
             drive_limit="tables")
    assert ft.outdir.name == variant + "-flat-tables"
    assert ft.metrics["flow__drive_repair"]["buffers"] > fb.metrics["flow__drive_repair"]["buffers"]
    # what the limit promises, counted on the repaired netlist: no library cell drives a load past
    # the top of its load tables (the default run has such nets)
    assert _past_tables(lib, fb.netlist_json) > 0
    assert _past_tables(lib, ft.netlist_json) == 0
    with pytest.raises(ValueError, match=r"drive limit must be one of liberty, tables, not 'max'"):
        run("bf16_bank", PARAMS, lib=lib, reports_dir=tmp_path, log=quiet, drive_limit="max")


def _past_tables(lib, netlist_json) -> int:
    """Nets of a flat repaired netlist whose load is past the top of their driver's load tables."""
    mods = json.loads(netlist_json.read_text())["modules"]
    sta = Sta(lib, next(iter(mods.values())))
    return sum(1 for b, (inst, pin) in sta.driver.items()
               if inst and b not in sta.clock_bits
               and sta.load.get(b, 0.0) > L.load_top(lib.cell(sta.cells[inst][0]), pin) * (1 + 1e-9))
