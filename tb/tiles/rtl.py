"""Adapter from real-tile runs to the matrix unit's replay harness (``tb.mu.replay.run_tiles``).

Verilator builds are the expensive part of the regression (minutes each on the CI machine), so a run
uses the build the matrix-unit tests already make for its (width, format) where there is one
(:data:`UNITS`: same parameters, same folder ``build/sim/<variant>``; ``tb/sim.py`` locks a folder
per user) and its own ``<variant>-tiles`` build otherwise, with 16 accumulator rows (4 for a
block-scaled format). A unit is the Dadda build synthesis maps, or the word-level tree (``words``:
proved to compute the same function, ``docs/verification.md``) where the Dadda build is too slow
(every own build at D = 128, every block-scaled unit from D = 32).

Every run goes through the unit in the accumulate mode the unit recommends for its format
(:func:`hw.mu.numerics.default_acc`: ``exact``, one rounding per K-long dot product; OCP MX in the
window anchored at the largest term) at the registry's default stages, and the model it is checked
against runs in the same mode (:func:`tb.tiles.replay.replay_model`: every result within half an
ulp of the exact K-long sum). The ``fp32`` mode has its own matrix-unit tests
(``tb/mu/test_matrix_unit.py``).

A unit with ``R`` accumulator rows serves the ``M`` rows of a run in ``ceil(M / R)`` groups; each
group is a full pass over the ``k_tiles`` weight tiles (the weights are fed again), exactly as a
sequencer would schedule it (:func:`program`; a block-scaled format also sends D/B ``ws`` beats per
k-tile and the activation scale codes in the ``x`` beats). Besides bit equality with the model,
:func:`run_rtl` checks the unit's counters against that schedule and the throughput contract: weight,
activation and result beats, MACs, and the cycle of the last result (:class:`perf.contract.Product`
of the run with ``R`` rows). :func:`run_rtl_many` sends several runs of one format and width through
one simulation (the block-scaled regression, :func:`rtl_records`).
"""

import time

import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format
from hw.mu.numerics import default_acc
from perf.contract import Product

from .corpus import Tile
from .replay import RunResult, baseline_error, beats, finish, replay_model

__all__ = ["UNITS", "unit_for", "program", "run_rtl", "run_rtl_many", "rtl_records"]

