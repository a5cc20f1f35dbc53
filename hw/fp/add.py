"""FP32 + FP32 with one round to nearest even (0 to 4 register stages): the slice's ``y +=`` write-back.

Semantics (``docs/numerics.md`` section 5): ``y = RNE_fp32(a + b)`` of the exact sum, with the
matrix unit's special-value rules: any NaN operand or ``+Inf + -Inf`` gives the canonical NaN
``0x7FC00000``; otherwise an infinite operand gives that infinity; an exact zero gives ``+0`` (IEEE
754 agrees except for ``-0 + -0``, which IEEE makes ``-0``); subnormals are read and produced, never
flushed; overflow rounds to +-Inf.

Steps (HardFloat style; :func:`unpack_fp32` and :func:`add_aligned` are shared with the unit's
accumulate in :mod:`hw.mu.accumulate`):

1. Unpack both operands to a 24-bit significand and an exponent (subnormals: exponent ``-126``, no
   hidden bit).
2. The operand with the larger exponent (X) is placed at the top of a window of ``24 + 3`` bits, the
   other (Y) shifted right by the exponent difference d, every shifted-out bit ORed into the LSB
   (sticky, from Y's trailing-zero count). When d <= 1 nothing is shifted out and the sum is exact;
   when d >= 2, X has an exponent above ``-126`` so it is normal, the result keeps its leading one in
   the top 2 bits of the window and the sticky bit sits below the round bit: one correct rounding.
3. :class:`hw.fp.round.RoundPack` rounds to nearest even into FP32.

One result per cycle; latency ``stages`` (0 to 4), registers placed between the steps as
:data:`hw.pipeline.FP32_ADD` says, in this order of preference: on the exact sum between steps 2 and
3 (magnitude, exponent, sign and special flags; ``RAW``), inside the rounding between the
normalization and the increment (``RoundPack(cut=True)``; ``NORM``), between the alignment and the
add of step 2 (``TREE``), and on the operands (``INPUT``).
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..formats import get_format
from ..hier import BlockParams
from ..pipeline import FP32_ADD, Cut
from .round import RoundPack, leading_zeros

__all__ = ["Fp32Adder", "unpack_fp32", "add_aligned", "align", "add_exact"]

FP32 = get_format("fp32")
EXP_W = 10  # signed unpacked exponents -126..128, differences up to 254


def unpack_fp32(m: Module, v, *, exp_width: int, name: str) -> tuple:
    """Unpack an FP32 bit pattern.

    Parameters
    ----------
    m : Module
        Receives the logic.
    v : Value
        32-bit FP32 code.
    exp_width : int
        Width of the signed exponent signal (>= 10).
    name : str
        Prefix of the signal names.

    Returns
    -------
    tuple
        ``(sign, sig, exp, nan, inf)``: ``sig`` 24 bits with the hidden bit on top (0 for a
        subnormal or zero), ``exp`` the unbiased exponent of ``sig``'s MSB (``-126`` for subnormals
        and zero).
    """
    man, ef, sign = v[:23], v[23:31], v[31]
    nan, inf = Signal(name=f"{name}_nan"), Signal(name=f"{name}_inf")
    sig = Signal(24, name=f"{name}_sig")
    exp = Signal(signed(exp_width), name=f"{name}_exp")
    m.d.comb += [
        nan.eq((ef == 0xFF) & (man != 0)),
        inf.eq((ef == 0xFF) & (man == 0)),
        sig.eq(Cat(man, ef != 0)),
        exp.eq(Mux(ef == 0, FP32.emin, Cat(ef, Const(0, 1)).as_signed() - FP32.bias)),
    ]
    return sign, sig, exp, nan, inf


def add_aligned(m: Module, a: tuple, b: tuple, *, exp_width: int, b_zero=None) -> tuple:
    """The exact sum of two floating-point operands, reduced to one sticky bit for :class:`RoundPack`:
    :func:`align` then :func:`add_exact`.

    Each operand is ``(sign, sig, exp)``: a significand of any width whose MSB has weight
    ``2**exp``; it is normalized (MSB set) unless its exponent is the smallest of its format.
    Both significands are padded at the bottom to ``Q`` = the wider width; the operand with the larger
    exponent (X) sits at the top of a ``Q + 3``-bit window and the other (Y) is shifted right by the
    exponent difference, every shifted-out bit ORed into the LSB (sticky, from Y's trailing-zero
    count). When the difference is <= 1 nothing is shifted out and the sum is exact; otherwise X is
    normalized, the result keeps its leading one within the window's top bits and the sticky bit sits
    below the round bit, so rounding the result once is rounding the exact sum.

    Parameters
    ----------
    m : Module
        Receives the logic.
    a, b : tuple
        The operands.
    exp_width : int
        Width of the signed exponents.
    b_zero : Value, optional
        ``b`` is zero (its exponent is then meaningless and ``a`` is taken as X).

    Returns
    -------
    tuple
        ``(mag, exp, sign)`` for the raw record of :class:`RoundPack`: the magnitude of the sum
        (``Q + 4`` bits, the MSB of weight ``2**exp``) and the sign of a nonzero finite result (0 for
        an exact zero, which is +0).
    """
    return add_exact(m, align(m, a, b, exp_width=exp_width, b_zero=b_zero))


def align(m: Module, a: tuple, b: tuple, *, exp_width: int, b_zero=None) -> dict:
    """The first half of :func:`add_aligned`: swap so X has the larger exponent, shift Y right
    with its sticky bit.

    Returns
    -------
    dict
        ``x_al``, ``y_al`` (``Q + 3`` bits each, Y's sticky bit in its LSB), ``x_sign``, ``y_sign``
        and ``x_exp`` (the weight of ``x_al``'s bit ``Q + 2`` is ``2**x_exp``).
    """
    (a_sign, a_sig, a_exp), (b_sign, b_sig, b_exp) = a, b
    Q = max(len(a_sig), len(b_sig))
    N = Q + 3  # + guard, round, sticky
    a_q = Cat(Const(0, Q - len(a_sig)), a_sig)
    b_q = Cat(Const(0, Q - len(b_sig)), b_sig)
    b_is_x = Signal(name="b_is_x")
    m.d.comb += b_is_x.eq(b_exp > a_exp if b_zero is None else ~b_zero & (b_exp > a_exp))
    x_sig, y_sig = Signal(Q, name="x_sig"), Signal(Q, name="y_sig")
    x_exp, y_exp = Signal(signed(exp_width), name="x_exp"), Signal(signed(exp_width), name="y_exp")
    x_sign, y_sign = Signal(name="x_sign"), Signal(name="y_sign")
    m.d.comb += [
        x_sig.eq(Mux(b_is_x, b_q, a_q)), y_sig.eq(Mux(b_is_x, a_q, b_q)),
        x_exp.eq(Mux(b_is_x, b_exp, a_exp)), y_exp.eq(Mux(b_is_x, a_exp, b_exp)),
        x_sign.eq(Mux(b_is_x, b_sign, a_sign)), y_sign.eq(Mux(b_is_x, a_sign, b_sign)),
    ]
    d = Signal(signed(exp_width + 1), name="d")  # >= 0
    dcl = Signal(range(N + 1), name="d_clamped")
    m.d.comb += [d.eq(x_exp - y_exp), dcl.eq(Mux(d > N, N, d))]
    y_full = Cat(Const(0, 3), y_sig)  # N bits
    tz = leading_zeros(m, y_full[::-1], name="y_tz")  # N for a zero Y
    y_al = Signal(N, name="y_aligned")
    m.d.comb += y_al.eq((y_full >> dcl) | (tz < dcl))  # sticky in the LSB
    x_al = Cat(Const(0, 3), x_sig)
    return {"x_al": x_al, "y_al": y_al, "x_sign": x_sign, "y_sign": y_sign, "x_exp": x_exp}


def add_exact(m: Module, v: dict) -> tuple:
    """The second half of :func:`add_aligned`: the signed sum of the aligned operands ``v`` (from
    :func:`align`) as ``(mag, exp, sign)``."""
    N = len(v["x_al"])
    x_sign, y_sign = v["x_sign"], v["y_sign"]
    total = Signal(signed(N + 2), name="total")
    m.d.comb += total.eq(Mux(x_sign ^ y_sign, v["x_al"] - v["y_al"], v["x_al"] + v["y_al"]))
    neg = total[-1]
    mag = Signal(N + 1, name="sum_mag")
    m.d.comb += mag.eq(Mux(neg, -total, total))
    sign = Signal(name="sum_sign")
    m.d.comb += sign.eq((x_sign ^ neg) & (mag != 0))
    return mag, v["x_exp"] + 1, sign  # x_exp + 1: weight of bit N of the sum


@dataclass(frozen=True)
class Fp32AddParams(BlockParams):
    """The FP32 adder's one parameter, its register stages: module ``fp32_add`` (0) or
    ``fp32_add_s{stages}``."""

    MODULE: ClassVar[str] = "fp32_add{stages}"
    TAGS: ClassVar[dict] = {"stages": lambda v: "" if v == 0 else f"_s{v}"}
    stages: int = 0


class Fp32Adder(wiring.Component):
    """``y = RNE_fp32(a + b)``. Module name when placed: ``fp32_add`` or ``fp32_add_s{stages}``.

    Members
    -------
    a, b : In(32)
        FP32 operands (bit patterns).
    y : Out(32)
        FP32 result (bit pattern), ``latency`` cycles after the operands.

    Parameters
    ----------
    stages : int
        Register stages, 0 (combinational) to 4, placed as :data:`hw.pipeline.FP32_ADD` says. There
        is no enable: every cycle's operands leave ``stages`` cycles later.

    Attributes
    ----------
    latency : int
        ``stages``.
    """

    a: In(32)
    b: In(32)
    y: Out(32)

    def __init__(self, stages: int = 0):
        top = len(FP32_ADD.order)
        if isinstance(stages, bool) or not isinstance(stages, int) or not 0 <= stages <= top:
            raise ValueError(f"Fp32Adder stages must be an integer from 0 to {top}, not {stages!r}")
        self.params = Fp32AddParams(stages)
        self.latency = stages
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        cuts = FP32_ADD.plan(self.latency)
        a, b = self.a, self.b
        if Cut.INPUT in cuts:   # the operands (the slice: the old y from the SRAM, the unit's row)
            a, b = Signal(32, name="a_r"), Signal(32, name="b_r")
            m.d.sync += [a.eq(self.a), b.eq(self.b)]
        a_sign, a_sig, a_exp, a_nan, a_inf = unpack_fp32(m, a, exp_width=EXP_W, name="a")
        b_sign, b_sig, b_exp, b_nan, b_inf = unpack_fp32(m, b, exp_width=EXP_W, name="b")
        al = align(m, (a_sign, a_sig, a_exp), (b_sign, b_sig, b_exp), exp_width=EXP_W)
        inf_sign = Mux(a_inf, a_sign, b_sign)
        is_nan = a_nan | b_nan | (a_inf & b_inf & (a_sign != b_sign))
        is_inf = a_inf | b_inf
        if Cut.TREE in cuts:
            vals = {**al, "inf_sign": inf_sign, "is_nan": is_nan, "is_inf": is_inf}
            regs = {k: Signal.like(v, name=f"al_{k}") for k, v in vals.items()}
            m.d.sync += [regs[k].eq(v) for k, v in vals.items()]
            al = {k: regs[k] for k in al}
            inf_sign, is_nan, is_inf = regs["inf_sign"], regs["is_nan"], regs["is_inf"]
        mag, exp, sign = add_exact(m, al)
        m.submodules.round = rp = RoundPack(FP32, sig_width=len(mag), exp_width=EXP_W + 1,
                                            cut=Cut.NORM in cuts)
        exact = m.d.sync if Cut.RAW in cuts else m.d.comb   # the exact sum, registered or not
        exact += [
            rp.raw.sig.eq(mag),
            rp.raw.exp.eq(exp),
            rp.raw.sign.eq(Mux(is_inf, inf_sign, sign)),
            rp.raw.is_zero.eq(mag == 0),  # an exact zero is +0
            rp.raw.is_nan.eq(is_nan),
            rp.raw.is_inf.eq(is_inf),
        ]
        m.d.comb += self.y.eq(rp.code)
        return m
