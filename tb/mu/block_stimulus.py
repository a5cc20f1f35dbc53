"""Stimulus programs of the block-scaled matrix unit: random element codes with random scale codes.

The element codes and the row/first/last pattern come from :func:`tb.mu.stimulus.random_program`
on the element format; the scales are drawn here per ``ws`` beat and column and per ``x`` beat and
block (``docs/mu_interface.md``, last section).
"""

from __future__ import annotations

import numpy as np

from hw.formats import get_block_format

from .program import Program
from .stimulus import random_program

__all__ = ["with_scales", "random_scales", "random_block_program", "extreme_block_program"]


def random_scales(fmt: str, rng, shape, *, spread: int = 30, center: int = 0,
                  p_nan: float = 0.0) -> np.ndarray:
    """Scale codes of ``fmt``: E8M0 exponents uniform in ``center +- spread`` (clipped to the code
    range), UE4M3 codes uniform over the non-NaN codes (``spread`` and ``center`` unused), and a
    fraction ``p_nan`` of NaN codes (E8M0 ``0xFF``; UE4M3 ``0x7F`` or a code with bit 7 set)."""
    bf = get_block_format(fmt)
    if bf.scale == "e8m0":
        codes = np.clip(127 + center + rng.integers(-spread, spread + 1, shape), 0, 254)
        nan_codes = np.full(shape, 0xFF)
    else:
        codes = rng.integers(0, 0x7F, shape)
        nan_codes = np.where(rng.random(shape) < 0.5, 0x7F, 0x80 | rng.integers(0, 0x80, shape))
    return np.where(rng.random(shape) < p_nan, nan_codes, codes).astype(np.int64)


def with_scales(prog: Program, fmt: str, wscales, xscales) -> Program:
    """``prog`` (built on the element format) as a program of block-scaled ``fmt`` with these
    scale codes: ``wscales`` one (D/B, D) array per tile, ``xscales`` (N, D/B)."""
    out = Program(prog.width, fmt, prog.rows, prog.tiles, prog.x, prog.swap, prog.first, prog.last,
                  prog.row, list(wscales), np.asarray(xscales))
    out.validate()
    return out


def random_block_program(width: int, fmt: str, rows: int, *, seed: int = 0, spread: int = 30,
                         center: int = 0, p_nan: float = 0.0, **kw) -> Program:
    """:func:`tb.mu.stimulus.random_program` on the element format of ``fmt`` (``kw`` passed on:
    ``groups``, ``tiles_per_group``, ``beats_per_tile``, ``p_special``, ``style``) with random scale
    codes (:func:`random_scales`)."""
    bf = get_block_format(fmt)
    nb = bf.check_width(width)
    prog = random_program(width, bf.element, rows, seed=seed, **kw)
    rng = np.random.default_rng(seed + 1000)
    ws = [random_scales(fmt, rng, (nb, width), spread=spread, center=center, p_nan=p_nan / width)
          for _ in prog.tiles]
    xs = random_scales(fmt, rng, (prog.n_beats, nb), spread=spread, center=center, p_nan=p_nan)
    return with_scales(prog, fmt, ws, xs)


def extreme_block_program(width: int, fmt: str, rows: int, *, seed: int = 0) -> Program:
    """Scales at the ends of their range and far apart: E8M0 sums that overflow FP32 (to Inf) and
    underflow it (to zero with the sum's sign), blocks exactly ``F``, ``F + 1``, ``F + 2`` binades
    below the largest (the window's exact/round-to-odd edge), one NaN scale per tile; UE4M3 zero
    scales and the largest ones."""
    bf = get_block_format(fmt)
    nb = bf.check_width(width)
    prog = random_program(width, bf.element, rows, seed=seed, groups=2, tiles_per_group=2,
                          beats_per_tile=max(rows, 24))
    rng = np.random.default_rng(seed + 2000)
    n = prog.n_beats
    if bf.scale == "e8m0":
        picks = np.array([0, 1, 2, 60, 127, 200, 250, 254])
        xs = rng.choice(picks, (n, nb))
        step = rng.choice([0, 16, 31, 32, 33, 34, 40, 70], (n, nb))   # window edge at F = 32
        xs = np.clip(np.where(rng.random((n, nb)) < 0.5, 127 - step, xs), 0, 254)
        ws = [np.clip(rng.choice(picks, (nb, width)), 0, 254) for _ in prog.tiles]
        for t, w in enumerate(ws):
            w[rng.integers(nb), rng.integers(width)] = 0xFF
            if t % 2:
                w[:] = 127                                            # the x scales decide
    else:
        picks = np.array([0x00, 0x01, 0x07, 0x08, 0x38, 0x7E, 0x77, 0x7F, 0x80])
        xs = rng.choice(picks, (n, nb))
        ws = [rng.choice(picks, (nb, width)) for _ in prog.tiles]
    return with_scales(prog, fmt, ws, xs.astype(np.int64))
