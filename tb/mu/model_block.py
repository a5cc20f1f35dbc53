"""Bit-true model of the matrix unit on block-scaled formats (``docs/numerics.md`` section 7).

Per activation beat and column ``j``, with ``nb = D / B`` blocks along K:

* each block ``i`` gives an exact term ``T_ij = P_ij * 2^E_ij``: ``P_ij`` is the integer block dot
  product ``sum_{k in block i} n(x[k]) n(W[k, j])`` (element integers, :class:`tb.mu.model.ElementCodec`)
  times the two scales' integer significands, ``E_ij = e(sx_i) + e(sw_ij) + 2 lsb``;
* the terms are summed in a fixed-point window aligned to ``Emax_j``, the largest ``E_ij`` among
  the column's blocks with ``P_ij != 0``: a term with ``E_ij >= Emax_j - F`` (``F`` =
  ``frac_bits``, default :data:`WINDOW_FRAC_BITS`) enters exactly, a term below it is rounded to
  odd at ``2^(Emax_j - F - 1)``, the window's last bit (an arithmetic right shift of its
  two's-complement value, with the last bit set if any bit was shifted out: a sticky bit);
  ``frac_bits=None`` keeps every term exact;
* ``acc_j <- RNE_fp32(S_j)`` on ``first``, else ``RNE_fp32(acc_j + S_j)``, one rounding of the exact
  sum (:func:`tb.mu.model.accumulate`: subnormals kept, overflow to Inf, an exact zero is ``+0``).

Special values: a NaN scale makes its block NaN; element specials follow the plain contract within a
block; an Inf block times a zero scale (UE4M3 code 0) is NaN; across blocks NaN wins and ``+Inf`` with
``-Inf`` is NaN.

Two implementations of the same rules, checked against each other and against ``Fraction``
arithmetic in ``tb/mu/test_model_block.py``: a scalar one on Python integers (:func:`window_sum`,
used by :class:`BlockMatrixUnitModel` for every element that needs it) and a vectorised filter that
evaluates the window and the accumulate in float64 with a rigorous error bound and takes its FP32
result only when no FP32 rounding boundary lies within that bound (all other elements go through the
scalar path), so :func:`unit_matmul` runs whole model matmuls bit-true at numpy speed.
"""

from __future__ import annotations

import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format

from .model import (
    FINITE,
    NAN,
    NINF,
    PINF,
    ElementCodec,
    YRow,
    _exact_matmul_int,
    accumulate,
    exact_dot,
    fp32_to_float,
    half_ulp_fp32,
)

__all__ = ["WINDOW_FRAC_BITS", "Terms", "block_terms", "window_sum", "beat", "unit_matmul",
           "BlockMatrixUnitModel", "unit_scales"]

#: Fraction bits F of the block-sum window below the unit of the largest block term.
WINDOW_FRAC_BITS = 32

_NO_EXP = np.iinfo(np.int64).min // 4


class Terms:
    """Block terms of N beats against C columns: ``p`` (N, nb, C) int64 or object (Python ints),
    ``e`` (N, nb, C) int64 exponents, ``cls`` (N, C) class of each column's sum (``FINITE``,
    ``PINF``, ``NINF``, ``NAN``)."""

    def __init__(self, p, e, cls):
        self.p, self.e, self.cls = p, e, cls


def unit_scales(shape) -> tuple:
    """``(m, e, nan)`` of scales equal to 1: a per-tensor format seen as one block per beat."""
    return np.ones(shape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, bool)


