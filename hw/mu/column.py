"""One output column j of the matrix unit: weight buffers, D lanes, compressor tree, FP32 accumulator.

The column is the repeated block of :class:`hw.mu.matrix_unit.MatrixUnit` (D of them). Its inputs
come from registers in the top (the activation register, the registered weight row and its
one-hot row enable) or are the next values of control that the column registers itself (the
enable, the accumulate control, the swap permission: :func:`hw.mu.control.column_control`, so no
control net fans out from one flop to every column), and its output is the accumulator register,
so each column is a timing boundary for the hierarchical flows. Inside, the weight buffer,
lanes, tree and accumulator are placed as their own modules (see ``docs/mu_interface.md``) so the
area of each kind of block can be reported separately.

Pipeline placement for ``stages`` = S is :data:`hw.pipeline.COLUMN` (the column's delay from the
activation register to the accumulator write is S cycles):

* S >= 1: register the normalized sum before the FP32 add (``NORM``,
  :class:`~hw.mu.accumulate.Accumulator`);
* S >= 2: register the tree's output sum (``RAW``, :class:`~hw.mu.tree.Tree`);
* S >= 3: S - 2 registers between Dadda stages of the tree, evenly spaced (``TREE``).

In the ``exact`` mode the placement is :data:`hw.pipeline.EXACT_COLUMN`: the tree hands its two
carry-save rows to the accumulator (no carry-propagate adder, nothing to normalize), S >= 1 registers
the rows (``RAW``) and S >= 2 puts S - 1 registers between Dadda stages.

A block-scaled ``fmt`` (:data:`hw.formats.BLOCK_FORMATS`) composes the scale axis in: a second
:class:`WeightBuffer` of D/B scale codes (loaded by ``ws`` beats, swapped with the weights), D/B
trees of B lanes instead of one of D, and :func:`hw.mu.scales.block_terms` and
:func:`~hw.mu.scales.scaled_sum` (the block scales decoded beside the trees, the block terms summed
in a window) into
:class:`~hw.mu.scales.ScaledAccumulator`; the pipeline placement is the same with the trees at
width B. In the ``exact`` mode (NVFP4) :func:`~hw.mu.scales.fixed_sum` puts the block terms into one
fixed-point grid for the plain :class:`~hw.mu.exact_acc.ExactAccumulator`; the block trees keep their
adder (their sums are scaled), so the placement is the ``fp32`` one (``NORM``, ``RAW``, ``TREE``)
except that the third register goes on the scaled block terms (:attr:`ColumnParams.scale_reg`).

The accumulator is :class:`~hw.mu.accumulate.Accumulator` (``acc = "fp32"``: one rounding per beat)
or :class:`~hw.mu.exact_acc.ExactAccumulator` (``acc = "exact"``: exact fixed-point rows, one
rounding per accumulation in a drain pipeline; its ``in_reg`` is a ``NORM`` register). The
column's latency is composed from its blocks' (:attr:`ColumnParams.latency`).
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from ..clock_gate import gated_assign, gated_domain
from ..formats import BLOCK_FORMATS
from ..hier import BlockParams
from ..pipeline import Cut
from .accumulate import Accumulator, AccumulatorParams
from .control import column_control, column_control_ahead, column_control_members
from .exact_acc import GUARD_BITS, ExactAccumulator, ExactAccumulatorParams
from .lane import Lane, LaneParams
from .numerics import ACC_MODES, dot_widths
from .scales import (
    ScaledAccumulator,
    block_terms,
    fixed_sum,
    fixed_sum_widths,
    register_terms,
    scaled_sum,
)
from .tree import Tree, TreeParams
from .window import window_inputs, windowed

__all__ = ["WeightBuffer", "WeightBufferParams", "Column", "ColumnParams"]


@dataclass(frozen=True)
class WeightBufferParams(BlockParams):
    """A weight buffer depends on D, the element width and whether its rows are clock-gated."""

    MODULE: ClassVar[str] = "mu_wbuf_w{width}_b{bits}{gate}"
    TAGS: ClassVar[dict] = {"gate": lambda v: "_cg" if v else ""}
    width: int
    bits: int
    gate: bool = False


@dataclass(frozen=True)
class ColumnParams(BlockParams):
    """Everything that changes a :class:`Column`'s logic (and its module name)."""

    MODULE: ClassVar[str] = ("mu_col_w{width}_{fmt}_r{rows}_s{stages}{tree}{acc}{guard_bits}{loop}{gate}"
                             "{isolate}")
    TAGS: ClassVar[dict] = {"tree": TreeParams.TAGS["arch"],
                            "acc": lambda v: "" if v == "fp32" else "_xacc",
                            "guard_bits": lambda v: "" if v == GUARD_BITS else f"_g{v}",
                            "loop": AccumulatorParams.TAGS["loop"],
                            "gate": WeightBufferParams.TAGS["gate"],
                            "isolate": LaneParams.TAGS["isolate"]}
    width: int
    fmt: str
    rows: int
    stages: int
    tree: str = "dadda"
    acc: str = "fp32"
    guard_bits: int = GUARD_BITS
    loop: int = 1
    gate: bool = False
    isolate: bool = False

    @property
    def block_format(self):
        """The :class:`hw.formats.BlockFormat` of a block-scaled ``fmt``, None for a per-tensor one."""
        return BLOCK_FORMATS.get(self.fmt)

    @property
    def scale_reg(self) -> bool:
        """A register on the scaled block terms (block-scaled, ``exact``, ``stages >= 3``: the third
        register, between the scale multiply and the shift into the fixed-point grid)."""
        return self.block_format is not None and self.acc == "exact" and self.stages >= 3

    @property
    def window(self) -> bool:
        """The ``exact`` mode on an OCP MX format (:mod:`hw.mu.window`)."""
        return self.acc == "exact" and windowed(self.fmt)

    @property
    def tree_params(self) -> TreeParams:
        """One tree of D lanes, or (block-scaled) one of each of the D/B blocks of B lanes, with the
        stages left after :attr:`scale_reg` (and, in the window, after the accumulator's input
        register: its block trees are carry-save, their adder split over the :attr:`scale_reg` stage and
        the accumulator's first placement stage, :func:`hw.mu.scales.split_sum`)."""
        bf = self.block_format
        if bf is not None and self.window:
            return TreeParams(bf.block, bf.element, max(0, self.stages - self.scale_reg - 1),
                              self.tree, True, self.gate)
        if bf is not None:  # block sums are resolved (scaled and shifted), in either mode
            return TreeParams(bf.block, bf.element, self.stages - self.scale_reg, self.tree, False,
                              self.gate)
        return TreeParams(self.width, self.fmt, self.stages, self.tree, self.acc == "exact", self.gate)

    @property
    def acc_params(self):
        """:class:`AccumulatorParams` (``fp32``) or :class:`ExactAccumulatorParams` (``exact``, its
        input register where the ``fp32`` block has its ``NORM`` register; always in the window)."""
        if self.acc == "exact":
            plan = self.tree_params.placement.count(self.tree_params.stages)
            return ExactAccumulatorParams(self.width, self.fmt, self.rows, self.guard_bits,
                                          in_reg=self.window or plan[Cut.NORM] > 0, gate=self.gate)
        return AccumulatorParams(self.width, self.fmt, self.rows, self.stages, self.loop)

    @property
    def write_delay(self) -> int:
        """Cycles from ``x`` to the cycle whose accumulate control (``acc_next`` one cycle before)
        applies to it:
        the tree's latency (+ :attr:`scale_reg`) + the accumulator's write delay."""
        return self.tree_params.latency + self.scale_reg + self.acc_params.write_delay

    @property
    def result_delay(self) -> int:
        """Cycles from that accumulate cycle to the cycle at whose end ``y`` takes the result: 0 for
        ``fp32`` (the accumulator is the result), 1 for ``fp32`` with ``loop = 2`` (the round and
        write cycle), the drain pipeline's depth for ``exact``."""
        acc = self.acc_params
        return acc.latency - acc.write_delay - 1

    @property
    def latency(self) -> int:
        """Cycles from ``x`` to ``y``: the tree's latency (+ :attr:`scale_reg`) + the accumulator's."""
        return self.tree_params.latency + self.scale_reg + self.acc_params.latency


