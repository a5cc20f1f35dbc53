"""Yosys runs on small designs: sensible paths, generic fallback, and clear errors."""

import pytest

from flows import metric_keys as K
from flows.synth import liberty as L
from flows.synth.flow import resolve_library
from flows.synth.sta import Sta
from flows.synth.yosys import MemoryLimitError, SynthError, run_yosys
from tb.flows import OSU, needs_osu

pytestmark = pytest.mark.quick


ADDER = """
module adder(input [7:0] a, input [7:0] b, output [8:0] s);
  assign s = a + b;
endmodule
"""

PIPE = """
module pipe(input clk, input [7:0] a, input [7:0] b, output reg [15:0] p);
  reg [7:0] ra, rb;
  always @(posedge clk) begin ra <= a; rb <= b; p <= ra * rb; end
endmodule
"""


@needs_osu
def test_combinational_design_reports_an_input_to_output_path(tmp_path):
    lib = L.load(OSU)
    r = run_yosys(ADDER, "adder", tmp_path, lib, use_cache=False)
    assert r.area > 0 and r.cell_count > 8
    res = Sta(lib, r.netlist).run()
    assert res.kind == "in->out"
    assert res.start.startswith("input a[") or res.start.startswith("input b[")
    assert res.end.startswith("output s[")
    # an 8-bit ripple/prefix adder: several gates, each 50..600 ps in this 0.18um library
    assert 3 <= res.levels <= 30
    assert 50 * res.levels < res.delay_ps < 600 * res.levels
    arrivals = [s.arrival_ps for s in res.steps]
    assert arrivals == sorted(arrivals)
    assert r.ltp_levels and r.ltp_levels >= 3
    assert (tmp_path / "yosys.log").is_file()


@needs_osu
def test_ltp_stack_exhaustion_reruns_without_it_and_counts_both_runs(tmp_path, monkeypatch):
    """Yosys's recursive ``ltp`` can exhaust yowasp's call stack on a deep netlist: the run is
    repeated without it, the result's runtime and peak include the failed attempt, and the cache
    remembers the failure (a second run starts no Yosys at all)."""
    import flows.synth.yosys as S

    real, calls = S._run, []

    def fake_first(cmd, cwd, log, limit_mb, timeout_s):
        calls.append((cwd / "synth.ys").read_text())
        if len(calls) == 1:      # the first attempt "fails" as yowasp does
            log.write_text("ERROR: call stack exhausted\n")
            (cwd / "yosys.stdout").write_text("")
            return 1, 7.5, 3000.0
        return real(cmd, cwd, log, limit_mb, timeout_s)

    monkeypatch.setattr(S, "_run", fake_first)
    monkeypatch.setattr(S, "CACHE_ROOT", tmp_path / "cache")
    lib = L.load(OSU)
    r = run_yosys(PIPE, "pipe", tmp_path / "w", lib)
    assert len(calls) == 2 and "ltp" in calls[0] and "ltp" not in calls[1]
    assert r.ltp_levels is None and r.area > 0 and not r.cached
    assert r.runtime_s > 7.5 and r.peak_mb == 3000.0
    assert "call stack exhausted" in (tmp_path / "w" / "yosys-ltp-failed.log").read_text()
    again = run_yosys(PIPE, "pipe", tmp_path / "w2", lib)
    assert len(calls) == 2, "the cached failure should skip both Yosys runs"
    assert again.cached and again.ltp_levels is None and again.area == r.area
    assert again.runtime_s == pytest.approx(r.runtime_s) and again.peak_mb == 3000.0


@needs_osu
def test_registered_design_reports_a_register_to_register_path(tmp_path):
    lib = L.load(OSU)
    r = run_yosys(PIPE, "pipe", tmp_path, lib, use_cache=False)
    res = Sta(lib, r.netlist).run(inputs=set())
    assert res.kind == "reg->reg"
    first = res.steps[0]
    assert "DFFPOSX1" in first.point and "CLK->Q" in first.point
    assert first.incr_ps > 50                       # clock-to-Q from the liberty
    assert res.setup_ps > 0                         # setup of the capturing flop
    assert res.delay_ps == pytest.approx(res.steps[-1].arrival_ps + res.setup_ps)
    assert res.levels >= 8                          # an 8x8 multiplier
    # with inputs launching too, the worst path is at least as long
    assert Sta(lib, r.netlist).run().delay_ps >= res.delay_ps


def test_no_liberty_falls_back_to_generic_library(monkeypatch, tmp_path):
    monkeypatch.delenv("LIBERTY", raising=False)
    monkeypatch.delenv("PDK_ROOT", raising=False)
    monkeypatch.setattr(L, "OSU018_DEFAULT", tmp_path / "absent.lib")
    said = []
    lib = resolve_library(None, log=said.append)
    assert lib.generic
    assert any("technology-independent" in s and "qflow-tech-osu018" in s and "LIBERTY=" in s for s in said)
    r = run_yosys(ADDER, "adder", tmp_path / "w", lib, use_cache=False)
    res = Sta(lib, r.netlist).run()
    assert res.unit == "levels" and res.levels >= 3
    assert res.delay_ps == res.levels               # one unit per gate
    assert all(c["type"] in L.GENERIC_GE for c in r.netlist["cells"].values()
               if not c["type"].startswith("$scopeinfo"))