def block_terms(codec: ElementCodec, block: int, x, sx, w, sw) -> Terms:
    """Exact block terms of beats ``x`` (N, nb*B codes) against ``w`` (nb*B, C codes).

    ``sx`` and ``sw`` are ``(m, e, nan)`` triples (:meth:`hw.formats.BlockFormat.scale_split`) of
    shapes (N, nb) and (nb, C).
    """
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    n, kt = x.shape
    nb = kt // block
    c = w.shape[1]
    (mx, ex, nx), (mw, ew, nw) = sx, sw
    xi, wi = codec.ints[x], codec.ints[w]
    small = codec.max_int ** 2 * block * 225 < (1 << 53)
    p = np.zeros((n, nb, c), dtype=np.int64 if small else object)
    cls_b = np.zeros((n, nb, c), dtype=np.int8)
    specials = codec.has_specials and bool((codec.is_nan[x] | codec.is_inf[x]).any()
                                           or (codec.is_nan[w] | codec.is_inf[w]).any())
    for i in range(nb):
        ks = slice(i * block, (i + 1) * block)
        if small:
            blk = np.rint(xi[:, ks].astype(np.float64) @ wi[ks].astype(np.float64)).astype(np.int64)
        else:
            blk = _exact_matmul_int(xi[:, ks], wi[ks], codec.max_int, codec.max_int)
        p[:, i, :] = blk * mx[:, i, None] * mw[None, i, :]
        if specials:
            cls_b[:, i, :] = exact_dot(codec, x[:, ks], w[ks])[1]
    e = ex[:, :, None] + ew[None, :, :] + 2 * codec.lsb
    zero_scale = (mx[:, :, None] * mw[None, :, :]) == 0
    cls_b = np.where((cls_b == PINF) | (cls_b == NINF), np.where(zero_scale, NAN, cls_b), cls_b)
    cls_b = np.where(nx[:, :, None] | nw[None, :, :], NAN, cls_b)
    p = np.where(cls_b == FINITE, p, 0)
    if p.dtype == object and (p.size == 0 or max(abs(int(v)) for v in p.flat) < (1 << 62)):
        p = p.astype(np.int64)                # wide formats whose actual sums are narrow
    pos, neg = (cls_b == PINF).any(axis=1), (cls_b == NINF).any(axis=1)
    cls = np.where(pos, PINF, np.where(neg, NINF, FINITE))
    cls = np.where((cls_b == NAN).any(axis=1) | (pos & neg), NAN, cls).astype(np.int8)
    return Terms(p, e, cls)


def window_sum(p, e, frac_bits: int | None = WINDOW_FRAC_BITS) -> tuple[int, int]:
    """The window's value ``num * 2**lo`` of one column's block terms ``p[i] * 2**e[i]``.

    Terms with ``p == 0`` are ignored (they neither set the alignment nor add anything); with no
    nonzero term the result is ``(0, 0)``. ``frac_bits=None``: the exact sum.
    """
    nz = [(int(pi), int(ei)) for pi, ei in zip(p, e, strict=True) if pi != 0]
    if not nz:
        return 0, 0
    top = max(ei for _, ei in nz)
    if frac_bits is None:
        lo = min(ei for _, ei in nz)
        return sum(pi << (ei - lo) for pi, ei in nz), lo
    lo = top - frac_bits - 1                  # the sticky position, below every exact term
    return sum(pi << (ei - lo) if ei > lo else _to_odd(pi, lo - ei) for pi, ei in nz), lo


def _to_odd(p: int, k: int) -> int:
    """``p / 2**k`` rounded to odd: the floor, with its last bit set if any bit was dropped."""
    q = p >> k
    return q | 1 if (q << k) != p else q


def _exact_beat(acc, terms: Terms, n: int, j: int, frac_bits) -> int:
    num, lo = window_sum(terms.p[n, :, j], terms.e[n, :, j], frac_bits)
    return accumulate(acc, num, int(terms.cls[n, j]), lo)


def _two_sum(a, b):
    """``a + b`` in float64 and its exact rounding error (Knuth's TwoSum)."""
    s = a + b
    bp = s - a
    return s, (a - (s - bp)) + (b - bp)


def _window_f64(terms: Terms, frac_bits):
    """float64 value of each window sum, the sum of its terms' magnitudes, whether the float64 sum
    is exact (else it is within ``nb * 2^-53`` of the sum of magnitudes), and whether the value is
    usable (not: Python-int terms that the window truncates, left to the integer path)."""
    p, e = terms.p, terms.e
    nz = p != 0
    top = np.where(nz, e, _NO_EXP).max(axis=1)
    lo = np.where(nz, e, -_NO_EXP).min(axis=1) if frac_bits is None else top - frac_bits - 1
    d = e - lo[:, None, :]
    if p.dtype == object:
        usable = ~(nz & (d < 0)).any(axis=1)
        t, te = np.where(nz & (d >= 0), p, 0).astype(np.float64), e
    else:
        usable = np.ones(terms.cls.shape, dtype=bool)
        k = np.clip(-d, 0, 63)
        dropped = (p & ((np.int64(1) << np.minimum(k, 62)) - 1)) != 0     # |p| < 2^62
        t = np.where(nz, np.where(d >= 0, p, (p >> k) | dropped), 0)
        te = np.where(d >= 0, e, lo[:, None, :])
    tf = np.ldexp(t.astype(np.float64), np.clip(te, -1100, 1100))   # within 2^-53 relative
    s, exact = tf[:, 0], (np.abs(t) < 2.0 ** 53).all(axis=1)
    for i in range(1, tf.shape[1]):
        s, err = _two_sum(s, tf[:, i])
        exact &= err == 0
    return s, np.abs(tf).sum(axis=1), exact, usable


