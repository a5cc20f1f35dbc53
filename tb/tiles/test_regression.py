"""Real-tile regression: MiniLM tiles through the numerics model and the matrix-unit RTL.

One test per planned run (:func:`tb.tiles.corpus.plan`): every study width
(:data:`hw.designs.STUDY_WIDTHS`) x matrix format (:data:`hw.formats.MATRIX_FORMATS`) x the eight op
classes x decode (M = 1) and prefill (M = 16), K accumulated over every tile of the real reduction.
The quick subset (``-m quick``, what ``make test`` runs) checks the model side of every op at D = 32
(E5M2) and D = 64 (E2M1, E4M3), one D = 128 run and one D = 32 run of each other format (E3M2, E2M3),
and sends the runs on the units CI builds (the Dadda tree at D = 32 E5M2, E3M2, E2M3 and D = 64
E2M1; the word-level tree at D = 128 E4M3) and the D = 8 smoke runs (every format) through the
RTL; the other RTL runs are ``full``.

Each run asserts: ``tb/mu/model.py`` and the independent ``tb/tiles/exact.py`` agree bit for bit,
the result is within the contract's rounding bound of float64, and (when the RTL harness
``tb.mu.replay`` exists) the RTL equals the model bit for bit with counters matching the contract.
Results are recorded for ``python -m tb.tiles report`` (reports/regression.md).

Real E4M3 tiles also go through units in the ``exact`` accumulate mode at D = 32, 64 and 128 in the
quick set (:data:`EXACT_UNITS`, the builds the matrix-unit tests make: Dadda at D = 32, the
word-level tree at 64 and 128): bit-exact against the model in that mode, and every result within
half an FP32 ulp of the exact rational dot product (Python integers in ``tb/tiles/exact.py``,
independently of the model).
"""

import numpy as np
import pytest

from hw.formats import get_format
from tb.tiles import corpus, replay, report
from tb.tiles.corpus import RunSpec

QUICK = {corpus._run_id(s) for s in corpus.plan(full=False)}
RUNS = [pytest.param(s, id=corpus._run_id(s),
                     marks=pytest.mark.quick if corpus._run_id(s) in QUICK else pytest.mark.full)
        for s in corpus.plan(full=True)]
SMOKE = [pytest.param(s, id=f"smoke-{corpus._run_id(s)}", marks=pytest.mark.quick) for s in corpus.smoke()]
RUNS += SMOKE
# CI sends the quick runs on the units it builds anyway through the RTL (corpus.rtl_quick: D = 32,
# 64 and 128, every op and format); the rest of the plan is `full`.
RTL_QUICK = {corpus._run_id(s) for s in corpus.rtl_quick()}
RTL_RUNS = [pytest.param(s, id=corpus._run_id(s),
                         marks=pytest.mark.quick if corpus._run_id(s) in RTL_QUICK else pytest.mark.full)
            for s in corpus.plan(full=True)]
RTL_RUNS += SMOKE


@pytest.mark.parametrize("spec", RUNS)
def test_model_replay(spec):
    """Numerics model vs the independent exact model, the float64 bound, and the cost of the format."""
    (_, tile), = corpus.load_runs([spec])
    res = replay.replay_model(tile)
    f = get_format(spec.fmt)
    if f.emax - f.emin + 1 >= 7:
        # formats with 7 or more binades of normals (E4M3, E5M2, E3M2) stay close to the float32
        # product of the real model per tensor; E2M1 and E2M3 (3) lose small activations to outliers
        assert res.err_f32["mean_rel"] < 0.2, res.err_f32
    old = report.load_all().get(res.id)
    if old is None or old.get("rtl_match") is None:
        report.save(res)


@pytest.mark.parametrize("spec", RTL_RUNS)
def test_rtl_replay(spec):
    """The matrix unit RTL on the same run: bit-exact against the model, counters against the contract."""
    from tb.tiles.rtl import run_rtl

    (_, tile), = corpus.load_runs([spec])
    res = run_rtl(tile, replay.replay_model(tile))
    report.save(res)


#: Units of the exact-mode real-tile runs: (width, column tree), E4M3, R = 16. Each shares the
#: matrix-unit tests' build of the same parameters (tb/mu/test_matrix_unit.py): the Dadda tree at
#: D = 32, the word-level tree (the same function, docs/verification.md) at D = 64 and 128.
EXACT_UNITS = [pytest.param(32, None, id="d32"), pytest.param(64, "words", id="d64-twords"),
               pytest.param(128, "words", id="d128-twords")]
#: The real runs each exact-mode unit replays: a prefill tile (M = 16, K = 384) and a decode tile
#: with the longest reduction (M = 1, K = 1536: 48 beats per accumulation at D = 32, 12 at D = 128).
EXACT_RUNS = (("ffn_up", "prefill"), ("ffn_down", "decode"))


@pytest.mark.quick
@pytest.mark.parametrize("width,tree", EXACT_UNITS)
def test_rtl_exact_mode(width, tree):
    """Real tiles through the E4M3 unit with ``acc = exact``: RTL == model (in that mode) bit for
    bit, and every result within 0.5 ulp of the exact K-long dot product, computed with Python
    integers independently of the model by :func:`tb.tiles.exact.ulp_errors` (the ``fp32`` mode's
    error on the same tiles is logged)."""
    from tb.mu.model import ElementCodec
    from tb.mu.program import Tile as UnitTile
    from tb.mu.replay import model_tiles, run_tiles
    from tb.tiles import exact

    specs = [RunSpec(op, mode, "fp8_e4m3", width, 9000 + i) for i, (op, mode) in enumerate(EXACT_RUNS)]
    codec = ElementCodec("fp8_e4m3")
    tiles, runs = [], []
    for _, tile in corpus.load_runs(specs):
        m = tile.x.shape[0]
        assert m <= 16 and tile.width == width
        assert not (codec.is_nan[tile.x].any() or codec.is_nan[tile.w].any())
        tiles += [UnitTile(w, x, first=first, last=last, row=np.arange(m))
                  for w, x, first, last in replay.beats(tile)]
        runs.append(tile)
    rr = run_tiles(width, "fp8_e4m3", tiles, rows=16, acc="exact", name_suffix="", tree=tree)
    fp32 = np.array([r.bits for r in model_tiles(width, "fp8_e4m3", tiles, rows=16)])
    assert rr.y_bits.shape == fp32.shape == (sum(t.x.shape[0] for t in runs), width), rr.y_bits.shape

    def max_ulps(bits, acc):       # ulp_errors asserts the mode's bound on every result
        r0, worst = 0, 0.0
        for t in runs:
            m = t.x.shape[0]
            e = exact.ulp_errors(t.x, t.w, "fp8_e4m3", width, bits[r0:r0 + m], acc)
            worst = max(worst, e["max_ulps"])
            r0 += m
        return worst

    err = max_ulps(rr.y_bits, "exact")
    print(f"D={width} E4M3 {', '.join(f'{op}-{mode}' for op, mode in EXACT_RUNS)}: max error exact "
          f"mode {err:.3f} ulp, fp32 mode {max_ulps(fp32, 'fp32'):.3f} ulp")
    assert err <= 0.5, err
