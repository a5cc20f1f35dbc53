"""Real-tile regression: MiniLM tiles through the numerics model and the matrix-unit RTL.

One test per planned run (:func:`tb.tiles.corpus.plan`): every study width
(:data:`hw.designs.STUDY_WIDTHS`) x matrix format (:data:`hw.formats.MATRIX_FORMATS`) x the eight op
classes x decode (M = 1) and prefill (M = 16), K accumulated over every tile of the real reduction.
The quick subset (``-m quick``, what ``make test`` runs) checks the model side of every op at D = 32
(E5M2) and D = 64 (E2M1, E4M3), one D = 128 run and one D = 32 run of each other format (E3M2, E2M3,
INT8, INT4), and sends runs on the units CI builds through the RTL (every op at D = 32 in E5M2 and
the FP6 runs on the word-level tree; every op once at D = 64, half of them in E2M1 on the Dadda tree
and half in E4M3 on the word-level tree; and the D = 8 smoke runs of every format); the other RTL
runs, D = 128 among them, are ``full``.

Each run asserts: the model in the ``fp32`` mode and the independent ``tb/tiles/exact.py`` agree bit
for bit; the model in the unit's recommended mode (:func:`hw.mu.numerics.default_acc`: ``exact``)
has every result within half an FP32 ulp of the exact K-long dot product (Python integers,
:func:`tb.tiles.exact.ulp_errors`); both stay within their contract's rounding bound of float64;
and (RTL runs) the unit in that mode equals the model bit for bit with counters matching the
contract. Results are recorded for ``python -m tb.tiles report`` (reports/regression.md).

Block-scaled rows (OCP MX, NVFP4): every run of the block plan (:func:`tb.tiles.corpus.plan` with
``block=True``; quick: every block format at D = 32, 64 and 128 and every op class; full: 288 runs)
replays beat by beat through the model with the scale codes and must equal the whole-matmul path bit
for bit and stay within the contract's bound (asserted in ``replay_model``). Through the RTL, in the
recommended mode (``exact``, OCP MX in the window; the model's results then checked within half an
ulp of the exact sum), the quick set sends two NVFP4 runs through the D = 16 build of
tb/mu/test_matrix_unit.py's ``NVFP4_EXACT`` (stalls on every stream in the first); ``full`` sends
MXFP8 E4M3 and MXFP4 at D = 32, NVFP4 at D = 32 and MXFP4 at D = 64 (the word-level tree builds of
:data:`tb.tiles.rtl.UNITS`) with stalls, and the block-scaled RTL regression (96 runs, no stalls,
recorded for ``python -m tb.tiles block-rtl`` and ``report``: reports/block_rtl.md,
reports/regression.md). The quick tests also check that regression's plan and its report section on
hand-made records.
"""

from collections import Counter

import numpy as np
import pytest

from hw.formats import BLOCK_FORMATS, get_format
from hw.mu.numerics import default_acc
from tb.tiles import corpus, minilm, replay, report
from tb.tiles.corpus import RunSpec

QUICK = {corpus._run_id(s) for s in corpus.plan(full=False)}
RUNS = [pytest.param(s, id=corpus._run_id(s),
                     marks=pytest.mark.quick if corpus._run_id(s) in QUICK else pytest.mark.full)
        for s in corpus.plan(full=True)]
SMOKE = [pytest.param(s, id=f"smoke-{corpus._run_id(s)}", marks=pytest.mark.quick) for s in corpus.smoke()]
RUNS += SMOKE
# CI sends quick runs on the units it builds anyway through the RTL (corpus.rtl_quick: D = 32
# and 64, every op, every float format); the rest of the plan, D = 128 among it, is `full`.
RTL_QUICK = {corpus._run_id(s) for s in corpus.rtl_quick()}
RTL_RUNS = [pytest.param(s, id=corpus._run_id(s),
                         marks=pytest.mark.quick if corpus._run_id(s) in RTL_QUICK else pytest.mark.full)
            for s in corpus.plan(full=True)]
RTL_RUNS += SMOKE


@pytest.mark.parametrize("spec", RUNS)
def test_model_replay(spec):
    """Numerics model vs the independent exact model (``fp32`` mode, bit for bit) and the exact sum
    (the recommended mode, half an ulp), the float64 bounds, and the cost of the format."""
    (_, tile), = corpus.load_runs([spec])
    replay.replay_model(tile)
    res = replay.replay_model(tile, default_acc(spec.fmt))
    f = get_format(spec.fmt)
    if f.emax - f.emin + 1 >= 7:
        # formats with 7 or more binades of normals (E4M3, E5M2, E3M2) stay close to the float32
        # product of the real model per tensor; E2M1 and E2M3 (3) lose small activations to outliers
        assert res.err_f32["mean_rel"] < 0.2, res.err_f32
    old = report.load_all().get(res.id)
    if old is None or old.get("rtl_match") is None or old.get("acc", "fp32") != res.acc:
        report.save(res)


