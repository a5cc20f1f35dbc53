"""The OpenSTA signoff cross-check of QoR points (``make qor``, ``python -m flows qor --opensta-only``).

OpenSTA is the independent timer: on a real hierarchical point (the D = 8 matrix unit) it must
agree with our STA within 2% on the composed netlist, a disagreement beyond that is recorded and
fails with both numbers, and a work directory holding another netlist is refused. The report's
signoff table is checked on hand-made metrics. OpenSTA (Debian ``opensta``) is installed by
``.ci/run``: when it is missing these tests fail, they do not skip.
"""

import json
import shutil

import pytest

from flows import metric_keys as K
from flows.pnr import tools
from flows.pnr.crosscheck import TOLERANCE, require_sta
from flows.pnr.opensta import run_opensta
from flows.pnr.sta_netlist import clock_ports, input_ports, sta_verilog
from flows.report.common import load_points
from flows.report.signoff import NOT_CHECKED, opensta_section
from flows.sweep.opensta import check_point, netlist_totals, top_module

pytestmark = pytest.mark.quick

OSU = "/usr/share/qflow/tech/osu018/osu018_stdcells.lib"


@pytest.fixture(scope="module")
def lib():
    from flows.synth import liberty as L

    return L.load(OSU)


@pytest.fixture(scope="module")
def d8(lib, tmp_path_factory):
    """The D = 8 matrix unit synthesized by blocks (its report folder and run), in the ``fp32``
    mode: its worst path lies inside a block (the accumulate loop), so OpenSTA's path shows that it
    read the hierarchy (the ``exact`` unit's worst path at D = 8 is in the top's own logic)."""
    from flows.synth.flow import run

    out = run("mu", {"width": "8", "acc": "fp32"}, lib=lib, outdir=tmp_path_factory.mktemp("d8") / "rep",
              log=lambda *_: None)
    assert out.metrics["flow__mode"] == "hier"
    return out


def _copy_point(out, tmp_path):
    rep = tmp_path / "rep"
    shutil.copytree(out.outdir, rep)
    return rep


def test_hier_point_agrees_with_our_sta_and_is_recorded(d8, lib, tmp_path):
    rep = _copy_point(d8, tmp_path)
    c = check_point(rep, lib=lib, work=d8.work, log=lambda *_: None)
    ours = d8.metrics[K.CP_PS]
    assert c.ours_ps == ours and abs(c.rel_diff) <= TOLERANCE
    m = json.loads((rep / "metrics.json").read_text())
    assert m[K.CP_PS_OPENSTA] == pytest.approx(c.opensta_ps, abs=0.05)
    assert m[K.CP_DIFF_OPENSTA] == pytest.approx(100 * (c.opensta_ps - ours) / ours, abs=1e-3)
    # OpenSTA read the hierarchy: its worst path names a cell inside a block instance
    log = c.log.read_text()
    assert "Startpoint:" in log and "/" in log.split("Startpoint:")[1].split()[0]


def test_disagreement_is_recorded_then_fails_with_both_numbers(d8, lib, tmp_path, monkeypatch):
    """OpenSTA's result replaced by one 5% below ours: recorded in metrics.json, then an error."""
    import flows.sweep.opensta as so
    from flows.pnr.crosscheck import CrossCheck

    rep = _copy_point(d8, tmp_path)
    ours = d8.metrics[K.CP_PS]
    monkeypatch.setattr(so, "crosscheck", lambda paths, top, lib, ours_ps, workdir, tolerance, macros:
                        CrossCheck(ours_ps, 0.95 * ours_ps, 1.0, workdir / "sta.log", top))
    with pytest.raises(tools.ToolError) as e:
        check_point(rep, lib=lib, work=d8.work, log=lambda *_: None)
    msg = str(e.value)
    assert "beyond the 2% agreement" in msg and f"{ours:.1f} ps" in msg and f"{0.95 * ours:.1f} ps" in msg
    assert "sta.log" in msg and "--no-opensta" in msg and "block timing models" in msg
    m = json.loads((rep / "metrics.json").read_text())
    assert m[K.CP_DIFF_OPENSTA] == pytest.approx(-5.0) and m[K.CP_PS] == ours


def test_work_dir_of_another_netlist_is_refused(d8, lib, tmp_path):
    rep = _copy_point(d8, tmp_path)
    f = rep / "metrics.json"
    m = json.loads(f.read_text())
    m[K.CELLS] += 1
    f.write_text(json.dumps(m))
    with pytest.raises(tools.ToolError, match="is not the one .* synthesize the point again"):
        check_point(rep, lib=lib, work=d8.work, log=lambda *_: None)


