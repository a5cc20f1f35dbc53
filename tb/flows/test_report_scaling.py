"""The block-scaled section of the cross-width report, on small invented metrics in tmp dirs.

Expected numbers are computed here by hand from the invented inputs (never from the generator).
"""

import json

from flows import metric_keys as K
from flows.report import qor as report_qor
from flows.report.common import NOT_MEASURED
from flows.report.scaling import bits_per_element


def _write(qor, d, fmt, area, ps, blocks):
    v = qor / f"mu-w{d}-{fmt}-osu018"
    v.mkdir(parents=True)
    m = {K.AREA: area, K.GE: area / 24, K.CP_LV: 50, K.CP_PS: ps, K.FMAX: 1e6 / ps, "design": "mu",
         "design__params": {"width": d, "fmt": fmt},
         "flow__liberty": {"name": "testlib", "short": "osu018", "path": "/x/test.lib", "sha256": "f00"}}
    m.update({K.block_area(k): a for k, a in blocks.items()})
    (v / "metrics.json").write_text(json.dumps(m))


def _row(text, start):
    lines = [ln for ln in text.split("## Block-scaled formats", 1)[1].splitlines() if ln.startswith(start)]
    assert len(lines) == 1, (start, lines)
    return [c.strip() for c in lines[0].strip("|").split("|")]


def test_block_points_next_to_their_element_format(tmp_path):
    q = tmp_path / "qor"
    # plain E4M3 at D = 64: 1,000,000 um^2 of which accumulate 100,000; MXFP8: 1,120,000 with the
    # accumulator at 180,000 and 40,000 of column glue (the rest equal)
    _write(q, 64, "fp8_e4m3", 1.0e6, 20000, {"mu_lane_fp8_e4m3": 5e5, "mu_acc_w64_fp8_e4m3_r1_s2": 1e5})
    _write(q, 64, "mxfp8_e4m3", 1.12e6, 25000, {"mu_lane_fp8_e4m3": 5e5, "mu_acc_w64_mxfp8_e4m3_r1_s2": 1.8e5,
                                               "mu_col_w64_mxfp8_e4m3_r1_s2": 4e4})
    _write(q, 64, "fp4_e2m1", 3.0e5, 16000, {"mu_lane_fp4_e2m1": 1e5})
    _write(q, 64, "mxfp4_e2m1", 4.0e5, 17000, {"mu_lane_fp4_e2m1": 1e5})
    out = tmp_path / "out.md"
    text = report_qor.generate(q, out, tmp_path / "plots", plots=False)
    # the plain tables keep to the element formats
    plain = text.split("## Block-scaled formats", 1)[0]
    assert "mxfp8_e4m3" not in plain and "mxfp4_e2m1" not in plain
    c = _row(text, "| 64 | mxfp8_e4m3 |")
    assert c[2] == "1,120,000" and c[3] == f"{1.12e6 / 4096:,.1f}" and c[4] == "+12.0% (fp8_e4m3)"
    assert c[5] == "25,000" and c[6] == "+25.0%"
    assert _row(text, "| 64 | mxfp4_e2m1 |")[4] == "+33.3% (fp4_e2m1)"
    assert _row(text, "| 32 | nvfp4 |")[2] == NOT_MEASURED
    # overhead 12% > 10%: missed; of the 120,000: accumulate +80,000 (67%), column glue +40,000 (33%)
    o = _row(text, "| 64 | +12.0% |")
    assert o[2] == "missed" and "+80,000 (67%)" in o and "+40,000 (33%)" in o
    assert "D = 64: accumulate" in text
    # published comparisons: MXFP4 / MXFP8 area, and area x bits against plain FP8
    assert _row(text, "| 64 | 0.357x |")[2] == NOT_MEASURED        # 4.0e5 / 1.12e6; no NVFP4 point
    r = 4.0e5 * 4.25 / (1.0e6 * 8)
    vs_mxfp8 = 4.0e5 * 4.25 / (1.12e6 * 8.25)
    assert _row(text, f"| 64 | {r:.3f} ({1 / r:.1f}x cheaper) |")[3].startswith(f"{vs_mxfp8:.3f}")


def test_bits_per_element_count_the_scales():
    assert bits_per_element("mxfp4_e2m1") == 4 + 8 / 32
    assert bits_per_element("nvfp4") == 4 + 8 / 16
    assert bits_per_element("fp8_e4m3") == 8


def test_no_block_point_says_so(tmp_path):
    q = tmp_path / "qor"
    _write(q, 32, "fp8_e4m3", 1.0e6, 20000, {})
    text = report_qor.generate(q, tmp_path / "out.md", tmp_path / "plots", plots=False)
    assert f"{NOT_MEASURED}: no block-scaled point" in text
