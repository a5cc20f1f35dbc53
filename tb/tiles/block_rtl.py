"""Real MiniLM block-scaled tile runs through the block-scaled unit's RTL.

The block-scaled counterpart of :mod:`tb.tiles.rtl`: a :class:`tb.tiles.block_tiles.BlockTile` is
sent as the unit's streams carry it (per row group of R and per k-tile: D ``w`` beats, D/B ``ws``
beats, the group's ``x`` beats with their activation scales; ``first`` on k-tile 0, ``last`` on the
last one) through :func:`tb.mu.replay.run_tiles`, and the received rows are compared bit for bit with
the block model (the replay's own check) and with :func:`tb.tiles.block_tiles.replay_block`'s bits.
"""

import numpy as np

from hw.formats import get_block_format

from .block_tiles import BlockTile, beats_block

__all__ = ["BLOCK_UNITS", "block_program", "run_block_rtl", "run_block_rtl_many"]

#: (width, fmt) -> (accumulator rows R, build-folder suffix, column tree). Suffix "" with the default
#: (Dadda) tree shares the build of tb/mu/test_matrix_unit.py BLOCK_BUILDS with the same parameters;
#: D = 64 and 128 use the word-level tree (the same function, proved equal; much faster to build and
#: simulate), whose variant names its own build folder.
BLOCK_UNITS = {
    (16, "nvfp4"): (2, "", None),
    (32, "mxfp8_e4m3"): (4, "", None),
    (32, "mxfp4_e2m1"): (2, "", None),
    (32, "nvfp4"): (3, "", None),
    (32, "mxfp8_e5m2"): (2, "", None),
    (32, "mxfp6_e3m2"): (2, "", None),
    (32, "mxfp6_e2m3"): (2, "", None),
    **{(d, f): (4, "", "words") for d in (64, 128) for f in ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4")},
}


def block_program(tile, rows: int):
    """The :class:`tb.mu.program.Program` of ``tile`` (or of a list of tiles of one format and
    width, one after the other) on a unit with ``rows`` accumulator rows."""
    from tb.mu.program import Program, Tile
    from tb.mu.stimulus import with_scales

    runs = [tile] if isinstance(tile, BlockTile) else list(tile)
    tiles, wss, xss = [], [], []
    for t in runs:
        m = t.x.shape[0]
        for g0 in range(0, m, rows):
            r = np.arange(g0, min(m, g0 + rows))
            for w, ws, x, xs, first, last in beats_block(t):
                tiles.append(Tile(w, x[r], first=first, last=last, row=r - g0))
                wss.append(ws)
                xss.append(xs[r])
    fmt, width = runs[0].fmt, runs[0].width
    assert all((t.fmt, t.width) == (fmt, width) for t in runs), "one format and width per program"
    prog = Program.from_tiles(width, get_block_format(fmt).element, rows, tiles)
    return with_scales(prog, fmt, wss, np.concatenate(xss))


def run_block_rtl(tile: BlockTile, model_bits: np.ndarray, pauses: dict | None = None) -> dict:
    """Send ``tile`` through the RTL; check it against the model (``model_bits``: (M, D) from
    :func:`tb.tiles.block_tiles.replay_block`) and return the replay's counters and times.

    Raises
    ------
    AssertionError
        If any result bit differs, or a row is missing.
    """
    (out,) = run_block_rtl_many([tile], [model_bits], pauses)
    return out


def run_block_rtl_many(tiles: list, model_bits: list, pauses: dict | None = None) -> list:
    """Send several runs of one format and width through one simulation of the unit (one build
    check, one simulator start), one after the other; check each against its model bits.

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
    from perf.contract import Product
    from tb.mu.replay import run_tiles

    d, fmt = tiles[0].width, tiles[0].fmt
    rows, suffix, tree = BLOCK_UNITS.get((d, fmt), (4, "-tiles", None))
    prog = block_program(tiles, rows)
    rr = run_tiles(d, fmt, prog, rows=rows, pauses=pauses, check=False, name_suffix=suffix, tree=tree)
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
        assert np.array_equal(rr.y_bits[y0:y0 + m], bits), f"{t.id}: RTL differs from replay_block"
        share = (xb + wb) / (sum(x_beats) + sum(w_beats))
        out.append({"id": t.id, "cycles": int(rr.y_cycles[y0 + m - 1] - rr.x_cycles[x0]) + 1,
                    "x_beats": xb, "w_beats": wb, "sim_s": rr.sim_s * share, "wall_s": rr.wall_s * share})
        y0, x0 = y0 + m, x0 + xb
    return out