def test_a_point_too_large_for_the_machine_is_refused_and_says_why(d8, lib, tmp_path):
    """A design whose flattened instances need more memory in OpenSTA than the machine has is not
    started (it would be killed after minutes): the error and metrics.json say how much, and the
    report's row says why it is not cross-checked; a later check that fits clears the reason."""
    from flows.sweep.opensta import OPENSTA_BYTES_PER_CELL

    rep = _copy_point(d8, tmp_path)
    cells = d8.metrics[K.CELLS]
    with pytest.raises(tools.ToolError, match=r"M cell instances need about .* GiB.*--points"):
        check_point(rep, lib=lib, work=d8.work, log=lambda *_: None,
                    memory=cells * OPENSTA_BYTES_PER_CELL - 1)
    m = json.loads((rep / "metrics.json").read_text())
    assert "cell instances need about" in m[K.OPENSTA_SKIPPED] and K.CP_PS_OPENSTA not in m
    text = "\n".join(opensta_section(load_points(tmp_path)))
    assert f"| rep | {m[K.CP_PS]:,.1f} | not cross-checked: OpenSTA holds the flattened design" in text
    assert "Not checkable on the machine that ran the check: rep (its row says why)." in text
    check_point(rep, lib=lib, work=d8.work, log=lambda *_: None, memory=cells * OPENSTA_BYTES_PER_CELL)
    m = json.loads((rep / "metrics.json").read_text())
    assert K.OPENSTA_SKIPPED not in m and K.CP_PS_OPENSTA in m


def test_composed_totals_are_the_flows(d8, lib):
    """Cells and area of the composed netlist, counted by instances, equal the flow's metrics."""
    from flows.pnr.crosscheck import run_netlists
    from flows.pnr.sta_netlist import read_repaired

    modules = read_repaired(run_netlists(d8.work, "hier"))
    top = top_module(modules)
    cells, area = netlist_totals(modules, top, lib)
    assert top == "mu" and cells == d8.metrics[K.CELLS]
    assert area == pytest.approx(d8.metrics[K.AREA], rel=1e-9)


def test_missing_opensta_names_the_package(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda exe: None)
    with pytest.raises(tools.ToolError, match=r"apt-get install opensta"):
        require_sta()


def test_opensta_runs_take_turns_and_a_killed_run_says_why(monkeypatch, tmp_path):
    """Each OpenSTA run holds the machine's OpenSTA lock while it runs (a second holder would wait),
    releases it after, and a run the kernel killed (SIGKILL: the out-of-memory killer) fails naming
    memory and the JOBS knob instead of a bare exit code."""
    import fcntl
    import subprocess

    from flows.pnr import opensta

    monkeypatch.setattr(opensta, "LOCK", tmp_path / "sta.lock")
    calls = []

    def killed(cmd, **kw):
        with open(opensta.LOCK, "a") as fh, pytest.raises(BlockingIOError):
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, -9, "", "")

    monkeypatch.setattr(opensta.subprocess, "run", killed)
    with pytest.raises(tools.ToolError, match=r"out-of-memory killer.*JOBS=1"):
        run_opensta(OSU, tmp_path / "n.v", "top", tmp_path / "w", period_ps=1000, inputs=["a"],
                    input_slew_ps=10, output_load_pf=0.01)
    assert calls == [["sta", "-no_init", "-exit", "sta.tcl"]]
    with open(opensta.LOCK, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)      # free again


def _port(direction, bits):
    return {"direction": direction, "bits": bits}


def _cell(typ, **conns):
    return {"type": typ, "connections": {k: v if isinstance(v, list) else [v] for k, v in conns.items()}}


def test_hand_made_hierarchy_links_in_opensta(lib, tmp_path):
    """A child with a bus, a feed-through and a constant output, instanced twice with one input tied
    to a constant: OpenSTA reads and links it without a warning, the clock found through the child."""
    child = {"ports": {"clk": _port("input", [2]), "a": _port("input", [3, 4]),
                       "y": _port("output", [5, 6]), "z": _port("output", [3]),
                       "k": _port("output", ["0"])},
             "cells": {"i0": _cell("INVX1", A=3, Y=7), "i1": _cell("INVX1", A=4, Y=8),
                       "f0": _cell("DFFPOSX1", CLK=2, D=7, Q=5), "f1": _cell("DFFPOSX1", CLK=2, D=8, Q=6)}}
    top = {"ports": {"clk": _port("input", [2]), "x": _port("input", [3]),
                     "q": _port("output", [4, 5, 6, 7])},
           "cells": {"c0": _cell("blk", clk=2, a=[3, "1"], y=[4, 5], z=10, k=11),
                     "c1": _cell("blk", clk=2, a=[4, 10], y=[6, 7], z=12, k=13)}}
    modules = {"blk": child, "top": top}
    v = tmp_path / "top.v"
    v.write_text(sta_verilog(modules, "top"))
    assert clock_ports(modules, "top") == ["clk"] and input_ports(top) == ["clk", "x"]
    r = run_opensta(lib.path, v, "top", tmp_path, period_ps=5000, inputs=input_ports(top),
                    clocks=["clk"], input_slew_ps=148.0, output_load_pf=0.05)
    assert not r.warnings and 0 < r.critical_ps < 5000


