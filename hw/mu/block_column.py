"""One output column of the block-scaled matrix unit (``docs/numerics.md`` section 7).

Per beat and column j: the D lanes feed D/B exact block trees (:class:`~hw.mu.tree.Tree` at width B);
the block's scale exponents ``e(sx_i) + e(sw_ij)`` (and, for UE4M3, the product of the scale
significands) are decoded at the lanes' stage from the activation scales and the column's active
weight scales and travel beside the trees' registers; after the trees the block terms are summed in
the window (:func:`hw.mu.scales.window_sum`; one block at D = B: the term itself) and
:class:`BlockAccumulator` adds ``S_j * 2**u_j`` to the FP32 row with one rounding.

The weight scales are a second :class:`~hw.mu.column.WeightBuffer` of D/B codes of 8 bits (loaded
by ``ws`` beats, swapped with the weights). Pipeline placement is the plain column's
(:data:`hw.pipeline.COLUMN`) with the trees at width B; the window logic sits between the trees'
``RAW`` register and the accumulator's ``NORM`` register.
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from ..formats import get_block_format
from ..fp.round import leading_zeros
from ..hier import BlockParams
from .accumulate import EXP_W, Accumulator, AccumulatorParams
from .column import WeightBuffer
from .control import column_control, column_control_members
from .lane import Lane
from .numerics import dot_widths
from .scales import SCALE_EXP_BITS, WINDOW_FRAC_BITS, decode_scale, window_sum
from .tree import Tree, TreeParams

__all__ = ["BlockColumn", "BlockColumnParams", "BlockAccumulator", "block_sum_widths"]


def block_sum_widths(fmt: str, width: int) -> tuple:
    """``(sum_bits, lsb_exp)`` of a block-scaled column's beat sum ``S``: its signed width and the
    weight exponent of its LSB when the exponent input is 0 (``docs/numerics.md`` 7.3)."""
    bf = get_block_format(fmt)
    dw = dot_widths(bf.element, bf.block)
    pb = dw.sum_bits + (8 if bf.scale == "ue4m3" else 0)
    nb = width // bf.block
    if nb == 1:
        return pb, dw.lsb_exp
    return pb + WINDOW_FRAC_BITS + 1 + (nb - 1).bit_length(), dw.lsb_exp - WINDOW_FRAC_BITS - 1


class BlockAccumulator(Accumulator):
    """The FP32 accumulator of :mod:`hw.mu.accumulate` taking ``S * 2**(lsb_exp + s_exp)``: a beat
    sum with a per-beat exponent ``s_exp`` (signed) and NaN/Inf flags whatever the element format.

    Module name when placed: :class:`~hw.mu.accumulate.AccumulatorParams` with the block-scaled
    format's name (``mu_acc_w{D}_{fmt}_r{R}_s{stages}``).
    """

    def __init__(self, fmt: str, width: int, rows: int = 1, *, stages: int):
        self.params = AccumulatorParams(width, fmt, rows, stages)
        self._rows, self._norm_reg = rows, self.params.norm_reg
        self._sum_bits, self._lsb_exp = block_sum_widths(fmt, width)
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


@dataclass(frozen=True)
class BlockColumnParams(BlockParams):
    """Everything that changes a :class:`BlockColumn`'s logic (and its module name)."""

    MODULE: ClassVar[str] = "mu_col_w{width}_{fmt}_r{rows}_s{stages}{tree}"
    TAGS: ClassVar[dict] = {"tree": TreeParams.TAGS["arch"]}
    width: int
    fmt: str
    rows: int
    stages: int
    tree: str = "dadda"

    @property
    def block(self) -> int:
        return get_block_format(self.fmt).block

    @property
    def tree_params(self) -> TreeParams:
        return TreeParams(self.block, get_block_format(self.fmt).element, self.stages, self.tree)

    @property
    def acc_params(self) -> AccumulatorParams:
        return AccumulatorParams(self.width, self.fmt, self.rows, self.stages)

    @property
    def write_delay(self) -> int:
        """Cycles from ``x`` to the cycle whose accumulate control applies to it."""
        return self.tree_params.latency + self.acc_params.write_delay

    result_delay = 0

    @property
    def latency(self) -> int:
        """Cycles from ``x`` to ``y``: the block trees' latency + the accumulator's."""
        return self.tree_params.latency + self.acc_params.latency


