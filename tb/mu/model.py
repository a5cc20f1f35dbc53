"""Bit-true model of the matrix unit's numerics (the contract in ``docs/numerics.md``), for every
element format and every block-scaled format.

Per activation beat and column ``j`` the unit computes ``S_j = sum_k x[k] * W[k, j]`` exactly, then
in the ``fp32`` accumulate mode ``acc_j <- RNE_fp32(S_j)`` on a ``first`` beat, else
``acc_j <- RNE_fp32(acc_j + S_j)``: one rounding per beat. In the ``exact`` mode the sums of the
beats ``first..last`` are added exactly and rounded once on the ``last`` beat
(:func:`tb.mu.model_exact.exact_result`). This module computes exactly that, with integers only:

* element codes are decoded (via :mod:`hw.formats` field split) into signed integers scaled by the
  format's smallest subnormal, ``value = n * 2**lsb``;
* the D-term dot products are float64 matrix products of integer-valued arrays whose every partial
  sum stays below ``2**53`` (E5M2 operands are split into two 16-bit limbs), hence exact, then
  recombined as Python integers;
* the accumulate step adds the exact FP32 accumulator and the exact sum as integers and rounds once
  (:mod:`tb.mu.rounding`: round to nearest, ties to even, subnormals kept, overflow to Inf).

Block-scaled formats (``docs/numerics.md`` section 7, :data:`hw.formats.BLOCK_FORMATS`) are the scale
axis of the same model: with ``nb = D / B`` blocks along K, each block ``i`` gives an exact term
``T_ij = P_ij * 2^E_ij`` (:func:`block_terms`: ``P_ij`` the integer block dot product times the two
scales' integer significands, ``E_ij = e(sx_i) + e(sw_ij) + 2 lsb``), and the column's sum ``S_j`` is
the terms' fixed-point window sum (:func:`tb.mu.rounding.window_sum`), accumulated in ``fp32`` as
above. A per-tensor format is the case of unit scales and one block of D (:func:`unit_scales`).

Special values follow the contract: a NaN operand, ``Inf * 0`` or ``Inf - Inf`` give the canonical
NaN ``0x7FC00000``; Inf propagates with its sign; an exact zero gives ``+0``. Block-scaled: a NaN
scale makes its block NaN; an Inf block times a zero scale (UE4M3 code 0) is NaN; across blocks NaN
wins and ``+Inf`` with ``-Inf`` is NaN.

:func:`unit_matmul` runs a whole product through the same rules at numpy speed
(:func:`tb.mu.rounding.beat`); :func:`reference_f64` and :func:`error_metrics` give the float64
comparison and the error bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hw.designs import ACC_MODES
from hw.formats import BLOCK_FORMATS, CLASSES, MATRIX_FORMATS, get_block_format, get_format
from hw.mu.window import windowed

from .model_exact import exact_result
from .model_window import WindowColumns
from .rounding import (
    _NO_EXP,
    FINITE,
    NAN,
    NINF,
    PINF,
    WINDOW_FRAC_BITS,
    Terms,
    accumulate,
    beat,
    fp32_to_float,
    half_ulp_fp32,
)

__all__ = ["ElementCodec", "exact_dot", "block_terms", "unit_scales", "unit_matmul", "YRow",
           "MatrixUnitModel", "reference_f64", "error_metrics"]

# --------------------------------------------------------------------------------------------------
# Element decode and the exact dot products
# --------------------------------------------------------------------------------------------------
class ElementCodec:
    """Integer view of one element format.

    Every finite code is ``n * 2**lsb`` with ``lsb = emin - man_bits`` (the smallest subnormal; 0 for
    an integer format) and ``|n| <= 2**(man_bits + 1 + emax - emin)``
    (:meth:`hw.formats.FloatFormat.integers`).

    Parameters
    ----------
    fmt : str
        One of :data:`hw.formats.MATRIX_FORMATS`.

    Raises
    ------
    ValueError
        For a format the matrix unit does not take.
    """

    def __init__(self, fmt: str):
        if fmt not in MATRIX_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(MATRIX_FORMATS)}, not {fmt!r}")
        self.fmt = get_format(fmt)
        f = self.fmt
        self.lsb = f.lsb
        codes = np.arange(1 << f.bits)
        sign = f.fields(codes)[0]
        cls = f.classify(codes)
        self.is_nan = cls == CLASSES.index("nan")
        self.is_inf = cls == CLASSES.index("inf")
        finite = ~(self.is_nan | self.is_inf)
        self.ints = f.integers(codes)  # two's complement for an integer row, else sign-magnitude
        self.neg = sign == 1
        self.is_zero = cls == CLASSES.index("zero")
        self.max_int = int(np.abs(self.ints).max())
        # cross-check against the format table's own decode (exact float64)
        dec = f.decode(codes)
        ok = np.where(finite, self.ints * 2.0 ** self.lsb == dec, True)
        assert ok.all(), f"{fmt}: integer decode disagrees with hw.formats"

    def value(self, codes) -> np.ndarray:
        """Exact float64 values of codes (the format table's decode)."""
        return self.fmt.decode(np.asarray(codes))

    @property
    def has_specials(self) -> bool:
        return bool(self.is_nan.any() or self.is_inf.any())


def _exact_matmul_int(a: np.ndarray, b: np.ndarray, max_a: int, max_b: int) -> np.ndarray:
    """Exact ``a @ b`` of int64 arrays as an object array of Python ints.

    float64 matrix products are exact while every partial sum stays below ``2**53``; wider operands
    are split into 16-bit limbs so that each limb product stays in range.
    """
    depth = a.shape[-1]
    if max_a * max_b * depth < (1 << 53):
        return np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64).astype(object)
    assert max_a < (1 << 32) and max_b < (1 << 32) and depth <= (1 << 20)
    sa, sb = np.sign(a), np.sign(b)
    aa, bb = np.abs(a), np.abs(b)
    ah, al = (sa * (aa >> 16)).astype(np.float64), (sa * (aa & 0xFFFF)).astype(np.float64)
    bh, bl = (sb * (bb >> 16)).astype(np.float64), (sb * (bb & 0xFFFF)).astype(np.float64)

    def mm(x, y):
        return np.rint(x @ y).astype(np.int64).astype(object)

    return (mm(ah, bh) << 32) + ((mm(ah, bl) + mm(al, bh)) << 16) + mm(al, bl)


