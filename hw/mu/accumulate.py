"""FP32 accumulate of one matrix-unit column: ``acc <- RNE_fp32(acc + S)``, one rounding.

``S`` is the exact two's-complement dot product from :mod:`hw.mu.tree` (LSB ``2**lsb_exp``, W bits).
Steps (HardFloat style: unpack -> exact raw result -> round and pack):

1. Normalize S: sign, magnitude, leading-zero count and left shift give a ``W - 1``-bit significand
   with its MSB set and an exponent. This does not depend on the accumulator, so an optional
   pipeline register (the column placement's ``NORM`` cut, :data:`hw.pipeline.COLUMN`) sits after it.
2. Unpack the accumulator row (forced to +0 on ``first``).
3. Add the two (:func:`hw.fp.add.add_aligned`, shared with the slice's FP32 adder) as
   floating-point numbers with ``Q = max(W - 1, 24)``-bit significands in a window of
   ``Q + 3`` bits: the operand with the larger exponent (X) is placed at the top, the other (Y)
   shifted right by the exponent difference d with every shifted-out bit ORed into the LSB (sticky,
   found by comparing Y's trailing-zero count with d). When d <= 1 nothing is shifted out and the sum
   is exact; when d >= 2, X is normalized (a subnormal accumulator is X only if S = 0) so the result
   keeps its leading one within the top 3 bits and the sticky bit sits far below the rounding
   position: one correct rounding of the exact ``acc + S``.
4. :class:`hw.fp.round.RoundPack` rounds to nearest even into FP32 (subnormals kept, overflow to
   +-Inf, NaN as ``0x7FC00000``). An exact zero gives +0.

Specials: NaN if S is NaN, the accumulator is NaN, or Inf + -Inf; else Inf (sign of the infinite
operand) if either is infinite.

``loop = 2`` spreads the loop over two cycles: cycle 1 reads the row, aligns and adds (steps 2-3)
and registers the unnormalized magnitude, its exponent, sign and special flags with the beat's
``we`` and ``row`` (enabled by ``en``); cycle 2 rounds and packs them (step 4) and writes the row and
``y``. The result is the same; a beat must not read a row that the beat one stage ahead is still
writing, so a beat of the same row may follow only after one enabled cycle in which no beat of that
row reached the accumulator (a beat of another row may fill it; the matrix unit's ``x`` interlock
guarantees it).
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..formats import get_format
from ..fp.add import add_aligned, unpack_fp32
from ..fp.round import RoundPack, leading_zeros
from ..hier import BlockParams
from ..pipeline import COLUMN, Cut
from .numerics import dot_widths

__all__ = ["Accumulator", "AccumulatorParams", "beat_inputs", "LOOP_CYCLES"]

FP32 = get_format("fp32")
EXP_W = 11  # signed exponents: FP32 -126..128 and S's lsb_exp..sum_msb_exp, differences up to ~300
#: Allowed ``loop`` values: cycles of the read-add-round-write loop.
LOOP_CYCLES = (1, 2)


def beat_inputs(dw, rows: int, *, last: bool = False) -> dict:
    """The input members by which a column hands one beat's sum to an accumulate block, in port
    order: ``en``, ``s`` (``signed(dw.sum_bits)``), ``we``, ``first``, ``last`` (if asked for), the
    special-value flags the format has (``s_nan`` with NaN or Inf; ``s_inf``, ``s_inf_neg`` with
    Inf) and ``row`` (if R > 1). ``dw`` is :func:`hw.mu.numerics.dot_widths` of the column."""
    f = dw.fmt
    members = {"en": In(1), "s": In(signed(dw.sum_bits)), "we": In(1), "first": In(1)}
    if last:
        members["last"] = In(1)
    if f.has_nan or f.has_inf:
        members["s_nan"] = In(1)
    if f.has_inf:
        members["s_inf"] = In(1)
        members["s_inf_neg"] = In(1)
    if rows > 1:
        members["row"] = In(range(rows))
    return members


@dataclass(frozen=True)
class AccumulatorParams(BlockParams):
    """Everything that changes an :class:`Accumulator`'s logic (and its module name).

    ``stages`` is the column's pipeline depth; the accumulator holds that plan's ``NORM`` register
    (:data:`hw.pipeline.COLUMN`). ``loop`` is the cycles of the accumulate loop (1 or 2).
    """

    MODULE: ClassVar[str] = "mu_acc_w{width}_{fmt}_r{rows}_s{stages}{loop}"
    TAGS: ClassVar[dict] = {"loop": lambda v: "" if v == 1 else f"_l{v}"}
    width: int
    fmt: str
    rows: int
    stages: int
    loop: int = 1

    @property
    def norm_reg(self) -> bool:
        """Whether the normalized S is registered before the add."""
        return COLUMN.count(self.stages)[Cut.NORM] > 0

    @property
    def write_delay(self) -> int:
        """Cycles from ``s`` to the cycle whose ``we``/``first``/``row`` apply to it: ``norm_reg``."""
        return int(self.norm_reg)

    @property
    def latency(self) -> int:
        """Cycles from ``s`` to ``y``: :attr:`write_delay` + ``loop`` (the add register if
        ``loop = 2``, the accumulator register)."""
        return self.write_delay + self.loop


class Accumulator(wiring.Component):
    """R rows of FP32 accumulators fed by one column's exact sums.

    Module name when placed: from :class:`AccumulatorParams` (``mu_acc_w{D}_{fmt}_r{R}_s{stages}``).

    Parameters
    ----------
    fmt : str or FloatFormat
    width : int
        D (sets the width of S).
    rows : int
        R, accumulator rows.
    stages : int
        The column's pipeline stages: the normalized S is registered (enabled by ``en``) before
        the add if :attr:`AccumulatorParams.norm_reg`.
    loop : int
        1: read, add, round and write in one cycle. 2: read and add in one cycle, round and write
        in the next (the caller must not present a beat of the row being written; see the module
        text).

    Members
    -------
    en : In(1)
        Pipeline enable of the normalize register and of the add register (``loop = 2``).
    s : In(signed(W))
    s_nan, s_inf, s_inf_neg : In(1)
        As the format has them (see :class:`hw.mu.tree.Tree`).
    we : In(1)
        The beat at this stage is valid: its result is written into row ``row`` at the end of this
        cycle (``loop = 1``) or of the next enabled one (``loop = 2``).
    first : In(1)
        Start a new accumulation (the accumulator operand is +0).
    row : In(ceil(log2 R))
        Present if R > 1.
    y : Out(32)
        The last written result (FP32 code); for R = 1 the accumulator itself.

    Raises
    ------
    ValueError
        If ``loop`` is not one of :data:`LOOP_CYCLES`.

    Attributes
    ----------
    latency : int
        Cycles from ``s`` to ``y`` (:attr:`AccumulatorParams.latency`); ``we``, ``first`` and
        ``row`` belong with the ``s`` of :attr:`AccumulatorParams.write_delay` cycles before.
    """

    def __init__(self, fmt, width: int, rows: int = 1, *, stages: int, loop: int = 1):
        if loop not in LOOP_CYCLES:
            raise ValueError(f"loop must be one of {LOOP_CYCLES} (cycles of the accumulate loop), "
                             f"not {loop!r}")
        self._dw = dot_widths(fmt, width)
        f = self._dw.fmt
        self.params = AccumulatorParams(width, f.name, rows, stages, loop)
        self._rows, self._norm_reg = rows, self.params.norm_reg
        super().__init__({**beat_inputs(self._dw, rows), "y": Out(32)})

    @property
    def latency(self) -> int:
        return self.params.latency

    def _normalize(self, m):
        """S -> (sign, significand with MSB set (W-1 bits), exponent, zero, nan, inf, inf_neg)."""
        dw, f = self._dw, self._dw.fmt
        W = dw.sum_bits
        sign = Signal(name="s_sign")
        mag = Signal(W - 1, name="s_mag")  # |S| < 2^(W-1)
        m.d.comb += [sign.eq(self.s[-1]), mag.eq(Mux(sign, -self.s, self.s))]
        lz = leading_zeros(m, mag, name="s_lz")
        sig = Signal(W - 1, name="s_sig")
        exp = Signal(signed(EXP_W), name="s_exp")
        m.d.comb += [sig.eq(mag << lz), exp.eq(dw.sum_msb_exp - lz)]
        fields = [sign, sig, exp, mag == 0,
                  self.s_nan if (f.has_nan or f.has_inf) else Const(0, 1),
                  self.s_inf if f.has_inf else Const(0, 1),
                  self.s_inf_neg if f.has_inf else Const(0, 1)]
        if not self._norm_reg:
            return fields
        regs = [Signal.like(v, name=f"n_{n}", reset_less=True) if isinstance(v, Signal)
                else Signal(1, name=f"n_{n}", reset_less=True)
                for v, n in zip(fields, ("sign", "sig", "exp", "zero", "nan", "inf", "inf_neg"),
                                strict=True)]
        with m.If(self.en):
            m.d.sync += [r.eq(v) for r, v in zip(regs, fields, strict=True)]
        return regs

    def elaborate(self, platform):
        m = Module()
        s_sign, s_sig, s_exp, s_zero, s_nan, s_inf, s_inf_neg = self._normalize(m)

        # accumulator rows (reset to +0) and the operand read for this beat
        acc_rd = Signal(32, name="acc_rd" if self._rows > 1 else "acc0")
        if self._rows > 1:
            accs = [Signal(32, name=f"acc{r}") for r in range(self._rows)]
            with m.Switch(self.row):  # rows >= R (R not a power of two) read the last row
                for r in range(self._rows - 1):
                    with m.Case(r):
                        m.d.comb += acc_rd.eq(accs[r])
                with m.Default():
                    m.d.comb += acc_rd.eq(accs[-1])
        else:
            accs = None
        a = Signal(32, name="a")
        m.d.comb += a.eq(Mux(self.first, 0, acc_rd))
        a_sign, a_sig, a_exp, a_nan, a_inf = unpack_fp32(m, a, exp_width=EXP_W, name="a")
        # S is the second operand: a zero S never becomes X (its exponent is meaningless)
        mag, exp, sign = add_aligned(m, (a_sign, a_sig, a_exp), (s_sign, s_sig, s_exp),
                                     exp_width=EXP_W, b_zero=s_zero)

        inf_neg = Mux(a_inf, a_sign, s_inf_neg)
        raw = [mag, exp, Mux(s_inf | a_inf, inf_neg, sign),
               s_nan | a_nan | (s_inf & a_inf & (s_inf_neg != a_sign)), s_inf | a_inf]
        we, row = self.we, (self.row if accs is not None else None)
        if self.params.loop == 2:
            raw, we, row = self._add_register(m, raw, row)
        mag, exp, sign, nan, inf = raw

        rp = RoundPack(FP32, sig_width=len(mag), exp_width=EXP_W)
        m.submodules.round = rp
        m.d.comb += [
            rp.raw.sig.eq(mag),
            rp.raw.exp.eq(exp),
            rp.raw.sign.eq(sign),
            rp.raw.is_zero.eq(mag == 0),  # an exact zero is +0
            rp.raw.is_nan.eq(nan),
            rp.raw.is_inf.eq(inf),
        ]

        if accs is not None:
            res = Signal(32, name="res")
            with m.If(we):
                m.d.sync += res.eq(rp.code)
            for r in range(self._rows):
                with m.If(we & (row == r)):
                    m.d.sync += accs[r].eq(rp.code)
            m.d.comb += self.y.eq(res)
        else:
            with m.If(we):
                m.d.sync += acc_rd.eq(rp.code)
            m.d.comb += self.y.eq(acc_rd)
        return m

    def _add_register(self, m, raw, row):
        """``loop = 2``: register the sum's raw fields, the beat's valid and its row (enabled by
        ``en``); returns them and the write enable of the round-and-write cycle."""
        names = ("mag", "exp", "sign", "nan", "inf")
        regs = [Signal(len(v), name=f"p_{n}", reset_less=True) for v, n in zip(raw, names, strict=True)]
        regs[1] = Signal(signed(EXP_W), name="p_exp", reset_less=True)
        valid = Signal(name="p_valid")  # reset: no write before the first beat
        p_row = Signal.like(row, name="p_row") if row is not None else None
        with m.If(self.en):
            m.d.sync += [r.eq(v) for r, v in zip(regs, raw, strict=True)] + [valid.eq(self.we)]
            if row is not None:
                m.d.sync += p_row.eq(row)
        we = Signal(name="p_we")
        m.d.comb += we.eq(self.en & valid)
        return regs, we, p_row
