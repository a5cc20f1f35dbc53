"""Exact D-term sum of one matrix-unit column: a bit-level Dadda compressor tree and a prefix adder.

Inputs are the D lane outputs of :mod:`hw.mu.lane`: a ones' complement magnitude ``t_i`` (P bits)
and its sign ``neg_i``. Written as a (P+1)-bit two's-complement number, lane i contributes
``t_i - neg_i * 2**P``, plus ``neg_i`` at the LSB to finish the negation. Sign-extending every lane
to W bits is replaced by the usual constant trick: ``-neg * 2**P = (1 - neg) * 2**P - 2**P``, so lane
i puts ``~neg_i`` in column P and the D constants ``-2**P`` add up to ``-D * 2**P = 2**(W-1)``
modulo ``2**W`` (W = P + log2 D + 1): a single constant 1 in the top column. The bit columns then
hold D bits (columns 1..P), 2D bits (column 0: ``t`` and ``neg``) and one constant bit. An integer
format's lanes hand over the two's-complement product (``t`` its low bits, ``neg`` its sign): nothing
is added at the LSB, column 0 holds D bits, and the Dadda stages planned for 2D (the first is then
empty at some D) keep the pipeline placement of the float formats.

Dadda stages of full and half adders reduce every column to two rows; a Sklansky prefix adder
(:func:`hw.fp.booth.prefix_add`) adds them. Pipeline registers (enabled by ``en``) go where the
column's placement (:data:`hw.pipeline.COLUMN`) puts its ``TREE`` cuts (after Dadda stages, spread
evenly) and its ``RAW`` register (on the sum). Every stage's bits are named signals, so no expression
is deeper than one adder (no recursion limits, readable Verilog).

With ``carry_save`` (the ``exact`` accumulate mode) there is no prefix adder: the tree leaves out the
constant and hands the two rows ``s0``, ``s1`` (unsigned, W bits) to the accumulator, which adds
them in its own loop. Without the constant every bit is non-negative and their total is
``S + 2**(W-1) < 2**W``, so no carry leaves the top column and ``s0 + s1 = S + 2**(W-1)`` exactly.
Its registers follow :data:`hw.pipeline.EXACT_COLUMN` (the two rows first, then ``TREE`` cuts).
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Const, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..clock_gate import gated_assign
from ..fp.booth import dadda_heights, prefix_add
from ..hier import BlockParams
from ..pipeline import COLUMN, EXACT_COLUMN, Cut, spread
from .numerics import dot_widths

__all__ = ["Tree", "TreeParams", "tree_levels", "full_adder_stage", "TREE_ARCHS"]

#: ``dadda``: bit-level carry-save tree + prefix adder (synthesis). ``words``: a balanced tree of
#: word-level adders with the same exact result and the same register count (fast to Verilate: one
#: wide add per node instead of one named signal per full adder).
TREE_ARCHS = ("dadda", "words")


def tree_levels(width: int) -> int:
    """Dadda stages needed for D = ``width`` lanes (the tallest column, column 0, has 2D bits)."""
    return len(dadda_heights(2 * width))


def _tree_tag(arch: str) -> str:
    return "" if arch == "dadda" else f"_t{arch}"


@dataclass(frozen=True)
class TreeParams(BlockParams):
    """Everything that changes a :class:`Tree`'s logic (and its module name).

    ``stages`` is the column's pipeline depth; the tree holds that plan's ``TREE`` and ``RAW``
    registers (:data:`hw.pipeline.COLUMN`, or :data:`hw.pipeline.EXACT_COLUMN` with
    ``carry_save``).
    """

    MODULE: ClassVar[str] = "mu_tree_w{width}_{fmt}_s{stages}{arch}{carry_save}{gate}"
    TAGS: ClassVar[dict] = {"arch": _tree_tag, "carry_save": lambda v: "_cs" if v else "",
                            "gate": lambda v: "_cg" if v else ""}
    width: int
    fmt: str
    stages: int
    arch: str = "dadda"
    carry_save: bool = False
    gate: bool = False

    @property
    def placement(self):
        """The column's :class:`hw.pipeline.Placement`."""
        return EXACT_COLUMN if self.carry_save else COLUMN

    @property
    def cuts(self) -> tuple:
        """Dadda stages (1-based) followed by a register."""
        return spread(self.placement.count(self.stages)[Cut.TREE], tree_levels(self.width))

    @property
    def out_reg(self) -> bool:
        """Whether the sum (the two rows with ``carry_save``) is registered at the output."""
        return self.placement.count(self.stages)[Cut.RAW] > 0

    @property
    def latency(self) -> int:
        """Cycles from the lane inputs to ``s``: ``len(cuts) + out_reg``."""
        return len(self.cuts) + int(self.out_reg)