#: (width, fmt) -> (accumulator rows R, build-folder suffix, column tree) of the unit a run uses, in
#: the ``exact`` mode. Suffix "" shares the matrix-unit tests' build of the same parameters
#: (tb/mu/test_matrix_unit.py: the folder is named by the parameters; "quick" and "full" name the
#: set that builds it); the others (:func:`unit_for`) are our own "-tiles" builds. Tree None is the
#: design's default (Dadda).
UNITS = {
    # the D = 8 smoke runs (every format): the exact-mode D = 8 builds, all quick
    (8, "fp8_e4m3"): (1, "", None),          # w8-e4m3-xacc
    (8, "fp8_e5m2"): (3, "", None),          # w8-e5m2-r3-xacc
    (8, "fp4_e2m1"): (2, "", None),          # w8-e2m1-r2-xacc
    (8, "fp6_e3m2"): (1, "", None),          # w8-e3m2-xacc
    (8, "fp6_e2m3"): (3, "", None),          # w8-e2m3-r3-xacc
    (8, "int8"): (1, "", None),              # w8-int8-xacc
    (8, "int4"): (2, "", None),              # w8-int4-r2-xacc
    (32, "fp8_e4m3"): (16, "", None),        # full w32-e4m3-r16-xacc
    (32, "fp8_e5m2"): (16, "", "words"),     # quick w32-e5m2-r16-twords-xacc
    (32, "fp6_e3m2"): (16, "", "words"),     # quick w32-e3m2-r16-twords-xacc
    (32, "fp6_e2m3"): (16, "", "words"),     # quick w32-e2m3-r16-twords-xacc
    (32, "int8"): (16, "", None),            # full w32-int8-r16-xacc
    (32, "int4"): (16, "", None),            # full w32-int4-r16-xacc
    (64, "fp4_e2m1"): (16, "", None),        # quick w64-e2m1-r16-xacc
    (64, "fp8_e4m3"): (16, "", "words"),     # quick w64-e4m3-r16-twords-xacc
    (64, "fp8_e5m2"): (16, "", None),        # full w64-e5m2-r16-xacc
    (128, "fp8_e4m3"): (16, "", "words"),    # quick w128-e4m3-r16-twords-xacc
    (128, "int8"): (16, "", "words"),        # full w128-int8-r16-twords-xacc
    (128, "int4"): (16, "", "words"),        # full w128-int4-r16-twords-xacc
    # block-scaled, at the default 4 stages: D = 16 the Dadda tree (tb/mu quick NVFP4_EXACT
    # w16-r2-s4); from D = 32 the word-level tree (much faster to build and simulate; D = 64 MXFP8
    # E4M3 and D = 32 MXFP4 share tb/mu's WORDS_BUILDS, the others have their own folders)
    (16, "nvfp4"): (2, "", None),
    (32, "mxfp8_e4m3"): (4, "", "words"),
    (32, "mxfp4_e2m1"): (2, "", "words"),
    (32, "nvfp4"): (3, "", "words"),
    (32, "mxfp8_e5m2"): (2, "", "words"),
    (32, "mxfp6_e3m2"): (2, "", "words"),
    (32, "mxfp6_e2m3"): (2, "", "words"),
    **{(d, f): (4, "", "words") for d in (64, 128) for f in ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4")},
}


def unit_for(width: int, fmt: str) -> tuple:
    """(rows, suffix, tree) of the unit a run of this width and format uses."""
    # the others: own build, R = 16 (block-scaled: R = 4), Dadda below D = 128
    return UNITS.get((width, fmt), (4 if fmt in BLOCK_FORMATS else 16, "-tiles",
                                    "words" if width >= 128 else None))


def _unit_tiles(runs: list, rows: int) -> tuple:
    """The runs' :class:`tb.mu.program.Tile` s (per row group of ``rows`` and k-tile: the weight
    tile and the group's activation beats) and, for a block-scaled format, their weight and
    activation scale codes."""
    from tb.mu.program import Tile as UnitTile

    tiles, wss, xss = [], [], []
    for t in runs:
        m = t.x.shape[0]
        for g0 in range(0, m, rows):
            r = np.arange(g0, min(m, g0 + rows))
            for w, x, first, last, scales in beats(t):
                tiles.append(UnitTile(w, x[r], first=first, last=last, row=r - g0))
                if scales:
                    wss.append(scales["ws"])
                    xss.append(scales["xs"][r])
    return tiles, wss, xss


def program(tile, rows: int):
    """The :class:`tb.mu.program.Program` of ``tile`` (or of a list of tiles of one format and
    width, one after the other) on a unit with ``rows`` accumulator rows."""
    from tb.mu.program import Program
    from tb.mu.stimulus import with_scales

    runs = [tile] if isinstance(tile, Tile) else list(tile)
    fmt, width = runs[0].fmt, runs[0].width
    assert all((t.fmt, t.width) == (fmt, width) for t in runs), "one format and width per program"
    tiles, wss, xss = _unit_tiles(runs, rows)
    if fmt not in BLOCK_FORMATS:
        return Program.from_tiles(width, fmt, rows, tiles)
    prog = Program.from_tiles(width, get_block_format(fmt).element, rows, tiles)
    return with_scales(prog, fmt, wss, np.concatenate(xss))


def run_rtl(tile: Tile, res: RunResult, pauses: dict | None = None) -> RunResult:
    """Send ``tile`` through the RTL unit; attach its results and counters to ``res`` (the model run).

    Raises
    ------
    AssertionError
        If the unit's results differ from the model in any bit, or its counters from the contract.
    """
    from tb.mu.harness import emit_unit
    from tb.mu.replay import run_tiles

    d, m, fmt = tile.width, tile.x.shape[0], tile.fmt
    r_unit, suffix, tree = unit_for(d, fmt)
    unit_tiles = _unit_tiles([tile], r_unit)[0]   # per-tensor runs (block-scaled: run_rtl_many)
    prod = Product(m, tile.x.shape[1], d, d, rows=r_unit)   # row groups of R, one column tile
    sched = prod.schedule()
    assert sched.tile_beats == tuple(len(t.x) for t in unit_tiles), "the run is the contract's schedule"
    acc = default_acc(fmt)
    assert res.acc == acc, f"{tile.id}: the model ran in {res.acc!r}, the unit runs in {acc!r}"
    rr = run_tiles(d, fmt, unit_tiles, rows=r_unit, pauses=pauses, check=False, name_suffix=suffix,
                   tree=tree, acc=acc)
    assert not rr.mismatches, f"{tile.id}: RTL vs model: {rr.mismatches[:3]}"
    groups = prod.passes
    assert rr.y_bits.shape == (m, d), f"{tile.id}: {rr.y_bits.shape[0]} result rows, expected {m}"
    assert np.array_equal(rr.expected, res.bits), f"{tile.id}: replay's model differs from tb/tiles'"
    latency = emit_unit(d, fmt, r_unit, tree=tree, acc=acc)[1]
    c = dict(rr.counters)
    c.update(latency=latency, unit_rows=r_unit, row_groups=groups, last_y_cycle=int(rr.y_cycles[-1]),
             wall_s=rr.wall_s, sim_s=rr.sim_s)
    want = sched.counters()
    got = {k: c[k] for k in want}
    res = finish(res, rr.y_bits, c)
    assert got == want, f"{tile.id}: counters {got}, schedule {want}"
    if not pauses:
        res.cycles_contract = sched.cycles(latency)
        c["cycles_run"] = res.counters["cycles_run"] = int(rr.y_cycles[-1]) + 1
        assert c["cycles_run"] == res.cycles_contract, (
            f"{tile.id}: last result after {c['cycles_run']} cycles, the throughput contract says "
            f"{res.cycles_contract} ({sched.tiles} tiles, R {r_unit}, D {d}, latency {latency})")
    return res


def run_rtl_many(tiles: list, model_bits: list, pauses: dict | None = None) -> list:
    """Send several runs of one format and width through one simulation of the unit (one build
    check, one simulator start), one after the other; check each against its model bits
    (``model_bits``: (M, D) per run, :func:`tb.tiles.replay.replay_model`).

    Returns one dict per run: the run's ``cycles`` (from its first ``x`` beat to its last result),
    ``x_beats``, ``w_beats`` (as the program sends them; the unit's counters over the whole
    simulation are checked to be their sums) and the simulation's ``sim_s`` and ``wall_s`` shared
    out in proportion to the run's beats.

    Raises
    ------
    AssertionError
        If any result bit differs, a row is missing, or the unit's beat counters differ from the sent
        beats.
    """
    from tb.mu.replay import run_tiles

    d, fmt = tiles[0].width, tiles[0].fmt
    rows, suffix, tree = unit_for(d, fmt)
    prog = program(tiles, rows)
    rr = run_tiles(d, fmt, prog, rows=rows, pauses=pauses, check=False, name_suffix=suffix, tree=tree,
                   acc=default_acc(fmt))
    ids = ", ".join(t.id for t in tiles)
    assert not rr.mismatches, f"{ids}: RTL vs model: {rr.mismatches[:3]}"
    ms = [t.x.shape[0] for t in tiles]
    assert rr.y_bits.shape == (sum(ms), d), f"{ids}: {rr.y_bits.shape[0]} result rows, expected {sum(ms)}"
    # the beats the throughput contract schedules for each run (row groups of R, one column tile)
    scheds = [Product(m, t.x.shape[1], d, d, rows=rows).schedule() for m, t in zip(ms, tiles, strict=True)]
    x_beats, w_beats = [s.x_beats for s in scheds], [s.w_beats for s in scheds]
    assert (rr.counters["x_beats"], rr.counters["w_beats"]) == (sum(x_beats), sum(w_beats)), rr.counters
    out, y0, x0 = [], 0, 0
    for t, m, xb, wb, bits in zip(tiles, ms, x_beats, w_beats, model_bits, strict=True):
        assert np.array_equal(rr.y_bits[y0:y0 + m], bits), f"{t.id}: RTL differs from the model replay"
        share = (xb + wb) / (sum(x_beats) + sum(w_beats))
        out.append({"id": t.id, "cycles": int(rr.y_cycles[y0 + m - 1] - rr.x_cycles[x0]) + 1,
                    "x_beats": xb, "w_beats": wb, "sim_s": rr.sim_s * share, "wall_s": rr.wall_s * share})
        y0, x0 = y0 + m, x0 + xb
    return out


def rtl_records(runs: list) -> list:
    """The block-scaled RTL regression's records of ``runs`` (one format and width): each run through
    the model (:func:`~tb.tiles.replay.replay_model`), all of them through one simulation
    (:func:`run_rtl_many`) and per tensor in the element format (:func:`~tb.tiles.replay.baseline_error`).

    Raises
    ------
    AssertionError
        The RTL differs from the model in any bit, or the model's own checks fail.
    """
    t0 = time.perf_counter()
    models = [replay_model(t, default_acc(t.fmt)) for t in runs]
    rtls = run_rtl_many(runs, [m.bits for m in models])
    secs = (time.perf_counter() - t0) / len(runs)
    out = []
    for tile, model, rtl in zip(runs, models, rtls, strict=True):
        rows, _, tree = unit_for(tile.width, tile.fmt)
        out.append({"id": tile.id, "fmt": tile.fmt, "width": tile.width, "op": tile.meta["op"],
                    "mode": tile.meta["mode"], "m": int(tile.x.shape[0]), "k": tile.meta["k"],
                    "k_tiles": tile.k_tiles, "unit_rows": rows, "tree": tree, "acc": default_acc(tile.fmt),
                    "rtl_match": True,
                    "mean_rel": model.err_f32["mean_rel"], "max_rel": model.err_f32["max_rel"],
                    "base": baseline_error(tile), "cycles": rtl["cycles"], "x_beats": rtl["x_beats"],
                    "w_beats": rtl["w_beats"], "sim_s": rtl["sim_s"], "seconds": secs})
    return out