def _sram_design(into: int, out_of: int):
    """A top whose flip-flop drives a black-box ``sram``'s input through ``into`` inverters and whose
    other flip-flop takes the sram's output bit 1 through ``out_of`` inverters; the sram is an empty
    placeholder (outputs tied to 0), as the flow keeps the slice's scratchpad."""
    sram = {"ports": {"a": _port("input", [2]), "y": _port("output", ["0", "0"])}, "cells": {}}
    cells = {"f0": _cell("DFFPOSX1", CLK=2, D=3, Q=10), "f1": _cell("DFFPOSX1", CLK=2, D=40, Q=4),
             "m": _cell("sram", a=10 + into, y=[5, 30])}
    for k in range(into):
        cells[f"a{k}"] = _cell("INVX1", A=10 + k, Y=11 + k)
    for k in range(out_of):
        cells[f"b{k}"] = _cell("INVX1", A=30 + k, Y=31 + k)
    cells["b_last"] = _cell("NAND2X1", A=30 + out_of, B=5, Y=40)
    top = {"ports": {"clk": _port("input", [2]), "x": _port("input", [3]), "q": _port("output", [4])},
           "cells": cells}
    return {"sram": sram, "top": top}


@pytest.mark.parametrize("into,out_of,start", [(2, 9, "m"), (12, 1, "f0")])
def test_black_box_macro_is_timed_by_both_as_ideal_registers(lib, tmp_path, into, out_of, start):
    """The macro's liberty model makes OpenSTA time the paths out of and into the black box as our
    STA does (outputs launch at clock-to-output 0, inputs end with setup 0): on a design whose
    critical path starts at the macro, and on one where it ends there, the two agree within the
    tolerance and OpenSTA's worst path starts (ends) at the macro instance. Without the model the
    placeholder's constant outputs would leave OpenSTA neither path."""
    from flows.pnr.crosscheck import crosscheck
    from flows.synth.blockmodel import BlockTiming
    from flows.synth.hier import _ideal_register_pins
    from flows.synth.sta import Sta

    modules = _sram_design(into, out_of)
    model = _ideal_register_pins(BlockTiming("sram"), Sta(lib, modules["sram"]))
    ours = Sta(lib, modules["top"], models={"sram": model}).run()
    assert (ours.start.split()[0] == "m") == (start == "m") and ours.kind == "reg->reg"
    f = tmp_path / "repaired.json"
    f.write_text(json.dumps({"modules": modules}))
    c = crosscheck([f], "top", lib, ours.delay_ps, tmp_path / "sta",
                   macros=[{"module": "sram", "area_um2": 1000.0}])
    assert abs(c.rel_diff) <= TOLERANCE
    log = c.log.read_text()
    assert "Warning" not in log and "Error" not in log
    name = {c: f"u{k}" for k, c in enumerate(sorted(modules["top"]["cells"]))}  # sta_verilog's names
    assert log.split("Startpoint:")[1].split()[0] == name[start]
    assert log.split("Endpoint:")[1].split()[0] == name["m" if start == "f0" else "f1"]
    assert "cell (sram)" in (tmp_path / "sta" / "macros.lib").read_text()


