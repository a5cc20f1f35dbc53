"""User Verilog through the same flow (``make synth VERILOG=... TOP=...``), and the CLI's input checks.

The area check is independent of the flow: the cell areas are read here from the liberty text with a
regular expression and summed over the cells of Yosys's mapped netlist.
"""

import json
import re

import pytest

from flows import metric_keys as K
from flows.__main__ import main
from flows.paths import REPO
from flows.synth import flow
from flows.synth import liberty as L
from flows.synth.flow import run_verilog
from flows.synth.yosys import SynthError
from tb.flows import OSU, needs_osu, quiet

pytestmark = pytest.mark.quick

#: An 8-bit adder with registered inputs and a registered 9-bit sum: 8 + 8 + 9 = 25 flip-flops.
ADDER = """
module add8r(input clk, input [7:0] a, input [7:0] b, output reg [8:0] s);
  reg [7:0] ra, rb;
  always @(posedge clk) begin
    ra <= a;
    rb <= b;
    s <= ra + rb;
  end
endmodule
"""

#: SystemVerilog: a ``localparam int`` in the parameter port list (a syntax error without ``-sv``),
#: ``logic`` and ``always_ff``. The product is registered: 2 * W = 12 flip-flops at W = 6.
SV_MUL = """
module sv_mul #(parameter int W = 6, localparam int P = 2 * W) (
  input  logic         clk,
  input  logic [W-1:0] a, b,
  output logic [P-1:0] p
);
  always_ff @(posedge clk) p <= a * b;
endmodule
"""


def liberty_areas(path) -> dict:
    """``{cell: area}`` read straight from the liberty text (each cell group states its area first)."""
    text = path.read_text()
    return {m[1]: float(m[2]) for m in re.finditer(r"\bcell\s*\(\s*\"?(\w+)\"?\s*\)\s*\{[^{}]*?\barea\s*:\s*"
                                                     r"([0-9.eE+-]+)", text)}


@needs_osu
def test_registered_adder_area_is_the_sum_of_its_cells(tmp_path):
    src = tmp_path / "add8r.v"
    src.write_text(ADDER)
    out = run_verilog([src], "add8r", lib=L.load(OSU), outdir=tmp_path / "rep", log=quiet)
    m = out.metrics
    cells = json.loads(out.netlist_json.read_text())["modules"]["add8r"]["cells"].values()
    areas = liberty_areas(OSU)
    types = [c["type"] for c in cells if not c["type"].startswith("$scopeinfo")]
    assert types and all(t in areas for t in types), set(types) - set(areas)
    assert m[K.AREA] == pytest.approx(sum(areas[t] for t in types), abs=1e-3)
    assert m[K.CELLS] == len(types)
    assert sum(t.startswith("DFF") for t in types) == 25
    assert m[K.CP_KIND] == "reg->reg" and m[K.CP_PS] > 0 and m[K.FMAX] > 0
    assert m["variant"].startswith("add8r-") and m["variant"].endswith("-osu018")
    assert m["design"] == "add8r" and m["design__params"]["top"] == "add8r"
    for f in ("metrics.json", "synth_stat.txt", "timing.txt", "yosys.log"):
        assert (tmp_path / "rep" / f).stat().st_size > 0, f
    # the variant follows the content: the same text keeps it, an edit changes it
    again = run_verilog([src], "add8r", lib=L.load(OSU), outdir=tmp_path / "rep2", log=quiet)
    assert again.metrics["variant"] == m["variant"]
    src.write_text(ADDER.replace("ra + rb", "ra - rb"))
    assert run_verilog([src], "add8r", lib=L.load(OSU), outdir=tmp_path / "rep3",
                       log=quiet).metrics["variant"] != m["variant"]


@needs_osu
def test_cli_writes_to_the_reports_dir_and_says_where(tmp_path, capsys):
    src = tmp_path / "add8r.v"
    src.write_text(ADDER)
    out = tmp_path / "out"
    assert main(["synth", "--verilog", str(src), "--top", "add8r", "--reports-dir", str(out)]) == 0
    folders = list((tmp_path / "out").iterdir())
    assert len(folders) == 1 and (folders[0] / "metrics.json").is_file()
    assert folders[0].name in capsys.readouterr().out.strip().splitlines()[-1]


