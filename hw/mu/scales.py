"""The block-scale axis of the matrix unit: scale-code decode, a column's scaled beat sum (the
window sum of its block terms) and the accumulator that takes a sum with an exponent.

The contract is ``docs/numerics.md`` section 7: a scale code is ``m * 2**e`` (E8M0: ``m = 1``,
``e = c - 127``, NaN ``0xFF``; UE4M3: ``m`` the E4M3 significand, ``e = max(eeee, 1) - 10``, NaN with
bit 7 set or ``0x7F``), and the block terms ``P_i * 2**E_i`` of a column are summed in a window of
``F + 1`` fraction bits below the largest contributing block, lower blocks rounded to odd.

A column of a block-scaled unit (:class:`hw.mu.column.Column` with a block-scaled ``fmt``) has D/B
trees of width B; :func:`block_terms` decodes each block's scales at the lanes' stage, delays them
beside the trees' registers and scales the trees' sums, :func:`scaled_sum` sums them in the window,
and :class:`ScaledAccumulator` adds ``S * 2**s_exp`` to the FP32 row with one rounding.

In the ``exact`` accumulate mode (a scale format whose exponent sums span at most
:data:`EXACT_SPAN_MAX` binades: NVFP4's UE4M3) there is no window and no exponent: :func:`fixed_sum`
shifts every block term left by its exponent above the smallest one into a fixed-point grid
(:func:`fixed_sum_widths`) and compresses the D/B terms to two carry-save rows, which the
:class:`hw.mu.exact_acc.ExactAccumulator` of the plain formats sums exactly and rounds once.
"""

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..clock_gate import gated_assign
from ..formats import BLOCK_FORMATS, SCALE_FORMATS, get_block_format
from ..fp.booth import dadda_reduce
from ..fp.round import leading_zeros
from .accumulate import EXP_W, Accumulator, AccumulatorParams
from .numerics import EXACT_SPAN_MAX, dot_widths, scale_span

__all__ = ["WINDOW_FRAC_BITS", "SCALE_EXP_BITS", "EXACT_SPAN_MAX", "decode_scale", "window_sum",
           "scaled_sum_widths", "FixedSumWidths", "max_unsigned", "fixed_sum_widths", "check_exact_block",
           "block_terms", "register_terms", "scaled_sum", "fixed_sum", "ScaledAccumulator",
           "split_point", "split_sum", "finish_sum", "select_add"]

#: F, fraction bits of the window below the unit of the largest block term (docs/numerics.md 7.2).
WINDOW_FRAC_BITS = 32
#: Signed bits of one scale exponent (E8M0: -127..127; UE4M3: -9..5).
SCALE_EXP_BITS = 9


@dataclass(frozen=True)
class FixedSumWidths:
    """The exact beat sum of a block-scaled column in the ``exact`` mode, as
    :class:`hw.mu.numerics.DotWidths` gives it for a plain one (what
    :class:`hw.mu.exact_acc.ExactAccumulator` reads): ``sum_bits`` W of two's complement with LSB
    ``2**lsb_exp``, and ``fmt``'s special-value flags (NaN: scales can be NaN; Inf as the element)."""

    fmt: SimpleNamespace
    width: int
    term_bits: int
    span: int
    sum_bits: int
    lsb_exp: int
    exp_min: int


def check_exact_block(fmt: str) -> None:
    """Raise ValueError if block-scaled ``fmt``'s scale exponents span more than
    :data:`EXACT_SPAN_MAX` binades: its exact sum has no fixed-point grid of sane width, and its
    ``exact`` mode is the window of :mod:`hw.mu.window` instead."""
    sf = get_block_format(fmt).scale_format
    if scale_span(fmt) > EXACT_SPAN_MAX:
        ok = [n for n in BLOCK_FORMATS if scale_span(n) <= EXACT_SPAN_MAX]
        raise ValueError(f"a fixed-point grid takes block-scaled formats whose scale products span at "
                         f"most {EXACT_SPAN_MAX} binades ({', '.join(ok)}); {fmt}'s {sf.name} scales "
                         f"span {scale_span(fmt)}: its exact mode is the window (hw.mu.window, "
                         f"docs/numerics.md section 7.7)")


