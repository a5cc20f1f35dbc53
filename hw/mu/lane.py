"""One multiplier lane of a matrix-unit column: the exact product of two element codes in fixed point.

The product ``x * w`` is returned as a magnitude on the fixed grid of :mod:`hw.mu.numerics` (LSB
``2**lsb_exp``, ``P`` bits) in *ones' complement*: ``t = mag`` if positive, ``~mag`` (P bits) if
negative, with ``neg`` = the product's sign. The tree then adds ``neg`` once at the LSB, which turns
every ones' complement into the two's complement without an incrementer per lane (see
:mod:`hw.mu.tree`). A zero product with ``neg = 1`` gives ``t = 2**P - 1`` plus 1: zero again.

An integer format (INT8, INT4) hands over the two's-complement product instead: ``t`` its low P
bits and ``neg`` its sign bit (:attr:`hw.mu.numerics.DotWidths.ones_complement` is False), so a lane
is a signed multiplier (radix-4 Booth partial products, a Dadda tree and a prefix adder:
:func:`hw.fp.booth.booth4_columns`) and the tree adds nothing at the LSB.

Specials (only ports the format needs exist): ``nan`` is set for a NaN operand or Inf x 0, ``inf``
for an infinite product (E5M2 Inf x nonzero finite); ``t`` is then meaningless.

Operand isolation (``isolate``): a zero product carries no sign, ``neg = (x.sign ^ w.sign) & ~(x
zero | w zero)``, so a lane with a zero operand hands the tree ``t = 0, neg = 0`` whatever the other
operand's sign does. Without it a zero product is ``+0`` or ``-0`` by the signs, and each sign change
flips all P bits of ``t`` (ones' complement) and the ``neg`` bit: a zero weight (the padding columns
beyond a matmul's N, quantized-away weights) under activations of changing sign toggles the tree's
inputs as much as a live product (a zero activation under a fixed weight keeps ``neg`` constant
already). The sum is the same either way (``-0`` is ``2**P - 1`` plus the ``neg`` bit); the integer
formats' zero product is already all zeros. Measured in ``reports/power/summary.md``: it pays in
E2M1, where zero weights are common, and costs fmax in E5M2, so it is an option, off by default.
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..fp.booth import booth4_columns, dadda_reduce, prefix_add
from ..fp.unpack import decode_fields
from ..hier import BlockParams
from .numerics import dot_widths

__all__ = ["Lane", "LaneParams", "decode_element"]


@dataclass(frozen=True)
class LaneParams(BlockParams):
    """A lane depends on its element format and on operand isolation."""

    MODULE: ClassVar[str] = "mu_lane_{fmt}{isolate}"
    TAGS: ClassVar[dict] = {"isolate": lambda v: "_oi" if v else ""}
    fmt: str
    isolate: bool = False


def decode_element(m: Module, code, fmt, *, name: str):
    """Split an element code into (sign, significand with hidden bit, exponent offset, zero, inf, nan).

    The field split and the Inf/NaN flags are :func:`hw.fp.unpack.decode_fields` (the format's
    :class:`hw.formats.Specials` rule; constant 0 where the format has no such code). ``exponent
    offset`` is ``max(e, 1) - 1``, i.e. the element's exponent minus ``emin``, so the value is
    ``sig * 2**(offset + emin - man_bits)``.
    """
    d = decode_fields(code, fmt, ne=True)
    sig = Signal(fmt.man_bits + 1, name=f"{name}_sig")
    off = Signal(fmt.exp_bits, name=f"{name}_off")
    zero = Signal(name=f"{name}_zero")
    m.d.comb += [
        sig.eq(Cat(d.man, d.exp != 0)),
        off.eq(Mux(d.exp_zero, 0, d.exp - 1)),
        zero.eq(d.exp_zero & d.man_zero),
    ]
    return d.sign, sig, off, zero, d.is_inf, d.is_nan


class Lane(wiring.Component):
    """Exact product of an activation and a weight code, aligned to the dot product's fixed grid.

    Combinational. Module name when placed: ``mu_lane_{fmt}`` (``_oi`` with ``isolate``).

    Parameters
    ----------
    fmt : str or FloatFormat
        Element format, one of :data:`hw.formats.MATRIX_FORMATS`.
    isolate : bool
        A zero product hands the tree ``t = 0, neg = 0`` (module docstring).

    Members
    -------
    x, w : In(fmt.bits)
        The operand codes.
    t : Out(P)
        Product magnitude in LSBs of ``2**lsb_exp``, bitwise inverted when ``neg`` (integer
        formats: the low P bits of the two's-complement product).
    neg : Out(1)
        Sign of the product (``x.sign ^ w.sign``).
    nan : Out(1)
        Present if the format has NaN or Inf: NaN operand, or Inf x 0.
    inf : Out(1)
        Present if the format has Inf: the product is infinite (sign ``neg``).
    """

    def __init__(self, fmt, isolate: bool = False):
        self._dw = dot_widths(fmt, 1)
        self._isolate = bool(isolate)
        f = self._dw.fmt
        members = {
            "x": In(f.bits),
            "w": In(f.bits),
            "t": Out(self._dw.prod_bits),
            "neg": Out(1),
        }
        if f.has_nan or f.has_inf:
            members["nan"] = Out(1)
        if f.has_inf:
            members["inf"] = Out(1)
        super().__init__(members)

    @property
    def params(self) -> LaneParams:
        """Parameters that name the module when placed (:func:`hw.hier.place`)."""
        return LaneParams(self._dw.fmt.name, self._isolate)

    #: Combinational: ``t``, ``neg`` and the flags follow ``x`` and ``w`` in the same cycle.
    latency = 0

    def elaborate(self, platform):
        m = Module()
        dw, f = self._dw, self._dw.fmt
        if not dw.ones_complement:  # integers: the signed product (its sign bit is neg), Booth
            prod = prefix_add(m, *dadda_reduce(m, booth4_columns(m, self.x, self.w, dw.prod_bits + 1,
                                                                 signed=True)))
            m.d.comb += [self.t.eq(prod[:dw.prod_bits]), self.neg.eq(prod[dw.prod_bits])]
            return m
        xs, xsig, xoff, xzero, xinf, xnan = decode_element(m, self.x, f, name="x")
        ws, wsig, woff, wzero, winf, wnan = decode_element(m, self.w, f, name="w")
        prod = Signal(dw.prod_sig_bits)
        shift = Signal(f.exp_bits + 1)
        mag = Signal(dw.prod_bits)
        m.d.comb += [
            prod.eq(xsig * wsig),
            shift.eq(xoff + woff),
            # specials may shift past P bits; their magnitude is discarded by the flags
            mag.eq(prod << shift),
            self.neg.eq((xs ^ ws) & ~(xzero | wzero) if self._isolate else xs ^ ws),
            self.t.eq(mag ^ self.neg.replicate(dw.prod_bits)),
        ]
        if f.has_inf:
            m.d.comb += [
                self.nan.eq(xnan | wnan | (xinf & wzero) | (winf & xzero)),
                self.inf.eq(xinf | winf),
            ]
        elif f.has_nan:
            m.d.comb += self.nan.eq(xnan | wnan)
        return m