class WeightBuffer(wiring.Component):
    """The loading and the active copy of one weight column (W[0..D-1, j]).

    Module name when placed: from :class:`WeightBufferParams` (``mu_wbuf_w{D}_b{b}``).

    Members
    -------
    wdata : In(b)
        W[k, j] of the weight row being written.
    we : In(D)
        One-hot row enable: write ``wdata`` into loading row k.
    swap : In(1)
        Copy the loading column into the active one; a row written in the same cycle (only ever the
        last row, k = D-1) is forwarded into the copy.
    wa : Out(D * b)
        The active column, W[k, j] at ``[k*b +: b]``.

    With ``gate``, every loading row has a clock gate of its own (enable ``we[k]``) and the active
    copy one per :data:`hw.clock_gate.GATE_GROUP` flops (enable ``swap``), see
    :func:`hw.clock_gate.gated_assign`: the flops see the clock only in the cycles that load them
    and need no enable multiplexers. The row gates sit behind a coarse gate per
    :meth:`row_group` rows (enable: a row of the group is written; :func:`hw.clock_gate.gated_domain`),
    so only the written group's row gates see the clock, and each group's rows take ``wdata``
    through an AND with that enable, so the other groups' data pins hold still (operand isolation).
    """

    def __init__(self, width: int, bits: int, gate: bool = False):
        self._width, self._bits, self._gate = width, bits, gate
        self.params = WeightBufferParams(width, bits, gate)
        super().__init__({"wdata": In(bits), "we": In(width), "swap": In(1), "wa": Out(width * bits)})

    #: ``wa`` shows the swapped-in column the cycle after ``swap``.
    latency = 1

    def elaborate(self, platform):
        m = Module()
        D, b = self._width, self._bits
        wl = [Signal(b, name=f"wl{k}", reset_less=True) for k in range(D)]  # no reset: data only
        wa = [Signal(b, name=f"wa{k}", reset_less=True) for k in range(D)]
        if self._gate:
            size = self.row_group(D)
            for s, lo in enumerate(range(0, D, size)):
                dom, wd = "sync", self.wdata
                if size < D:   # a coarse gate per group of rows, and their own copy of wdata
                    sel = Signal(name=f"sel{s}")
                    wd = Signal(b, name=f"wd{s}")
                    m.d.comb += [sel.eq(self.we[lo:lo + size].any()), wd.eq(Mux(sel, self.wdata, 0))]
                    dom = gated_domain(m, platform, sel, f"gs{s}")
                for k in range(lo, lo + size):
                    gated_assign(m, platform, self.we[k], [(wl[k], wd)], f"gl{k}", domain=dom)
            gated_assign(m, platform, self.swap, [(wa[k], self._swapped(k, wl)) for k in range(D)], "ga")
        else:
            for k in range(D):
                with m.If(self.we[k]):
                    m.d.sync += wl[k].eq(self.wdata)
            with m.If(self.swap):
                for k in range(D):
                    m.d.sync += wa[k].eq(self._swapped(k, wl))
        m.d.comb += self.wa.eq(Cat(*wa))
        return m

    @staticmethod
    def row_group(width: int) -> int:
        """Loading rows behind one coarse clock gate with gates: ``2 ** ceil(log2(D) / 2)``, about
        ``sqrt(D)``, so that the coarse gates (``D / size``, seeing the clock every cycle) and the
        row gates behind the one enabled coarse gate (``size``) are balanced: 4 at D = 8 and 16, 8 at
        D = 32 and 64, 16 at D = 128."""
        return 1 << -(-(width.bit_length() - 1) // 2)

    def _swapped(self, k, wl):
        """Row k of the loading copy as the swap takes it (the last row forwarded if written)."""
        D = self._width
        return wl[k] if k < D - 1 else Mux(self.we[D - 1], self.wdata, wl[D - 1])


class Column(wiring.Component):
    """Column j: ``acc[row] <- RNE_fp32([acc[row] +] sum_k x[k] * W[k, j])`` (``fp32``), or
    ``y <- RNE_fp32(exact sum of the beats first..last)`` (``exact``).

    Module name when placed: from :class:`ColumnParams` (``mu_col_w{D}_{fmt}_r{R}_s{S}``, ``_xacc``
    appended in the ``exact`` mode).

    Parameters
    ----------
    fmt : str or FloatFormat
        Element format, or a block-scaled format's name.
    width : int
        D.
    rows : int
        R.
    stages : int
        Pipeline registers between the activation register and the accumulator write.
    tree : str
        Column sum architecture (:data:`hw.mu.tree.TREE_ARCHS`).
    acc : str
        Accumulate mode, one of :data:`hw.mu.numerics.ACC_MODES`.
    guard_bits : int
        ``exact`` mode: an accumulation may be up to ``2**guard_bits`` beats long.
    loop : int
        ``fp32`` mode: cycles of the accumulate loop (:class:`~hw.mu.accumulate.Accumulator`); with
        2, a beat must not follow a beat of the same row in the next enabled cycle.
    gate : bool
        Clock gates (:mod:`hw.clock_gate`) on the weight (and scale) buffers' rows
        (:class:`WeightBuffer`), the trees' pipeline registers (enable: the beat is valid, from the
        column's copy of the activation register's valid, ``xv_next``) and, in the ``exact`` mode,
        the accumulator's registers that load only for a beat or a result.
    isolate : bool
        Operand isolation in the lanes (:class:`hw.mu.lane.Lane`): a zero product hands the tree
        ``t = 0, neg = 0``, so lanes with a zero weight or activation hold the tree's inputs.

    Members
    -------
    wdata, we : In
        Weight load, see :class:`WeightBuffer`.
    x : In(D * b)
        The activation row (from the top's activation register).
    en_next, acc_next, swap_ok_next, swap_req : In
        Next values of the unit's control, registered here (:func:`hw.mu.control.column_control`):
        the pipeline enable; the control record (``valid``, ``first``, ``last``, ``row``) of the
        beat that reaches the accumulate stage at the next enabled edge (``last`` is read in the
        ``exact`` mode only, ``row`` is present if R > 1); the swap permission (enabled and a
        complete tile waits); and, this cycle, a valid ``x`` beat with ``swap``. The weights swap
        (:class:`WeightBuffer` ``swap``) in a cycle with ``swap_req`` and the permission.
    xv_next : In(1)
        With ``gate``: what the unit's control register beside the activation register takes (the
        accepted ``x`` beat is valid); the column registers its copy while enabled.
    ahead_next : In
        ``exact`` on an OCP MX format: what the control register two stages before the
        accumulate stage takes (:func:`hw.mu.control.column_control_ahead`), for the window's
        anchors.
    xs : In(8 * D/B)
        Block-scaled formats: the activation scale codes of the beat in ``x`` (block i's at
        ``[8*i +: 8]``).
    sdata, swe : In(8), In(D/B)
        Block-scaled formats: this column's code of the weight-scale beat being written, and the
        one-hot enable writing it into loading scale i (swapped with the weights).
    y : Out(32)
        The last accumulated FP32 value (register); ``exact``: the last result, written at the end
        of the cycle :attr:`ColumnParams.result_delay` cycles after the ``last`` beat's accumulate.
    overflow : Out(1)
        ``exact`` only: high for one enabled cycle after ``y`` took the result of an accumulation
        longer than ``2**guard_bits`` beats (that ``y`` is NaN).

    Attributes
    ----------
    latency : int
        Cycles from ``x`` to ``y`` (:attr:`ColumnParams.latency`).
    write_delay : int
        Cycles from ``x`` to the cycle whose accumulate control applies to it.
    """

    def __init__(self, fmt, width: int, rows: int, stages: int, tree: str = "dadda",
                 acc: str = "fp32", guard_bits: int = GUARD_BITS, loop: int = 1, gate: bool = False,
                 isolate: bool = False):
        if acc not in ACC_MODES:
            raise ValueError(f"acc must be one of {', '.join(ACC_MODES)}, not {acc!r}")
        self._bf = BLOCK_FORMATS.get(fmt) if isinstance(fmt, str) else None
        if self._bf is not None:
            self._bf.check_width(width)
        self._dw = dot_widths(fmt if self._bf is None else self._bf.element, width)
        self._tree = tree
        self._rows, self._stages = rows, stages
        if loop != 1 and acc != "fp32":
            raise ValueError(f"loop={loop} is for acc='fp32' only (the exact mode's loop is an "
                             f"integer add); leave loop at 1")
        self.params = ColumnParams(width, self._dw.fmt.name if self._bf is None else self._bf.name,
                                   rows, stages, tree, acc, guard_bits, loop, gate, isolate)
        b = self._dw.fmt.bits
        members = {"wdata": In(b), "we": In(width), "x": In(width * b)}
        if self._bf is not None:  # the block scales: activation scale codes, weight scale loads
            nb = width // self._bf.block
            members.update({"xs": In(8 * nb), "sdata": In(8), "swe": In(nb)})
        ahead = self.params.window  # the window's anchors, two stages ahead
        members.update({**column_control_members(rows, ahead=ahead), "y": Out(32)})
        if gate:
            members["xv_next"] = In(1)
        if acc == "exact":
            members["overflow"] = Out(1)
        super().__init__(members)

    @property
    def latency(self) -> int:
        return self.params.latency

    @property
    def write_delay(self) -> int:
        return self.params.write_delay

    def elaborate(self, platform):
        m = Module()
        dw, f = self._dw, self._dw.fmt
        D, b, P, S = dw.width, f.bits, dw.prod_bits, self._stages
        bf, tp = self._bf, self.params.tree_params

        en, acc_we, ctl, swap = column_control(m, self, self._rows)
        if self.params.gate:  # the beat in the activation register is valid: the trees' clock gates
            xv = Signal(name="xv")
            with m.If(en):
                m.d.sync += xv.eq(self.xv_next)
        wbuf = WeightBuffer(D, b, self.params.gate)
        hier.place(m, "wbuf", wbuf)
        m.d.comb += [wbuf.wdata.eq(self.wdata), wbuf.we.eq(self.we), wbuf.swap.eq(swap)]
        if bf is not None:  # the weight scales: D/B codes, loaded by ``ws`` beats, swapped with W
            sbuf = WeightBuffer(D // bf.block, 8, self.params.gate)
            hier.place(m, "sbuf", sbuf)
            m.d.comb += [sbuf.wdata.eq(self.sdata), sbuf.we.eq(self.swe), sbuf.swap.eq(swap)]

        exact = self.params.acc == "exact"
        B = tp.width  # lanes per tree: D, or the block size
        trees = []
        for i in range(D // B):
            tree = Tree(f, B, stages=tp.stages, arch=self._tree, carry_save=tp.carry_save,
                        gate=tp.gate)
            hier.place(m, "tree" if bf is None else f"tree{i}", tree)
            m.d.comb += tree.en.eq(en)
            if tp.gate:
                m.d.comb += tree.v.eq(xv)
            trees.append(tree)
        for k in range(D):
            lane, tree, kk = Lane(f, self.params.isolate), trees[k // B], k % B
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

        p = self.params.acc_params
        if bf is not None and exact:  # block terms shifted into one fixed-point grid, summed exactly
            gated = self.params.gate and hasattr(trees[0], "v_out")
            terms = block_terms(m, bf, trees, self.xs, sbuf.wa, en, tp.latency, platform=platform,
                                valid=xv if gated else None)
            if self.params.scale_reg:
                terms = register_terms(m, terms, en, platform=platform,
                                       valid=trees[0].v_out if gated else None)
            acc = ExactAccumulator(bf.name, D, self._rows, guard_bits=p.guard_bits,
                                   chunk_bits=p.chunk_bits, drain_stages=p.drain_stages,
                                   in_reg=p.in_reg, gate=p.gate)
            hier.place(m, "acc", acc)
            if hasattr(acc, "v"):  # the block terms' valid: the trees', through the scale register
                tv = trees[0].v_out
                if self.params.scale_reg:
                    tv, v0 = Signal(name="terms_v"), tv
                    with m.If(en):
                        m.d.sync += tv.eq(v0)
                m.d.comb += acc.v.eq(tv)
            if windowed(bf.name):  # the window's anchors move a stage ahead of the loop
                sums = window_inputs(m, acc, *terms)
                ahead = column_control_ahead(m, self, self._rows, en)
                sums += [acc.we_ahead.eq(ahead.valid), acc.first_ahead.eq(ahead.first)]
                if self._rows > 1:
                    sums.append(acc.row_ahead.eq(ahead.row))
            else:
                sums = fixed_sum(m, acc, *terms, widths=fixed_sum_widths(bf.name, D))
            m.d.comb += sums + [
                acc.en.eq(en), acc.we.eq(acc_we), acc.first.eq(ctl.first), acc.last.eq(ctl.last),
                self.overflow.eq(acc.overflow), self.y.eq(acc.y)]
        elif bf is not None:  # block terms scaled and summed in the window, with an exponent
            terms = block_terms(m, bf, trees, self.xs, sbuf.wa, en, tp.latency)
            acc = ScaledAccumulator(bf.name, D, self._rows, stages=S, loop=p.loop)
            hier.place(m, "acc", acc)
            m.d.comb += scaled_sum(m, acc, *terms) + [
                acc.en.eq(en), acc.we.eq(acc_we), acc.first.eq(ctl.first), self.y.eq(acc.y)]
        else:
            tree = trees[0]
            if exact:
                acc = ExactAccumulator(f, D, self._rows, guard_bits=p.guard_bits,
                                       chunk_bits=p.chunk_bits, drain_stages=p.drain_stages,
                                       in_reg=p.in_reg, gate=p.gate)
                hier.place(m, "acc", acc)
                if hasattr(acc, "v"):
                    m.d.comb += acc.v.eq(tree.v_out)
                m.d.comb += [acc.last.eq(ctl.last), self.overflow.eq(acc.overflow)]
            else:
                acc = Accumulator(f, D, self._rows, stages=S, loop=p.loop)
                hier.place(m, "acc", acc)
            sums = [acc.s0.eq(tree.s0), acc.s1.eq(tree.s1)] if exact else [acc.s.eq(tree.s)]
            m.d.comb += sums + [acc.en.eq(en), acc.we.eq(acc_we), acc.first.eq(ctl.first),
                                self.y.eq(acc.y)]
            if f.has_nan or f.has_inf:
                m.d.comb += acc.s_nan.eq(tree.s_nan)
            if f.has_inf:
                m.d.comb += [acc.s_inf.eq(tree.s_inf), acc.s_inf_neg.eq(tree.s_inf_neg)]
        if self._rows > 1:
            m.d.comb += acc.row.eq(ctl.row)
        return m