def fixed_sum_widths(fmt: str, width: int) -> FixedSumWidths:
    """Widths of the ``exact`` mode's beat sum for block-scaled ``fmt`` at D = ``width``: each block
    term (``scaled_sum_widths``' block bits) shifted left by its exponent above the smallest one (0 ..
    ``span``), D/B of them summed (docs/numerics.md section 7.5)."""
    check_exact_block(fmt)
    bf = get_block_format(fmt)
    dw = dot_widths(bf.element, bf.block)
    sf = bf.scale_format
    lo, hi = sf.exp_range
    pb = dw.sum_bits + (2 * sf.sig_bits if sf.man_bits else 0)
    span = 2 * (hi - lo)
    nb = width // bf.block
    f = bf.element_format
    flags = SimpleNamespace(name=bf.name, has_nan=True, has_inf=f.has_inf)
    return FixedSumWidths(flags, width, pb + span, span, pb + span + (nb - 1).bit_length(),
                          dw.lsb_exp + 2 * lo, 2 * lo)


def decode_scale(m: Module, code, scale, *, name: str):
    """Split an 8-bit scale code into ``(m, e, nan)`` by its :class:`hw.formats.ScaleFormat` row
    (``scale``, or its name): the integer significand (:attr:`~hw.formats.ScaleFormat.sig_bits`;
    a constant 1 with no mantissa field and no subnormals), the signed exponent of
    :data:`SCALE_EXP_BITS` bits and the NaN flag."""
    sf = SCALE_FORMATS[scale] if isinstance(scale, str) else scale
    e = Signal(signed(SCALE_EXP_BITS), name=f"{name}_e")
    nan = Signal(name=f"{name}_nan")
    top = sf.exp_bits + sf.man_bits
    nans = ([code[top] if len(code) == top + 1 else code[top:].any()] if top < len(code) else [])
    nans += [code == c for c in sf.nan_codes]
    is_nan = nans[0]
    for v in nans[1:]:
        is_nan = is_nan | v
    offset = sf.bias + sf.man_bits  # one constant: e is a single subtraction
    if not sf.subnormals and sf.man_bits == 0:  # a power of two: the code is the exponent field
        m.d.comb += [e.eq((code if top == len(code) else code[:top]) - offset), nan.eq(is_nan)]
        return Const(1, 1), e, nan
    ex, man = code[sf.man_bits:top], code[0:sf.man_bits]
    sig = Signal(sf.sig_bits, name=f"{name}_m")
    hidden = (ex != 0) if sf.subnormals else Const(1, 1)
    m.d.comb += [
        sig.eq(Cat(man, hidden)),
        e.eq((Mux(ex == 0, 1, ex) if sf.subnormals else ex) - offset),
        nan.eq(is_nan),
    ]
    return sig, e, nan


def max_unsigned(m: Module, keys: list, *, name: str):
    """Largest of unsigned keys, by a balanced tree of compare-and-select."""
    level = 0
    while len(keys) > 1:
        nxt = []
        for i in range(0, len(keys) - 1, 2):
            k = Signal(len(keys[i]), name=f"{name}{level}_{i // 2}")
            m.d.comb += k.eq(Mux(keys[i] >= keys[i + 1], keys[i], keys[i + 1]))
            nxt.append(k)
        if len(keys) % 2:
            nxt.append(keys[-1])
        keys, level = nxt, level + 1
    return keys[0]


def window_sum(m: Module, terms: list, exps: list, *, frac_bits: int = WINDOW_FRAC_BITS,
               name: str = "win"):
    """The window sum of block terms ``terms[i] * 2**exps[i]`` (signed integers, signed exponents).

    Returns ``(s, top)``: the signed sum ``s`` with LSB weight ``2**(top - frac_bits - 1)``, where
    ``top`` (signed, one bit wider than the exponents) is the largest exponent among the nonzero
    terms. A term more than ``frac_bits`` below ``top`` is shifted right arithmetically with the bits
    shifted out ORed into its last bit (rounded to odd); every other term enters exactly. With no
    nonzero term ``s`` is 0 (``top`` is then meaningless).
    """
    pb = max(len(t) for t in terms)
    lw = pb + frac_bits + 1                      # a term placed at the top of the window
    eb = max(len(e) for e in exps) + 1
    bias = 1 << (eb - 1)
    keys = []
    for i, (t, e) in enumerate(zip(terms, exps, strict=True)):
        k = Signal(eb + 1, name=f"{name}_key{i}")  # 0: a zero term, else e + bias (>= 1)
        m.d.comb += k.eq(Mux(t != 0, e + bias, 0))
        keys.append(k)
    kmax = max_unsigned(m, keys, name=f"{name}_max")
    top = Signal(signed(eb + 1), name=f"{name}_top")
    m.d.comb += top.eq(kmax - bias)
    if len(terms) == 2:  # one of the two is the top: align only the other one
        sel = Signal(name=f"{name}_sel")
        big, small = Signal(signed(pb), name=f"{name}_big"), Signal(signed(pb), name=f"{name}_small")
        e_small = Signal(signed(eb), name=f"{name}_es")
        m.d.comb += [sel.eq(keys[1] > keys[0]), big.eq(Mux(sel, terms[1], terms[0])),
                     small.eq(Mux(sel, terms[0], terms[1])), e_small.eq(Mux(sel, exps[0], exps[1]))]
        vals = [Signal(signed(lw), name=f"{name}_v0"),
                _to_odd(m, small, top, e_small, lw, frac_bits, name=f"{name}1")]
        m.d.comb += vals[0].eq(big << (frac_bits + 1))
    else:
        vals = [_to_odd(m, t, top, e, lw, frac_bits, name=f"{name}{i}")
                for i, (t, e) in enumerate(zip(terms, exps, strict=True))]
    s = Signal(signed(lw + (len(vals) - 1).bit_length()), name=f"{name}_s")
    m.d.comb += s.eq(sum(vals[1:], vals[0]))
    return s, top


