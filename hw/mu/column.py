"""One output column j of the matrix unit: weight buffers, D lanes, compressor tree, FP32 accumulator.

The column is the repeated block of :class:`hw.mu.matrix_unit.MatrixUnit` (D of them). Its inputs
come from registers in the top (the activation register, the registered weight row and its
one-hot row enable) or shallow control (``en``, ``swap``), and its output is the accumulator
register, so each column is a timing boundary for the hierarchical flows. Inside, the weight buffer,
lanes, tree and accumulator are placed as their own modules (see ``docs/mu_interface.md``) so the
area of each kind of block can be reported separately.

Pipeline placement for ``stages`` = S (the column's latency from the activation register to the
accumulator write is S cycles):

* S >= 1: register the normalized sum before the FP32 add (:class:`~hw.mu.accumulate.Accumulator`);
* S >= 2: register the tree's output sum (:class:`~hw.mu.tree.Tree`);
* S >= 3: S - 2 registers between Dadda stages of the tree, evenly spaced.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from .accumulate import Accumulator
from .lane import Lane
from .numerics import dot_widths
from .tree import Tree, tree_levels

__all__ = ["WeightBuffer", "Column", "stage_plan"]


def stage_plan(width: int, stages: int) -> dict:
    """Where the ``stages`` pipeline registers of a column of width D go.

    Returns
    -------
    dict
        ``norm_reg`` (bool), ``out_reg`` (bool), ``cuts`` (tuple of Dadda stages followed by a
        register).
    """
    n = tree_levels(width)
    k = max(stages - 2, 0)
    cuts = tuple((i * (n + 1)) // (k + 1) for i in range(1, k + 1))  # distinct, in 1..n for k <= n
    return {"norm_reg": stages >= 1, "out_reg": stages >= 2, "cuts": cuts}


class WeightBuffer(wiring.Component):
    """The loading and the active copy of one weight column (W[0..D-1, j]).

    Module name when placed: ``mu_wbuf_w{D}_b{b}``.

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
    """

    def __init__(self, width: int, bits: int):
        self._width, self._bits = width, bits
        super().__init__({"wdata": In(bits), "we": In(width), "swap": In(1), "wa": Out(width * bits)})

    def elaborate(self, platform):
        m = Module()
        D, b = self._width, self._bits
        wl = [Signal(b, name=f"wl{k}", reset_less=True) for k in range(D)]  # no reset: data only
        wa = [Signal(b, name=f"wa{k}", reset_less=True) for k in range(D)]
        for k in range(D):
            with m.If(self.we[k]):
                m.d.sync += wl[k].eq(self.wdata)
        with m.If(self.swap):
            for k in range(D - 1):
                m.d.sync += wa[k].eq(wl[k])
            m.d.sync += wa[D - 1].eq(Mux(self.we[D - 1], self.wdata, wl[D - 1]))
        m.d.comb += self.wa.eq(Cat(*wa))
        return m


class Column(wiring.Component):
    """Column j: ``acc[row] <- RNE_fp32([acc[row] +] sum_k x[k] * W[k, j])``.

    Module name when placed: ``mu_col_w{D}_{fmt}_r{R}_s{S}``.

    Parameters
    ----------
    fmt : str or FloatFormat
    width : int
        D.
    rows : int
        R.
    stages : int
        Pipeline registers between the activation register and the accumulator write.

    Members
    -------
    en : In(1)
        Pipeline enable (the whole unit advances).
    wdata, we, swap : In
        Weight load and swap, see :class:`WeightBuffer`.
    x : In(D * b)
        The activation row (from the top's activation register).
    acc_we, first : In(1)
        The beat now at the accumulate stage is valid / starts a new accumulation.
    row : In(ceil(log2 R))
        Its row (present if R > 1).
    y : Out(32)
        The last accumulated FP32 value (register).
    """

    def __init__(self, fmt, width: int, rows: int, stages: int, tree: str = "dadda"):
        self._dw = dot_widths(fmt, width)
        self._tree = tree
        self._rows, self._stages = rows, stages
        b = self._dw.fmt.bits
        members = {
            "en": In(1), "wdata": In(b), "we": In(width), "swap": In(1), "x": In(width * b),
            "acc_we": In(1), "first": In(1),
        }
        if rows > 1:
            members["row"] = In(range(rows))
        members["y"] = Out(32)
        super().__init__(members)

    @property
    def module_name(self) -> str:
        tag = "" if self._tree == "dadda" else f"_t{self._tree}"
        return f"mu_col_w{self._dw.width}_{self._dw.fmt.name}_r{self._rows}_s{self._stages}{tag}"

    def elaborate(self, platform):
        m = Module()
        dw, f = self._dw, self._dw.fmt
        D, b, P, S = dw.width, f.bits, dw.prod_bits, self._stages
        plan = stage_plan(D, S)

        wbuf = WeightBuffer(D, b)
        hier.place(m, "wbuf", wbuf, module=f"mu_wbuf_w{D}_b{b}")
        m.d.comb += [wbuf.wdata.eq(self.wdata), wbuf.we.eq(self.we), wbuf.swap.eq(self.swap)]

        tree = Tree(f, D, cuts=plan["cuts"], out_reg=plan["out_reg"], arch=self._tree)
        tag = "" if self._tree == "dadda" else f"_t{self._tree}"
        hier.place(m, "tree", tree, module=f"mu_tree_w{D}_{f.name}_s{S}{tag}")
        m.d.comb += tree.en.eq(self.en)
        for k in range(D):
            lane = Lane(f)
            hier.place(m, f"lane{k}", lane, module=lane.module_name)
            m.d.comb += [
                lane.x.eq(self.x[k * b:(k + 1) * b]),
                lane.w.eq(wbuf.wa[k * b:(k + 1) * b]),
                tree.t[k * P:(k + 1) * P].eq(lane.t),
                tree.neg[k].eq(lane.neg),
            ]
            if f.has_nan or f.has_inf:
                m.d.comb += tree.nan[k].eq(lane.nan)
            if f.has_inf:
                m.d.comb += tree.inf[k].eq(lane.inf)

        acc = Accumulator(f, D, self._rows, norm_reg=plan["norm_reg"])
        hier.place(m, "acc", acc, module=f"mu_acc_w{D}_{f.name}_r{self._rows}_s{S}")
        m.d.comb += [acc.en.eq(self.en), acc.s.eq(tree.s), acc.we.eq(self.acc_we),
                     acc.first.eq(self.first), self.y.eq(acc.y)]
        if f.has_nan or f.has_inf:
            m.d.comb += acc.s_nan.eq(tree.s_nan)
        if f.has_inf:
            m.d.comb += [acc.s_inf.eq(tree.s_inf), acc.s_inf_neg.eq(tree.s_inf_neg)]
        if self._rows > 1:
            m.d.comb += acc.row.eq(self.row)
        return m
