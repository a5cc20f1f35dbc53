"""Place and route (``make pnr``): the netlist renaming, qrouter's RC trees as SPEF, the DEF
measures, the missing-tool error, and one routed design end to end.

The routed BF16 multiplier is checked against independent evidence: qflow's route log (no failed
nets), netgen (LVS) and magic (DRC; a minimum-area error planted beside it is patched away), OpenSTA
warning on no name of our SPEF while it does warn on the SPEF qflow's own converter writes, the
SPEF's capacitances summed straight from qrouter's RC text, and post-route timing in a band around
our STA's pre-route number. The tools are installed by ``.ci/run``: when they are missing the
end-to-end test fails (naming the packages), it does not skip.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from flows import metric_keys as K
from flows.pnr import tools
from flows.pnr.layout import read_def
from flows.pnr.netlist import PnrNetlistError, physical
from flows.pnr.parasitics import read_rc, write_spef

pytestmark = pytest.mark.quick

#: Net ``n1`` driven by u0/Y: a 2 ohm / 1 fF segment to a node with sink u1/A, which branches to
#: u2/B (3 ohm, 2 fF) and the output port p (4 ohm, 0.5 fF).
RC = "n1 1 u0/Y 3 ( 2 0.001 u1/A , ( 3 0.002 u2/B ) , ( 4 0.0005 PIN/p ) )\n"


def test_rc_tree_becomes_spef_with_plain_pin_names():
    (net,) = read_rc(RC)
    assert net.driver == "u0/Y" and net.wire_cap == pytest.approx(0.0035)
    assert net.sinks == [("u1/A", 1), ("u2/B", 2), ("PIN/p", 3)]
    assert net.edges == [(0, 1, 2.0), (1, 2, 3.0), (1, 3, 4.0)]
    spef = write_spef([net], "t")
    assert "*C_UNIT 1 PF" in spef and "*R_UNIT 1 OHM" in spef
    conn = spef.split("*CONN")[1].split("*CAP")[0].split()
    assert conn == ["*I", "u0:Y", "O", "*I", "u1:A", "I", "*I", "u2:B", "I", "*P", "p", "O"]
    res = spef.split("*RES")[1].split("*END")[0].strip().splitlines()
    assert res == ["1 u0:Y u1:A 2", "2 u1:A u2:B 3", "3 u1:A p 4"]
    caps = spef.split("*CAP")[1].split("*RES")[0].strip().splitlines()
    assert caps == ["1 u1:A 0.001", "2 u2:B 0.002", "3 p 0.0005"]


def test_rc_errors_name_the_line():
    from flows.pnr.parasitics import ParasiticsError

    with pytest.raises(ParasiticsError, match="line 1 .*n1.*unbalanced"):
        read_rc("n1 1 u0/Y 1 ( 2 0.001 u1/A\n")
    with pytest.raises(ParasiticsError, match="line 1 .*n1.*unbalanced"):
        read_rc("n1 1 u0/Y 1 ( 2 0.001 u1/A ) )\n")


def test_rc_tree_deeper_than_the_recursion_limit():
    """A long routed net nests one branch per segment (a D = 64 column has nets thousands deep)."""
    import sys

    depth = sys.getrecursionlimit() + 500
    (net,) = read_rc("n1 1 u0/Y 1 " + "( 1 0.001 " * depth + "u1/A" + " )" * depth + "\n")
    assert len(net.nodes) == depth + 1 and net.sinks == [("u1/A", depth)]
    assert net.edges[-1] == (depth - 1, depth, 1.0)
    assert net.wire_cap == pytest.approx(0.001 * depth)


def _module(ports, cells):
    return {"ports": ports, "cells": cells}


def test_physical_names_are_plain_and_feedthroughs_get_a_buffer():
    mod = _module({"a": {"direction": "input", "bits": [2, 3]}, "y": {"direction": "output", "bits": [4, 2]}},
                  {"$abc$1": {"type": "INVX1", "connections": {"A": [3], "Y": [4]}}})
    ph = physical(mod, "t")
    assert ph.inputs == ["a_0_", "a_1_"] and ph.outputs == ["y_0_", "y_1_"]
    assert ph.cells[0] == ("u0", "INVX1", {"A": "a_1_", "Y": "y_0_"})
    assert ph.cells[1] == ("ufeed0", "BUFX2", {"A": "a_0_", "Y": "y_1_"}) and ph.buffers == 1
    assert ".gate INVX1 A=a_1_ Y=y_0_" in ph.blif()
    assert "INVX1 u0 (.A(a_1_), .Y(y_0_));" in ph.verilog()
    seq = _module({"clk": {"direction": "input", "bits": [2]}, "d": {"direction": "input", "bits": [3]},
                   "q": {"direction": "output", "bits": [4]}},
                  {"r": {"type": "DFFPOSX1", "connections": {"CLK": [2], "D": [3], "Q": [4]}}})
    assert physical(seq, "t").clock_inputs() == ["clk"]
    with pytest.raises(PnrNetlistError, match="constant 0.*no tie cell"):
        physical(_module({"y": {"direction": "output", "bits": ["0"]}}, {}), "t")


def test_def_measures():
    text = """UNITS DISTANCE MICRONS 100 ;