def _to_odd(m, t, top, e, lw, frac_bits, *, name):
    """Term ``t * 2**e`` in units of ``2**(top - frac_bits - 1)``, rounded to odd: ``t`` placed at
    the top of ``lw`` bits, shifted right arithmetically by ``top - e`` (clamped at ``lw``) with the
    shifted-out bits ORed into the last bit."""
    d = Signal(signed(len(top) + 1), name=f"{name}_d")
    dc = Signal(range(lw + 1), name=f"{name}_dc")
    placed = Signal(signed(lw), name=f"{name}_pl")
    v = Signal(signed(lw), name=f"{name}_v")
    sticky = Signal(name=f"{name}_st")  # t's bit k sits at k + F + 1 of the placed value
    m.d.comb += [
        d.eq(top - e),
        dc.eq(Mux((d < 0) | (d > lw), lw, d)),  # a zero term may sit above top: it adds 0
        placed.eq(t << (frac_bits + 1)),
        sticky.eq(Cat(*[t[k] & (dc > frac_bits + 1 + k) for k in range(len(t))]).any()),
        v.eq((placed >> dc) | sticky),
    ]
    return v


def scaled_sum_widths(fmt: str, width: int) -> tuple:
    """``(sum_bits, lsb_exp)`` of a block-scaled column's beat sum ``S``: its signed width and the
    weight exponent of its LSB when the exponent input is 0 (``docs/numerics.md`` 7.3)."""
    bf = get_block_format(fmt)
    dw = dot_widths(bf.element, bf.block)
    sf = bf.scale_format
    pb = dw.sum_bits + (2 * sf.sig_bits if sf.man_bits else 0)  # times the scales' significands
    nb = width // bf.block
    if nb == 1:
        return pb, dw.lsb_exp
    return pb + WINDOW_FRAC_BITS + 1 + (nb - 1).bit_length(), dw.lsb_exp - WINDOW_FRAC_BITS - 1