def test_black_box_macro_model_refuses_what_it_cannot_state(lib, tmp_path):
    from flows.pnr.macro_lib import macro_liberty
    from flows.pnr.sta_netlist import StaNetlistError

    modules = _sram_design(2, 2)
    mac = [{"module": "sram", "area_um2": 10.0}]
    with pytest.raises(StaNetlistError, match="slew"):
        macro_liberty(modules, mac, slew_ps=0)
    with pytest.raises(StaNetlistError, match="macro nope is not a module"):
        macro_liberty(modules, [{"module": "nope", "area_um2": 1.0}], slew_ps=100)
    logic = dict(modules, sram=dict(modules["sram"], cells={"i": _cell("INVX1", A=2, Y=3)}))
    with pytest.raises(StaNetlistError, match="has 1 cell.*black box"):
        macro_liberty(logic, mac, slew_ps=100)
    ports = dict(modules["sram"]["ports"], CLK=_port("input", [9]))
    clk = dict(modules, sram=dict(modules["sram"], ports=ports))
    with pytest.raises(StaNetlistError, match="port 'CLK'.*rename"):
        macro_liberty(clk, mac, slew_ps=100)
    unclocked = dict(modules, top=dict(modules["top"], cells={k: v for k, v in modules["top"]["cells"].items()
                                                              if not k.startswith("f")}))
    with pytest.raises(StaNetlistError, match="holds the macro.*0 clock inputs"):
        sta_verilog(unclocked, "top", ["sram"])
    with pytest.raises(StaNetlistError, match="top module sram is a black-box macro"):
        sta_verilog(modules, "sram", ["sram"])
    text = sta_verilog(modules, "top", ["sram"])
    assert "module sram" not in text and "sram u" in text and ".CLK(clk)" in text


def _point(tmp_path, name, ours, theirs=None, macro_area=None, modelled=True):
    d = tmp_path / name
    d.mkdir()
    m = {"design": "mu", "design__params": {"width": 8}, "variant": name, K.CP_PS: ours}
    if macro_area is not None:
        m[K.MACRO_AREA] = macro_area
        if modelled and theirs is not None:
            m[K.OPENSTA_MACROS] = ["sram"]
    if theirs is not None:
        m.update({K.CP_PS_OPENSTA: theirs, K.CP_DIFF_OPENSTA: round(100 * (theirs - ours) / ours, 3),
                  K.OPENSTA_TIME: 1.5, K.OPENSTA_VERSION: "2.0.17"})
    (d / "metrics.json").write_text(json.dumps(m))


def test_report_section_lists_both_numbers_and_flags(tmp_path):
    _point(tmp_path, "a-ok", 1000.0, 1010.0)
    _point(tmp_path, "b-off", 1000.0, 1030.0)
    _point(tmp_path, "c-new", 2000.0)
    text = "\n".join(opensta_section(load_points(tmp_path)))
    assert "| a-ok | 1,000.0 | 1,010.0 | +1.00% | 1.5 |" in text
    assert "| b-off | 1,000.0 | 1,030.0 | +3.00% **beyond** | 1.5 |" in text
    assert f"| c-new | 2,000.0 | {NOT_CHECKED} |" in text
    assert "2 of 3 timed point(s) cross-checked (OpenSTA 2.0.17); 1 beyond 2%: b-off." in text
    none = "\n".join(opensta_section([p for p in load_points(tmp_path) if p.variant == "c-new"]))
    assert "0 of 1 timed point(s) cross-checked; none cross-checked yet" in none
    assert "(macro)" not in text


def test_report_section_says_how_a_macro_point_was_timed(tmp_path):
    """A point with a black-box macro is marked, within the tolerance or beyond it (then still
    flagged); the section says both timers took the macro as ideal registers when OpenSTA had its
    model, and that the two numbers time different paths when a point was checked without it."""
    _point(tmp_path, "s-sram", 20000.0, 6000.0, macro_area=1e7)
    _point(tmp_path, "t-sram-ok", 1000.0, 1005.0, macro_area=1e7)
    _point(tmp_path, "u-sram-old", 1000.0, 1010.0, macro_area=1e7, modelled=False)
    text = "\n".join(opensta_section(load_points(tmp_path)))
    assert "| s-sram | 20,000.0 | 6,000.0 | -70.00% **beyond** (macro) |" in text
    assert "1 beyond 2%: s-sram." in text
    assert "| t-sram-ok | 1,000.0 | 1,005.0 | +0.50% (macro) |" in text
    assert "| u-sram-old | 1,000.0 | 1,010.0 | +1.00% (macro, no model) |" in text
    assert "(macro): s-sram, t-sram-ok hold a black-box macro" in text and "same paths" in text
    assert "(macro, no model): u-sram-old hold" in text and "different path sets" in text


def test_qor_options_and_jobs():
    from flows.sweep.qor import main, qor_jobs

    with pytest.raises(SystemExit):
        main(["--opensta-only", "--no-opensta"])
    on = qor_jobs(widths=(8,), formats=("fp8_e4m3",), bf16=False, modes=("exact",))
    off = qor_jobs(widths=(8,), formats=("fp8_e4m3",), bf16=False, modes=("exact",), opensta=False)
    assert on[0].kwargs["opensta"] is True and "opensta" not in off[0].kwargs
    assert "flows/sweep/opensta.py" in on[0].inputs and "flows/sweep/opensta.py" not in off[0].inputs
