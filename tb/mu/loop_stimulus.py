"""Stimulus for the ``loop = 2`` interlock: programs whose beats follow given row sequences.

The two-cycle FP32 accumulate (:class:`hw.mu.accumulate.Accumulator` with ``loop = 2``) makes an
``x`` beat that repeats the previous beat's row wait one cycle. :func:`row_sequences` lists the
sequences the tests send (rows in turn, runs of one row, random rows with repeats, a tile edge
that repeats a row) and :func:`rows_program` turns one into a program with random finite operands.
"""

from __future__ import annotations

import numpy as np

from .program import Program, Tile
from .stimulus import _codec, _element_mix

__all__ = ["row_sequences", "rows_program"]


def row_sequences(width: int, rows: int, seed: int = 0) -> dict:
    """Named lists of per-tile row sequences, each tile ``width`` beats (full rate).

    ``in_turn`` (rows 0, 1, .., R-1 repeated; at R = 1 every beat repeats), ``runs`` (each row
    three times in a row), ``random`` (uniform random rows, so about 1/R of the beats repeat) and
    ``edge`` (the second tile starts with the first tile's last row).
    """
    rng = np.random.default_rng(seed)
    turn = [i % rows for i in range(width)]
    runs = [(i // 3) % rows for i in range(width)]
    rand = [[int(r) for r in rng.integers(0, rows, width)] for _ in range(2)]
    edge = [turn, [turn[-1]] + turn[:-1]]
    return {"in_turn": [turn, turn], "runs": [runs, runs], "random": rand, "edge": edge}


def rows_program(width: int, fmt: str, rows: int, tiles_rows, seed: int = 0) -> Program:
    """One accumulation per row over every tile: a row's first beat carries ``first`` and its last
    beat ``last``; ``tiles_rows`` gives the row of each beat, per tile."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    flat = [r for t in tiles_rows for r in t]
    first_i = {r: flat.index(r) for r in set(flat)}
    last_i = {r: len(flat) - 1 - flat[::-1].index(r) for r in set(flat)}
    tiles, i = [], 0
    for t_rows in tiles_rows:
        n = len(t_rows)
        idx = range(i, i + n)
        first = np.array([first_i[r] == k for r, k in zip(t_rows, idx, strict=True)])
        last = np.array([last_i[r] == k for r, k in zip(t_rows, idx, strict=True)])
        w = _element_mix(codec, rng, (width, width), 0.0, "mixed")
        x = _element_mix(codec, rng, (n, width), 0.0, "mixed")
        tiles.append(Tile(w, x, first, last, np.array(t_rows, dtype=np.int64)))
        i += n
    return Program.from_tiles(width, fmt, rows, tiles)