class BlockColumn(wiring.Component):
    """Column j of a block-scaled unit: ``acc[row] <- RNE_fp32([acc[row] +] S_j)``.

    Parameters
    ----------
    fmt : str
        A block-scaled format (:data:`hw.formats.BLOCK_FORMATS`).
    width, rows, stages, tree :
        As :class:`hw.mu.column.Column` (the trees are at width B).

    Members
    -------
    wdata, we, x, en_next, acc_next, swap_ok_next, swap_req, y :
        As :class:`hw.mu.column.Column` (``acc_next.last`` is not read).
    xs : In(8 * D/B)
        The activation scale codes of the beat in ``x`` (block i's at ``[8*i +: 8]``).
    sdata : In(8)
        This column's code of the weight-scale beat being written.
    swe : In(D/B)
        One-hot: write ``sdata`` into loading scale i (swapped with the weights by ``swap``).
    """

    def __init__(self, fmt: str, width: int, rows: int, stages: int, tree: str = "dadda"):
        self._bf = get_block_format(fmt)
        self._nb = self._bf.check_width(width)
        self._dw = dot_widths(self._bf.element, width)
        self._rows, self._stages, self._tree = rows, stages, tree
        self.params = BlockColumnParams(width, fmt, rows, stages, tree)
        b = self._dw.fmt.bits
        super().__init__({"wdata": In(b), "we": In(width), "x": In(width * b),
                          "xs": In(8 * self._nb), "sdata": In(8), "swe": In(self._nb),
                          **column_control_members(rows), "y": Out(32)})

    @property
    def latency(self) -> int:
        return self.params.latency

    @property
    def write_delay(self) -> int:
        return self.params.write_delay

    def _scales(self, m, sbuf, en):
        """Per block: (scale significand product or None, exponent sum, NaN), delayed by the trees'
        latency (registers enabled by ``en``)."""
        ue = self._bf.scale == "ue4m3"
        out = []
        for i in range(self._nb):
            mx, ex, nx = decode_scale(m, self.xs[8 * i:8 * i + 8], self._bf.scale, name=f"sx{i}")
            mw, ew, nw = decode_scale(m, sbuf.wa[8 * i:8 * i + 8], self._bf.scale, name=f"sw{i}")
            es = Signal(signed(SCALE_EXP_BITS + 1), name=f"es{i}")
            nan = Signal(name=f"snan{i}")
            vals = [es, nan]
            m.d.comb += [es.eq(ex + ew), nan.eq(nx | nw)]
            if ue:
                mp = Signal(8, name=f"mp{i}")
                m.d.comb += mp.eq(mx * mw)
                vals.append(mp)
            for r in range(self.params.tree_params.latency):
                regs = [Signal.like(v, name=f"{v.name}_d{r}", reset_less=True) for v in vals]
                with m.If(en):
                    m.d.sync += [g.eq(v) for g, v in zip(regs, vals, strict=True)]
                vals = regs
            out.append((vals[2] if ue else None, vals[0], vals[1]))
        return out

    def elaborate(self, platform):
        m = Module()
        f, D, B = self._dw.fmt, self._dw.width, self._bf.block
        b, P, nb = f.bits, self._dw.prod_bits, self._nb

        en, acc_we, ctl, swap = column_control(m, self, self._rows)
        wbuf = WeightBuffer(D, b)
        hier.place(m, "wbuf", wbuf)
        m.d.comb += [wbuf.wdata.eq(self.wdata), wbuf.we.eq(self.we), wbuf.swap.eq(swap)]
        sbuf = WeightBuffer(nb, 8)
        hier.place(m, "sbuf", sbuf)
        m.d.comb += [sbuf.wdata.eq(self.sdata), sbuf.we.eq(self.swe), sbuf.swap.eq(swap)]

        trees = []
        for i in range(nb):
            tree = Tree(f, B, stages=self._stages, arch=self._tree)
            hier.place(m, f"tree{i}", tree)
            m.d.comb += tree.en.eq(en)
            trees.append(tree)
        for k in range(D):
            lane, tree, kk = Lane(f), trees[k // B], k % B
            hier.place(m, f"lane{k}", lane)
            m.d.comb += [
                lane.x.eq(self.x[k * b:(k + 1) * b]),
                lane.w.eq(wbuf.wa[k * b:(k + 1) * b]),
                tree.t[kk * P:(kk + 1) * P].eq(lane.t),
                tree.neg[kk].eq(lane.neg),
            ]
            if f.has_nan or f.has_inf:
                m.d.comb += tree.nan[kk].eq(lane.nan)
            if f.has_inf:
                m.d.comb += tree.inf[kk].eq(lane.inf)

        scales = self._scales(m, sbuf, en)
        terms, exps, nans, pinfs, ninfs = [], [], [], [], []
        for i, (tree, (mp, es, snan)) in enumerate(zip(trees, scales, strict=True)):
            if mp is None:
                terms.append(tree.s)
            else:
                t = Signal(signed(len(tree.s) + 8), name=f"p{i}")
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

        acc = BlockAccumulator(self.params.fmt, D, self._rows, stages=self._stages)
        hier.place(m, "acc", acc)
        if nb == 1:
            m.d.comb += [acc.s.eq(terms[0]), acc.s_exp.eq(exps[0])]
        else:
            s, top = window_sum(m, terms, exps, frac_bits=WINDOW_FRAC_BITS)
            m.d.comb += [acc.s.eq(s), acc.s_exp.eq(top)]
        pinf = Signal(name="pinf")
        ninf = Signal(name="ninf")
        m.d.comb += [pinf.eq(0 if not pinfs else _any(pinfs)), ninf.eq(0 if not ninfs else _any(ninfs))]
        m.d.comb += [
            acc.s_nan.eq(_any(nans) | (pinf & ninf)),
            acc.s_inf.eq(pinf | ninf),
            acc.s_inf_neg.eq(ninf),
            acc.en.eq(en), acc.we.eq(acc_we), acc.first.eq(ctl.first),
            self.y.eq(acc.y),
        ]
        if self._rows > 1:
            m.d.comb += acc.row.eq(ctl.row)
        return m


def _any(bits):
    out = bits[0]
    for v in bits[1:]:
        out = out | v
    return out
