"""Exact accumulate of one matrix-unit column: ``y = RNE_fp32(sum of S over first..last)``.

The ``exact`` accumulate mode (contract in ``docs/numerics.md`` section 6). ``S`` is the exact
two's-complement D-term dot product from :mod:`hw.mu.tree` (W bits, LSB ``2**lsb_exp``), handed over
in carry-save form: two unsigned W-bit rows with ``s0 + s1 = S + 2**(W-1)`` (the tree's
``carry_save`` output, so the tree has no carry-propagate adder). Every row
accumulates the whole K-long sum exactly in ``A = W + guard_bits`` bits of two's-complement fixed
point, and the sum is rounded once to FP32 when the ``last`` beat is taken. HardFloat style:
unpack (``S`` is already exact) -> exact raw result -> round and pack.

Per-beat loop (the only logic that must close in one cycle per beat)
--------------------------------------------------------------------
The row's sum is kept *carry-pending*: the A bits are cut into chunks of ``chunk_bits`` bits and
every chunk adds its slice of the sign-extended ``S`` plus the carry that the chunk below produced
on the previous beat (a register). The row's value is ``x + sum_i c_i * 2**(i * chunk_bits)``
modulo ``2**A``. The beat's addend ``s0 + s1 - 2**(W-1)`` (which is ``S``, sign-extended modulo
``2**A``) is first reduced to two rows ``u + v`` by half adders that do not depend on the row (the
constant's ones fold into them), and a full-adder level merges ``u``, ``v`` and the row's ``x``, so
the loop is one full adder and one ``chunk_bits``-bit add (plus the row select and the ``first``
clear), whatever W is. A beat counter per row (``guard_bits`` bits and a sticky overflow bit)
makes an accumulation longer than ``2**guard_bits`` beats visible: its result is NaN and
``overflow`` is set with it. Up to ``2**guard_bits`` beats the sum cannot wrap, since
``|S| < 2**(W - 1)``.

Drain pipeline (one per column, shared by the rows)
---------------------------------------------------
On a ``last`` beat the row's new state is also written into the capture register. Five steps follow
(:data:`DRAIN_STEPS`, in :mod:`hw.mu.exact_drain`): find the carry into every chunk (each chunk's
generate/propagate and a prefix over the chunks), add them chunk by chunk (no carry crosses a
chunk), take the magnitude (an OR prefix: no carry chain), normalize (leading-zero count and left
shift, the bits below FP32's guard ORed into a sticky bit; the shift amount's bits and the sign
reach their many gates through buffers, and the normalization also forms the all-ones and
overflow bits the rounding only selects), round and pack. The rounding is
specialised rather than :class:`hw.fp.round.RoundPack`: the sum is a multiple of ``2**lsb_exp >=
2**-32``, so it is never an FP32 subnormal, and the increment is an AND prefix instead of
RoundPack's 37-bit ``{exponent, mantissa} + up`` adder (a ripple after mapping, the slowest drain
step). The packing and the specials' precedence are RoundPack's (:func:`hw.fp.round.pack_code`).
``drain_stages`` = k splits the steps into k register-separated segments ending in the ``y``
register, so ``y_valid`` rises ``latency = k + 1`` enabled cycles after the ``last`` beat's ``we``.
The pipeline takes a new drain every cycle, and every register (rows, drain, ``y``) holds while
``en`` is low.
"""

from dataclasses import dataclass
from types import SimpleNamespace
from typing import ClassVar

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..clock_gate import gated_assign
from ..formats import BLOCK_FORMATS, get_format
from ..hier import BlockParams
from .accumulate import beat_inputs
from .exact_drain import carries, lookahead_add, magnitude, normalize, resolve, round_pack
from .numerics import GUARD_BITS, dot_widths
from .scales import fixed_sum_widths
from .window import (
    anchor_step,
    drain_steps,
    move_select,
    offsets,
    place_needs,
    place_terms,
    realign,
    resolved_sign,
    window_widths,
    windowed,
)

__all__ = ["ExactAccumulator", "ExactAccumulatorParams", "DRAIN_STEPS", "GUARD_BITS", "DRAIN_STAGES"]

FP32 = get_format("fp32")
#: The drain's steps in order; ``drain_stages`` registers are spread over the boundaries between them.
DRAIN_STEPS = ("carries", "resolve", "magnitude", "normalize", "round")
#: Default drain segments: one per step of :data:`DRAIN_STEPS`.
DRAIN_STAGES = len(DRAIN_STEPS)


