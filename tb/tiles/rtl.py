"""Adapter from a real-tile run to the matrix unit's replay harness (``tb.mu.replay.run_tiles``).

Verilator builds are the expensive part of the regression (minutes each on the CI machine), so a run
uses the build the matrix-unit tests already make for its (width, format) where there is one
(:data:`UNITS`: same parameters, same folder ``build/sim/<variant>``; ``tb/sim.py`` locks a folder
per user) and its own ``<variant>-tiles`` build otherwise, with 16 accumulator rows. A unit is the
Dadda build synthesis maps, or the word-level tree (``words``: proved to compute the same function,
``docs/verification.md``) where the Dadda build is too slow for CI (D = 128).

A unit with ``R`` accumulator rows serves the ``M`` rows of a run in ``ceil(M / R)`` groups; each
group is a full pass over the ``k_tiles`` weight tiles (the weights are fed again), exactly as a
sequencer would schedule it. Besides bit equality with the model, each run checks the unit's counters
against that schedule and the throughput contract: weight, activation and result beats, MACs, and the
cycle of the last result (:class:`perf.contract.Product` of the run with ``R`` rows).
"""

import numpy as np

from perf.contract import Product

from .corpus import Tile
from .replay import RunResult, beats, finish

__all__ = ["UNITS", "unit_for", "run_rtl"]

#: (width, fmt) -> (accumulator rows R, build-folder suffix, column tree). Suffix "" shares the
#: matrix-unit tests' build of the same parameters (tb/mu/test_matrix_unit.py BUILDS); "-tiles" is
#: our own. Tree None is the design's default (Dadda).
UNITS = {
    (8, "fp8_e4m3"): (1, "", None),          # tb/mu quick w8-e4m3 (the smoke runs)
    (8, "fp8_e5m2"): (3, "", None),          # tb/mu quick w8-e5m2-r3
    (8, "fp4_e2m1"): (2, "", None),          # tb/mu quick w8-e2m1-r2 (the E2M1 smoke runs)
    (16, "fp4_e2m1"): (2, "", None),         # tb/mu quick w16-e2m1-r2
    (32, "fp8_e5m2"): (16, "", None),        # tb/mu quick w32-e5m2-r16
    (64, "fp4_e2m1"): (16, "", None),        # tb/mu quick w64-e2m1-r16
    (128, "fp8_e4m3"): (16, "", "words"),    # tb/mu quick w128-e4m3-r16-twords
    (8, "fp6_e3m2"): (1, "", None),          # tb/mu quick w8-e3m2
    (8, "fp6_e2m3"): (3, "", None),          # tb/mu quick w8-e2m3-r3
    (32, "fp6_e3m2"): (16, "", None),        # tb/mu quick w32-e3m2-r16
    (32, "fp6_e2m3"): (16, "", None),        # tb/mu quick w32-e2m3-r16
    (64, "fp6_e3m2"): (16, "", None),        # tb/mu full w64-e3m2-r16
    (128, "fp6_e2m3"): (16, "", None),       # tb/mu full w128-e2m3-r16 (Dadda at D = 128)
    (8, "int8"): (2, "", None),              # tb/mu quick w8-int8-r2
    (8, "int4"): (2, "", None),              # tb/mu quick w8-int4-r2
}


def unit_for(width: int, fmt: str) -> tuple:
    """(rows, suffix, tree) of the unit a run of this width and format uses."""
    return UNITS.get((width, fmt), (16, "-tiles", None))   # the others: own Dadda build, R = 16


def run_rtl(tile: Tile, res: RunResult, pauses: dict | None = None) -> RunResult:
    """Send ``tile`` through the RTL unit; attach its results and counters to ``res`` (the model run).

    Raises
    ------
    AssertionError
        If the unit's results differ from the model in any bit, or its counters from the contract.
    """
    from tb.mu.harness import emit_unit
    from tb.mu.program import Tile as UnitTile
    from tb.mu.replay import run_tiles

    d, m, fmt = tile.width, tile.x.shape[0], tile.fmt
    r_unit, suffix, tree = unit_for(d, fmt)
    unit_tiles = []
    for g0 in range(0, m, r_unit):
        rows = np.arange(g0, min(m, g0 + r_unit))
        for w, x, first, last in beats(tile):
            unit_tiles.append(UnitTile(w, x[rows], first=first, last=last, row=rows - g0))
    prod = Product(m, tile.x.shape[1], d, d, rows=r_unit)   # row groups of R, one column tile
    sched = prod.schedule()
    assert sched.tile_beats == tuple(len(t.x) for t in unit_tiles), "the run is the contract's schedule"
    rr = run_tiles(d, fmt, unit_tiles, rows=r_unit, pauses=pauses, check=False, name_suffix=suffix,
                   tree=tree)
    assert not rr.mismatches, f"{tile.id}: RTL vs model: {rr.mismatches[:3]}"
    groups = prod.passes
    assert rr.y_bits.shape == (m, d), f"{tile.id}: {rr.y_bits.shape[0]} result rows, expected {m}"
    assert np.array_equal(rr.expected, res.bits), f"{tile.id}: replay's model differs from tb/tiles'"
    latency = emit_unit(d, fmt, r_unit, tree=tree)[1]
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