def full_adder_stage(m: Module, cols: list, target: int, *, name: str) -> list:
    """One Dadda stage: reduce every column to at most ``target`` bits.

    Column ``k`` holds bits of weight ``2**k``; carries out of the last column are dropped (the sum
    is modulo ``2**len(cols)``). A full adder takes three bits of a column and leaves one, a half
    adder takes two and leaves one; both send a carry to the next column of the same stage's output.
    """
    width = len(cols)
    out = [[] for _ in range(width)]
    for k in range(width):
        todo = list(cols[k])
        made = []
        n = 0
        while len(todo) + len(made) + len(out[k]) > target:
            over = len(todo) + len(made) + len(out[k]) - target
            s = Signal(name=f"{name}_s{k}_{n}")
            c = Signal(name=f"{name}_c{k}_{n}")
            if over >= 2 and len(todo) >= 3:
                a, b, d = todo[:3]
                todo = todo[3:]
                m.d.comb += [s.eq(a ^ b ^ d), c.eq((a & b) | (d & (a ^ b)))]
            else:
                a, b = todo[:2]
                todo = todo[2:]
                m.d.comb += [s.eq(a ^ b), c.eq(a & b)]
            made.append(s)
            if k + 1 < width:
                out[k + 1].append(c)
            n += 1
        out[k] = todo + made + out[k]
    return out


