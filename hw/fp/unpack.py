"""Unpack a floating-point code into a raw-float record (HardFloat's "recoded" step, in the open).

Every FP block in this project works in three steps: unpack the operands into a :func:`raw_layout`
record, compute an *exact* raw result (significand plus, if bits were dropped, a sticky bit), then
round and pack it with :class:`hw.fp.round.RoundPack`. The record is a plain ``data.StructLayout``,
so a pipeline register can hold it whole.

Raw-float record (fields least-significant first)
-------------------------------------------------
``sig`` : unsigned(W)
    Significand, a fixed-point number with ``W - 1`` fraction bits: the value is
    ``sig * 2**(exp - (W - 1))``. It need not be normalized (leading zeros are allowed; the rounder
    normalizes). Valid only when no flag is set. If the producer dropped non-zero bits it must OR
    them into the LSB (sticky) and keep at most ``W - man_bits - 3`` leading zeros.
``exp`` : signed(E)
    Unbiased exponent of the weight of ``sig``'s MSB. Valid only when no flag is set.
``sign`` : 1
    Sign, valid for zeros and infinities too (signed zeros are kept).
``is_zero``, ``is_inf``, ``is_nan`` : 1
    Special values; if several are set the precedence is NaN, Inf, zero.
"""

from amaranth.hdl import Cat, Const, Module, Mux, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..formats import FloatFormat

__all__ = ["raw_layout", "unpack_exp_width", "as_signed", "Unpack"]


def as_signed(value):
    """Zero-extend an unsigned value by one bit and view it as signed (so arithmetic on it is
    signed and cannot wrap)."""
    return Cat(value, Const(0, 1)).as_signed()


def raw_layout(sig_width: int, exp_width: int) -> data.StructLayout:
    """Layout of a raw-float record with a ``sig_width``-bit significand and ``exp_width``-bit
    signed exponent (see the module docstring for the meaning of each field)."""
    if sig_width < 1 or exp_width < 2:
        raise ValueError(f"raw float needs sig_width >= 1 and exp_width >= 2, "
                         f"not {sig_width} and {exp_width}")
    return data.StructLayout({
        "sig": unsigned(sig_width),
        "exp": signed(exp_width),
        "sign": 1,
        "is_zero": 1,
        "is_inf": 1,
        "is_nan": 1,
    })


def unpack_exp_width(fmt: FloatFormat) -> int:
    """Signed exponent width that holds every unbiased exponent of ``fmt`` (emin .. emax)."""
    return fmt.exp_bits + 2  # one bit for the sign, one spare for emax == 2^(e-1)


class Unpack(wiring.Component):
    """Unpack one code of ``fmt`` into a raw-float record.

    The significand is ``man_bits + 1`` bits wide (hidden bit included), so the value is
    ``sig * 2**(exp - man_bits)``; subnormal inputs get ``exp = emin`` and a zero hidden bit.

    Parameters
    ----------
    fmt : FloatFormat
        Format of the code (IEEE-like specials: ``bf16``, ``fp32``, ``fp8_e5m2``; ``fn`` and
        ``none`` formats work too).
    subnormals : bool
        If False, subnormal inputs are flushed to (signed) zero.

    Members
    -------
    code : In(fmt.bits)
    raw : Out(raw_layout(fmt.man_bits + 1, unpack_exp_width(fmt)))
    """

    def __init__(self, fmt: FloatFormat, *, subnormals: bool = True):
        if not isinstance(fmt, FloatFormat) or not fmt.signed or fmt.specials == "e8m0":
            raise TypeError(f"fmt must be a signed FloatFormat from hw.formats, not {fmt!r}")
        self._fmt = fmt
        self._subnormals = bool(subnormals)
        super().__init__({
            "code": In(fmt.bits),
            "raw": Out(raw_layout(fmt.man_bits + 1, unpack_exp_width(fmt))),
        })

    def elaborate(self, platform):
        m = Module()
        f = self._fmt
        man = self.code[:f.man_bits]
        exp = self.code[f.man_bits:f.man_bits + f.exp_bits]
        exp_zero = exp == 0
        exp_ones = exp == f.exp_max_field
        man_zero = man == 0
        man_ones = man == (1 << f.man_bits) - 1

        if f.specials == "ieee":
            is_inf, is_nan = exp_ones & man_zero, exp_ones & ~man_zero
        elif f.specials == "fn":
            is_inf, is_nan = 0, exp_ones & man_ones
        else:
            is_inf = is_nan = 0

        m.d.comb += self.raw.sign.eq(self.code[-1])
        m.d.comb += [self.raw.is_inf.eq(is_inf), self.raw.is_nan.eq(is_nan)]
        if self._subnormals:
            m.d.comb += [
                self.raw.is_zero.eq(exp_zero & man_zero),
                self.raw.sig.eq(Cat(man, ~exp_zero)),
                # subnormals sit at emin with a zero hidden bit
                self.raw.exp.eq(as_signed(Mux(exp_zero, 1, exp)) - f.bias),
            ]
        else:
            m.d.comb += [
                self.raw.is_zero.eq(exp_zero),
                self.raw.sig.eq(Cat(man, 1)),
                self.raw.exp.eq(as_signed(exp) - f.bias),
            ]
        return m