def exact_dot(codec: ElementCodec, x: np.ndarray, w: np.ndarray):
    """Exact per-beat column sums ``S = x @ W``.

    Parameters
    ----------
    codec : ElementCodec
    x : ndarray, shape (N, D)
        Activation codes, one beat per row.
    w : ndarray, shape (D, D)
        Weight codes ``W[k, j]``.

    Returns
    -------
    num : ndarray of object, shape (N, D)
        Python-int numerators; the value is ``num * 2**(2 * codec.lsb)``.
    cls : ndarray of int8, shape (N, D)
        ``FINITE``, ``PINF``, ``NINF`` or ``NAN`` (then ``num`` is meaningless).
    """
    x = np.asarray(x, dtype=np.int64)
    w = np.asarray(w, dtype=np.int64)
    num = _exact_matmul_int(codec.ints[x], codec.ints[w], codec.max_int, codec.max_int)
    cls = np.zeros(num.shape, dtype=np.int8)
    if codec.has_specials:
        xs = codec.is_nan[x] | codec.is_inf[x]
        ws = codec.is_nan[w] | codec.is_inf[w]
        beats = np.nonzero(xs.any(axis=1) | ws.any())[0]
        for i in beats:           # rare: only beats that meet a NaN/Inf code
            xi, wc = x[i][:, None], w
            nanp = (codec.is_nan[xi] | codec.is_nan[wc] | (codec.is_inf[xi] & codec.is_zero[wc])
                    | (codec.is_zero[xi] & codec.is_inf[wc]))
            infp = (codec.is_inf[xi] | codec.is_inf[wc]) & ~nanp
            negp = codec.neg[xi] ^ codec.neg[wc]
            pos = (infp & ~negp).any(axis=0)
            neg = (infp & negp).any(axis=0)
            c = np.where(pos, PINF, np.where(neg, NINF, FINITE))
            c = np.where(nanp.any(axis=0) | (pos & neg), NAN, c)
            cls[i] = c
    return num, cls


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