def _block_scales(m, bf, xs, ws, en, delay: int, *, platform=None, valid=None):
    """Per block: (scale significand product or None, exponent sum, NaN), from the activation scale
    codes ``xs`` and the active weight scale codes ``ws``, delayed by ``delay`` registers enabled
    by ``en``; with ``valid`` (the beat of ``xs`` is valid) each stage is clock-gated to ``en`` and
    the beat entering it is valid (a valid bit runs beside the stages, as in the trees)."""
    sf = bf.scale_format
    ue = sf.sig_bits > 1  # the block term is scaled by the two significands' product
    vs = [valid]
    for r in range(delay if valid is not None else 0):
        v = Signal(name=f"sv{r + 1}")
        with m.If(en):
            m.d.sync += v.eq(vs[-1])
        vs.append(v)
    out = []
    for i in range(len(xs) // 8):
        mx, ex, nx = decode_scale(m, xs[8 * i:8 * i + 8], sf, name=f"sx{i}")
        mw, ew, nw = decode_scale(m, ws[8 * i:8 * i + 8], sf, name=f"sw{i}")
        es = Signal(signed(SCALE_EXP_BITS + 1), name=f"es{i}")
        nan = Signal(name=f"snan{i}")
        vals = [es, nan]
        m.d.comb += [es.eq(ex + ew), nan.eq(nx | nw)]
        if ue:
            mp = Signal(2 * sf.sig_bits, name=f"mp{i}")
            m.d.comb += mp.eq(mx * mw)
            vals.append(mp)
        for r in range(delay):
            regs = [Signal.like(v, name=f"{v.name}_d{r}", reset_less=True) for v in vals]
            if valid is not None:
                gated_assign(m, platform, en & vs[r], list(zip(regs, vals, strict=True)),
                             f"s{i}d{r}g")
            else:
                with m.If(en):
                    m.d.sync += [g.eq(v) for g, v in zip(regs, vals, strict=True)]
            vals = regs
        out.append((vals[2] if ue else None, vals[0], vals[1]))
    return out


def block_terms(m, bf, trees, xs, ws, en, delay: int, *, platform=None, valid=None) -> tuple:
    """A block-scaled column's block terms from its block trees (:class:`hw.mu.tree.Tree` at width
    B), the activation and active weight scale codes and the trees' latency ``delay``: lists of the
    terms (tree sums times the scales' significand product), their exponents, NaN flags and the
    +Inf / -Inf flags (for :func:`scaled_sum`). Carry-save trees (the window's) give each term as
    :func:`split_sum`'s half-added form and a sixth list, the terms' nonzero flags (the sums are
    finished by :func:`finish_sum` after the :func:`register_terms` stage). With ``valid`` (the
    activation beat is valid) the scales' delay registers are clock-gated (``platform`` the
    caller's)."""
    f = bf.element_format
    scales = _block_scales(m, bf, xs, ws, en, delay, platform=platform, valid=valid)
    terms, exps, nans, pinfs, ninfs, nzs = [], [], [], [], [], []
    for i, (tree, (mp, es, snan)) in enumerate(zip(trees, scales, strict=True)):
        if hasattr(tree, "s0"):  # a carry-save tree (the window's): s0 + s1 = S + 2**(W-1)
            part, nz = split_sum(m, tree.s0, tree.s1, name=f"bs{i}")
            terms.append(part)
            nzs.append(nz)
        elif mp is None:
            terms.append(tree.s)
        else:
            t = Signal(signed(len(tree.s) + len(mp)), name=f"p{i}")
            m.d.comb += t.eq(tree.s * mp)
            terms.append(t)
        exps.append(es)
        nan = snan
        if f.has_nan or f.has_inf:
            nan = nan | tree.s_nan
        if f.has_inf:
            inf = tree.s_inf
            if mp is not None:
                nan = nan | (inf & (mp == 0))  # Inf times a zero scale
            pinfs.append(inf & ~tree.s_inf_neg)
            ninfs.append(inf & tree.s_inf_neg)
        nans.append(nan)
    return (terms, exps, nans, pinfs, ninfs) + ((nzs,) if nzs else ())


def scaled_sum(m, acc, terms, exps, nans, pinfs, ninfs) -> list:
    """Drive :class:`ScaledAccumulator` ``acc`` with the window sum of the block terms (the term
    itself for one block) and its exponent; returns the statements of its special-value inputs."""
    if len(terms) == 1:
        m.d.comb += [acc.s.eq(terms[0]), acc.s_exp.eq(exps[0])]
    else:
        s, top = window_sum(m, terms, exps, frac_bits=WINDOW_FRAC_BITS)
        m.d.comb += [acc.s.eq(s), acc.s_exp.eq(top)]
    pinf = Signal(name="pinf")
    ninf = Signal(name="ninf")
    m.d.comb += [pinf.eq(0 if not pinfs else _any(pinfs)), ninf.eq(0 if not ninfs else _any(ninfs))]
    return [acc.s_nan.eq(_any(nans) | (pinf & ninf)), acc.s_inf.eq(pinf | ninf),
            acc.s_inf_neg.eq(ninf)]


def split_point(width: int, chunk: int = 8) -> int:
    """Bits of a ``width``-bit carry-save sum that :func:`split_sum` adds before the register (about
    half, in whole ``chunk``-bit slices); :func:`finish_sum` adds the rest after it."""
    return min(width - 1, max(chunk, chunk * round(width / (2 * chunk))))


def split_sum(m, a, b, *, name: str):
    """The first half of ``S = (a + b) mod 2**W - 2**(W-1)`` (unsigned ``a``, ``b`` of ``W`` bits
    with ``a + b = S + 2**(W-1)``, a carry-save tree's rows) and whether ``S`` is nonzero.

    Returns ``(part, nz)``: ``part`` is ``Cat(lo, c, a_hi, b_hi)`` with ``lo`` the low
    :func:`split_point` bits of ``a + b``, ``c`` their carry out and ``a_hi``, ``b_hi`` the high bits
    of the rows (for :func:`finish_sum`); ``nz`` is ``S != 0`` from a carry-free test (``a + b = K``
    exactly when every ``a_i ^ b_i ^ K_i`` equals the carry ``(a & b | (a | b) & ~K)`` from the bit
    below), so the placement's zero tests need not wait for the adder."""
    w = len(a)
    h = split_point(w)
    k = Const(1 << (w - 1), w)
    lo = Signal(h + 1, name=f"{name}_lo")
    m.d.comb += lo.eq(select_add(m, Cat(a[:h], Const(0, 1)), Cat(b[:h], Const(0, 1)),
                                 name=f"{name}_l"))
    # the general carry (a & b | (a | b) & ~K); below K's top bit it is a | b, the form realign's
    # zero test uses, but this one maps smaller (measured: 474 um^2 less per column at D = 32 MXFP8)
    gen = Signal(w, name=f"{name}_zg")
    m.d.comb += gen.eq((a & b) | ((a | b) & ~k))
    nz = Signal(name=f"{name}_nz")
    m.d.comb += nz.eq(((a ^ b ^ k) != Cat(Const(0, 1), gen[:w - 1])))
    part = Signal(h + 1 + 2 * (w - h), name=f"{name}_part")
    m.d.comb += part.eq(Cat(lo, a[h:], b[h:]))
    return part, nz


def finish_sum(m, part, width: int, *, name: str):
    """The signed ``S`` of :func:`split_sum`'s ``part`` (``width`` bits): the high rows added with the
    low half's carry, the top bit inverted (the ``2**(W-1)`` offset)."""
    h = split_point(width)
    lo, c = part[:h], part[h]
    a_hi, b_hi = part[h + 1:h + 1 + width - h], part[h + 1 + width - h:]
    s = Signal(signed(width), name=name)
    m.d.comb += s.eq(Cat(lo, select_add(m, a_hi, b_hi, cin=c, name=f"{name}_h"))
                     ^ (1 << (width - 1)))
    return s


def select_add(m, a, b, *, cin=None, chunk: int = 8, name: str = "csel"):
    """``(a + b + cin) mod 2**len(a)`` as a carry-select adder: every ``chunk``-bit slice adds both
    ways (carry in 0 and 1) beside the others, and the slices' carries select along the chunks (the
    mapped depth is one chunk's ripple plus one select per chunk, not ``len(a)`` ripple steps)."""
    w = len(a)
    parts, carry = [], Const(0, 1) if cin is None else cin
    for lo in range(0, w, chunk):
        hi = min(lo + chunk, w)
        s0, s1 = Signal(hi - lo + 1, name=f"{name}_c{lo}_0"), Signal(hi - lo + 1, name=f"{name}_c{lo}_1")
        m.d.comb += [s0.eq(a[lo:hi] + b[lo:hi]), s1.eq(a[lo:hi] + b[lo:hi] + 1)]
        sel = Signal(hi - lo + 1, name=f"{name}_s{lo}")
        m.d.comb += sel.eq(Mux(carry, s1, s0))
        parts.append(sel[:hi - lo])
        carry = sel[-1]
    out = Signal(w, name=f"{name}_sum")
    m.d.comb += out.eq(Cat(*parts))
    return out


def register_terms(m, terms: tuple, en, *, platform=None, valid=None) -> tuple:
    """:func:`block_terms`' output through one register enabled by ``en`` (the ``exact`` mode's
    register between the scale multiply and the shift into the fixed-point grid); with ``valid``
    (the terms are a beat's) it is clock-gated to ``en & valid``
    (:func:`hw.clock_gate.gated_assign`, ``platform`` the caller's)."""
    out = []
    for g, group in enumerate(terms):
        regs = [Signal.like(v, name=f"sr{g}_{i}", reset_less=True) for i, v in enumerate(group)]
        if valid is not None:
            gated_assign(m, platform, en & valid, list(zip(regs, group, strict=True)), f"sr{g}g")
        else:
            with m.If(en):
                m.d.sync += [r.eq(v) for r, v in zip(regs, group, strict=True)]
        out.append(regs)
    return tuple(out)


def fixed_sum(m, acc, terms, exps, nans, pinfs, ninfs, *, widths: FixedSumWidths) -> list:
    """Drive the ``exact`` mode's :class:`hw.mu.exact_acc.ExactAccumulator` ``acc`` (built for the
    block-scaled format) with the beat's exact sum: every block term shifted left by its exponent
    above ``widths.exp_min`` into ``widths.term_bits`` bits of two's complement, the sign bits
    inverted (their ``-2**(Wt - 1)`` constants add up to ``-2**(W - 1)``, which the carry-save input
    leaves out) and the D/B terms compressed to two rows with ``s0 + s1 = S + 2**(W - 1)``; returns
    the statements of its special-value inputs."""
    Wt, W = widths.term_bits, widths.sum_bits
    cols = [[] for _ in range(W)]
    for i, (t, e) in enumerate(zip(terms, exps, strict=True)):
        d = Signal(range(widths.span + 1), name=f"fx{i}_d")
        v = Signal(signed(Wt), name=f"fx{i}_v")
        m.d.comb += [d.eq(e - widths.exp_min), v.eq(t << d)]
        for k in range(Wt - 1):
            cols[k].append(v[k])
        cols[Wt - 1].append(~v[Wt - 1])
    if len(terms) == 1:
        rows = [Cat(*[c[0] for c in cols]), Const(0, W)]
    else:
        rows = dadda_reduce(m, cols, name="fx")
    m.d.comb += [acc.s0.eq(rows[0]), acc.s1.eq(rows[1])]
    pinf = Signal(name="pinf")
    ninf = Signal(name="ninf")
    m.d.comb += [pinf.eq(0 if not pinfs else _any(pinfs)), ninf.eq(0 if not ninfs else _any(ninfs))]
    out = [acc.s_nan.eq(_any(nans) | (pinf & ninf))]
    if widths.fmt.has_inf:
        out += [acc.s_inf.eq(pinf | ninf), acc.s_inf_neg.eq(ninf)]
    return out


def _any(bits):
    out = bits[0]
    for v in bits[1:]:
        out = out | v
    return out


class ScaledAccumulator(Accumulator):
    """The FP32 accumulator of :mod:`hw.mu.accumulate` taking ``S * 2**(lsb_exp + s_exp)``: a beat
    sum with a per-beat exponent ``s_exp`` (signed) and NaN/Inf flags whatever the element format.

    Module name when placed: :class:`~hw.mu.accumulate.AccumulatorParams` with the block-scaled
    format's name (``mu_acc_w{D}_{fmt}_r{R}_s{stages}``).
    """

    def __init__(self, fmt: str, width: int, rows: int = 1, *, stages: int, loop: int = 1):
        self.params = AccumulatorParams(width, fmt, rows, stages, loop)
        self._rows, self._norm_reg = rows, self.params.norm_reg
        self._sum_bits, self._lsb_exp = scaled_sum_widths(fmt, width)
        members = {"en": In(1), "s": In(signed(self._sum_bits)), "s_exp": In(signed(EXP_W)),
                   "we": In(1), "first": In(1), "s_nan": In(1), "s_inf": In(1), "s_inf_neg": In(1)}
        if rows > 1:
            members["row"] = In(range(rows))
        wiring.Component.__init__(self, {**members, "y": Out(32)})

    def _normalize(self, m):
        W = self._sum_bits
        sign = Signal(name="s_sign")
        mag = Signal(W - 1, name="s_mag")
        m.d.comb += [sign.eq(self.s[-1]), mag.eq(Mux(sign, -self.s, self.s))]
        lz = leading_zeros(m, mag, name="s_lz")
        sig = Signal(W - 1, name="s_sig")
        exp = Signal(signed(EXP_W), name="s_exp_n")
        m.d.comb += [sig.eq(mag << lz), exp.eq(self._lsb_exp + W - 2 - lz + self.s_exp)]
        fields = [sign, sig, exp, mag == 0, self.s_nan, self.s_inf, self.s_inf_neg]
        if not self._norm_reg:
            return fields
        regs = [Signal.like(v, name=f"n_{n}", reset_less=True)
                for v, n in zip(fields[:3], ("sign", "sig", "exp"), strict=True)]
        regs += [Signal(1, name=f"n_{n}", reset_less=True)
                 for n in ("zero", "nan", "inf", "inf_neg")]
        with m.If(self.en):
            m.d.sync += [r.eq(v) for r, v in zip(regs, fields, strict=True)]
        return regs