@needs_osu
def test_systemverilog_is_read_with_the_sv_front_end(tmp_path):
    from flows.synth.yosys import run_yosys

    src = tmp_path / "sv_mul.sv"
    src.write_text(SV_MUL)
    out = run_verilog([src], "sv_mul", lib=L.load(OSU), outdir=tmp_path / "rep", log=quiet)
    cells = json.loads(out.netlist_json.read_text())["modules"]["sv_mul"]["cells"].values()
    assert sum(c["type"].startswith("DFF") for c in cells) == 12   # P = 2 * W output bits registered
    assert out.metrics[K.CP_KIND] == "in->reg" and out.metrics[K.CP_PS] > 0
    # the same text without -sv is the syntax error users met: the front end is what makes it pass
    with pytest.raises(SynthError, match="syntax error"):
        run_yosys(SV_MUL, "sv_mul", tmp_path / "plain", L.generic_library(), use_cache=False)


def test_user_runs_default_to_the_build_tree():
    report, work = flow._dirs("v1", None, None)
    assert report == REPO / "build" / "reports" / "qor" / "v1"
    assert flow._dirs("v1", None, REPO / "reports" / "qor")[0] == REPO / "reports" / "qor" / "v1"


@pytest.mark.parametrize("args, words", [
    (["--top", "nope"], ["'nope' not found", "add8r.v"]),
    (["--top", "add8r", "--verilog", "missing.v"], ["missing.v", "no such file"]),
    (["--top", "add8r", "--set", "width=8"], ["--set applies to registered designs"]),
    (["--top", "1bad"], ["TOP must be the name of a Verilog module"]),
    ([], ["needs its top module", "TOP="]),
])
def test_bad_user_verilog_is_a_clear_error(tmp_path, capsys, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add8r.v").write_text(ADDER)
    assert main(["synth", "--verilog", "add8r.v"] + args) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert "Traceback" not in err


def test_empty_file_and_yosys_failure_name_the_top_and_file(tmp_path):
    empty = tmp_path / "empty.v"
    empty.write_text("// nothing here\n")
    with pytest.raises(ValueError, match="empty.v holds no module"):
        run_verilog([empty], "x", lib=L.generic_library(), outdir=tmp_path / "e", log=quiet)
    broken = tmp_path / "broken.v"
    broken.write_text("module broken(input a, output y); assign y = ; endmodule\n")
    with pytest.raises(SynthError, match=r"synthesis of top 'broken' from .*broken.v failed: Yosys failed"):
        run_verilog([broken], "broken", lib=L.generic_library(), outdir=tmp_path / "b", log=quiet)
    dead = tmp_path / "dead.v"
    dead.write_text("module dead(input a, output y); assign y = 1'b0; endmodule\n")
    with pytest.raises(ValueError, match="'dead' from .*dead.v has no cells after synthesis"):
        run_verilog([dead], "dead", lib=L.generic_library(), outdir=tmp_path / "d", log=quiet)


@pytest.mark.parametrize("clock", ["-5", "abc", "0", "nan"])
def test_bad_clock_is_refused_before_yosys(clock, capsys, monkeypatch):
    import flows.synth.yosys as Y

    monkeypatch.setattr(Y, "run_yosys", lambda *a, **k: pytest.fail("Yosys must not run"))
    assert main(["synth", "--design", "bf16_mul", "--clock-ps", clock]) == 2
    err = capsys.readouterr().err
    assert f"CLOCK_PS must be a positive number of picoseconds, not {clock!r}" in err
    monkeypatch.setenv("CLOCK_PS", clock)
    assert main(["synth", "--design", "bf16_mul"]) == 2
    assert "CLOCK_PS must be a positive number" in capsys.readouterr().err