@pytest.mark.parametrize("spec", RTL_RUNS)
def test_rtl_replay(spec):
    """The matrix unit RTL on the same run in the recommended mode: bit-exact against the model (whose
    results are within half an ulp of the exact sum), counters against the contract."""
    from tb.tiles.rtl import run_rtl

    (_, tile), = corpus.load_runs([spec])
    res = run_rtl(tile, replay.replay_model(tile, default_acc(spec.fmt)))
    assert res.acc == "exact"
    report.save(res)


# -- block-scaled rows -------------------------------------------------------------------------
def _check_block(runs):
    results = [replay.replay_model(t) for t in corpus.tiles(runs)]
    assert len(results) == len(runs)
    # a working quantization, per format on average (single FP4 runs can lose everything: a decode
    # P.V row whose one large probability meets V values below E2M1's range in their block)
    for fmt in {r.fmt for r in results}:
        errs = [r.err_f32["mean_rel"] for r in results if r.fmt == fmt]
        assert sum(errs) / len(errs) < (0.3 if "fp4" in fmt else 0.15), (fmt, errs)
    return results


@pytest.mark.quick
def test_quick_block_runs():
    runs = corpus.plan(full=False, block=True)
    assert {s.fmt for s in runs} == set(BLOCK_FORMATS) and {s.op for s in runs} == set(minilm.OPS)
    assert {s.width for s in runs} == {32, 64, 128}
    _check_block(runs)


@pytest.mark.full
def test_full_block_runs():
    runs = corpus.plan(full=True, block=True)
    assert len(runs) >= 90
    _check_block(runs)


def _block_rtl(points, pauses=None):
    from tb.tiles.rtl import run_rtl_many, unit_for

    runs = [RunSpec(minilm.OPS[(3 * i + 1) % len(minilm.OPS)], mode, fmt, width, 900 + i)
            for i, (fmt, width, mode) in enumerate(points)]
    for i, tile in enumerate(corpus.tiles(runs)):
        model = replay.replay_model(tile, default_acc(tile.fmt))
        (got,) = run_rtl_many([tile], [model.bits], pauses=pauses if i == 0 else None)
        m, rows = tile.x.shape[0], unit_for(tile.width, tile.fmt)[0]
        groups = -(-m // rows)
        assert got["x_beats"] == m * tile.k_tiles, got
        assert got["w_beats"] == groups * tile.k_tiles * tile.width, got


STALLS = {"w": "random:0.3", "ws": "random:0.5", "x": "random:0.3", "y": "random:0.3"}


@pytest.mark.quick
@pytest.mark.parametrize("spec", [RunSpec("ffn_up", "prefill", "fp8_e5m2", 32, 0),
                                  RunSpec("ffn_up", "prefill", "mxfp8_e4m3", 64, 0)],
                         ids=["per-tensor", "block"])
def test_exact_mode_replay_rejects_a_result_off_the_exact_sum(spec, monkeypatch):
    """``replay_model`` in the exact mode checks the model's results against the exact K-long sum
    (half an ulp, Python integers): the model's own pass, the same results with one moved by two
    ulps do not."""
    tile, = corpus.tiles([spec])
    good = replay.replay_model(tile, "exact")
    bits = good.bits.copy()
    r, j = np.argwhere(bits.view(np.float32) != 0)[0]
    bits[r, j] += 2
    real = replay._model_bits
    monkeypatch.setattr(replay, "_model_bits", lambda t, acc: (bits, *real(t, acc)[1:]))
    with pytest.raises(AssertionError, match="exceeds the exact bound"):
        replay.replay_model(tile, "exact")


@pytest.mark.quick
def test_quick_block_rtl():
    _block_rtl([("nvfp4", 16, "prefill"), ("nvfp4", 16, "decode")], pauses=STALLS)


@pytest.mark.full
def test_full_block_rtl():
    _block_rtl([("mxfp8_e4m3", 32, "prefill"), ("mxfp4_e2m1", 32, "decode"), ("nvfp4", 32, "prefill"),
                ("mxfp4_e2m1", 64, "prefill"), ("mxfp8_e4m3", 32, "decode"), ("mxfp4_e2m1", 32, "prefill")],
               pauses=STALLS)


@pytest.mark.quick
def test_block_rtl_plan_covers_every_point_with_both_modes():
    plan = corpus.plan_block_rtl()
    assert len(plan) >= 90 and len({corpus._run_id(s) for s in plan}) == len(plan)
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


@pytest.mark.quick
def test_block_rtl_section_counts_averages_and_per_op_verdict(tmp_path):
    recs = [_rec("mxfp4_e2m1", 32, "q", 0.10, 0.40), _rec("mxfp4_e2m1", 32, "k", 0.20, 0.30, "prefill"),
            _rec("mxfp4_e2m1", 64, "q", 0.50, 0.40)]
    md = report.block_rtl_md({r["id"]: r for r in recs}, 96)
    assert "Runs recorded: **3** of the 96 planned" in md
    assert "bit-exact against `tb/mu/model.py`: **3**" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| mxfp4_e2m1 vs fp4_e2m1 | 32 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:] == ["2", "2", "3", "0.150", "0.350", "0.400", "1.200"]
    q = next(ln for ln in md.splitlines() if ln.startswith("| q |"))
    assert "0.300 / 0.400 |" in q and "wins" not in q          # D = 64 loses: no verdict
    k = next(ln for ln in md.splitlines() if ln.startswith("| k |"))
    assert "0.200 / 0.300 wins" in k
    assert "per-tensor one: mxfp4_e2m1 2 of 2." in md       # class means: q 0.30 < 0.40, k 0.20 < 0.30
    assert "Not run yet:" in md and "nvfp4 D = 128" in md
    # the section replaces itself in a report, leaving the hand-written text around it, also a
    # section that an older command generated
    path = tmp_path / "r.md"
    path.write_text("# title\n\nprose\n\n<!-- begin generated by `old`; do not edit -->\nx\n"
                    f"{report.END}\n")
    report.write_section(md, path)
    report.write_section(report.block_rtl_md({}, 96), path)
    text = path.read_text()
    assert text.startswith("# title\n\nprose\n") and text.count("<!-- begin generated by") == 1
    assert report.BEGIN in text and "Runs recorded: **0**" in text and "`old`" not in text


