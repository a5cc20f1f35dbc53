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

:func:`decode_fields` is the one place hardware splits a code into its fields and flags its Inf/NaN
codes by the format's :class:`hw.formats.Specials` rule; :class:`Unpack` and the matrix unit's
lanes (:func:`hw.mu.lane.decode_element`) build on it.
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..formats import FloatFormat

__all__ = ["raw_layout", "unpack_exp_width", "as_signed", "CodeFields", "decode_fields", "Unpack"]


def as_signed(value):
    """Zero-extend an unsigned value by one bit and view it as signed (so arithmetic on it is
    signed and cannot wrap)."""
    return Cat(value, Const(0, 1)).as_signed()


@dataclass(frozen=True)
class CodeFields:
    """The fields of one code and its special-value flags (combinational Amaranth values).

    Attributes
    ----------
    sign : Value
        Sign bit (constant 0 for an unsigned format).
    exp, man : Value
        Exponent and mantissa fields.
    exp_zero, man_zero : Value
        ``exp == 0`` and ``man == 0``.
    is_inf, is_nan : Value
        The code is an infinity / a NaN under the format's :class:`hw.formats.Specials` rule;
        constant 0 where the rule has no such code (so consumers need not branch).
    """

    sign: object
    exp: object
    man: object
    exp_zero: object
    man_zero: object
    is_inf: object
    is_nan: object


def decode_fields(code, fmt: FloatFormat, *, ne: bool = False) -> CodeFields:
    """Split ``code`` (a ``fmt.bits``-wide value) into fields and flag its Inf/NaN codes.

    The flags come from ``fmt.specials.flags`` (the same rule :meth:`FloatFormat.classify` uses on
    numpy arrays), so no generator branches on a format. ``ne`` spells "mantissa not zero" as
    ``man != 0`` instead of ``~(man == 0)``: the same logic, a different Verilog text; each caller
    keeps the spelling its netlist was built with.
    """
    mb, eb = fmt.man_bits, fmt.exp_bits
    man, exp = code[:mb], code[mb:mb + eb]
    exp_zero, man_zero = exp == 0, man == 0
    inf, nan = fmt.specials.flags(exp == fmt.exp_max_field, man_zero,
                                  (man != 0) if ne else ~man_zero, man == (1 << mb) - 1)
    zero = Const(0, 1)
    return CodeFields(sign=code[mb + eb] if fmt.signed else zero, exp=exp, man=man,
                      exp_zero=exp_zero, man_zero=man_zero,
                      is_inf=zero if inf is None else inf, is_nan=zero if nan is None else nan)


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
        Format of the code: any signed format whose exponent field 0 holds zero and subnormals
        (every :class:`hw.formats.Specials` rule but ``E8M0``).
    subnormals : bool
        If False, subnormal inputs are flushed to (signed) zero.

    Members
    -------
    code : In(fmt.bits)
    raw : Out(raw_layout(fmt.man_bits + 1, unpack_exp_width(fmt)))
    """

    def __init__(self, fmt: FloatFormat, *, subnormals: bool = True):
        if not isinstance(fmt, FloatFormat) or not fmt.signed or not fmt.has_subnormals:
            raise TypeError(f"fmt must be a signed FloatFormat from hw.formats with zero and "
                            f"subnormals, not {fmt!r}")
        self._fmt = fmt
        self._subnormals = bool(subnormals)
        super().__init__({
            "code": In(fmt.bits),
            "raw": Out(raw_layout(fmt.man_bits + 1, unpack_exp_width(fmt))),
        })

    def elaborate(self, platform):
        m = Module()
        f = self._fmt
        d = decode_fields(self.code, f)
        man, exp, exp_zero, man_zero = d.man, d.exp, d.exp_zero, d.man_zero

        m.d.comb += self.raw.sign.eq(d.sign)
        m.d.comb += [self.raw.is_inf.eq(d.is_inf), self.raw.is_nan.eq(d.is_nan)]
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

