"""Real-tile regression: MiniLM tiles through the numerics model and the matrix-unit RTL.

One test per planned run (:func:`tb.tiles.corpus.plan`): every study width
(:data:`hw.designs.STUDY_WIDTHS`) x matrix format (:data:`hw.formats.MATRIX_FORMATS`) x the eight op
classes x decode (M = 1) and prefill (M = 16), K accumulated over every tile of the real reduction.
The quick subset (``-m quick``, what ``make test`` runs) checks the model side of every op at D = 32
(E5M2) and D = 64 (E2M1, E4M3), one D = 128 run and one D = 32 run of each other format (E3M2, E2M3),
and sends the runs on the units CI builds (D = 32 E5M2, E3M2, E2M3, D = 64 E2M1, D = 128 E4M3) and
the D = 8 smoke runs (every format) through the RTL; the other RTL runs are ``full``.

Each run asserts: ``tb/mu/model.py`` and the independent ``tb/tiles/exact.py`` agree bit for bit,
the result is within the contract's rounding bound of float64, and (when the RTL harness
``tb.mu.replay`` exists) the RTL equals the model bit for bit with counters matching the contract.
Results are recorded for ``python -m tb.tiles report`` (reports/regression.md).

One quick run also goes through a D = 32 unit in the ``exact`` accumulate mode (the build the
matrix-unit tests make for ``w32-e4m3-r16-xacc``): bit-exact against the model in that mode, and
every result within half an FP32 ulp of the exact rational dot product (computed here with Python
integers, independently of the model).
"""

from fractions import Fraction

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


@pytest.mark.quick
def test_rtl_exact_mode():
    """A real prefill tile (MiniLM FFN up, M = 16, K = 384: 12 beats per accumulation) through the
    D = 32 E4M3 unit with ``acc = exact``: RTL == model bit for bit, and the error against the exact
    K-long dot product is at most 0.5 ulp (the ``fp32`` mode's error on the same tile is logged)."""
    from hw.mu.numerics import dot_widths
    from tb.mu.model import ElementCodec, half_ulp_fp32
    from tb.mu.program import Tile as UnitTile
    from tb.mu.replay import model_tiles, run_tiles

    (_, tile), = corpus.load_runs([RunSpec("ffn_up", "prefill", "fp8_e4m3", 32, 9000)])
    m, d = tile.x.shape[0], tile.width
    assert m <= 16
    tiles = [UnitTile(w, x, first=first, last=last, row=np.arange(m))
             for w, x, first, last in replay.beats(tile)]
    rr = run_tiles(d, tile.fmt, tiles, rows=16, acc="exact", name_suffix="")
    codec = ElementCodec(tile.fmt)
    assert not (codec.is_nan[tile.x].any() or codec.is_nan[tile.w].any())
    exact = codec.ints[tile.x].astype(object) @ codec.ints[tile.w].astype(object)   # (M, D) ints
    lsb = Fraction(2) ** dot_widths(tile.fmt, d).lsb_exp

    def max_ulps(bits):
        vals = bits.astype(np.uint32).view(np.float32)
        ulp = 2 * half_ulp_fp32(bits)
        return max(abs(Fraction(float(v)) - t * lsb) / Fraction(float(u))
                   for v, t, u in zip(vals.ravel(), exact.ravel(), ulp.ravel(), strict=True))

    err = max_ulps(rr.y_bits)
    fp32 = np.array([r.bits for r in model_tiles(d, tile.fmt, tiles, rows=16)])
    print(f"{tile.id}: max error exact mode {float(err):.3f} ulp, fp32 mode {float(max_ulps(fp32)):.3f}")
    assert err <= Fraction(1, 2), float(err)
