"""Round and pack an exact product whose leading-zero count is known up to one (the fast path).

:class:`ProductRoundPack` gives the same result as :class:`hw.fp.round.RoundPack` (same semantics,
see that module) on a narrower class of inputs: the exact *product of two unpacked operands* in a
:func:`product_layout` record whose exponent values were computed from the operands alone, in
parallel with the multiplier, by :func:`product_fields`. The significand ``sig`` has ``lz`` or
``lz + 1`` leading zeros, where ``lz`` is the subnormal operand's leading-zero count (the other
operand is in [1, 2); a product of two subnormals is a zero in every mode and is flagged as one).
That knowledge replaces RoundPack's leading-zero counter, its normalize shift and its exponent
subtraction; after the product only these steps remain:

1. one right shift of the product by the precomputed ``shift`` = ``lz_max - lz + d`` (``d`` =
   ``max(0, 1 - exp)`` is the denormalize distance when the result underflows; the whole shift is
   clamped to ``2 * man_bits + 2``, beyond which every bit is in the sticky), which is the
   normalize left shift by ``lz`` and the denormalize right shift by ``d`` in one (none at all
   when ``subnormals=False``: ``lz`` and ``d`` are 0); the sticky bits below both windows come
   with it from the operands' trailing zeros;
2. the choice of the rounding window: the top one, or, when the top bit ``h`` is 0 and the result
   is normal, the one a bit lower (the product is in [1, 4));
3. the round-up decision ``guard & (sticky | lsb)``, a parallel-prefix incrementer on the kept
   bits, and the exponent field picked from three candidates ``exp - 1``, ``exp``, ``exp + 1``
   computed early (``exp - 2 + k``, ``k`` = window offset + hidden bit + mantissa carry, which is
   never 0 for a used window), together with their overflow flags.

``subnormals=False`` flushes before rounding, like RoundPack: the result is zero when the exact
magnitude is below ``2**emin``, that is when ``exp <= 0`` or (``exp == 1`` and ``h == 0``).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..formats import FloatFormat
from .round import leading_zeros, pack_code

__all__ = ["ProductRoundPack", "product_layout", "product_fields", "shift_width", "increment", "at_least"]


def shift_width(fmt: FloatFormat, subnormals: bool) -> int:
    """Width of the ``shift`` field: ``lz_max + man_bits + 2`` needs it (0 without subnormals)."""
    return (2 * fmt.man_bits + 2).bit_length() if subnormals else 0


def product_layout(sig_width: int, exp_width: int, shift_width: int) -> data.StructLayout:
    """Product record (fields least-significant first).

    ``sig`` : unsigned(sig_width)
        The exact significand product, ``lz`` or ``lz + 1`` leading zeros (see the module).
    ``exp`` : signed(exp_width)
        Biased exponent field of the result if ``sig << lz`` has its top bit set.
    ``shift`` : unsigned(shift_width)
        Right shift ``lz_max - lz + d`` of ``{sig, lz_max + man_bits + 2 zeros}`` (see the module);
        absent when ``shift_width`` is 0 (no subnormals).
    ``sticky`` : 2
        Whether any bit below the guard of the top (bit 0) and the lower (bit 1) rounding window
        is set after the shift (see :func:`product_fields`); absent without subnormals, where the
        rounder ORs the product's low bits itself.
    ``sign``, ``is_zero``, ``is_inf``, ``is_nan`` : 1
        As in :func:`hw.fp.unpack.raw_layout`; only the flags are valid when one is set.
    """
    fields = {"sig": sig_width, "exp": signed(exp_width)}
    if shift_width:
        fields["shift"] = shift_width
        fields["sticky"] = 2
    fields.update({"sign": 1, "is_zero": 1, "is_inf": 1, "is_nan": 1})
    return data.StructLayout(fields)


def product_fields(m: Module, a, b, fmt: FloatFormat, subnormals: bool, *, exp_width: int) -> dict:
    """The record's early fields from the operand codes ``a``, ``b`` (beside the multiplier).

    With subnormals, a subnormal operand's significand ``0.m`` has ``lz = c + 1`` leading zeros,
    ``c`` those of its ``man_bits``-bit mantissa field (one count, on the subnormal operand's
    mantissa: with two, the product is ``tiny``). With ``s`` the sum of the raw exponent fields
    (a subnormal's is 1), ``exp = s - (bias - 1) - lz`` and ``shift = max(man_bits - lz,
    min(2 man_bits + 2, man_bits + bias - s))``: a normal result is only normalized (by ``lz``);
    an underflowing one lands on the subnormal grid, whose distance from the raw product depends
    on the raw exponents alone, so the shift waits for neither the count nor ``exp``. The
    product's trailing zeros are the sum of the operands' (the product of the odd parts is odd),
    which gives both windows' sticky bits exactly without looking at the product: the bits below
    a window's guard are the ``shift`` (resp. ``shift - 1``) lowest bits of the product, and they
    are not all zero iff that count exceeds the trailing zeros.

    Returns
    -------
    dict
        ``exp`` (signed ``exp_width``), and with subnormals ``shift``, ``sticky`` (2 bits: top
        window, lower window) and ``tiny`` (both operands subnormal: the product is a zero after
        rounding in every mode).
    """
    mb, eb = fmt.man_bits, fmt.exp_bits
    out = {}
    ea_f, eb_f = a[mb:mb + eb], b[mb:mb + eb]
    f_hi = Signal(signed(exp_width), name="f_hi")
    out["exp"] = f_hi
    if not subnormals:
        # 1.a * 1.b * 2^(ea + eb - 2 bias) in [2, 4): field ea + eb - bias + 1
        m.d.comb += f_hi.eq(ea_f + eb_f - (fmt.bias - 1))
        return out
    ems, tzs, subs = [], [], []
    for nm, code, e_f in (("a", a, ea_f), ("b", b, eb_f)):
        sub = Signal(name=f"{nm}_sub")
        m.d.comb += sub.eq(e_f == 0)
        # trailing zeros of the significand {hidden, m}: man_bits if m == 0 (a zero if subnormal)
        tz = leading_zeros(m, Cat(*reversed([code[k] for k in range(mb)])), name=f"{nm}_tz")
        ems.append(Cat(e_f[0] | sub, e_f[1:]))  # max(field, 1): the raw exponent's field
        tzs.append(tz)
        subs.append(sub)
    # s: sum of the raw exponent fields, ready before the leading-zero count. The product's top
    # bit after the normalize by lz has the field s - (bias - 1) - lz; the denormalize distance
    # from the raw product does not depend on lz: the result's grid is fixed by the raw exponents.
    esum = Signal(eb + 1, name="esum")
    m.d.comb += esum.eq(ems[0] + ems[1])
    # lz: 1 + leading zeros of the subnormal operand's mantissa (at most one is subnormal, else
    # tiny), 0 if none is
    man = Signal(mb, name="sub_man")
    m.d.comb += man.eq(Mux(subs[0], a[:mb], b[:mb]))
    c = leading_zeros(m, man, name="lzc")  # 0..man_bits - 1 (man_bits: a zero)
    lz = Signal(range(mb + 1), name="lz")
    m.d.comb += lz.eq(Mux(subs[0] | subs[1], c + 1, 0))
    m.d.comb += f_hi.eq(esum - (fmt.bias - 1) - lz)
    smax = 2 * mb + 2  # lz_max + man_bits + 2: shifting further only moves bits inside the sticky
    # shift = max(mb - lz (normal result), min(smax, mb + bias - esum) (subnormal result))
    t = Signal(signed(eb + 3), name="shift_sub")
    m.d.comb += t.eq(mb + fmt.bias - esum)
    tcl = Signal(range(smax + 1), name="shift_subc")
    m.d.comb += tcl.eq(Mux(at_least(t, smax), smax, Mux(t[-1], 0, t)))
    shift = Signal(shift_width(fmt, True), name="shift")
    m.d.comb += shift.eq(Mux(tcl > mb - lz, tcl, mb - lz))
    # sticky: the product's trailing zeros tz against each window's shift
    tz = Signal(range(2 * mb + 1), name="tz")
    m.d.comb += tz.eq(tzs[0] + tzs[1])
    sticky = Signal(2, name="sticky")
    m.d.comb += sticky.eq(Cat(tz < shift, tz + 1 < shift))
    tiny = Signal(name="tiny")
    m.d.comb += tiny.eq(subs[0] & subs[1])
    out.update(shift=shift, sticky=sticky, tiny=tiny)
    return out


def increment(m: Module, value, inc, *, name: str = "inc") -> Signal:
    """``value + inc`` (``inc`` one bit), one bit wider, with a Kogge-Stone prefix AND of ``value``.

    Bit k flips when ``inc`` and all bits below it are ones; that AND is built in
    ``ceil(log2(len(value)))`` levels of two-input gates, each node feeding at most two others
    (a Sklansky tree's fanout doubles per level, and ABC mapped its 32-bit form to a ripple of ANDs).
    """
    width = len(value)
    pre = [value[k] for k in range(width)]  # pre[k]: AND of value[k - span + 1 .. k]
    span = 1
    while span < width:
        nxt = list(pre)
        for k in range(span, width):
            s = Signal(name=f"{name}_a{span}_{k}")
            m.d.comb += s.eq(pre[k] & pre[k - span])
            nxt[k] = s
        pre = nxt
        span *= 2
    out = Signal(width + 1, name=name)
    carry = [inc] + [inc & pre[k] for k in range(width)]  # carry into bit k
    m.d.comb += out.eq(Cat(*[value[k] ^ carry[k] for k in range(width)], carry[width]))
    return out


def at_least(value, c: int):
    """``value >= c`` for a signed ``value`` and a constant ``c >= 0``, as a flat sum of products
    (``value < c`` iff some bit is 0 where ``c`` has a 1 and every bit above equals ``c``'s)."""
    width = len(value) - 1  # magnitude bits; the top bit is the sign
    if c >= 1 << width:
        return Const(0, 1)
    less = []
    for i in range(width):
        if (c >> i) & 1:
            above = [value[j] if (c >> j) & 1 else ~value[j] for j in range(i + 1, width)]
            term = ~value[i]
            for t in above:
                term = term & t
            less.append(term)
    lt = Const(0, 1)
    for t in less:
        lt = lt | t
    return ~value[-1] & ~lt


class ProductRoundPack(wiring.Component):
    """Round a :func:`product_layout` record to nearest even and pack it into ``fmt``.

    Parameters
    ----------
    fmt : FloatFormat
        Target format (signed, with infinities and a NaN code: BF16, FP32, E5M2).
    sig_width, exp_width : int
        Widths of the record's ``sig`` and ``exp``; ``sig`` is the exact product of two
        ``man_bits + 1``-bit significands, so ``sig_width`` must be ``2 * (man_bits + 1)`` (the
        shift and sticky bits of :func:`product_fields` assume that binary point).
    subnormals : bool
        Gradual underflow (True) or flush to zero before rounding (False).

    Members
    -------
    raw : In(product_layout(sig_width, exp_width, shift_width(fmt, subnormals)))
    code : Out(fmt.bits)

    Raises
    ------
    TypeError
        If ``fmt`` is not a signed format with infinities and a NaN code, or ``sig_width`` is
        not ``2 * (man_bits + 1)``.
    """

    def __init__(self, fmt: FloatFormat, *, sig_width: int, exp_width: int,
                 subnormals: bool = True):
        if not isinstance(fmt, FloatFormat) or not fmt.signed or not fmt.has_inf \
                or fmt.nan_code is None:
            raise TypeError(f"fmt must be a signed FloatFormat with infinities and a NaN code "
                            f"(bf16, fp32, fp8_e5m2), not {fmt!r}")
        if sig_width != 2 * (fmt.man_bits + 1):
            raise TypeError(f"sig_width must be 2 * (man_bits + 1) = {2 * (fmt.man_bits + 1)} (the "
                            f"product of two significands), not {sig_width!r}")
        self._fmt = fmt
        self._subnormals = bool(subnormals)
        super().__init__({
            "raw": In(product_layout(sig_width, exp_width, shift_width(fmt, subnormals))),
            "code": Out(fmt.bits),
        })

    def elaborate(self, platform):
        m = Module()
        f = self._fmt
        mb = f.man_bits
        raw = self.raw
        f_hi = raw.exp
        dmax = mb + 2

        # 1. normalize (left by lz) and denormalize (right by d) in one right shift
        if self._subnormals:
            ext = Signal(len(raw.sig) + dmax)
            m.d.comb += ext.eq(Cat(Const(0, mb + dmax), raw.sig) >> raw.shift)
        else:
            ext = Cat(Const(0, dmax), raw.sig)
        h = ext[-1]  # top bit of sig << lz when the result is normal (d == 0)

        # 2./3. round both windows in parallel (the top one, and the one a bit lower, which is
        # the right one when h == 0 and the result is normal), then choose: h is the product's
        # last bit to settle. Exponent fields come from early candidates f_hi - 2 + k.
        ge1, ge2 = Signal(), Signal()
        m.d.comb += [ge1.eq(f_hi >= 1), ge2.eq(f_hi >= 2)]
        # field candidates f_hi - 2 + j (their low bits, by prefix incrementers) and their
        # overflow flags f_hi - 2 + j >= max field (shallow constant compares)
        eb = f.exp_bits
        low = f_hi[:eb]
        dec1 = ~increment(m, ~low, 1, name="fdec1")[:eb]  # f_hi - 1
        inc1 = increment(m, low, 1, name="finc1")[:eb]  # f_hi + 1
        # k >= 1 always: the lower window is only used for a normal result (hidden bit 1), and the
        # top window adds 1 itself; so f_hi - 2 is never needed and k = 0 shares k = 1's entry
        cands = [dec1, dec1, low, inc1]
        overs = [at_least(f_hi, f.exp_max_field + 2 - max(j, 1)) for j in range(4)]

        def window(top, name):
            """Rounded mantissa and k (field = f_hi - 2 + k) of the window whose hidden bit is
            ext[top - 1]; below the normal range the field is the hidden bit plus the carry."""
            kept = ext[top - (mb + 1):top]  # hidden bit + mantissa
            guard = ext[top - (mb + 2)]
            if self._subnormals:
                sticky = raw.sticky[0 if top == len(ext) else 1]
            else:
                sticky = ext[:top - (mb + 2)].any()
            up = Signal(name=f"{name}_up")
            m.d.comb += up.eq(guard & (sticky | kept[0]))
            inc = increment(m, kept, up, name=f"{name}_inc")  # bits mb..: hidden + carry, 0..2
            k = Signal(2, name=f"{name}_k")
            m.d.comb += k.eq(inc[mb:] + (1 if top == len(ext) else 0))
            return inc, k

        inc_hi, k_hi = window(len(ext), "rhi")
        inc_lo, k_lo = window(len(ext) - 1, "rlo")
        sel_lo = Signal()
        # without subnormals, h == 0 with f_hi <= 1 is flushed anyway: the window follows h alone
        m.d.comb += sel_lo.eq(~h & ge2 if self._subnormals else ~h)
        inc = Signal(mb + 2)
        m.d.comb += inc.eq(Mux(sel_lo, inc_lo, inc_hi))
        field = Signal(f.exp_bits)
        over = Signal()
        mag = Signal(f.bits - 1)
        if self._subnormals:
            k = Signal(2)
            m.d.comb += k.eq(Mux(sel_lo, k_lo, k_hi))
            with m.Switch(k):
                for j in range(4):
                    with m.Case(j):
                        m.d.comb += [field.eq(cands[j]), over.eq(overs[j])]
            m.d.comb += mag.eq(Cat(inc[:mb], Mux(ge1, field, inc[mb:])))
            big = ge1 & over
        else:
            # f_hi <= 0 is flushed and the hidden bit is 1: each window's k is 2 (top) or 1
            # (lower) plus its mantissa carry, so each picks between two candidates by its own
            # carry, and h chooses last
            c_hi, c_lo = inc_hi[mb + 1], inc_lo[mb + 1]
            m.d.comb += [
                field.eq(Mux(sel_lo, Mux(c_lo, cands[2], cands[1]), Mux(c_hi, cands[3], cands[2]))),
                over.eq(Mux(sel_lo, Mux(c_lo, overs[2], overs[1]), Mux(c_hi, overs[3], overs[2]))),
                mag.eq(Cat(inc[:mb], field)),
            ]
            big = over

        flush = 0
        if not self._subnormals:
            flush = Signal()
            m.d.comb += flush.eq(~ge1 | (~ge2 & ~h))
        pack_code(m, self.code, raw, f, flush=flush, over=big, mag=mag)
        return m
