"""The block-scaled real-tile RTL regression: its plan, its report section, and (``full``) the runs.

The quick tests check the plan (at least 90 runs over the block formats and widths of
``POINTS``, both modes at each point) and the generated section on hand-made records (counts,
averages and the per-op verdict computed here). The ``full`` set sends every planned run through
the block-scaled unit's RTL, bit-exact against ``tb/mu/model_block.py``, and records it for
``python -m tb.tiles.block_regression``.
"""

from collections import Counter

import pytest

from tb.tiles import block_regression as br
from tb.tiles import minilm
from tb.tiles.corpus import _run_id


def test_plan_covers_every_point_with_both_modes():
    plan = br.plan_rtl()
    assert len(plan) >= 90 and len({_run_id(s) for s in plan}) == len(plan)
    per_point = Counter((s.fmt, s.width) for s in plan)
    want = {(f, d) for f in ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4") for d in (32, 64, 128)}
    want |= {("mxfp8_e5m2", 32), ("mxfp6_e3m2", 32), ("mxfp6_e2m3", 32)}
    assert set(per_point) == want
    for point in want:
        runs = [s for s in plan if (s.fmt, s.width) == point]
        assert {s.op for s in runs} == set(minilm.OPS)
        assert {s.mode for s in runs} == {"decode", "prefill"}


def _rec(fmt, d, op, mean, base_mean, mode="decode"):
    return {"id": f"{op}-{mode}-{fmt}-d{d}", "fmt": fmt, "width": d, "op": op, "mode": mode, "m": 1,
            "k": 384, "k_tiles": 384 // d, "unit_rows": 4, "tree": None, "rtl_match": True,
            "mean_rel": mean, "max_rel": 2 * mean, "base": {"fmt": "fp4_e2m1", "mean_rel": base_mean,
                                                              "max_rel": 3 * base_mean},
            "cycles": 100, "x_beats": 1, "w_beats": 32, "sim_s": 1.5, "seconds": 2.0}


def test_section_counts_averages_and_per_op_verdict(tmp_path):
    recs = [_rec("mxfp4_e2m1", 32, "q", 0.10, 0.40), _rec("mxfp4_e2m1", 32, "k", 0.20, 0.30, "prefill"),
            _rec("mxfp4_e2m1", 64, "q", 0.50, 0.40)]
    md = br.section_md({r["id"]: r for r in recs}, 96)
    assert "Runs recorded: **3** of the 96 planned" in md
    assert "bit-exact against `tb/mu/model_block.py`: **3**" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| mxfp4_e2m1 vs fp4_e2m1 | 32 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:] == ["2", "2", "3", "0.150", "0.350", "0.400", "1.200"]
    q = next(ln for ln in md.splitlines() if ln.startswith("| q |"))
    assert "0.300 / 0.400 |" in q and "wins" not in q          # D = 64 loses: no verdict
    k = next(ln for ln in md.splitlines() if ln.startswith("| k |"))
    assert "0.200 / 0.300 wins" in k
    assert "per-tensor one: mxfp4_e2m1 2 of 2." in md       # class means: q 0.30 < 0.40, k 0.20 < 0.30
    assert "Not run yet:" in md and "nvfp4 D = 128" in md
    # the section replaces itself in a report, leaving the hand-written text around it
    path = tmp_path / "r.md"
    path.write_text("# title\n\nprose\n")
    br.write_section(md, path)
    br.write_section(br.section_md({}, 96), path)
    text = path.read_text()
    assert text.startswith("# title\n\nprose\n") and text.count(br.BEGIN) == 1
    assert "Runs recorded: **0**" in text


FULL = [pytest.param(p, id=f"{p[0]}-d{p[1]}", marks=pytest.mark.full) for p in br.POINTS]


@pytest.mark.parametrize("point", FULL)
def test_block_rtl_regression(point):
    """The planned runs of one point through one RTL simulation (bit-exact against the model, beat
    counters as sent), recorded for the report."""
    runs = [s for s in br.plan_rtl() if (s.fmt, s.width) == point]
    for rec in br.run_point(list(br.tiles(runs))):
        assert rec["rtl_match"] and rec["cycles"] > 0
        br.save(rec)
