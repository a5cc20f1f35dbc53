"""Round a raw-float record to nearest even and pack it into any format of :mod:`hw.formats`.

:class:`RoundPack` is the last of the three FP steps (unpack -> exact raw result -> round/pack).
It is generic: the target is any signed :class:`~hw.formats.FloatFormat` with a NaN code (BF16,
FP32, E5M2, E4M3), the input any raw record of :func:`hw.fp.unpack.raw_layout`.

Semantics
---------
* Round to nearest, ties to even, on the exact value ``sig * 2**(exp - (W - 1))`` (``sig``'s LSB may
  be a sticky bit, see :mod:`hw.fp.unpack`).
* ``subnormals=True``: gradual underflow; results below the smallest normal become subnormals
  (or zero) of the target format, correctly rounded.
* ``subnormals=False``: flush to zero *before rounding*: a finite non-zero value whose exact
  magnitude is below ``2**emin`` gives a zero of the same sign (as Arm's FZ mode). A value that is
  above ``2**emin`` always rounds to a normal.
* Overflow (the rounded magnitude is above the largest finite) follows the format's
  ``overflow`` rule (:class:`hw.formats.Overflow`): ``INF`` gives +-Inf (IEEE round-to-nearest),
  ``NAN`` the NaN code, ``SATURATE`` the largest finite.
* Flags, by precedence: NaN -> the canonical positive NaN code (``fmt.nan_code``, 0x7FC0 for BF16),
  Inf -> +-Inf (or the overflow rule if the format has none), zero -> signed zero.

Hardware: a leading-zero counter (a tree), a left normalize shift, a right denormalize shift
clamped to ``man_bits + 2`` (everything shifted further lands in the sticky bit anyway), the
round-up decision ``guard & (sticky | lsb)`` and one adder that adds the increment to the packed
``{exponent, mantissa}`` word, so a mantissa carry bumps the exponent (and a subnormal that rounds up
becomes the smallest normal) for free.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..formats import FloatFormat, Overflow
from .unpack import raw_layout

__all__ = ["RoundPack", "leading_zeros", "pack_code"]


def leading_zeros(m: Module, value, *, name: str = "lz") -> Signal:
    """Count the leading zeros of ``value`` with a balanced tree (log depth, no deep recursion).

    Parameters
    ----------
    m : Module
        Module that receives the tree's combinational logic.
    value : Value
        Unsigned value of width W >= 1.
    name : str
        Prefix of the intermediate signal names.

    Returns
    -------
    Signal
        ``ceil(log2(W + 1))`` bits; ``W`` if ``value`` is zero.
    """
    width = len(value)
    size = 1
    while size < width + 1:  # one padding bit at least, so zero counts as W
        size *= 2
    pad = size - width
    # pad below the LSB with a 1 followed by zeros: the count of an all-zero value stops at W
    bits = Cat(Const(0, pad - 1), Const(1, 1), value)
    # nodes from MSB to LSB: (any one seen, count so far)
    nodes = [(bits[i], Const(0, 0)) for i in reversed(range(size))]
    level = 0
    while len(nodes) > 1:
        merged = []
        for j in range(0, len(nodes), 2):
            (vh, ch), (vl, cl) = nodes[j], nodes[j + 1]
            v = Signal(name=f"{name}_v{level}_{j // 2}")
            c = Signal(len(ch) + 1, name=f"{name}_c{level}_{j // 2}")
            m.d.comb += [v.eq(vh | vl), c.eq(Mux(vh, Cat(ch, 0), Cat(cl, 1)))]
            merged.append((v, c))
        nodes = merged
        level += 1
    count = Signal(range(width + 1), name=name)
    m.d.comb += count.eq(nodes[0][1])
    return count


class RoundPack(wiring.Component):
    """Round a raw-float record to nearest even and pack it into ``fmt``.

    Parameters
    ----------
    fmt : FloatFormat
        Target format (signed, with a NaN code).
    sig_width, exp_width : int
        Widths of the input record (see :func:`hw.fp.unpack.raw_layout`).
    subnormals : bool
        Gradual underflow (True) or flush to zero before rounding (False).
    cut : bool
        A register between the normalization (leading-zero count and shifts) and the rounding
        (increment and pack), which about halves the path; no enable: every cycle's record leaves
        one cycle later.

    Members
    -------
    raw : In(raw_layout(sig_width, exp_width))
    code : Out(fmt.bits)

    Attributes
    ----------
    latency : int
        Cycles from ``raw`` to ``code``: ``int(cut)``.

    Raises
    ------
    TypeError
        If ``fmt`` is not a signed format with a NaN code.
    """

    def __init__(self, fmt: FloatFormat, *, sig_width: int, exp_width: int, subnormals: bool = True,
                 cut: bool = False):
        if not isinstance(fmt, FloatFormat) or not fmt.signed or fmt.nan_code is None:
            raise TypeError(f"fmt must be a signed FloatFormat with a NaN code (bf16, fp32, "
                            f"fp8_e5m2, fp8_e4m3), not {fmt!r}")
        self._fmt = fmt
        self._subnormals = bool(subnormals)
        self.latency = int(bool(cut))
        super().__init__({
            "raw": In(raw_layout(sig_width, exp_width)),
            "code": Out(fmt.bits),
        })

    def elaborate(self, platform):
        m = Module()
        f = self._fmt
        mb = f.man_bits
        raw = self.raw
        w0 = len(raw.sig)
        width = max(w0, mb + 2)  # room for hidden + mantissa + guard
        sig = Cat(Const(0, width - w0), raw.sig)  # same value, more fraction bits

        lz = leading_zeros(m, sig, name="lz")
        ew = max(len(raw.exp), lz.shape().width + 1) + 2  # no wrap in exp - lz and emin - e
        norm = Signal(width)
        e_norm = Signal(signed(ew))  # exact value in [2^e_norm, 2^(e_norm+1))
        m.d.comb += [norm.eq((sig << lz)[:width]), e_norm.eq(raw.exp - lz)]

        under = Signal()  # exact magnitude below the smallest normal
        m.d.comb += under.eq(e_norm < f.emin)
        kept = Signal(mb + 1)  # hidden bit + mantissa at the target's quantum
        guard, sticky = Signal(), Signal()
        e_q = Signal(signed(ew))  # exponent of the target grid (emin for subnormals)
        if self._subnormals:
            dmax = mb + 2  # shifting further only moves bits inside the sticky
            diff = Signal(signed(ew + 1))
            dshift = Signal(range(dmax + 1))
            m.d.comb += [
                diff.eq(f.emin - e_norm),
                dshift.eq(Mux(~under, 0, Mux(diff > dmax, dmax, diff))),
            ]
            ext = Signal(width + dmax)
            m.d.comb += ext.eq(Cat(Const(0, dmax), norm) >> dshift)
            m.d.comb += e_q.eq(Mux(under, f.emin, e_norm))
        else:
            ext = norm
            m.d.comb += e_q.eq(e_norm)
        low = len(ext) - (mb + 2)  # bits below the guard
        m.d.comb += [
            kept.eq(ext[-(mb + 1):]),
            guard.eq(ext[-(mb + 2)]),
            sticky.eq(ext[:low].any() if low > 0 else 0),
        ]
        if self.latency:   # register what the rounding needs: the kept bits and the flags
            vals = {"kept": kept, "guard": guard, "sticky": sticky, "e_q": e_q, "under": under,
                    "sign": raw.sign, "is_nan": raw.is_nan, "is_inf": raw.is_inf,
                    "is_zero": raw.is_zero}
            regs = {k: Signal.like(v, name=f"r_{k}") for k, v in vals.items()}
            m.d.sync += [regs[k].eq(v) for k, v in vals.items()]
            kept, guard, sticky, e_q, under = (regs[k] for k in ("kept", "guard", "sticky", "e_q",
                                                                  "under"))
            raw = SimpleNamespace(**{k: regs[k] for k in ("sign", "is_nan", "is_inf", "is_zero")})
        up = Signal()
        m.d.comb += up.eq(guard & (sticky | kept[0]))

        # {exponent field - 1, 0...} + {hidden, mantissa} + increment: the hidden bit adds the
        # missing 1 to the exponent field of a normal, a subnormal (e_q = emin, hidden 0) keeps
        # field 0, and a rounding carry moves to the next binade (or from subnormal to normal).
        cw = ew + mb + 2
        code = Signal(signed(cw))
        m.d.comb += code.eq(((e_q + (f.bias - 1)) << mb) + kept + up)
        over = Signal()
        m.d.comb += over.eq(code > f.max_code)

        pack_code(m, self.code, raw, f, flush=under if not self._subnormals else 0, over=over,
                  mag=code[:f.bits - 1])
        return m


def pack_code(m: Module, out, raw, fmt: FloatFormat, *, flush, over, mag) -> None:
    """Drive ``out`` with the packed result, by precedence: NaN (the canonical code), Inf, zero or
    flushed (signed zero), overflow (the format's ``overflow`` rule), else ``{sign, mag}``.

    Parameters
    ----------
    m : Module
        Receives the logic.
    out : Signal
        ``fmt.bits`` wide.
    raw : View of :func:`hw.fp.unpack.raw_layout`, or any object with its flags
        Its ``sign``, ``is_nan``, ``is_inf`` and ``is_zero`` flags.
    fmt : FloatFormat
    flush, over : Value
        The rounded value is flushed to zero / overflowed (``0`` where it cannot happen).
    mag : Value
        The rounded ``{exponent field, mantissa}`` (``fmt.bits - 1`` bits).
    """
    sign = raw.sign << (fmt.bits - 1)
    over_code = {Overflow.INF: (fmt.inf_code or 0) | sign, Overflow.NAN: Const(fmt.nan_code, fmt.bits),
                 Overflow.SATURATE: Const(fmt.max_code, fmt.bits) | sign}[fmt.overflow]
    inf_code = (Const(fmt.inf_code, fmt.bits) | sign) if fmt.has_inf else over_code
    with m.If(raw.is_nan):
        m.d.comb += out.eq(fmt.nan_code)
    with m.Elif(raw.is_inf):
        m.d.comb += out.eq(inf_code)
    with m.Elif(raw.is_zero | flush):
        m.d.comb += out.eq(sign)
    with m.Elif(over):
        m.d.comb += out.eq(over_code)
    with m.Else():
        m.d.comb += out.eq(Cat(mag, raw.sign))