def beat(acc_bits, first, terms: Terms, frac_bits=WINDOW_FRAC_BITS):
    """One beat for many (row, column) pairs: new FP32 accumulator bits.

    Parameters
    ----------
    acc_bits : ndarray of uint32 (N, C)
        Accumulators before the beat (ignored where ``first``).
    first : ndarray of bool, broadcastable to (N, C)
    terms : Terms
        This beat's block terms, N beats against C columns.
    frac_bits : int or None
        Window fraction bits F (None: exact sums).
    """
    nb = terms.p.shape[1]
    first = np.broadcast_to(first, terms.cls.shape)
    acc = np.where(first, 0.0, fp32_to_float(acc_bits))
    out = np.zeros(terms.cls.shape, dtype=np.uint32)
    s, absum, exact, usable = _window_f64(terms, frac_bits)
    with np.errstate(invalid="ignore", over="ignore"):
        v, rest = _two_sum(acc, s)
        exact &= rest == 0                    # then v is the exact acc + S: the cast rounds it
        err = (nb + 2) * 2.0 ** -52 * (np.abs(acc) + absum)
        r = v.astype(np.float32)
        lo = np.nextafter(r, np.float32(-np.inf)).astype(np.float64)
        hi = np.nextafter(r, np.float32(np.inf)).astype(np.float64)
        rf = r.astype(np.float64)
        near = (v - (rf + lo) / 2 > err) & ((rf + hi) / 2 - v > err) & (r != 0)
        safe = (usable & (terms.cls == FINITE) & np.isfinite(acc) & (np.abs(v) < 2.0 ** 126)
                & (exact | near))
    out = np.where(safe, np.where(v == 0, np.uint32(0), r.view(np.uint32)), out)
    for n, j in zip(*np.nonzero(~safe), strict=True):
        a = None if first[n, j] else int(acc_bits[n, j])
        out[n, j] = _exact_beat(a, terms, n, j, frac_bits)
    return out


def _split(fmt, codes):
    return get_block_format(fmt).scale_split(codes)