class Tree(wiring.Component):
    """Exact two's-complement sum of D lane products, with special-value flags.

    Module name when placed: from :class:`TreeParams` (``mu_tree_w{D}_{fmt}_s{stages}``).

    Parameters
    ----------
    fmt : str or FloatFormat
    width : int
        D, the number of lanes.
    stages : int
        The column's pipeline stages: the tree registers the column bits after the Dadda stages
        :attr:`TreeParams.cuts` and the sum if :attr:`TreeParams.out_reg`.
    arch : str
        One of :data:`TREE_ARCHS`.
    carry_save : bool
        Hand out the two rows (``s0``, ``s1``) instead of their sum ``s``.
    gate : bool
        Clock-gate the pipeline registers (:func:`hw.clock_gate.gated_assign`): a stage's registers
        load only when ``en`` and the beat entering them is valid.

    Members
    -------
    en : In(1)
        Pipeline enable of every register.
    v : In(1)
        With ``gate``: the beat at ``t`` is valid.
    v_out : Out(1)
        With ``gate``: the beat at ``s`` (``s0``, ``s1``) is valid (``v`` delayed by the latency).
    t : In(D * P)
        Lane i's ones' complement magnitude at ``[i*P +: P]``.
    neg : In(D)
    nan, inf : In(D)
        Lane flags (present as the lane has them).
    s : Out(signed(W))
        The exact sum, in LSBs of ``2**lsb_exp`` (without ``carry_save``).
    s0, s1 : Out(W)
        With ``carry_save``: unsigned rows, ``s0 + s1 = s + 2**(W-1)`` exactly.
    s_nan, s_inf, s_inf_neg : Out(1)
        The sum is NaN (a NaN product, or +Inf and -Inf products) / infinite with sign ``s_inf_neg``.
        Present if the format has NaN (``s_nan``) or Inf (``s_inf``, ``s_inf_neg``).

    Attributes
    ----------
    latency : int
        Cycles from ``t`` to ``s``: ``len(cuts) + out_reg``.

    Raises
    ------
    ValueError
        An unknown ``arch``, or more ``TREE`` cuts than the tree has Dadda stages.
    """

    def __init__(self, fmt, width: int, *, stages: int, arch: str = "dadda",
                 carry_save: bool = False, gate: bool = False):
        if arch not in TREE_ARCHS:
            raise ValueError(f"tree arch must be one of {', '.join(TREE_ARCHS)}, not {arch!r}")
        self._arch = arch
        self._dw = dot_widths(fmt, width)
        f = self._dw.fmt
        self.params = TreeParams(width, f.name, stages, arch, bool(carry_save), bool(gate))
        n = tree_levels(width)
        extra = len(self.params.placement.order)
        if self.params.placement.count(stages)[Cut.TREE] > n:
            raise ValueError(f"stages must be at most {n + extra} for width {width} (one register "
                             f"per Dadda stage), not {stages}")
        self._cuts, self._out_reg = self.params.cuts, self.params.out_reg
        self._cs = bool(carry_save)
        P, W = self._dw.prod_bits, self._dw.sum_bits
        members = {"en": In(1), "t": In(width * P), "neg": In(width)}
        if gate:
            members.update({"v": In(1), "v_out": Out(1)})
        members.update({"s0": Out(W), "s1": Out(W)} if self._cs else {"s": Out(signed(W))})
        if f.has_nan or f.has_inf:
            members["nan"] = In(width)
            members["s_nan"] = Out(1)
        if f.has_inf:
            members["inf"] = In(width)
            members["s_inf"] = Out(1)
            members["s_inf_neg"] = Out(1)
        super().__init__(members)

    @property
    def latency(self) -> int:
        return self.params.latency

    def _load(self, m, platform, pairs, name):
        """Registers of the current stage: ``(target, value)`` pairs loaded while ``en`` (and, with
        ``gate``, only for a valid beat, through clock gates)."""
        if not self.params.gate:
            with m.If(self.en):
                m.d.sync += [t.eq(v) for t, v in pairs]
            return
        gated_assign(m, platform, self.en & self._valid[-1], pairs, name)

    def _advance(self, m):
        """With ``gate``: the valid bit moves one stage on (after a stage's :meth:`_load`)."""
        if self.params.gate:
            v = Signal(name=f"v{len(self._valid)}")
            with m.If(self.en):
                m.d.sync += v.eq(self._valid[-1])
            self._valid.append(v)

    def elaborate(self, platform):
        m = Module()
        dw, f = self._dw, self._dw.fmt
        D, P, W = dw.width, dw.prod_bits, dw.sum_bits
        self._valid = [self.v] if self.params.gate else []

        flags = []
        if f.has_nan or f.has_inf:
            nan = Signal(name="nan_any")
            m.d.comb += nan.eq(self.nan.any())
            flags.append(nan)
        if f.has_inf:
            pinf, ninf = Signal(name="pinf_any"), Signal(name="ninf_any")
            m.d.comb += [pinf.eq((self.inf & ~self.neg).any()), ninf.eq((self.inf & self.neg).any())]
            flags += [pinf, ninf]
        if self._arch == "words":
            total, flags = self._words(m, platform, flags)
            if self._cs:  # S + 2**(W-1) in [0, 2**W): S with its sign bit flipped, and a zero row
                return self._finish(m, platform, [total ^ (1 << (W - 1)), Const(0, W)], flags)
            return self._finish(m, platform, [total], flags)

        cols = [[] for _ in range(W)]
        for i in range(D):
            for k in range(P):
                cols[k].append(self.t[i * P + k])
            if dw.ones_complement:
                cols[0].append(self.neg[i])  # ones' -> two's complement
            cols[P].append(~self.neg[i])  # sign bit, sign extension folded into the constant
        if not self._cs:
            cols[W - 1].append(Const(1, 1))  # -D * 2^P mod 2^W

        def register(bits, name):
            r = Signal(len(bits), name=name, reset_less=True)
            self._load(m, platform, [(r, Cat(*bits))], name)
            return [r[i] for i in range(len(bits))]

        for stage, target in enumerate(dadda_heights(2 * D), start=1):
            cols = full_adder_stage(m, cols, target, name=f"dd{stage}")
            if stage in self._cuts:
                if self.params.gate:  # one set of gates over the whole cut
                    cols, flags = self._gated_cut(m, platform, cols, flags, f"cut{stage}")
                    continue
                cols = [register(c, f"cut{stage}_col{k}") if c else [] for k, c in enumerate(cols)]
                flags = register(flags, f"cut{stage}_flags") if flags else flags
        rows = [Cat(*[(c[r] if r < len(c) else Const(0, 1)) for c in cols]) for r in (0, 1)]
        if self._cs:
            return self._finish(m, platform, rows, flags)
        return self._finish(m, platform, [prefix_add(m, rows[0], rows[1], name="cpa")], flags)

    def _gated_cut(self, m, platform, cols, flags, name):
        """A Dadda cut's registers (every column's bits and the flags) behind one run of clock
        gates, the bits packed in order (with ``gate``)."""
        regs = [Signal(len(c), name=f"{name}_col{k}", reset_less=True) if c else None
                for k, c in enumerate(cols)]
        fr = Signal(len(flags), name=f"{name}_flags", reset_less=True) if flags else None
        pairs = [(r, Cat(*c)) for r, c in zip(regs, cols, strict=True) if r is not None]
        self._load(m, platform, pairs + ([(fr, Cat(*flags))] if flags else []), name)
        self._advance(m)
        cols = [[r[i] for i in range(len(r))] if r is not None else [] for r in regs]
        return cols, ([fr[i] for i in range(len(fr))] if flags else flags)

    def _register(self, m, platform, values, name):
        regs = [Signal.like(v, name=f"{name}_{i}", reset_less=True) for i, v in enumerate(values)]
        self._load(m, platform, list(zip(regs, values, strict=True)), name)
        return regs

    def _words(self, m, platform, flags):
        """Balanced tree of word adders; cut c (of L Dadda stages) after adder level ~c*levels/L."""
        D, P, W = self._dw.width, self._dw.prod_bits, self._dw.sum_bits
        ops = []
        for i in range(D):
            v = Signal(signed(P + 2), name=f"op{i}")
            # (P+1)-bit two's complement t - neg*2^P, plus neg: the lane's exact signed product
            tc = Cat(self.t[i * P:(i + 1) * P], self.neg[i]).as_signed()
            m.d.comb += v.eq(tc + self.neg[i] if self._dw.ones_complement else tc)
            ops.append(v)
        levels = D.bit_length() - 1
        n = tree_levels(D)
        at = {}
        for c in self._cuts:
            lv = max(1, min(levels, (c * levels + n - 1) // n))
            at[lv] = at.get(lv, 0) + 1
        level = 0
        while len(ops) > 1:
            level += 1
            nxt = []
            for j in range(0, len(ops), 2):
                s = Signal(signed(len(ops[j]) + 1), name=f"add{level}_{j // 2}")
                m.d.comb += s.eq(ops[j] + ops[j + 1])
                nxt.append(s)
            ops = nxt
            for r in range(at.get(level, 0)):
                ops = self._register(m, platform, ops, f"cut{level}_{r}")
                flags = self._register(m, platform, flags, f"cutf{level}_{r}") if flags else flags
                self._advance(m)
        total = Signal(W, name="words_sum")
        m.d.comb += total.eq(ops[0])
        return total, flags

    def _finish(self, m, platform, outs, flags):
        """Drive ``s`` (one value in ``outs``) or ``s0``, ``s1`` (two) and the flags, through the
        ``RAW`` register if there is one."""
        f, W = self._dw.fmt, self._dw.sum_bits

        ports = [self.s0, self.s1] if self._cs else [self.s]
        names = ["row0", "row1"] if self._cs else ["sum"]
        out_d = [Signal(signed(W), name=n, reset_less=True) if not self._cs else
                 Signal(W, name=n, reset_less=True) for n in names]
        flag_d = [Signal(name=f"flag{i}", reset_less=True) for i in range(len(flags))]
        moves = ([d.eq(v) for d, v in zip(out_d, outs, strict=True)]
                 + [d.eq(s) for d, s in zip(flag_d, flags, strict=True)])
        if self._out_reg and self.params.gate:
            self._load(m, platform, [(mv.lhs, mv.rhs) for mv in moves], "raw")
            self._advance(m)
        elif self._out_reg:
            with m.If(self.en):
                m.d.sync += moves
        else:
            m.d.comb += moves
        if self.params.gate:
            m.d.comb += self.v_out.eq(self._valid[-1])
        m.d.comb += [p.eq(d) for p, d in zip(ports, out_d, strict=True)]
        if f.has_inf:
            nan, pinf, ninf = flag_d
            m.d.comb += [
                self.s_nan.eq(nan | (pinf & ninf)),  # NaN product, or Inf - Inf
                self.s_inf.eq(pinf | ninf),
                self.s_inf_neg.eq(ninf),
            ]
        elif f.has_nan:
            m.d.comb += self.s_nan.eq(flag_d[0])
        return m