@pytest.mark.parametrize("point", [pytest.param(p, id=f"{p[0]}-d{p[1]}", marks=pytest.mark.full)
                                   for p in corpus.BLOCK_RTL_POINTS])
def test_block_rtl_regression(point):
    """The planned runs of one point through one RTL simulation (bit-exact against the model, beat
    counters as sent), recorded for the report."""
    from tb.tiles.rtl import rtl_records

    runs = [s for s in corpus.plan_block_rtl() if (s.fmt, s.width) == point]
    for rec in rtl_records(list(corpus.tiles(runs))):
        assert rec["rtl_match"] and rec["cycles"] > 0
        report.save_record(rec, report.results_dir(block=True))


@pytest.mark.quick
def test_regression_report_holds_the_block_scaled_runs():
    """One report: the block-scaled RTL runs get their own section (counts, errors, ulps against the
    exact sum), and a partial block run is named in the first lines."""
    ulps = {"fp32": {"max_ulps": 0.75, "bound_ulps": 3.0, "bound_used": 0.25, "within_half": 3, "n": 4},
            "exact": {"max_ulps": 0.5, "bound_ulps": 0.5, "bound_used": 1.0, "within_half": 4, "n": 4}}
    recs = [dict(_rec("mxfp4_e2m1", 32, "q", 0.10, 0.40), ulps=ulps, acc="exact"),
            dict(_rec("mxfp4_e2m1", 32, "k", 0.20, 0.30, "prefill"), ulps=ulps, acc="exact")]
    md = report.regression_md({}, "test", None, {r["id"]: r for r in recs}, 96)
    head = md.split("## ")[0]
    assert "0 of 0 per-tensor runs and 2 of 96 block-scaled runs went through the RTL" in head
    sec = md.split("## Block-scaled formats (OCP MX, NVFP4) through the RTL")[1]
    assert "Runs: **2** of the 96 planned" in sec and "bit-exact against `tb/mu/model.py`: **2**" in sec
    row = next(ln for ln in sec.splitlines() if ln.startswith("| mxfp4_e2m1 | 32 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # the RTL's mode (the record's acc) in the run table; both modes of the model in the ulp table
    assert cells[2:] == ["4, dadda", "exact", "2", "2", "0.150", "0.350", "0.400", "1.200", "0.500",
                         "8 of 8"]
    assert "| mxfp4_e2m1 | 32 | fp32 | 2 | 8 | 0.750 | 3 | 0.250 | 6 (75.00%) |" in sec
    assert "| mxfp4_e2m1 | 32 | exact | 2 | 8 | 0.500 | 0.5 | 1.000 | 8 (100.00%) |" in sec
    assert "Not run through the RTL yet:" in sec and "nvfp4 D = 128" in sec
    assert "Block-scaled formats" not in report.regression_md({}, "test")   # no plan: no section
