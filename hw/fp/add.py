"""FP32 + FP32 with one round to nearest even (combinational): the slice's ``y +=`` write-back.

Semantics (``docs/numerics.md`` section 5): ``y = RNE_fp32(a + b)`` of the exact sum, with the
matrix unit's special-value rules: any NaN operand or ``+Inf + -Inf`` gives the canonical NaN
``0x7FC00000``; otherwise an infinite operand gives that infinity; an exact zero gives ``+0`` (IEEE
754 agrees except for ``-0 + -0``, which IEEE makes ``-0``); subnormals are read and produced, never
flushed; overflow rounds to +-Inf.

Steps (HardFloat style, the same as the unit's accumulate in :mod:`hw.mu.accumulate`):

1. Unpack both operands to a 24-bit significand and an exponent (subnormals: exponent ``-126``, no
   hidden bit).
2. The operand with the larger exponent (X) is placed at the top of a window of ``24 + 3`` bits, the
   other (Y) shifted right by the exponent difference d, every shifted-out bit ORed into the LSB
   (sticky, from Y's trailing-zero count). When d <= 1 nothing is shifted out and the sum is exact;
   when d >= 2, X has an exponent above ``-126`` so it is normal, the result keeps its leading one in
   the top 2 bits of the window and the sticky bit sits below the round bit: one correct rounding.
3. :class:`hw.fp.round.RoundPack` rounds to nearest even into FP32.

Latency 0 (combinational); one result per cycle.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..formats import get_format
from .round import RoundPack, leading_zeros

__all__ = ["Fp32Adder"]

FP32 = get_format("fp32")
EXP_W = 10  # signed unpacked exponents -126..128, differences up to 254


class Fp32Adder(wiring.Component):
    """``y = RNE_fp32(a + b)``, combinational. Module name when placed: ``fp32_add``.

    Members
    -------
    a, b : In(32)
        FP32 operands (bit patterns).
    y : Out(32)
        FP32 result (bit pattern).

    Attributes
    ----------
    latency : int
        0: the result follows the operands in the same cycle.
    """

    a: In(32)
    b: In(32)
    y: Out(32)

    latency = 0

    @staticmethod
    def _unpack(m, v, tag):
        man, ef, sign = v[:23], v[23:31], v[31]
        nan, inf = Signal(name=f"{tag}_nan"), Signal(name=f"{tag}_inf")
        sig = Signal(24, name=f"{tag}_sig")
        exp = Signal(signed(EXP_W), name=f"{tag}_exp")
        m.d.comb += [
            nan.eq((ef == 0xFF) & (man != 0)),
            inf.eq((ef == 0xFF) & (man == 0)),
            sig.eq(Cat(man, ef != 0)),
            exp.eq(Mux(ef == 0, FP32.emin, Cat(ef, Const(0, 2)).as_signed() - FP32.bias)),
        ]
        return sign, sig, exp, nan, inf

    def elaborate(self, platform):
        m = Module()
        a_sign, a_sig, a_exp, a_nan, a_inf = self._unpack(m, self.a, "a")
        b_sign, b_sig, b_exp, b_nan, b_inf = self._unpack(m, self.b, "b")

        Q = 24
        N = Q + 3  # + guard, round, sticky
        b_is_x = Signal(name="b_is_x")
        m.d.comb += b_is_x.eq(b_exp > a_exp)
        x_sig, y_sig = Signal(Q, name="x_sig"), Signal(Q, name="y_sig")
        x_exp, y_exp = Signal(signed(EXP_W), name="x_exp"), Signal(signed(EXP_W), name="y_exp")
        x_sign, y_sign = Signal(name="x_sign"), Signal(name="y_sign")
        m.d.comb += [
            x_sig.eq(Mux(b_is_x, b_sig, a_sig)), y_sig.eq(Mux(b_is_x, a_sig, b_sig)),
            x_exp.eq(Mux(b_is_x, b_exp, a_exp)), y_exp.eq(Mux(b_is_x, a_exp, b_exp)),
            x_sign.eq(Mux(b_is_x, b_sign, a_sign)), y_sign.eq(Mux(b_is_x, a_sign, b_sign)),
        ]
        d = Signal(signed(EXP_W + 1), name="d")  # >= 0
        dcl = Signal(range(N + 1), name="d_clamped")
        m.d.comb += [d.eq(x_exp - y_exp), dcl.eq(Mux(d > N, N, d))]
        y_full = Cat(Const(0, 3), y_sig)  # N bits
        tz = leading_zeros(m, y_full[::-1], name="y_tz")  # N for a zero Y
        y_al = Signal(N, name="y_aligned")
        m.d.comb += y_al.eq((y_full >> dcl) | (tz < dcl))  # sticky in the LSB
        x_al = Cat(Const(0, 3), x_sig)
        total = Signal(signed(N + 2), name="total")
        m.d.comb += total.eq(Mux(x_sign ^ y_sign, x_al - y_al, x_al + y_al))
        neg = total[-1]
        mag = Signal(N + 1, name="sum_mag")
        m.d.comb += mag.eq(Mux(neg, -total, total))

        m.submodules.round = rp = RoundPack(FP32, sig_width=N + 1, exp_width=EXP_W + 1)
        m.d.comb += [
            rp.raw.sig.eq(mag),
            rp.raw.exp.eq(x_exp + 1),  # weight of bit N of the sum
            rp.raw.sign.eq(Mux(a_inf | b_inf, Mux(a_inf, a_sign, b_sign),
                               (x_sign ^ neg) & (mag != 0))),
            rp.raw.is_zero.eq(mag == 0),  # an exact zero is +0
            rp.raw.is_nan.eq(a_nan | b_nan | (a_inf & b_inf & (a_sign != b_sign))),
            rp.raw.is_inf.eq(a_inf | b_inf),
        ]
        m.d.comb += self.y.eq(rp.code)
        return m