def unit_matmul(fmt: str, width: int, x, xs, w, ws, frac_bits=WINDOW_FRAC_BITS) -> np.ndarray:
    """FP32 result bits of a whole product ``x @ w`` fed through a unit of width D, one D-long
    k-tile per beat, accumulated from the first k-tile (``first``) to the last.

    Parameters
    ----------
    fmt : str
        A block-scaled format (:data:`hw.formats.BLOCK_FORMATS`), or an element format
        (:data:`hw.formats.MATRIX_FORMATS`: unit scales, one block of D per beat, the per-tensor
        contract in the ``fp32`` mode).
    x : ndarray (M, Kp) codes, ``Kp`` a multiple of D (zero-padded)
    xs : ndarray (M, Kp / B) scale codes (None for an element format)
    w : ndarray (Kp, N) codes
    ws : ndarray (Kp / B, N) scale codes (None for an element format)
    frac_bits : int or None
        Window fraction bits F (None: exact block sums).

    Returns
    -------
    ndarray of uint32 (M, N)
    """
    x, w = np.asarray(x), np.asarray(w)
    bf = get_block_format(fmt) if fmt in BLOCK_FORMATS else None
    if bf is not None:
        bf.check_width(width)
        codec, block = ElementCodec(bf.element), bf.block
    else:
        codec, block = ElementCodec(fmt), width
    m, kp = x.shape
    if kp % width or w.shape[0] != kp:
        raise ValueError(f"x must be (M, Kp) and w (Kp, N) with Kp a multiple of D = {width}; "
                         f"got {x.shape} and {w.shape}")
    nb = width // block
    acc = np.zeros((m, w.shape[1]), dtype=np.uint32)
    for t in range(kp // width):
        ks, bs = slice(t * width, (t + 1) * width), slice(t * nb, (t + 1) * nb)
        if bf is None:
            sx, sw = unit_scales((m, 1)), unit_scales((1, w.shape[1]))
        else:
            sx, sw = bf.scale_split(np.asarray(xs)[:, bs]), bf.scale_split(np.asarray(ws)[bs])
        terms = block_terms(codec, block, x[:, ks], sx, w[ks], sw)
        acc = beat(acc, t == 0, terms, frac_bits)
    return acc

@dataclass
class YRow:
    """One result row of the model.

    Attributes
    ----------
    row : int
        Accumulator row index.
    bits : ndarray of uint32 (D,)
        FP32 results (the bit-true contract).
    ref : ndarray of float64 (D,)
        float64 reference of the same accumulation (sum of float64 dot products).
    bound : ndarray of float64 (D,)
        ``|bits - ref|`` allowed: the contract's rounding bound (``fp32``: the sum of half-ulp(acc)
        over the accumulation's beats; ``exact``: half an ulp of the result), plus the float64
        reference's own error bound.
    overflow : bool
        ``exact`` mode: the accumulation was longer than ``2**guard_bits`` beats (every column NaN,
        one count of ``cnt_acc_overflow``).
    """

    row: int
    bits: np.ndarray
    ref: np.ndarray
    bound: np.ndarray
    overflow: bool = False


class MatrixUnitModel:
    """Cycle-free functional model of the matrix unit: tiles, rows, first/last, and one rounding per
    beat (``fp32``) or per accumulation (``exact``); the reference for the RTL (ports in
    ``docs/mu_interface.md``).

    On a block-scaled format the beats carry scale codes (``ws`` and ``xs`` of :meth:`run`) and a
    beat's column sum is the window sum of its block terms (``fp32`` accumulation only).

    Parameters
    ----------
    width : int
        D (a multiple of the block size B for a block-scaled format).
    fmt : str
        Element format (:data:`hw.formats.MATRIX_FORMATS`) or block-scaled format
        (:data:`hw.formats.BLOCK_FORMATS`).
    rows : int
        Accumulator rows R.
    acc : str
        Accumulate mode, one of :data:`hw.designs.ACC_MODES`.
    guard_bits : int
        ``exact`` mode: accumulations longer than ``2**guard_bits`` beats overflow (NaN).
    frac_bits : int or None
        Block-scaled formats: window fraction bits F (None: exact block sums, for measurements only).

    Raises
    ------
    ValueError
        Bad width, format, rows, mode or guard bits.
    """

    def __init__(self, width: int, fmt: str, rows: int = 1, acc: str = "fp32", guard_bits: int = 16,
                 frac_bits: int | None = WINDOW_FRAC_BITS):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if fmt not in MATRIX_FORMATS and fmt not in BLOCK_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join((*MATRIX_FORMATS, *BLOCK_FORMATS))}, "
                             f"not {fmt!r}")
        if not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be an integer >= 1, not {rows!r}")
        if acc not in ACC_MODES:
            raise ValueError(f"acc must be one of {', '.join(ACC_MODES)}, not {acc!r}")
        if not isinstance(guard_bits, int) or guard_bits < 1:
            raise ValueError(f"guard_bits must be an integer >= 1, not {guard_bits!r}")
        self.bf = get_block_format(fmt) if fmt in BLOCK_FORMATS else None
        if self.bf is not None:
            self.nb = self.bf.check_width(width)
        self.width, self.rows, self.mode, self.guard_bits = width, rows, acc, guard_bits
        self.frac_bits = frac_bits
        self.codec = ElementCodec(fmt if self.bf is None else self.bf.element)
        self.e = 2 * self.codec.lsb
        self.window = None
        if self.bf is not None and acc == "exact" and windowed(fmt):  # OCP MX: the window
            self.window = WindowColumns(fmt, width, rows, guard_bits, self.e)
        elif self.bf is not None and acc == "exact":  # block terms on one grid: 2 lsb + 2 min e(scale)
            self.e += 2 * self.bf.scale_format.exp_range[0]
        self.acc = ([[0] * width for _ in range(rows)] if self.bf is None
                    else np.zeros((rows, width), dtype=np.uint32))
        # exact mode: per row the exact sums (Python ints), sticky NaN / +Inf / -Inf per column
        self.total = [np.zeros(width, dtype=object) for _ in range(rows)]
        self.special = np.zeros((rows, 3, width), dtype=bool)
        # float64 shadow per row: reference sum, sum of |products|, beats, sum of half-ulps
        # (block-scaled: the running bound of docs/numerics.md section 7.4 in ``bound``)
        self.ref = np.zeros((rows, width))
        self.absum = np.zeros((rows, width))
        self.beats = np.zeros(rows, dtype=np.int64)
        self.halfulps = np.zeros((rows, width))
        self.bound = np.zeros((rows, width))

    def run(self, w: np.ndarray, x: np.ndarray, first, last, row=None, *, ws=None, xs=None) -> list:
        """Run a block of beats against one weight tile.

        Parameters
        ----------
        w : ndarray (D, D)
            The active tile's codes ``W[k, j]``.
        x : ndarray (N, D)
            Activation codes, one beat per row.
        first, last : array-like of bool, length N (or scalars)
        row : array-like of int, length N, optional
            Accumulator row per beat (default 0).
        ws : ndarray (D/B, D), block-scaled formats only
            Weight scale codes: ``ws[i, j]`` scales rows ``iB .. iB+B-1`` of column j.
        xs : ndarray (N, D/B), block-scaled formats only
            Activation scale codes per beat and block.

        Returns
        -------
        list of YRow
            One result row per ``last`` beat, in order.
        """
        d = self.width
        x = np.atleast_2d(np.asarray(x))
        n = x.shape[0]
        if x.shape[1] != d or np.shape(w) != (d, d):
            raise ValueError(f"x must be (N, {d}) and w ({d}, {d}); got {x.shape} and {np.shape(w)}")
        if self.bf is None and (ws is not None or xs is not None):
            raise ValueError(f"{self.codec.fmt.name} is a per-tensor format: run takes no scale codes "
                             "(ws, xs)")
        if self.bf is not None:
            if ws is None or xs is None:
                raise ValueError(f"{self.bf.name} is block-scaled: run needs the scale codes ws and xs")
            xs, ws = np.atleast_2d(np.asarray(xs)), np.atleast_2d(np.asarray(ws))
            if xs.shape != (n, self.nb) or ws.shape != (self.nb, d):
                raise ValueError(f"need xs (N, {self.nb}) and ws ({self.nb}, {d}) for x (N, {d}); got "
                                 f"{xs.shape} and {ws.shape}")
        first = np.broadcast_to(np.asarray(first, dtype=bool), (n,))
        last = np.broadcast_to(np.asarray(last, dtype=bool), (n,))
        row = np.broadcast_to(np.asarray(0 if row is None else row, dtype=np.int64), (n,))
        if n and (row.min() < 0 or row.max() >= self.rows):
            raise ValueError(f"row index must lie in [0, {self.rows - 1}]")
        if self.bf is not None:
            return self._run_block(np.asarray(w), x, ws, xs, first, last, row)
        num, cls = exact_dot(self.codec, x, w)
        with np.errstate(invalid="ignore", over="ignore"):
            xv, wv = self.codec.value(x), self.codec.value(w)
            ref = xv @ wv
            absum = np.abs(xv) @ np.abs(wv)
        out = []
        for i in range(n):
            r = int(row[i])
            if first[i]:
                self.ref[r], self.absum[r], self.beats[r], self.halfulps[r] = 0.0, 0.0, 0, 0.0
            with np.errstate(invalid="ignore"):
                self.ref[r] = self.ref[r] + ref[i]
                self.absum[r] = self.absum[r] + absum[i]
            self.beats[r] += 1
            if self.mode == "exact":
                bits, overflow = self._exact_beat(r, num[i], cls[i], first[i], last[i])
            else:
                bits, overflow = self._fp32_beat(r, num[i], cls[i], first[i]), False
            if last[i]:
                # float64 reference error: D products + beats additions, each <= 2^-53 relative
                ref_err = (self.width + self.beats[r]) * 2.0 ** -52 * self.absum[r]
                out.append(YRow(r, bits, self.ref[r].copy(), self.halfulps[r] + ref_err, overflow))
        return out

    def _fp32_beat(self, r: int, num, cls, first: bool) -> np.ndarray:
        """One rounding per beat: row r's accumulators after this beat (FP32 bits)."""
        acc = None if first else self.acc[r]
        new = [accumulate(None if acc is None else acc[j], num[j], cls[j], self.e)
               for j in range(self.width)]
        self.acc[r] = new
        bits = np.array(new, dtype=np.uint32)
        self.halfulps[r] = self.halfulps[r] + half_ulp_fp32(bits)
        return bits

    def _exact_beat(self, r: int, num, cls, first: bool, last: bool):
        """Add this beat exactly into row r; on ``last`` return ``(bits, overflow)`` of the row's one
        rounding (``halfulps`` becomes the result's half-ulp), else ``(None, False)``."""
        if first:
            self.total[r] = np.zeros(self.width, dtype=object)
            self.special[r] = False
        self.total[r] = self.total[r] + np.where(cls == FINITE, num, 0)
        self.special[r] |= cls[None, :] == np.array([NAN, PINF, NINF])[:, None]
        if not last:
            return None, False
        nan, pinf, ninf = self.special[r]
        res = [exact_result(int(self.total[r][j]), int(self.beats[r]), nan[j], pinf[j], ninf[j],
                            guard_bits=self.guard_bits, lsb_exp=self.e) for j in range(self.width)]
        bits = np.array([c for c, _ in res], dtype=np.uint32)
        self.halfulps[r] = half_ulp_fp32(bits)
        return bits, bool(res[0][1])


    def _run_block(self, w, x, ws, xs, first, last, row) -> list:
        """:meth:`run` on a block-scaled format: each beat's block terms through the window and one
        rounding (:func:`tb.mu.rounding.beat`); the rows carry a float64 reference of the scaled dot
        products and the bound of ``docs/numerics.md`` section 7.4 (half-ulps, window truncation,
        float64)."""
        d = self.width
        sx, sw = self.bf.scale_split(xs), self.bf.scale_split(ws)
        terms = block_terms(self.codec, self.bf.block, x, sx, w, sw)
        ref, absum = self._block_reference(x, xs, w, ws)
        if self.window is not None:
            return self._run_block_window(terms, ref, absum, first, last, row)
        if self.mode == "exact":
            return self._run_block_exact(terms, ref, absum, first, last, row)
        trunc = self._trunc_bound(terms)
        out = []
        for i in range(x.shape[0]):
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

    def _shadow(self, r: int, first: bool, ref, absum) -> None:
        """Row ``r``'s float64 shadow after a beat: reference sum, sum of magnitudes, beats."""
        if first:
            self.ref[r], self.absum[r], self.beats[r] = 0.0, 0.0, 0
        with np.errstate(invalid="ignore"):
            self.ref[r] = self.ref[r] + ref
            self.absum[r] = self.absum[r] + absum
        self.beats[r] += 1

    def _run_block_window(self, terms: Terms, ref, absum, first, last, row) -> list:
        """The ``exact`` mode on an OCP MX format: the window (``docs/numerics.md`` section 7.7,
        :mod:`tb.mu.model_window`); the bound is half an ulp, the window's drops and float64's."""
        out = []
        for i in range(terms.p.shape[0]):
            r = int(row[i])
            self._shadow(r, first[i], ref[i], absum[i])
            got = self.window.beat(terms.p[i], terms.e[i], terms.cls[i], bool(first[i]),
                                   bool(last[i]), r)
            if got is not None:
                bits = np.array(got[0], dtype=np.uint32)
                ref_err = (self.width + 2 + self.beats[r]) * 2.0 ** -52 * self.absum[r]
                bound = half_ulp_fp32(bits) + np.array(got[1]) + ref_err
                out.append(YRow(r, bits, self.ref[r].copy(), bound, got[2]))
        return out

    def _run_block_exact(self, terms: Terms, ref, absum, first, last, row) -> list:
        """The ``exact`` mode on a block-scaled format (``docs/numerics.md`` section 7.5): each beat's
        block terms summed exactly on the grid ``2**self.e`` (Python integers), the K-long sums
        rounded once as on a per-tensor format (:meth:`_exact_beat`)."""
        shift = terms.e - self.e                  # >= 0 for every scale; terms.p is 0 unless finite
        assert (shift >= 0).all(), "a block term below the exact mode's grid"
        num = np.zeros((terms.p.shape[0], terms.p.shape[2]), dtype=object)
        for i in range(terms.p.shape[1]):
            num = num + terms.p[:, i, :].astype(object) * (np.ones_like(shift[:, i, :], dtype=object)
                                                          << shift[:, i, :].astype(object))
        out = []
        for i in range(num.shape[0]):
            r = int(row[i])
            self._shadow(r, first[i], ref[i], absum[i])
            bits, overflow = self._exact_beat(r, num[i], terms.cls[i], first[i], last[i])
            if last[i]:
                ref_err = (self.width + 2 + self.beats[r]) * 2.0 ** -52 * self.absum[r]
                out.append(YRow(r, bits, self.ref[r].copy(), self.halfulps[r] + ref_err, overflow))
        return out

    def _block_reference(self, x, xs, w, ws):
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


