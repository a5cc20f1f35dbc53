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

__all__ = ["BLOCK_UNITS", "block_program", "run_block_rtl"]

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


def block_program(tile: BlockTile, rows: int):
    """The :class:`tb.mu.program.Program` of ``tile`` on a unit with ``rows`` accumulator rows."""
    from tb.mu.block_stimulus import with_scales
    from tb.mu.program import Program, Tile

    m = tile.x.shape[0]
    bf = get_block_format(tile.fmt)
    tiles, wss, xss = [], [], []
    for g0 in range(0, m, rows):
        r = np.arange(g0, min(m, g0 + rows))
        for w, ws, x, xs, first, last in beats_block(tile):
            tiles.append(Tile(w, x[r], first=first, last=last, row=r - g0))
            wss.append(ws)
            xss.append(xs[r])
    prog = Program.from_tiles(tile.width, bf.element, rows, tiles)
    return with_scales(prog, tile.fmt, wss, np.concatenate(xss))


def run_block_rtl(tile: BlockTile, model_bits: np.ndarray, pauses: dict | None = None) -> dict:
    """Send ``tile`` through the RTL; check it against the model (``model_bits``: (M, D) from
    :func:`tb.tiles.block_tiles.replay_block`) and return the replay's counters and times.

    Raises
    ------
    AssertionError
        If any result bit differs, or a row is missing.
    """
    from tb.mu.replay import run_tiles

    d, m = tile.width, tile.x.shape[0]
    rows, suffix, tree = BLOCK_UNITS.get((d, tile.fmt), (4, "-tiles", None))
    prog = block_program(tile, rows)
    rr = run_tiles(d, tile.fmt, prog, rows=rows, pauses=pauses, check=False, name_suffix=suffix, tree=tree)
    assert not rr.mismatches, f"{tile.id}: RTL vs model: {rr.mismatches[:3]}"
    assert rr.y_bits.shape == (m, d), f"{tile.id}: {rr.y_bits.shape[0]} result rows, expected {m}"
    assert np.array_equal(rr.y_bits, model_bits), f"{tile.id}: RTL differs from replay_block"
    return {"id": tile.id, "cycles": rr.cycles, "sim_s": rr.sim_s, "wall_s": rr.wall_s,
            **rr.counters}