def unit_matmul(fmt: str, width: int, x, xs, w, ws, frac_bits=WINDOW_FRAC_BITS,
                element: str | None = None) -> np.ndarray:
    """FP32 result bits of a whole product ``x @ w`` fed through a unit of width D, one D-long
    k-tile per beat, accumulated from the first k-tile (``first``) to the last.

    Parameters
    ----------
    fmt : str
        A block-scaled format (:data:`hw.formats.BLOCK_FORMATS`), or None with ``element`` set for
        a per-tensor format (unit scales, one block of D per beat: the plain contract).
    x : ndarray (M, Kp) codes, ``Kp`` a multiple of D (zero-padded)
    xs : ndarray (M, Kp / B) scale codes (ignored for per-tensor)
    w : ndarray (Kp, N) codes
    ws : ndarray (Kp / B, N) scale codes (ignored for per-tensor)

    Returns
    -------
    ndarray of uint32 (M, N)
    """
    x, w = np.asarray(x), np.asarray(w)
    if fmt is not None:
        bf = get_block_format(fmt)
        bf.check_width(width)
        codec, block = ElementCodec(bf.element), bf.block
    else:
        codec, block = ElementCodec(element), width
    m, kp = x.shape
    if kp % width or w.shape[0] != kp:
        raise ValueError(f"x must be (M, Kp) and w (Kp, N) with Kp a multiple of D = {width}; "
                         f"got {x.shape} and {w.shape}")
    nb = width // block
    acc = np.zeros((m, w.shape[1]), dtype=np.uint32)
    for t in range(kp // width):
        ks, bs = slice(t * width, (t + 1) * width), slice(t * nb, (t + 1) * nb)
        if fmt is None:
            sx, sw = unit_scales((m, 1)), unit_scales((1, w.shape[1]))
        else:
            sx, sw = _split(fmt, np.asarray(xs)[:, bs]), _split(fmt, np.asarray(ws)[bs])
        terms = block_terms(codec, block, x[:, ks], sx, w[ks], sw)
        acc = beat(acc, t == 0, terms, frac_bits)
    return acc


class BlockMatrixUnitModel:
    """Cycle-free model of a unit on a block-scaled format: tiles, rows, first/last, one rounding
    per beat; the reference for the block-scaled RTL (ports in ``docs/mu_interface.md``).

    Parameters
    ----------
    width : int
        D, a multiple of the format's block size B.
    fmt : str
        A block-scaled format (:data:`hw.formats.BLOCK_FORMATS`).
    rows : int
        Accumulator rows R.
    frac_bits : int or None
        Window fraction bits F (None: exact block sums, for measurements only).

    Raises
    ------
    ValueError
        Bad width, format or rows.
    """

    def __init__(self, width: int, fmt: str, rows: int = 1, frac_bits: int | None = WINDOW_FRAC_BITS):
        if fmt not in BLOCK_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(BLOCK_FORMATS)}, not {fmt!r}")
        self.bf = get_block_format(fmt)
        self.nb = self.bf.check_width(width)
        if not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be an integer >= 1, not {rows!r}")
        self.width, self.rows, self.frac_bits = width, rows, frac_bits
        self.codec = ElementCodec(self.bf.element)
        self.acc = np.zeros((rows, width), dtype=np.uint32)
        self.ref = np.zeros((rows, width))
        self.bound = np.zeros((rows, width))

    def run(self, w, ws, x, xs, first, last, row=None) -> list:
        """Run beats against one weight tile.

        Parameters
        ----------
        w : ndarray (D, D)
            Weight codes ``W[k, j]``.
        ws : ndarray (D/B, D)
            Weight scale codes: ``ws[i, j]`` scales rows ``iB .. iB+B-1`` of column j (``ws`` beat i).
        x : ndarray (N, D)
            Activation codes, one beat per row.
        xs : ndarray (N, D/B)
            Activation scale codes per beat and block.
        first, last : array-like of bool, length N (or scalars)
        row : array-like of int, length N, optional

        Returns
        -------
        list of tb.mu.model.YRow
            One per ``last`` beat: the FP32 bits, a float64 reference of the scaled dot products and
            the bound of ``docs/numerics.md`` section 7.4 (half-ulps, window truncation, float64).
        """
        d, nb = self.width, self.nb
        x, xs = np.atleast_2d(np.asarray(x)), np.atleast_2d(np.asarray(xs))
        w, ws = np.asarray(w), np.atleast_2d(np.asarray(ws))
        n = x.shape[0]
        if x.shape != (n, d) or xs.shape != (n, nb) or w.shape != (d, d) or ws.shape != (nb, d):
            raise ValueError(f"need x (N, {d}), xs (N, {nb}), w ({d}, {d}), ws ({nb}, {d}); got "
                             f"{x.shape}, {xs.shape}, {w.shape}, {ws.shape}")
        first = np.broadcast_to(np.asarray(first, dtype=bool), (n,))
        last = np.broadcast_to(np.asarray(last, dtype=bool), (n,))
        row = np.broadcast_to(np.asarray(0 if row is None else row, dtype=np.int64), (n,))
        if n and (row.min() < 0 or row.max() >= self.rows):
            raise ValueError(f"row index must lie in [0, {self.rows - 1}]")
        sx, sw = self.bf.scale_split(xs), self.bf.scale_split(ws)
        terms = block_terms(self.codec, self.bf.block, x, sx, w, sw)
        ref, absum = self._reference(x, xs, w, ws)
        trunc = self._trunc_bound(terms)
        out = []
        for i in range(n):
            r = int(row[i])
            one = Terms(terms.p[i:i + 1], terms.e[i:i + 1], terms.cls[i:i + 1])
            self.acc[r] = beat(self.acc[r][None], bool(first[i]), one, self.frac_bits)[0]
            if first[i]:
                self.ref[r], self.bound[r] = 0.0, 0.0
            with np.errstate(invalid="ignore"):
                self.ref[r] = self.ref[r] + ref[i]
            self.bound[r] = self.bound[r] + half_ulp_fp32(self.acc[r]) + trunc[i] \
                + (d + 2) * 2.0 ** -52 * absum[i]
            if last[i]:
                out.append(YRow(r, self.acc[r].copy(), self.ref[r].copy(), self.bound[r].copy()))
        return out

    def _reference(self, x, xs, w, ws):
        """float64 scaled dot products per beat and column, and the sums of their magnitudes."""
        b = self.bf.block
        xv = self.codec.value(x) * np.repeat(self.bf.scale_decode(xs), b, axis=1)
        wv = self.codec.value(w) * np.repeat(self.bf.scale_decode(ws), b, axis=0)
        with np.errstate(invalid="ignore", over="ignore"):
            return xv @ wv, np.abs(xv) @ np.abs(wv)

    def _trunc_bound(self, terms: Terms):
        """Per beat and column: ``(nb - 1) * 2^(Emax - F - 1)``, the most the window can move."""
        if self.frac_bits is None:
            return np.zeros(terms.cls.shape)
        top = np.where(terms.p != 0, terms.e, _NO_EXP).max(axis=1)
        return np.where(top > _NO_EXP, (self.nb - 1) * np.ldexp(1.0, np.clip(top - self.frac_bits - 1,
                                                                               -1100, 1100)), 0.0)