def test_missing_liberty_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(L.LibertyError, match="no such file"):
        L.find_liberty(str(tmp_path / "nope.lib"))
    from flows.__main__ import main

    assert main(["synth", "--design", "bf16_mul", "--liberty", str(tmp_path / "nope.lib")]) == 2
    err = capsys.readouterr().err
    assert "nope.lib" in err and "no such file" in err and "Traceback" not in err


def test_yosys_failure_is_a_clear_error(tmp_path):
    lib = L.generic_library()
    with pytest.raises(SynthError) as e:
        run_yosys("module broken(input a, output y); assign y = ; endmodule\n", "broken", tmp_path, lib,
                  use_cache=False)
    msg = str(e.value)
    assert "Yosys failed on broken" in msg and str(tmp_path / "yosys.log") in msg
    assert (tmp_path / "yosys.log").is_file()


def test_memory_limit_stops_the_run_with_a_message(tmp_path):
    lib = L.generic_library()
    with pytest.raises(MemoryLimitError, match="4 GiB"):
        run_yosys(PIPE, "pipe", tmp_path, lib, limit_mb=1, use_cache=False)


def test_unknown_option_is_a_clear_error(capsys):
    from flows.__main__ import main

    assert main(["synth", "--design", "bf16_mul", "--set", "arch=wallace"]) == 2
    err = capsys.readouterr().err
    assert "wallace" in err and "booth4" in err


def test_liberty_search_order(tmp_path):
    pdk = tmp_path / "pdk" / "sky130A" / "libs.ref" / "sky130_fd_sc_hd" / "lib"
    pdk.mkdir(parents=True)
    (pdk / "sky130_fd_sc_hd__ff_n40C_1v95.lib").write_text("library(x) {}\n")
    typ = pdk / "sky130_fd_sc_hd__tt_025C_1v80.lib"
    typ.write_text("library(x) {}\n")
    mine = tmp_path / "mine.lib"
    mine.write_text("library(y) {}\n")
    assert L.find_liberty(env={"PDK_ROOT": str(tmp_path / "pdk")}) == typ          # typical corner
    assert L.find_liberty(env={"PDK_ROOT": str(tmp_path / "pdk"), "LIBERTY": str(mine)}) == mine
    assert L.find_liberty(str(mine), env={"LIBERTY": "/elsewhere.lib"}) == mine
    with pytest.raises(L.LibertyError, match="LIBERTY=/elsewhere.lib: no such file"):
        L.find_liberty(env={"LIBERTY": "/elsewhere.lib"})


@needs_osu
def test_flow_writes_the_reports_with_metrics2_1_names(tmp_path):
    from flows.synth.flow import run

    out = run("bf16_mul", {"arch": "booth4", "stages": "2"}, outdir=tmp_path, log=lambda *_: None)
    for f in ("metrics.json", "synth_stat.txt", "timing.txt", "yosys.log"):
        assert (tmp_path / f).stat().st_size > 0, f
    m = out.metrics
    # the METRICS2.1 names (ORFS) spelled out once here, as the contract
    assert (K.AREA, K.GE, K.CELLS, K.SEQ, K.CP_PS, K.CP_LV, K.DEPTH, K.FMAX, K.RUNTIME, K.MEMORY) == (
        "synth__design__instance__area__stdcell", "synth__design__instance__area__ge",
        "synth__design__instance__count__stdcell", "synth__design__instance__area__sequential",
        "synth__timing__critical_path__delay_ps", "synth__timing__critical_path__levels",
        "synth__timing__logic_depth__generic", "synth__timing__fmax_mhz", "flow__runtime__seconds",
        "flow__memory__peak_mb")
    for key in (K.AREA, K.GE, K.CELLS, K.SEQ, K.CP_PS, K.CP_LV, K.DEPTH, K.FMAX, K.RUNTIME, K.MEMORY,
                "flow__git_revision", "flow__tools", "flow__liberty", "design__params"):
        assert m.get(key) is not None, key
    assert m["variant"] == "bf16_mul-booth4-s2-osu018"
    assert m[K.GE] == pytest.approx(m[K.AREA] / 24.0, abs=0.01)      # NAND2X1 = 24 um^2
    assert m[K.SEQ] > 0             # two register stages
    assert m[K.CP_KIND] == "reg->reg"
    assert m[K.FMAX] == pytest.approx(1e6 / m[K.CP_PS], rel=1e-3)
    assert "worst path: reg->reg" in (tmp_path / "timing.txt").read_text()
