"""The gated real-tile regression's plan, report and command line (the RTL runs themselves are
``python -m tb.tiles gated-rtl``; their simulations take minutes per point)."""

import pytest

from tb.tiles import gated
from tb.tiles.__main__ import main


def test_plan_covers_every_published_point():
    """Every point of the published energy variants, with the full plan's runs: 16 per per-tensor
    point (8 op classes x decode and prefill), 8 per block-scaled point (one per op class, both
    modes at each point)."""
    p = gated.plan()
    assert list(p) == list(gated.POINTS) and len(p) == 18
    for (fmt, d), specs in p.items():
        assert {(s.fmt, s.width) for s in specs} == {(fmt, d)}
        n = 8 if fmt in ("mxfp8_e4m3", "nvfp4", "mxfp4_e2m1") else 16
        assert len(specs) == n, (fmt, d)
        assert {s.mode for s in specs} == {"decode", "prefill"}
        assert len({s.op for s in specs}) == 8
    assert sum(len(s) for s in p.values()) == 216


def test_plan_rejects_a_point_without_runs():
    with pytest.raises(ValueError, match=r"no planned real-tile runs for \('fp8_e4m3', 48\)"):
        gated.plan((("fp8_e4m3", 48),))


def _rec(fmt, d, ulps=0.5, runs=2):
    return {"fmt": fmt, "width": d, "rows": 16, "tree": "dadda", "acc": "exact", "gate": True,
            "runs": [{"id": f"r{i}", "op": "q", "mode": "decode", "m": 1, "k": 384,
                      "max_ulps": ulps * i / runs, "within_half": d, "n": d} for i in range(1, runs + 1)],
            "results": runs * d, "bit_exact": True, "x_beats": 10, "w_beats": 64, "cycles": 99,
            "sim_s": 1.0, "wall_s": 2.0, "revision": "abc123"}


def test_report_says_partial_in_its_first_lines():
    md = gated.report_md({("fp8_e4m3", 32): _rec("fp8_e4m3", 32)})
    head = "\n".join(md.splitlines()[:8])
    assert "**partial**: **1 of 18**" in head
    assert "not run: fp8_e4m3 D = 64" in head and "mxfp4_e2m1 D = 128" in head
    assert "| fp8_e4m3 | 32 | dadda | 2 | 64 | yes | 0.500 | 64 of 64 |" in md
    assert "`abc123`" in head


def test_report_complete():
    recs = {p: _rec(*p) for p in gated.POINTS}
    md = gated.report_md(recs)
    assert "- complete: **18 of 18**" in md and "not run" not in md and "**partial**" not in md
    assert f"**{2 * 18} runs, {sum(2 * d for _, d in gated.POINTS)} results" in md


@pytest.mark.parametrize("points,msg", [("fp8_e4m3", "expected fmt:D"), ("fp8_e4m3:x", "expected fmt:D"),
                                        ("fp8_e4m3:16", "not among")])
def test_cli_rejects_bad_points(points, msg, capsys):
    assert main(["gated-rtl", "--points", points]) == 2
    assert msg in capsys.readouterr().err


@pytest.mark.full
def test_gated_point_nvfp4_d32():
    """One point of the gated regression through the RTL (block-scaled, the Dadda tree): every run
    bit-exact and within half an ulp (asserted inside :func:`tb.tiles.gated.run_point`)."""
    from tb.tiles import corpus

    rec = gated.run_point(list(corpus.tiles(gated.plan((("nvfp4", 32),))[("nvfp4", 32)])))
    assert rec["bit_exact"] and len(rec["runs"]) == 8
    assert rec["results"] == 32 * sum(r["m"] for r in rec["runs"])
    assert all(r["within_half"] == r["n"] for r in rec["runs"])
