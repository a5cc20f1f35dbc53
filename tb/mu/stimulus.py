"""Stimulus generators for the matrix unit: every product, random, adversarial, throughput programs;
on block-scaled formats, random and extreme scale codes beside the element codes
(``docs/mu_interface.md``, last section).

Each function returns a :class:`tb.mu.program.Program`; none of them looks at the design's output.
Codes are raw element codes of the format (``hw.formats``); code 0 is +0 in every format.
"""

from __future__ import annotations

import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format

from .model import ElementCodec
from .program import Program, Tile

__all__ = ["every_product", "product_oracle", "random_program", "cancellation", "max_magnitude", "specials",
           "subnormals", "two_scale", "full_rate", "batch_one", "ADVERSARIAL", "long_cancellation",
           "accumulation_lengths", "random_scales", "with_scales", "extreme_block_program"]


def _codec(fmt):
    return ElementCodec(fmt)


def _finite(codec) -> np.ndarray:
    return np.nonzero(~(codec.is_nan | codec.is_inf))[0]


def _neg(codec, codes):
    return codec.fmt.negate(codes)


def _negatable(codec, codes) -> np.ndarray:
    """``codes`` without any whose negation is out of range (an integer format's most negative)."""
    return codes[codec.ints[codes] != -codec.max_int] if codec.fmt.is_integer else codes


def _smallest(codec, n: int = 3) -> np.ndarray:
    """Codes of the ``n`` smallest positive values, then of their negations."""
    fin = _finite(codec)
    pos = fin[codec.ints[fin] > 0]
    pos = pos[np.argsort(codec.ints[pos], kind="stable")][:n]
    return np.concatenate([pos, _neg(codec, pos)])


def every_product(width: int, fmt: str, rows: int = 1) -> Program:
    """All ``2**b x 2**b`` code pairs: tile t holds a chunk of D ``b`` codes in row ``k0(t)`` (zeros
    elsewhere) and serves one one-hot beat per ``a`` code at position ``k0``, so column j of beat a
    is exactly ``a * b_j``. ``k0`` moves from tile to tile to use different multipliers."""
    codec = _codec(fmt)
    n = 1 << codec.fmt.bits
    tiles = []
    chunks = [np.arange(s, min(s + width, n)) for s in range(0, n, width)]
    for t, chunk in enumerate(chunks):
        k0 = (t * 5 + 3) % width
        w = np.zeros((width, width), dtype=np.int64)
        w[k0, : len(chunk)] = chunk
        x = np.zeros((n, width), dtype=np.int64)
        x[:, k0] = np.arange(n)
        tiles.append(Tile(w, x, True, True, np.arange(n) % rows))
    return Program.from_tiles(width, fmt, rows, tiles)


