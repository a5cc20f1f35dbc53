"""Lane-output vectors for the column tree (:class:`hw.mu.tree.Tree`) and their exact sums.

A vector is what the D lanes of one column hand the tree in one cycle: per lane a ones' complement
magnitude ``t`` (P bits; an integer format: the two's-complement product's low bits), its sign
``neg`` and the ``nan``/``inf`` flags, as the lane contract of :mod:`hw.mu.lane` defines them.
Products are computed here from element codes decoded by ``ml_dtypes`` and multiplied in float64
(exact for these formats), not by the design's lane or the bit-true model. :func:`exact_sum` is
the reference: the tree's ``s`` is the exact sum of the lanes' signed values modulo ``2**W``.

Classes (:data:`CLASSES`), chosen per vector:

``random``
    uniform finite codes on both operands;
``all_max``
    every operand the largest finite magnitude, all products of one sign (the widest sum);
``alternating``
    largest magnitudes with alternating product signs (sums of exactly 0);
``cancel``
    random products and their negations in the other half, plus one small residue product
    (massive cancellation down to the LSBs);
``tiny``
    zeros (both signs) and subnormal operands;
``specials``
    NaN / Inf codes (if the format has them) in random lanes among random codes;
``raw``
    uniformly random ``t``/``neg``/flag bits, beyond what a lane can produce (the trees must agree
    on every input, not only on reachable ones).
"""

from __future__ import annotations

import numpy as np

from hw.formats import get_format
from hw.mu.numerics import dot_widths

__all__ = ["CLASSES", "lane_vectors", "exact_sum"]

CLASSES = ("random", "all_max", "alternating", "cancel", "tiny", "specials", "raw")


def _codes(f, rng, shape, kind):
    """Element codes of one operand class."""
    n = 1 << f.bits
    allc = np.arange(n)
    dec = f.to_ml(allc).astype(np.float64)
    finite = allc[np.isfinite(dec)]
    if kind == "random":
        return rng.choice(finite, shape)
    if kind == "max":
        return np.full(shape, finite[np.argmax(np.where(dec[finite] > 0, dec[finite], 0))])
    if kind == "tiny":
        small = finite[np.abs(dec[finite]) < 2.0 ** f.emin]     # zeros and subnormals
        return rng.choice(small, shape)
    raise ValueError(kind)


def lane_vectors(fmt: str, width: int, n: int, cls: str, seed: int = 0) -> dict:
    """``n`` tree input vectors of one class.

    Returns
    -------
    dict
        ``t`` (uint64, shape (n, D)), ``neg``, ``nan``, ``inf`` (bool, shape (n, D)).
    """
    if cls not in CLASSES:
        raise ValueError(f"class must be one of {', '.join(CLASSES)}, not {cls!r}")
    f, dw = get_format(fmt), dot_widths(fmt, width)
    P, D = dw.prod_bits, width
    rng = np.random.default_rng([seed, CLASSES.index(cls), D])
    mask = np.uint64((1 << P) - 1) if P < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if cls == "raw":
        t = rng.integers(0, 1 << 63, (n, D), dtype=np.uint64, endpoint=True) & mask
        t ^= rng.integers(0, 2, (n, D), dtype=np.uint64) << np.uint64(63) & mask
        flags = rng.random((3, n, D)) < np.array([0.5, 0.02, 0.02])[:, None, None]
        return {"t": t, "neg": flags[0], "nan": flags[1] & (f.has_nan or f.has_inf),
                "inf": flags[2] & f.has_inf}
    sign_bit = 1 << (f.bits - 1)

    def negated(codes, where):  # the sign flipped (integers: negated, -2**(b-1) saturating)
        if f.is_integer:
            return np.where(where, f.encode(-f.decode(codes)), codes)
        return codes | (where * sign_bit)

    if cls in ("all_max", "alternating"):
        x = _codes(f, rng, (n, D), "max")
        w = _codes(f, rng, (n, D), "max")
        if cls == "all_max":
            x = negated(x, rng.integers(0, 2, (n, 1)))
        else:
            x = negated(x, (np.arange(D) % 2)[None, :])
    elif cls == "tiny":
        x, w = _codes(f, rng, (n, D), "tiny"), _codes(f, rng, (n, D), "random")
    else:
        x, w = _codes(f, rng, (n, D), "random"), _codes(f, rng, (n, D), "random")
        if cls == "cancel":
            h = D // 2
            x[:, h:], w[:, h:] = negated(x[:, :h], 1) if f.is_integer else x[:, :h] ^ sign_bit, w[:, :h]
            x[:, -1] = _codes(f, rng, (n,), "tiny")
        elif cls == "specials":
            specials = [c for c in (f.nan_code, f.inf_code if f.has_inf else None) if c is not None]
            if specials:
                hit = rng.random((n, D)) < 0.05
                x = np.where(hit, rng.choice(specials, (n, D)) | rng.integers(0, 2, (n, D)) * sign_bit, x)
    with np.errstate(invalid="ignore", over="ignore"):
        a, b = f.to_ml(x).astype(np.float64), f.to_ml(w).astype(np.float64)
        p = a * b
    nan = np.isnan(p)
    inf = np.isinf(p)
    # integers: the two's-complement product (neg its sign bit, so 0 for a zero product)
    neg = np.signbit(a) ^ np.signbit(b) if dw.ones_complement else p < 0
    mag = np.where(np.isfinite(p), np.abs(p), 0.0) * 2.0 ** -dw.lsb_exp
    assert (mag == np.floor(mag)).all() and (mag < 2.0 ** P).all(), "product off the tree's grid"
    # float64 holds these products exactly; the magnitude needs at most P <= 64 bits
    hi, lo = np.floor(mag / 2.0 ** 32), np.mod(mag, 2.0 ** 32)
    m = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)
    t = np.where(neg, (~m + np.uint64(not dw.ones_complement)) & mask, m)
    return {"t": t, "neg": neg, "nan": nan, "inf": inf}


def exact_sum(fmt: str, width: int, vec: dict) -> np.ndarray:
    """The tree's ``s`` for each vector: ``sum_i (t_i - neg_i * (2**P - 1))`` modulo ``2**W``
    (``sum_i (t_i - neg_i * 2**P)`` for an integer format, whose ``t`` is two's complement).

    Computed on 32-bit limbs with int64 column sums (exact for D <= 2**24), returned as two uint64
    arrays ``(low 32 bits, bits 32..W-1)``.
    """
    dw = dot_widths(fmt, width)
    P, W = dw.prod_bits, dw.sum_bits
    t, neg = vec["t"], vec["neg"].astype(np.int64)
    lo = (t & np.uint64(0xFFFFFFFF)).astype(np.int64).sum(1) + (neg.sum(1) if dw.ones_complement else 0)
    hi = (t >> np.uint64(32)).astype(np.int64).sum(1)
    nneg = neg.sum(1)
    if P >= 32:
        hi -= nneg << (P - 32)
    else:
        lo -= nneg << P
    hi += lo >> 32                      # floor division: lo may be negative
    lo &= 0xFFFFFFFF if W >= 32 else (1 << W) - 1
    hi &= (1 << max(W - 32, 0)) - 1
    return lo.astype(np.uint64), hi.astype(np.uint64)