@dataclass(frozen=True)
class ExactAccumulatorParams(BlockParams):
    """Everything that changes an :class:`ExactAccumulator`'s logic (and its module name)."""

    MODULE: ClassVar[str] = ("mu_xacc_w{width}_{fmt}_r{rows}_g{guard_bits}_c{chunk_bits}"
                             "_d{drain_stages}{in_reg}{gate}")
    TAGS: ClassVar[dict] = {"in_reg": lambda v: "" if v else "_n", "gate": lambda v: "_cg" if v else ""}
    width: int
    fmt: str
    rows: int
    guard_bits: int = GUARD_BITS
    chunk_bits: int = 8
    drain_stages: int = DRAIN_STAGES
    in_reg: bool = True
    gate: bool = False

    @property
    def write_delay(self) -> int:
        """Cycles from ``s`` to the cycle whose ``we``/``first``/``last``/``row`` apply to it:
        1 with ``in_reg``, else 0, plus the window's two placement registers (MX formats)."""
        return int(self.in_reg) + 2 * windowed(self.fmt)

    @property
    def drain_latency(self) -> int:
        """Enabled cycles from the ``last`` beat's ``we`` to ``y_valid``: ``drain_stages + 1``."""
        return self.drain_stages + 1

    @property
    def latency(self) -> int:
        """Cycles from ``s`` (of the ``last`` beat) to the new ``y``: :attr:`write_delay` +
        :attr:`drain_latency`."""
        return self.write_delay + self.drain_latency