# --------------------------------------------------------------------------------------------------
# float64 reference and error metrics
# --------------------------------------------------------------------------------------------------
def reference_f64(codec: ElementCodec, xs: list, ws: list) -> np.ndarray:
    """float64 reference of a whole accumulation: ``sum_t x_t @ W_t`` in float64 arithmetic.

    Parameters
    ----------
    xs : list of ndarray (N_t, D)
        Activation codes per tile; every beat adds to the same output row.
    ws : list of ndarray (D, D)

    Returns
    -------
    ndarray (D,)
    """
    total = 0.0
    for x, w in zip(xs, ws, strict=True):
        total = total + (codec.value(x) @ codec.value(w)).sum(axis=0)
    return np.asarray(total, dtype=np.float64)


def error_metrics(got_bits, ref, bound) -> dict:
    """Relative/absolute error of FP32 results against a float64 reference, and the bound check.

    Parameters
    ----------
    got_bits : array of FP32 bits
    ref : array of float64
    bound : array of float64
        Allowed ``|got - exact|`` (see ``docs/numerics.md``), plus the reference's own error.

    Returns
    -------
    dict
        ``max_rel``, ``mean_rel``, ``max_abs``, ``within_bound`` (bool), ``n``.
    """
    got = fp32_to_float(got_bits)
    ref = np.asarray(ref, dtype=np.float64)
    fin = np.isfinite(ref) & np.isfinite(got)
    err = np.abs(got[fin] - ref[fin])
    scale = np.abs(ref[fin])
    rel = np.where(scale > 0, err / np.where(scale > 0, scale, 1), err)
    same_special = np.array_equal(np.isnan(got), np.isnan(ref)) and np.array_equal(
        got[np.isinf(ref)], ref[np.isinf(ref)])
    return {
        "n": int(fin.sum()),
        "max_rel": float(rel.max()) if rel.size else 0.0,
        "mean_rel": float(rel.mean()) if rel.size else 0.0,
        "max_abs": float(err.max()) if err.size else 0.0,
        "within_bound": bool(same_special and (err <= np.asarray(bound)[fin]).all()),
    }