def product_oracle(fmt: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """FP32 bits of single products by float64 (exact for these formats) with the contract's rules:
    NaN canonical, an exact zero is +0. Independent of the model's integer path."""
    codec = _codec(fmt)
    with np.errstate(invalid="ignore"):
        p = codec.value(a) * codec.value(b)
    bits = p.astype(np.float32).view(np.uint32).astype(np.int64)
    bits = np.where(np.isnan(p), 0x7FC00000, bits)
    return np.where(p == 0, 0, bits)


def _element_mix(codec, rng, shape, p_special=0.0, style="mixed"):
    fin = _finite(codec)
    if style == "uniform":
        out = rng.choice(fin, size=shape)
    else:
        # magnitudes biased to a few exponents per tile so that sums span wide ranges and ties occur
        mb = codec.fmt.man_bits
        exps = rng.choice(np.arange(codec.fmt.exp_max_field + 1), size=3)
        e = rng.choice(exps, size=shape)
        code = (e << mb) | rng.integers(0, 1 << mb, size=shape)
        code |= np.where(rng.random(shape) < 0.5, codec.fmt.sign_bit, 0)
        out = np.where(np.isin(code, fin), code, rng.choice(fin, size=shape))
        out = np.where(rng.random(shape) < 0.3, rng.choice(fin, size=shape), out)
        out = np.where(rng.random(shape) < 0.1, 0, out)
    if p_special and codec.has_specials:
        spec = np.nonzero(codec.is_nan | codec.is_inf)[0]
        out = np.where(rng.random(shape) < p_special, rng.choice(spec, size=shape), out)
    return out.astype(np.int64)


def random_program(width: int, fmt: str, rows: int, *, groups: int = 3, tiles_per_group: int = 3,
                   beats_per_tile: int | None = None, seed: int = 0, p_special: float = 0.0,
                   style: str = "mixed", spread: int = 30, center: int = 0,
                   p_nan: float = 0.0) -> Program:
    """Accumulations spanning several tiles, on random rows.

    Each group of tiles accumulates every row from a ``first`` beat in its first tile to a ``last``
    beat in its final tile; in between, beats hit random rows and some emit early (``last`` without
    ending the accumulation). Weights and activations come from :func:`_element_mix`.

    A block-scaled ``fmt`` (:data:`hw.formats.BLOCK_FORMATS`) draws the element codes on its
    element format and random scale codes beside them (:func:`random_scales`: ``spread``,
    ``center``; a fraction ``p_nan`` of NaN scale codes, per ``x`` block and per weight column).
    """
    bf = BLOCK_FORMATS.get(fmt)
    if bf is not None:
        nb = bf.check_width(width)
        prog = random_program(width, bf.element, rows, groups=groups, tiles_per_group=tiles_per_group,
                              beats_per_tile=beats_per_tile, seed=seed, p_special=p_special,
                              style=style)
        rng = np.random.default_rng(seed + 1000)
        ws = [random_scales(fmt, rng, (nb, width), spread=spread, center=center, p_nan=p_nan / width)
              for _ in prog.tiles]
        xs = random_scales(fmt, rng, (prog.n_beats, nb), spread=spread, center=center, p_nan=p_nan)
        return with_scales(prog, fmt, ws, xs)
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    n = beats_per_tile or max(rows, width // 2)
    tiles = []
    for _ in range(groups):
        started = np.zeros(rows, dtype=bool)
        for t in range(tiles_per_group):
            row = rng.integers(0, rows, n)
            if t == 0:
                row[:rows] = rng.permutation(rows)
            if t == tiles_per_group - 1:
                row[-rows:] = rng.permutation(rows)
            first = np.zeros(n, dtype=bool)
            for i, r in enumerate(row):
                if not started[r]:
                    first[i], started[r] = True, True
            last = rng.random(n) < 0.2
            if t == tiles_per_group - 1:
                last[-rows:] = True
            w = _element_mix(codec, rng, (width, width), p_special / width, style)
            x = _element_mix(codec, rng, (n, width), p_special, style)
            tiles.append(Tile(w, x, first, last, row))
    return Program.from_tiles(width, fmt, rows, tiles)


def cancellation(width: int, fmt: str, rows: int = 1, seed: int = 1, beats: int = 16) -> Program:
    """Exact cancellation: W has pairs of equal rows and x pairs of opposite values (sum +0, also
    from -0 inputs), then beats off by one product (tiny residues), then ``acc + S`` cancelling a
    previous beat's S (the residue is that beat's rounding error)."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    fin = _negatable(codec, _finite(codec))
    w = rng.choice(fin, size=(width, width))
    w[1::2] = w[0::2]
    x = rng.choice(fin, size=(beats, width))
    x[:, 1::2] = _neg(codec, x[:, 0::2])
    x[beats // 2:, 1] = rng.choice(fin, size=beats - beats // 2)        # one product survives
    x[0, :] = 0
    x[1, :] = codec.fmt.sign_bit                                          # all -0
    t1 = Tile(w, x, True, True, np.arange(beats) % rows)
    w2 = rng.choice(fin, size=(width, width))
    x2 = rng.choice(fin, size=(beats, width))
    x2[1::2] = _neg(codec, x2[0::2])
    first = np.arange(beats) % 2 == 0
    t2 = Tile(w2, x2, first, ~first, np.arange(beats) // 2 % rows)
    return Program.from_tiles(width, fmt, rows, [t1, t2])


def max_magnitude(width: int, fmt: str, rows: int = 1, seed: int = 2, beats: int = 64) -> Program:
    """Largest codes everywhere (widest exact sums), mixed signs, accumulated over many beats, then
    the smallest codes added to the large accumulator (absorbed or rounded)."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    mx = codec.fmt.max_code
    w = np.full((width, width), mx, dtype=np.int64)
    w[:, 1::3] = _neg(codec, w[:, 1::3])
    x = np.full((beats, width), mx, dtype=np.int64)
    x[beats // 2:] = np.where(rng.random((beats - beats // 2, width)) < 0.5, mx, 1)
    first = np.zeros(beats, dtype=bool)
    first[:rows] = True
    last = np.zeros(beats, dtype=bool)
    last[-rows:] = True
    last[beats // 2] = True
    return Program.from_tiles(width, fmt, rows, [Tile(w, x, first, last, np.arange(beats) % rows)])


def specials(width: int, fmt: str, rows: int = 1, seed: int = 3, beats: int = 24) -> Program:
    """NaN and Inf operands (where the format has them), Inf x 0, Inf - Inf within a beat and across
    beats, Inf and NaN sticking in the accumulator until the next ``first``.

    Tile 1 has finite weights (a zero row and a -0 row) and cycles through beats with one signed Inf,
    two opposite Infs, one NaN, Inf/NaN against the zero rows, and finite beats added to a special
    accumulator. Tile 2 puts Inf and NaN codes in the weights of a few columns.
    """
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    fin = _finite(codec)
    nonzero = fin[codec.ints[fin] != 0]
    infs = np.nonzero(codec.is_inf)[0]
    nans = np.nonzero(codec.is_nan)[0]
    w = rng.choice(nonzero, size=(width, width))
    w[0, :] = 0
    w[1, :] = codec.fmt.sign_bit
    x = rng.choice(fin, size=(beats, width))
    first = np.zeros(beats, dtype=bool)
    for i in range(beats):
        kind = i % 6
        pos = rng.integers(2, width, 2)
        if kind == 0:
            first[i] = True
            if infs.size:
                x[i, pos[0]] = rng.choice(infs)                       # +-Inf in every column
        elif kind == 1 and infs.size:
            x[i, pos[0]], x[i, pos[1] if pos[1] != pos[0] else 2] = infs[0], infs[-1]  # Inf - Inf
        elif kind == 2 and nans.size:
            x[i, pos[0]] = rng.choice(nans)
        elif kind == 3:
            first[i] = True
            if infs.size:
                x[i, rng.integers(0, 2)] = rng.choice(infs)          # Inf x (+-0)
        # kinds 4, 5: finite beats added to whatever the accumulator holds
    first[:rows] = True
    w2 = rng.choice(fin, size=(width, width))
    cols = rng.permutation(width)[: max(2, width // 4)]
    if infs.size or nans.size:
        spec = np.concatenate([infs, nans])
        w2[rng.integers(0, width, cols.size), cols] = rng.choice(spec, size=cols.size)
    x2 = rng.choice(fin, size=(beats, width))
    x2[::2] = np.where(rng.random((len(x2[::2]), width)) < 0.5, 0, x2[::2])
    f2 = rng.random(beats) < 0.3
    f2[:rows] = True
    return Program.from_tiles(width, fmt, rows, [
        Tile(w, x, first, True, np.arange(beats) % rows),
        Tile(w2, x2, f2, True, np.arange(beats) % rows)])


def subnormals(width: int, fmt: str, rows: int = 1, seed: int = 4, beats: int = 24) -> Program:
    """Subnormal and smallest-normal operands: the tiniest products (LSB of the exact sum) alone and
    next to large accumulators. (FP32 subnormal *results* are unreachable: every sum is a multiple
    of 2^-32; see docs/numerics.md.)"""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    mb = codec.fmt.man_bits
    small = np.arange(1, min(2 << mb, codec.fmt.max_code) + 1)  # subnormals and the first normals
    small = np.concatenate([small, _neg(codec, small)])
    w = rng.choice(small, size=(width, width))
    x = rng.choice(small, size=(beats, width))
    x[beats // 2, :] = codec.fmt.max_code                     # a large sum, then tiny ones added
    first = np.zeros(beats, dtype=bool)
    first[0] = first[beats // 2] = True
    return Program.from_tiles(width, fmt, 1, [Tile(w, x, first, True, 0)]) if rows == 1 else \
        Program.from_tiles(width, fmt, rows, [Tile(w, x, first, True, np.zeros(beats, int))])


def two_scale(width: int, fmt: str, rows: int = 1, seed: int = 5, beats: int = 64) -> Program:
    """Beats mixing the largest and smallest exponents so that ``acc + S`` spans more than 24 bits:
    rounding with guard/sticky bits and exact ties at many positions."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    mb, top = codec.fmt.man_bits, codec.fmt.max_code >> codec.fmt.man_bits
    def pick(shape):
        e = np.where(rng.random(shape) < 0.5, rng.integers(top - 1, top + 1, shape),
                     rng.integers(0, 3, shape))
        c = (e << mb) | rng.integers(0, 1 << mb, shape)
        c = np.clip(c, 0, codec.fmt.max_code)  # integers: one binade, e = -1 clamps to 0
        return c | np.where(rng.random(shape) < 0.3, codec.fmt.sign_bit, 0)
    w = pick((width, width))
    x = pick((beats, width))
    x[rng.random((beats, width)) < 0.6] = 0
    first = rng.random(beats) < 0.15
    first[:rows] = True
    return Program.from_tiles(width, fmt, rows, [Tile(w, x, first, True, np.arange(beats) % rows)])


ADVERSARIAL = {"cancellation": cancellation, "max_magnitude": max_magnitude, "specials": specials,
               "subnormals": subnormals, "two_scale": two_scale}


def full_rate(width: int, fmt: str, rows: int = 1, tiles: int = 4, seed: int = 6) -> Program:
    """Each tile serves exactly D beats: with no pauses the unit must take one x beat per cycle."""
    return random_program(width, fmt, rows, groups=1, tiles_per_group=tiles, beats_per_tile=width,
                          seed=seed, style="uniform")


def batch_one(width: int, fmt: str, rows: int = 1, tiles: int = 8, seed: int = 7) -> Program:
    """Each tile serves one beat (swap + first + last): one tile per D cycles, weight-feed bound."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    fin = _finite(codec)
    ts = [Tile(rng.choice(fin, size=(width, width)), rng.choice(fin, size=(1, width)), True, True,
               t % rows) for t in range(tiles)]
    return Program.from_tiles(width, fmt, rows, ts)


def long_cancellation(width: int, fmt: str, rows: int = 1, beats: int = 3000, seed: int = 8,
                      tiles: int = 3):
    """Long accumulations that cancel: per row, large beats ``x`` and their negations ``-x`` in a
    random order plus one beat of the smallest codes, so the exact sum is that beat's dot product
    while the partial sums stay large. Rows are interleaved at random; the beats are spread over
    ``tiles`` tiles with the same weights (swaps inside the accumulations).

    Returns
    -------
    (Program, list of ndarray)
        The program and, per result row in output order, the FP32 bits of the exact sum rounded
        once (from float64, where the residue's dot product is exact; an exact zero is +0).
    """
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    fin = _finite(codec)
    mag = np.abs(codec.value(fin))
    big = _negatable(codec, fin[mag >= np.median(mag[mag > 0])])
    small = _smallest(codec)
    w = rng.choice(fin, size=(width, width))
    per_row = max(3, beats // rows) | 1           # odd: pairs plus the residue beat
    seqs, residues = [], []
    for _ in range(rows):
        half = rng.choice(big, size=(per_row // 2, width))
        res_x = rng.choice(small, size=(1, width))
        seq = np.concatenate([half, _neg(codec, half), res_x])
        seqs.append(list(seq[rng.permutation(per_row)]))
        residues.append(_f32_bits(codec.value(res_x[0]) @ codec.value(w)))
    order = rng.permutation(np.repeat(np.arange(rows), per_row))
    x = np.array([seqs[r].pop(0) for r in order], dtype=np.int64)
    first = np.zeros(len(order), bool)
    last = np.zeros(len(order), bool)
    for r in range(rows):
        idx = np.flatnonzero(order == r)
        first[idx[0]], last[idx[-1]] = True, True
    bounds = np.linspace(0, len(order), tiles + 1).astype(int)
    prog = Program.from_tiles(width, fmt, rows, [
        Tile(w, x[a:b], first[a:b], last[a:b], order[a:b])
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    out_rows = order[last]
    return prog, [residues[r] for r in out_rows]


def _f32_bits(v: np.ndarray) -> np.ndarray:
    """FP32 bits of float64 values rounded once (RNE), an exact zero as +0."""
    bits = np.asarray(v, np.float64).astype(np.float32).view(np.uint32).astype(np.int64)
    return np.where(np.asarray(v) == 0, 0, bits)


def accumulation_lengths(width: int, fmt: str, rows: int, lengths, seed: int = 9) -> Program:
    """One accumulation per row for each length n in ``lengths`` (n beats per row, rows round
    robin, a new tile for each length): results leave in the order (length, row 0..R-1)."""
    rng = np.random.default_rng(seed)
    codec = _codec(fmt)
    fin = _finite(codec)
    tiles = []
    for n in lengths:
        k = n * rows
        first = np.arange(k) < rows
        last = np.arange(k) >= k - rows
        tiles.append(Tile(rng.choice(fin, size=(width, width)), rng.choice(fin, size=(k, width)),
                          first, last, np.arange(k) % rows))
    return Program.from_tiles(width, fmt, rows, tiles)


# -- block-scaled formats: scale codes beside the element codes ------------------------------------
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