def _cuts(stages: int) -> tuple:
    """Step boundaries (i: a register before step i) when the drain has ``stages`` segments, spread
    evenly (the last segment always ends in the ``y`` register)."""
    n = len(DRAIN_STEPS)
    k = min(stages, n) - 1
    return tuple((i * n) // (k + 1) for i in range(1, k + 1))


class ExactAccumulator(wiring.Component):
    """R rows of exact fixed-point accumulators fed by one column's exact sums, one drain pipeline.

    Module name when placed: from :class:`ExactAccumulatorParams`
    (``mu_xacc_w{D}_{fmt}_r{R}_g{g}_c{c}_d{k}``, ``_n`` appended without ``in_reg``).

    Parameters
    ----------
    fmt : str or FloatFormat
        A matrix element format, or a block-scaled one whose scales allow the exact mode (its
        column hands over :func:`hw.mu.scales.fixed_sum`'s rows: :func:`~hw.mu.scales.fixed_sum_widths`).
    width : int
        D (sets W, the width of S).
    rows : int
        R, accumulator rows.
    guard_bits : int
        g >= 1: an accumulation may be up to ``2**g`` beats long; the accumulator has ``W + g`` bits.
    chunk_bits : int
        Bits per chunk of the carry-pending accumulator (the per-beat adder's length).
    drain_stages : int
        k >= 1, segments of the drain pipeline (one per step of :data:`DRAIN_STEPS` at the default
        5; more add empty stages, fewer put several steps in one cycle).
    in_reg : bool
        Register ``s`` and its flags (enabled by ``en``) before the accumulate, as
        :class:`hw.mu.accumulate.Accumulator`'s ``norm_reg``.
    gate : bool
        Clock-gate the registers that load only for a beat or a result
        (:func:`hw.clock_gate.gated_assign`): the rows (enable: the beat is taken into that row),
        the capture register (a ``last`` beat is taken), the drain's stages and ``y`` (a result is
        there) and the input register (enable: ``v``; in the window, whose inputs are placed over
        three stages: the first enabled by the beat's ``v``, the second by ``we_ahead``, the last by
        its copy a cycle later; and the rows' anchors, each when its row takes a beat).

    Members
    -------
    en : In(1)
        Pipeline enable: every register holds while it is low.
    v : In(1)
        With ``gate`` and ``in_reg``: the beat at ``s0``, ``s1`` (the window: ``t``, ``e``) is
        valid.
    s0, s1 : In(W)
        The beat's exact sum in carry-save form: ``s0 + s1 = S + 2**(W-1)`` (unsigned, exact).
    t, e, nz : In(D/B * Wt), In(D/B * 10), In(D/B)
        The window (an MX format) instead of ``s0``, ``s1``: the beat's block terms (signed, ``Wt``
        bits each), their exponent sums ``e(sx) + e(sw)`` (signed) and a bit per block, ``t != 0``
        (given beside ``t`` so that the first placement stage's needs do not wait for the terms).
    s_nan, s_inf, s_inf_neg : In(1)
        As the format has them (see :class:`hw.mu.tree.Tree`); ``in_reg`` cycles before ``we``.
    we : In(1)
        The beat now at the accumulate stage is valid: it is added into row ``row`` at the end of
        this cycle (taken only when ``en`` is also high).
    first : In(1)
        The beat starts a new accumulation (the row's sum, counter and flags start from zero).
    last : In(1)
        The beat ends the accumulation: its sum enters the drain pipeline.
    row : In(ceil(log2 R))
        Present if R > 1. Rows >= R (R not a power of two) use the last row.
    y : Out(32)
        The FP32 code of the last drained accumulation (a register).
    y_valid : Out(1)
        ``y`` is the result of the accumulation whose ``last`` beat was taken ``latency`` enabled
        cycles ago; high for one enabled cycle per result (it holds while ``en`` is low).
    overflow : Out(1)
        With ``y_valid``: that accumulation was longer than ``2**g`` beats (``y`` is NaN).

    Raises
    ------
    ValueError
        On a parameter out of range (the message names it).
    """

    def __init__(self, fmt, width: int, rows: int = 1, *, guard_bits: int = GUARD_BITS,
                 chunk_bits: int = 8, drain_stages: int = DRAIN_STAGES, in_reg: bool = True,
                 gate: bool = False):
        block = isinstance(fmt, str) and fmt in BLOCK_FORMATS
        self._win = windowed(fmt)
        for name, v, lo in (("rows", rows, 1), ("guard_bits", guard_bits, 1),
                            ("chunk_bits", chunk_bits, 1), ("drain_stages", drain_stages, 1)):
            if not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an integer >= {lo}, not {v!r}")
        if self._win:
            self._dw = window_widths(fmt, width, guard_bits, chunk_bits)
        else:
            self._dw = fixed_sum_widths(fmt, width) if block else dot_widths(fmt, width)
            assert self._dw.lsb_exp > FP32.emin, "a nonzero sum must be an FP32 normal (no subnormal path)"
        self._rows, self._g, self._cb = rows, guard_bits, chunk_bits
        self._k, self._in_reg = drain_stages, bool(in_reg)
        self.params = ExactAccumulatorParams(width, self._dw.fmt.name, rows, guard_bits, chunk_bits,
                                             drain_stages, self._in_reg, bool(gate))
        self._gate_in = self.params.gate and self._in_reg and not self._win
        members = {"v": In(1)} if self._gate_in or (self.params.gate and self._win) else {}
        if self._win:  # the block terms and their exponent sums, placed in the window here
            ww = self._dw
            sums = {"t": In(ww.blocks * ww.term_bits), "e": In(ww.blocks * ww.exp_bits),
                    "nz": In(ww.blocks)}
            if not self._in_reg:
                raise ValueError("the window (an MX format) registers its input: in_reg must be "
                                 "True")
            # the control of the beat two stages before the accumulate stage: the anchors move there
            members.update({"we_ahead": In(1), "first_ahead": In(1)})
            if rows > 1:
                members["row_ahead"] = In(range(rows))
        else:
            sums = {"s0": In(self._dw.sum_bits), "s1": In(self._dw.sum_bits)}
        for k, v in beat_inputs(SimpleNamespace(fmt=self._dw.fmt, sum_bits=1), rows,
                                last=True).items():
            members.update(sums if k == "s" else {k: v})
        super().__init__({**members, "y": Out(32), "y_valid": Out(1), "overflow": Out(1)})

    # ------------------------------------------------------------------------------- geometry
    @property
    def acc_bits(self) -> int:
        """A = W + g, two's-complement bits of a row's sum (the window's A for an MX format)."""
        return self._dw.acc_bits if self._win else self._dw.sum_bits + self._g

    @property
    def chunks(self) -> int:
        """Chunks of the carry-pending sum (the top one may be shorter)."""
        return -(-self.acc_bits // self._cb)

    @property
    def flag_bits(self) -> int:
        """Sticky special flags per row: NaN (if the format has NaN or Inf), +Inf and -Inf seen."""
        return len(self._flag_names())

    @property
    def row_state_bits(self) -> int:
        """Register bits per row: sum, pending carries, beat counter, overflow bit, flags (and the
        window's anchor, lost bit and pending carry into chunk 0)."""
        win = self._dw.anchor_bits + 2 if self._win else 0
        return self.acc_bits + (self.chunks - 1) + self._g + 1 + self.flag_bits + win

    @property
    def latency(self) -> int:
        """Enabled cycles from the ``last`` beat's ``we`` to ``y_valid`` (``drain_stages + 1``)."""
        return self.params.drain_latency

    @property
    def in_latency(self) -> int:
        """Cycles between ``s`` (MX: ``t``, ``e``) and the accumulate stage (``we``):
        :attr:`ExactAccumulatorParams.write_delay`."""
        return self.params.write_delay

    @property
    def module_name(self) -> str:
        return self.params.module_name

    # ---------------------------------------------------------------------------- elaborate
    def _flag_names(self):
        """The sticky special flags a row keeps: ``nan`` (NaN seen), ``pinf`` / ``ninf`` (+Inf / -Inf
        seen), as the format has them."""
        f = self._dw.fmt
        return (("nan",) if f.has_nan or f.has_inf else ()) + (("pinf", "ninf") if f.has_inf else ())

    def _inputs(self, m, platform):
        """``s0``, ``s1`` and the beat's flags (a dict like :meth:`_flag_names`) at the accumulate
        stage."""
        f = self._dw.fmt
        vals = {} if self._win else {"s0": self.s0, "s1": self.s1}
        if f.has_nan or f.has_inf:
            vals["nan"] = self.s_nan
        if f.has_inf:
            vals["pinf"] = self.s_inf & ~self.s_inf_neg
            vals["ninf"] = self.s_inf & self.s_inf_neg
        if self._win:  # placement: needs | the rows' anchors and the offsets | shifted terms
            g = self.params.gate
            p1 = place_needs(m, self._dw, self.t, self.e, self.nz, self.en, platform=platform,
                             valid=self.v if g else None)
            moves = anchor_step(m, self._dw, p1["need"], rows=self._rows, first=self.first_ahead,
                                row=getattr(self, "row_ahead", None), take=self.we_ahead & self.en,
                                platform=platform, gate=g)
            # gated: the second placement stage loads a valid beat (``we_ahead``), the input
            # register the beat it holds one enabled cycle later
            v2 = Signal(name="wv2") if self.params.gate else None
            if v2 is not None:
                with m.If(self.en):
                    m.d.sync += v2.eq(self.we_ahead)
            i0 = self._register(m, vals, "i0_", platform, self.v if g else None)
            p2 = self._register(m, {**i0, **offsets(m, self._dw, p1, moves["kt"]),
                                    "kr": moves["kr"], "b": moves["b"]}, "i1_", platform,
                                self.we_ahead)
            vals = {**{k: p2[k] for k in vals}, **place_terms(m, self._dw, p2),
                    "kr": move_select(m, self._dw, p2["kr"]), "b": p2["b"]}
            return self._register(m, vals, "i_", platform, v2)
        if self._gate_in:
            regs = {k: Signal(v.shape(), name=f"i_{k}", reset_less=True) for k, v in vals.items()}
            gated_assign(m, platform, self.en & self.v, [(regs[k], v) for k, v in vals.items()], "i")
            return regs
        return self._register(m, vals, "i_") if self._in_reg else vals

    def _register(self, m, vals, prefix, platform=None, valid=None):
        """``vals`` registered (enabled by ``en``; clock-gated to ``en & valid`` when ``valid`` is
        given with ``gate``)."""
        regs = {k: Signal(v.shape(), name=f"{prefix}{k}", reset_less=True) for k, v in vals.items()}
        if valid is not None and self.params.gate:
            gated_assign(m, platform, self.en & valid, [(regs[k], v) for k, v in vals.items()],
                         f"{prefix}g")
            return regs
        with m.If(self.en):
            m.d.sync += [regs[k].eq(v) for k, v in vals.items()]
        return regs

    def _row_regs(self, r):
        """The registers of row ``r`` (a dict; also the layout of the drain's capture register)."""
        A, nc = self.acc_bits, self.chunks
        if self._win:  # c: the pending carry into every chunk; b: the anchor
            win = {"c": Signal(nc, name=f"r{r}_c"), "b": Signal(self._dw.anchor_bits, name=f"r{r}_b"),
                   "lost": Signal(name=f"r{r}_lost"), "sg": Signal(name=f"r{r}_sg")}
        else:
            win = {"c": Signal(max(nc - 1, 1), name=f"r{r}_c")}
        return {"x": Signal(A, name=f"r{r}_x"), **win,
                "cnt": Signal(self._g, name=f"r{r}_cnt"), "ovf": Signal(name=f"r{r}_ovf"),
                **{k: Signal(name=f"r{r}_{k}") for k in self._flag_names()}}

    def _addend(self, m, inp):
        """``(u, v)``, A bits each, with ``u + v = s0 + s1 - 2**(W-1) = S`` modulo ``2**A``: one
        half-adder level over ``s0``, ``s1`` and the constant (ones in bits W-1 .. A-1)."""
        A, W = self.acc_bits, self._dw.sum_bits
        a, b = inp["s0"], inp["s1"]
        u, v = Signal(A, name="add_u"), Signal(A, name="add_v")
        m.d.comb += [
            u.eq(Cat(a[:W - 1] ^ b[:W - 1], ~(a[W - 1] ^ b[W - 1]), Const(-1, A - W))),
            v.eq(Cat(Const(0, 1), a[:W - 1] & b[:W - 1], a[W - 1] | b[W - 1])),
        ]
        return u, v

    def _beat(self, m, cur, inp, raw=None, platform=None):
        """The row's next state after adding this beat (``cur`` is already cleared on ``first``,
        ``raw`` is not: the window moves it and clears the result)."""
        A, cb, nc = self.acc_bits, self._cb, self.chunks
        p, q = Signal(A, name="csa_p"), Signal(A, name="csa_q")  # x + addend = p + q
        win = {}
        if self._win:  # the row's sum moved to the beat's anchor, then one full-adder level
            x, cin, win = self._window_beat(m, cur, raw, inp, platform)
            u, v = inp["u"], inp["v"]
            m.d.comb += [p.eq(x ^ u ^ v),
                         q.eq(Cat(cin[0], ((x & u) | (x & v) | (u & v))[:A - 1]))]
            cin = cin[1]
            win["sg"] = resolved_sign(m, self._dw, p, q, cin, win["lam"])
        else:
            u, v = self._addend(m, inp)
            x = cur["x"]
            m.d.comb += [p.eq(x ^ u ^ v),
                         q.eq(Cat(Const(0, 1), ((x & u) | (x & v) | (u & v))[:A - 1]))]
            cin = cur["c"]
        xs, cs = [], []
        for i in range(nc):
            lo, hi = i * cb, min((i + 1) * cb, A)
            ci = cin[i - 1] if i > 0 else Const(0, 1)
            if self._win:
                sm, co = lookahead_add(m, p[lo:hi], q[lo:hi], ci, name=f"sum{i}")
                xs.append(sm)
                cs.append(co)
                continue
            t = Signal(hi - lo + 1, name=f"sum{i}")
            m.d.comb += t.eq(p[lo:hi] + q[lo:hi] + ci)
            xs.append(t[:hi - lo])
            cs.append(t[-1])
        full = Signal(name="cnt_full")
        m.d.comb += full.eq(cur["cnt"].all())
        carries = Cat(*cs[:-1]) if nc > 1 else Const(0, 1)
        if self._win:
            carries = Cat(win.pop("lam"), carries)
        return {"x": Cat(*xs), "c": carries, **win,
                "cnt": Mux(self.first, 0, cur["cnt"] + 1), "ovf": cur["ovf"] | full,
                **{k: cur[k] | inp[k] for k in self._flag_names()}}

    def _window_beat(self, m, cur, raw, inp, platform):
        """The window's move (``kr`` and the anchor ``b`` come with the beat, a stage ahead, and
        the beat's rows are already placed under that anchor): the row's sum floor-shifted down by
        ``kr`` chunks (the uncleared row, cleared after the shift on ``first``). Returns the row's
        moved sum, ``(carry into chunk 0, carries into chunks 1..)`` and the window's next state
        (anchor, lost bit, carry out of the dropped chunks)."""
        A, nc = self.acc_bits, self.chunks
        x, c, lam, lossr = realign(m, self._dw, raw["x"], raw["c"], inp["kr"], raw["sg"], platform)
        keep = ~self.first
        xk, ck = Signal(A, name="w_xk"), Signal(nc, name="w_ck")
        m.d.comb += [xk.eq(x & keep.replicate(A)), ck.eq(c & keep.replicate(nc))]
        state = {"b": inp["b"], "lam": lam & keep,
                 "lost": cur["lost"] | (lossr & keep) | inp["tloss"]}
        return xk, (ck[0], ck[1:]), state

    def elaborate(self, platform):
        m = Module()
        inp = self._inputs(m, platform)
        gate = self.params.gate
        take = Signal()
        m.d.comb += take.eq(self.we & self.en)

        rows = [self._row_regs(r) for r in range(self._rows)]
        cur = {k: Signal.like(v, name=f"cur_{k}") for k, v in rows[0].items()}
        if self._rows > 1:
            with m.Switch(self.row):
                for r in range(self._rows - 1):
                    with m.Case(r):
                        m.d.comb += [cur[k].eq(v) for k, v in rows[r].items()]
                with m.Default():
                    m.d.comb += [cur[k].eq(v) for k, v in rows[-1].items()]
        else:
            m.d.comb += [cur[k].eq(v) for k, v in rows[0].items()]
        op = {k: Mux(self.first, 0, v) for k, v in cur.items()}  # a new accumulation starts at 0
        nxt = self._beat(m, op, inp, cur, platform)
        for r, regs in enumerate(rows):
            sel = take if self._rows == 1 else take & (self.row == r)
            if gate:
                gated_assign(m, platform, sel, [(regs[k], nxt[k]) for k in regs], f"row{r}")
                continue
            with m.If(sel):
                m.d.sync += [regs[k].eq(nxt[k]) for k in regs]

        # capture register: the drained accumulation's final state
        cap = {k: Signal.like(v, name=f"d_{k}", reset_less=True) for k, v in rows[0].items()
               if k not in ("cnt", "sg")}  # the count only decides the overflow mark; the sign
        # is the loop's (the drain resolves the sum itself)
        cap_valid = Signal(name="d_valid")
        with m.If(self.en):
            m.d.sync += cap_valid.eq(take & self.last)
        if gate:
            gated_assign(m, platform, take & self.last, [(cap[k], nxt[k]) for k in cap], "cap")
        else:
            with m.If(take & self.last):
                m.d.sync += [cap[k].eq(nxt[k]) for k in cap]
        self._drain(m, platform, cap, cap_valid)
        return m

    # -------------------------------------------------------------------------------- drain
    def _stage(self, m, platform, vals: dict, valid, idx: int):
        """Register ``vals`` and ``valid`` (enabled by ``en``; with ``gate`` ``vals`` only for a
        valid result) as drain register ``idx``."""
        regs = {k: Signal.like(v, name=f"p{idx}_{k}", reset_less=True) if isinstance(v, Signal)
                else Signal(len(v), name=f"p{idx}_{k}", reset_less=True) for k, v in vals.items()}
        rv = Signal(name=f"p{idx}_valid")
        if self.params.gate:
            gated_assign(m, platform, self.en & valid, [(regs[k], v) for k, v in vals.items()],
                         f"p{idx}")
            with m.If(self.en):
                m.d.sync += rv.eq(valid)
            return regs, rv
        with m.If(self.en):
            m.d.sync += [regs[k].eq(v) for k, v in vals.items()] + [rv.eq(valid)]
        return regs, rv

    def _drain(self, m, platform, vals, valid):
        dw, A, cb = self._dw, self.acc_bits, self._cb
        cuts = _cuts(self._k)
        steps = (carries, resolve, lambda *a: magnitude(*a, platform=platform),
                 lambda *a: normalize(*a, platform=platform), round_pack)
        if self._win:  # carry into chunk 0 apart; then 2 v + lost, anchor's exponent, subnormals
            vals = {**vals, "c0": vals["c"][0], "c": vals["c"][1:]}
            res, mag, norm = drain_steps(dw)
            steps = (carries, lambda *a: res(*a, resolve), mag,
                     lambda *a: norm(*a, platform=platform), round_pack)
        for i, step in enumerate(steps):
            if i in cuts:
                vals, valid = self._stage(m, platform, vals, valid, i)
            vals = step(m, vals, A, cb, dw)
        for j in range(self._k - 1 - len(cuts)):  # extra segments beyond one per step
            vals, valid = self._stage(m, platform, vals, valid, len(steps) + j)
        y, yv, ovf = Signal(32, name="y_r"), Signal(name="y_valid_r"), Signal(name="ovf_r")  # y resets to +0
        if self.params.gate:
            with m.If(self.en):
                m.d.sync += [yv.eq(valid), ovf.eq(valid & vals["ovf"])]
            gated_assign(m, platform, self.en & valid, [(y, vals["code"])], "y")
        else:
            with m.If(self.en):
                m.d.sync += [yv.eq(valid), ovf.eq(valid & vals["ovf"])]
                with m.If(valid):
                    m.d.sync += y.eq(vals["code"])
        m.d.comb += [self.y.eq(y), self.y_valid.eq(yv), self.overflow.eq(ovf)]
