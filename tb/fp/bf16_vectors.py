"""Operand sets for the BF16 multiplier regression (numpy int64 code arrays, a and b).

* :func:`boundary_vectors`: every mantissa pair (128 x 128) crossed with exponent pairs chosen so
  that the product lands on each boundary: zeros and subnormal inputs (exponent field 0), the
  smallest normal, the underflow edge (result exponent around 2^-126 and down to the last
  subnormal, 2^-133, and below), the overflow edge (around 2^127 and 2^128), the largest finite,
  Inf and NaN (exponent field 255 with mantissa 0 / non-zero). The four sign combinations rotate
  with the vector index so each exponent pair sees every one about 4,096 times.
* :func:`random_vectors`: uniformly random 16-bit codes (half the pairs) and random codes whose
  exponents are biased towards the edges (the other half).
* :func:`special_pairs`: the full cross product of a list of special codes.
"""

import numpy as np

__all__ = ["EXPONENT_PAIRS", "boundary_vectors", "random_vectors", "special_pairs", "SPECIAL_CODES"]


def _exponent_pairs() -> list:
    pairs = set()
    edge = (0, 1, 2, 126, 127, 128, 253, 254, 255)
    for x in edge:  # specials and extremes against each other
        for y in edge:
            pairs.add((x, y))
    # underflow edge: result biased exponent ea + eb - 127 from -9 (below the last subnormal)
    # to +2 (just above the smallest normal)
    for s in range(127 - 9, 127 + 3):
        for ea in (1, 64, s - 1):
            if 1 <= s - ea <= 254 and 1 <= ea <= 254:
                pairs.add((ea, s - ea))
    # subnormal inputs times normals that bring the result back near the normal range
    for eb in (120, 126, 127, 128, 133, 134, 135, 140, 200, 254):
        pairs.add((0, eb))
        pairs.add((eb, 0))
    # overflow edge: ea + eb - 127 from 252 to 256
    for s in range(127 + 252, 127 + 257):
        for ea in (s - 254, 200, 254):
            if 1 <= s - ea <= 254 and 1 <= ea <= 254:
                pairs.add((ea, s - ea))
    return sorted(pairs)


#: Exponent-field pairs of :func:`boundary_vectors`.
EXPONENT_PAIRS = _exponent_pairs()


def boundary_vectors(pairs=None) -> tuple:
    """All 128 x 128 mantissa pairs for every exponent pair, signs rotating with the index.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``a`` and ``b`` codes, ``16384 * len(pairs)`` each.
    """
    pairs = EXPONENT_PAIRS if pairs is None else pairs
    ma, mb = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
    ma, mb = ma.ravel(), mb.ravel()
    a, b = [], []
    for j, (ea, eb) in enumerate(pairs):
        idx = np.arange(ma.size) + j
        a.append(((idx & 1) << 15) | (ea << 7) | ma)
        b.append((((idx >> 1) & 1) << 15) | (eb << 7) | mb)
    return np.concatenate(a).astype(np.int64), np.concatenate(b).astype(np.int64)


def random_vectors(n: int, seed: int = 1) -> tuple:
    """``n`` random pairs: half uniform codes, half with exponents drawn near the edges."""
    rng = np.random.default_rng(seed)
    half = n // 2
    a = rng.integers(0, 1 << 16, n, dtype=np.int64)
    b = rng.integers(0, 1 << 16, n, dtype=np.int64)
    edges = np.array([0, 0, 1, 2, 60, 64, 66, 126, 127, 128, 190, 192, 253, 254, 255])
    for x in (a, b):
        e = rng.choice(edges, n - half) + rng.integers(-2, 3, n - half)
        e = np.clip(e, 0, 255)
        x[half:] = (x[half:] & 0x807F) | (e << 7)
    return a, b


#: Special operand codes (both signs of each): zeros, smallest/largest subnormal, smallest normal,
#: one, largest finite, infinity and NaNs with different payloads.
SPECIAL_CODES = tuple(
    s | c for c in (0x0000, 0x0001, 0x0040, 0x007F, 0x0080, 0x0081, 0x3F80, 0x3FFF, 0x4000,
                    0x7F7F, 0x7F00, 0x7F80, 0x7F81, 0x7FC0, 0x7FFF)
    for s in (0x0000, 0x8000)
)


def special_pairs() -> tuple:
    """Every ordered pair of :data:`SPECIAL_CODES`."""
    c = np.array(SPECIAL_CODES, dtype=np.int64)
    a, b = np.meshgrid(c, c, indexing="ij")
    return a.ravel(), b.ravel()