DIEAREA ( 0 0 ) ( 1000 2000 ) ;
COMPONENTS 2 ;
- u0 INVX1 + PLACED ( 0 0 ) N ;
- f0 FILL + PLACED ( 100 0 ) N ;
END COMPONENTS
NETS 1 ;
- n1
  ( u0 Y ) ( u1 A )
+ ROUTED metal1 ( 100 200 ) M2_M1
  NEW metal2 ( 100 200 ) ( * 500 ) M3_M2
  NEW metal3 ( 100 500 ) ( 400 * ) ;
END NETS
"""
    lay = read_def(text, {"INVX1": (2.0, 3.0), "FILL": (1.0, 3.0)})
    assert lay.die_area == pytest.approx(10 * 20)
    assert lay.cell_area == 6.0 and lay.core_area == 9.0 and lay.utilization == pytest.approx(6 / 9)
    assert lay.wirelength == pytest.approx(3.0 + 3.0) and lay.vias == 2 and lay.nets == 1


def test_missing_tools_name_their_debian_packages(monkeypatch):
    monkeypatch.setattr(tools.shutil, "which", lambda exe: None if exe in ("qrouter", "sta") else "/x")
    with pytest.raises(tools.ToolError, match=r"apt-get install opensta qrouter"):
        tools.require()


def test_routed_bf16_multiplier(tmp_path):
    """One small routed design: no failed routes, DRC/LVS clean, every net annotated, timing in band."""
    from flows.pnr.flow import run_pnr
    from flows.pnr.opensta import run_opensta
    from flows.synth import liberty as L

    tools.require()   # CI installs the packages: a missing one is a failure here, not a skip
    out = run_pnr("bf16_mul", {}, util=0.6, outdir=tmp_path / "rep", log=lambda *_: None)
    m = out.metrics
    assert m[K.ROUTE_FAILED] == 0
    assert m[K.LVS_MATCH] is True and m[K.LVS_ERRORS] == 0
    assert m[K.DRC_ERRORS] == 0
    assert m["route__drc__min_area_patches"] == 0   # nothing below the minimum area to patch here
    assert m[K.ROUTE_SPEF_NETS] == m[K.ROUTE_NETS] > 800
    assert abs(m[K.UTIL] - 0.6) < 0.08          # the die follows the target utilization
    assert m[K.DIE_AREA] > m[K.CORE_AREA] > m[K.AREA]
    assert m[K.ROUTE_WL] > 0 and m[K.ROUTE_VIAS] > 0
    # the SPEF carries qrouter's capacitances, summed here from the raw RC text
    rc = Path(m["route__project"]) / "layout" / "bf16_mul.rc"
    raw = sum(float(c) for c in re.findall(r"\(\s*\S+\s+(\S+)", rc.read_text()))
    assert m[K.ROUTE_WIRE_CAP] == pytest.approx(raw, rel=1e-4)
    # post-route timing: wires only add delay, within a band of the pre-route number (our STA)
    pre = m[K.CP_PS]
    assert m[K.ROUTE_CP_PS_NOWIRE] == pytest.approx(pre, rel=0.02)   # OpenSTA vs our STA, no wires
    assert m[K.ROUTE_CP_PS] > m[K.ROUTE_CP_PS_NOWIRE]
    assert 1.0 < m[K.ROUTE_CP_PS] / pre < 1.25
    # qflow's own converter's SPEF (rc2dly) is what OpenSTA cannot annotate; the check catches it
    lib = L.load(L.OSU018_DEFAULT)
    theirs = tmp_path / "rc2dly.spef"
    subprocess.run(["/usr/lib/qflow/bin/rc2dly", "-D", ":", "-r", str(rc), "-l", str(lib.path), "-d",
                    str(theirs)], check=True, capture_output=True)
    with pytest.raises(tools.ToolError, match="not found"):
        run_opensta(lib.path, out.outdir / "bf16_mul.routed.v", "bf16_mul", tmp_path / "qsta",
                    spef=theirs, period_ps=pre, inputs=[], input_slew_ps=100, output_load_pf=0.05)
    _min_area_patch_clears_a_planted_violation(Path(m["route__project"]) / "layout", tmp_path)


def _magic(lay: Path, body: str) -> str:
    (lay / "t.tcl").write_text(f"lef read {tools.TECH / 'osu018_stdcells.lef'}\nload bf16_mul\n{body}\n"
                               "quit -noprompt\n")
    return subprocess.run(["magic", "-dnull", "-noconsole", "t.tcl"], cwd=lay, capture_output=True,
                          text=True, timeout=300).stdout


_COUNT = ("drc on\nselect top cell\nexpand\ndrc check\ndrc catchup\n"
          "puts stdout \"drc = [drc list count total]\"")


def _min_area_patch_clears_a_planted_violation(layout: Path, tmp_path: Path):
    """A 4 x 4 metal2 square planted beside the routed layout is a minimum-area error in magic's
    DRC; the patch script extends it and magic then finds no error."""
    from flows.pnr.qflow import min_area_script

    lay = tmp_path / "patched"
    shutil.copytree(layout, lay)
    assert "drc = 0" in _magic(lay, _COUNT)
    _magic(lay, "select top cell\nset b [box values]\n"
                "box values [expr {[lindex $b 2] + 40}] 0 [expr {[lindex $b 2] + 44}] 4\n"
                "paint metal2\nsave bf16_mul")
    planted = _magic(lay, _COUNT + "\nputs stdout \"why = [drc listall why]\"")
    assert "drc = 1" in planted and "Metal2 area" in planted
    (lay / "min_area.tcl").write_text(min_area_script("bf16_mul"))
    out = subprocess.run(["magic", "-dnull", "-noconsole", "min_area.tcl"], cwd=lay,
                         capture_output=True, text=True, timeout=300).stdout
    assert "min_area_patches = 1" in out and "min_area_unpatched = 0" in out
    assert "drc = 0" in _magic(lay, _COUNT)


def test_one_block_of_a_hierarchy_at_lower_placer_effort(tmp_path):
    """``BLOCK=``: one module of a hierarchical design placed and routed alone (here a multiplier of
    the BF16 bank), with graywolf's effort divided (``TWSC*fast``), without graywolf's global routing
    (the ``.pin`` net list then comes from the ``.cel``) and with the bounded qrouter run; a name
    matching no module is a clear error listing the modules."""
    from flows.pnr.flow import run_pnr

    tools.require()
    with pytest.raises(ValueError, match="BLOCK='nope' names 0 modules.*bf16_mul_booth4_s0"):
        run_pnr("bf16_bank", {"lanes": "2"}, block="nope", outdir=tmp_path / "x", log=lambda *_: None)
    out = run_pnr("bf16_bank", {"lanes": "2"}, block="bf16_mul", util=0.5, fast=4, checks=False,
                  groute=False, cleanup=False, outdir=tmp_path / "rep", log=lambda *_: None)
    m = out.metrics
    assert m["design__params"]["block"] == "bf16_mul_booth4_s0" and m["place__graywolf__fast"] == 4
    par = Path(m["route__project"]) / "layout" / "bf16_mul_booth4_s0.par"
    assert "TWSC*fast : 4" in par.read_text() and "TWSC*do.global.route  : off" in par.read_text()
    assert all((par.parent / f"bf16_mul_booth4_s0.{x}").is_file() for x in ("pin", "cfg2"))
    assert not m["place__graywolf__global_route"] and not m["route__qrouter__cleanup"]
    assert m[K.ROUTE_FAILED] == 0 and m[K.ROUTE_SPEF_NETS] == m[K.ROUTE_NETS]
    assert m[K.DRC_ERRORS] is None and m[K.LVS_MATCH] is None      # checks skipped, not faked
    assert abs(m[K.UTIL] - 0.5) < 0.08
    assert 1.0 < m[K.ROUTE_CP_PS] / m[K.CP_PS] < 1.25


def test_route_script_leaves_the_named_nets_out():
    """The ``ignore`` line comes before the first routing command, in the bounded and in the full
    route; without nets the full route is qflow's own (no script); a name qrouter's Tcl would
    read as more than one net is refused."""
    from flows.pnr.qflow import route_script

    bounded = route_script("t", cleanup=False, ignore=("clk",))
    assert bounded.index("ignore clk\n") < bounded.index("[stage1]") and "stage3" not in bounded
    full = route_script("t", cleanup=True, ignore=("clk",))
    assert full.index("ignore clk\n") < full.index("qrouter::standard_route t_route.def false")
    assert route_script("t", cleanup=True) is None
    assert "ignore" not in route_script("t", cleanup=False)
    with pytest.raises(ValueError, match="plain identifiers.*'a b'"):
        route_script("t", cleanup=False, ignore=("a b",))


def test_a_reread_layout_reports_what_its_route_left_out(tmp_path):
    """Re-reading a routed qflow project (no tool run): refused when its netlist is not the one
    given; else the nets its script left out (``ignore``),
    the routed nets qrouter's RC writer skipped (``No driver for net``, once each), and the step
    times from qflow's log stamps (16:15:27 to 16:17:59 is 152 s; a step without its end stamp is
    not timed)."""
    from types import SimpleNamespace

    from flows.pnr.qflow import route_script, run_qflow

    (tmp_path / "layout").mkdir()
    (tmp_path / "log").mkdir()
    for f in ("t.def", "t.rc"):
        (tmp_path / "layout" / f).write_text("")
    (tmp_path / "layout" / "t.cfg2").write_text(route_script("t", cleanup=False, ignore=("clk",)))
    (tmp_path / "log" / "place.log").write_text(
        "Qflow placement logfile created on Fri Dec 4 16:15:27 UTC 2026\n"
        "Placement script ended on Fri Dec 4 16:17:59 UTC 2026\n")
    (tmp_path / "log" / "route.log").write_text(
        "Qflow route logfile created on Fri Dec 4 16:17:59 UTC 2026\nFinal: No failed routes!\n"
        "No driver for net n5\nFinal: No failed routes!\nNo driver for net n5\n")
    ph = SimpleNamespace(top="t", verilog=lambda: "module t(); endmodule\n")
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "t.v").write_text("module t(a); input a; endmodule\n")
    with pytest.raises(tools.ToolError, match="not this design's.*without --reuse-layout"):
        run_qflow(ph, tmp_path, reuse=True, log=lambda *_: None)
    (tmp_path / "source" / "t.v").write_text(ph.verilog())
    q = run_qflow(ph, tmp_path, reuse=True, log=lambda *_: None)
    assert q.seconds == {} and q.failed_routes == 0
    assert q.ignored == ("clk",) and q.no_driver == ("n5",)
    assert q.logged == {"date": "2026-12-04T16:15:27Z", "steps_seconds": {"place": 152.0}}


def test_clock_left_unrouted(tmp_path):
    """``route_clock=False`` on a registered block: qrouter routes every net but the clock (its
    routed DEF has the clock net with no wire, every other net with one), the clock is not a
    failed route, and every other net gets parasitics."""
    from flows.pnr.flow import run_pnr

    tools.require()
    out = run_pnr("bf16_mul", {"stages": "1"}, util=0.5, fast=4, checks=False, groute=False, cleanup=False,
                  route_clock=False, outdir=tmp_path / "rep", log=lambda *_: None)
    m = out.metrics
    assert m["route__qrouter__ignored_nets"] == ["clk"] and m["route__project"].endswith("-nc-nclk")
    assert m[K.ROUTE_FAILED] == 0 and m["route__timing__unrouted_nets_without_wires"] == 1
    assert m[K.ROUTE_SPEF_NETS] == m[K.ROUTE_NETS] - 1
    nets = re.search(r"^NETS \d+ ;(.*?)^END NETS", (out.outdir / "bf16_mul.def").read_text(), re.M | re.S)[1]
    wired = {n.split()[0]: "ROUTED" in n for n in nets.split("\n- ")[1:]}
    assert wired.pop("clk") is False and all(wired.values()) and len(wired) > 800
    assert 1.0 < m[K.ROUTE_CP_PS] / m[K.CP_PS] < 1.25


def test_opensta_agrees_with_our_sta_before_placement(tmp_path):
    """OpenSTA (an independent timer) on the synthesized BF16 multiplier against our STA's number,
    and a disagreement beyond the tolerance is an error, not a note."""
    from flows.pnr.crosscheck import crosscheck
    from flows.synth import liberty as L
    from flows.synth.flow import run

    tools.require()
    lib = L.load(L.OSU018_DEFAULT)
    s = run("bf16_mul", {}, lib=lib, outdir=tmp_path / "syn", log=lambda *_: None)
    ours = s.metrics[K.CP_PS]
    c = crosscheck(s.netlist_json, "bf16_mul", lib, ours, tmp_path / "x")
    assert c.opensta_ps > 0 and abs(c.rel_diff) <= 0.02
    with pytest.raises(tools.ToolError, match=r"beyond the 2% agreement"):
        crosscheck(s.netlist_json, "bf16_mul", lib, ours * 1.05, tmp_path / "y")


def test_a_step_past_its_limit_is_stopped_with_the_tools_it_started(tmp_path, monkeypatch):
    """A stand-in ``qflow`` on PATH: ``place`` finishes, ``route`` writes a qrouter-like log and
    starts a long-lived child, the way qflow's scripts start qrouter. Past the limit the step is
    stopped with its child (its pid no longer runs), and the error names the step, the limit, how
    far the route got (10 nets, 3 left in stage 2: the last counts the log printed) and the knobs."""
    import os
    import time
    from types import SimpleNamespace

    from flows.pnr.qflow import StepTimeout, run_qflow

    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "qflow"
    fake.write_text(
        "#!/bin/sh\n"
        'mkdir -p log\n'
        'if [ "$1" = route ]; then\n'
        '  printf "There are 10 nets in this design.\\n*** Running stage1 routing with defaults\\n'
        'Nets remaining: 9\\nNets remaining: 5\\n*** Running stage2 routing with options mask 10\\n'
        'Nets remaining: 3\\n" > log/route.log\n'
        '  sleep 300 &\n'
        '  echo $! > child.pid\n'
        '  wait\n'
        'fi\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    ph = SimpleNamespace(top="t", verilog=lambda: "module t(); endmodule\n", blif=lambda: ".model t\n.end\n")
    project = tmp_path / "p"
    t0 = time.monotonic()
    with pytest.raises(StepTimeout) as e:
        run_qflow(ph, project, checks=False, timeout_s=2, log=lambda *_: None)
    assert time.monotonic() - t0 < 60
    err = e.value
    assert err.step == "route" and err.limit_s == 2 and set(err.seconds) == {"place"}
    assert err.progress == {"nets": 10, "remaining": 3, "stage": 2}
    assert "route of t did not finish within its 2 s limit" in str(err)
    assert "stage 2 with 3 of 10 nets still to route" in str(err) and "--step-timeout" in str(err)
    assert isinstance(err, tools.ToolError)
    child = int((project / "child.pid").read_text())
    for _ in range(50):   # the kill is delivered at once; give the kernel a moment to reap it
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as f:   # a zombie awaiting its (killed) parent counts as gone
            if f.read().split(")")[1].split()[0] == "Z":
                break
        time.sleep(0.1)
    else:
        pytest.fail(f"the route step's child {child} outlived the stopped step")


@pytest.mark.parametrize("bad", ["0", "-5", "nan", "inf", "soon", None])
def test_step_timeout_must_be_positive_seconds(bad):
    from flows.pnr.flow import check_step_timeout

    with pytest.raises(ValueError, match="positive number of seconds.*--step-timeout"):
        check_step_timeout(bad)
    assert check_step_timeout("7200") == 7200.0
