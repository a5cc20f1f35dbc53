"""The slice's sequencer: activation beats out of the scratchpad, results back into it.

Both engines walk the same loop nest (:mod:`hw.slice.loops`), so they need no queue between them:

    for pass in 0 .. ceil(M / rows) - 1:          # rows activation rows share one weight stream
        for g in 0 .. ceil(N / (units*D)) - 1:   # a group: one N-tile per unit
            for kt in 0 .. ceil(K / D) - 1:      # K accumulation inside the units
                for r in rows of this pass:      # x beat (issue); y row at kt = last (write-back)

The issue engine sends every x beat to all units at once (a :class:`hw.stream.Fork`); unit u of
group g computes N-tile ``g*units + u``. The write-back engine takes the units' result rows in the
same order, unit 0 first, and writes the ones whose N-tile exists; rows of padding tiles are dropped.
The x and y payloads are the units' own (:class:`hw.mu.interface.MatrixUnitSignature`).
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from ..fp.add import Fp32Adder
from ..mu.interface import MatrixUnitSignature
from .lanes import thermometer
from .loops import Level, advance

__all__ = ["ActivationIssue", "WriteBack"]


class ActivationIssue(wiring.Component):
    """Reads x rows from the scratchpad and sends one x beat per (pass, group, k-tile, row).

    Two stages: A holds the loop counters and drives the scratchpad read address; B is the read
    port's output register plus the beat's flags (the read port is only enabled when B moves, so
    B holds its data under backpressure). Lanes ``k >= K`` are forced to zero.

    Members
    -------
    start : In(1)
    m, k, kt : In(16)
        M, K, ceil(K/D).
    n_groups : In(16)
    x_addr : In(addr_bits)
        Scratchpad word of x[0, 0:D]; x[m, kt*D:] is word ``x_addr + m*ceil(K/D) + kt``, elements in
        its low ``D*b`` bits; block-scaled formats: the D/B activation scale codes right above them,
        block i's at ``[D*b + 8*i +: 8]`` (the ``x`` payload's own order). Scales of blocks that
        start at ``k >= K`` are forced to zero, as the lanes are.
    rd_addr, rd_en : Out
    rd_data : In(32*D)
    x : Out(stream)
        The units' ``x`` payload (``unit.x_layout``).
    busy : Out(1)

    Parameters
    ----------
    unit : MatrixUnitSignature
        The units' interface (D, element bits, rows).
    addr_bits : int
        Scratchpad word address width.
    """

    def __init__(self, *, unit: MatrixUnitSignature, addr_bits: int):
        width = unit.width
        self._d, self._b, self._r, self._aw = width, unit.bits, unit.rows, addr_bits
        self._row_bits = unit.row_bits
        self._nb, self._blk = unit.blocks, unit.block.block if unit.block is not None else 0
        super().__init__({
            "start": In(1), "m": In(16), "k": In(16), "kt": In(16), "n_groups": In(16),
            "x_addr": In(addr_bits),
            "rd_addr": Out(addr_bits), "rd_en": Out(1), "rd_data": In(32 * width),
            "x": Out(stream.Signature(unit.x_layout)),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        D, b, R = self._d, self._b, self._r
        # stage A
        a_valid = Signal()
        m0 = Signal(16)
        g = Signal(16)
        kt = Signal(16)
        k0 = Signal(16)
        mi = Signal(16)
        rowaddr = Signal(self._aw)
        passbase = Signal(self._aw)
        rows_here = Mux(self.m - m0 >= R, R, self.m - m0)
        # stage B
        b_valid = Signal()
        b_swap, b_first, b_last = Signal(), Signal(), Signal()
        b_row = Signal(max(1, self._row_bits))
        b_lanes = Signal(16)

        adv = Signal()
        m.d.comb += [
            adv.eq(~b_valid | self.x.ready),
            self.rd_addr.eq(rowaddr + kt),
            self.rd_en.eq(adv),
            self.x.valid.eq(b_valid),
            self.x.payload.swap.eq(b_swap), self.x.payload.first.eq(b_first),
            self.x.payload.last.eq(b_last),
            self.busy.eq(a_valid | b_valid),
        ]
        if R > 1:
            m.d.comb += self.x.payload.row.eq(b_row)
        live = Signal(D)                 # lane j < K - k0 (log depth, not a comparator chain)
        m.d.comb += live.eq(thermometer(b_lanes, D)[0])
        for j in range(D):
            lane = self.rd_data[j * b:(j + 1) * b]
            m.d.comb += self.x.payload.data[j * b:(j + 1) * b].eq(Mux(live[j], lane, 0))
        for i in range(self._nb):        # a block is live when its first lane is
            code = self.rd_data[D * b + 8 * i:D * b + 8 * i + 8]
            m.d.comb += self.x.payload.scales[8 * i:8 * i + 8].eq(
                Mux(live[i * self._blk], code, 0))

        with m.If(adv):
            m.d.sync += [b_valid.eq(a_valid), b_swap.eq(mi == 0), b_first.eq(kt == 0),
                         b_last.eq(kt + 1 >= self.kt), b_row.eq(mi), b_lanes.eq(self.k - k0)]

        with m.If(self.start):
            m.d.sync += [a_valid.eq(1), m0.eq(0), g.eq(0), kt.eq(0), k0.eq(0), mi.eq(0),
                         rowaddr.eq(self.x_addr), passbase.eq(self.x_addr)]
        with m.Elif(adv & a_valid):   # rows of the pass, k-tiles, groups, passes
            advance(m, [
                Level(mi + 1 < rows_here, [mi.eq(mi + 1), rowaddr.eq(rowaddr + self.kt)],
                      [mi.eq(0), rowaddr.eq(passbase)]),
                Level(kt + 1 < self.kt, [kt.eq(kt + 1), k0.eq(k0 + D)], [kt.eq(0), k0.eq(0)]),
                Level(g + 1 < self.n_groups, [g.eq(g + 1)],
                      [g.eq(0), m0.eq(m0 + R), passbase.eq(rowaddr + self.kt),
                       rowaddr.eq(rowaddr + self.kt)]),
            ], last=m0 + R >= self.m, done=[a_valid.eq(0)])
        return m


class WriteBack(wiring.Component):
    """Takes result rows from the units in issue order and writes them to the scratchpad.

    Overwrite (``acc = 0``): a row is taken in any cycle, one row per cycle.
    Accumulate (``acc = 1``): when the expected unit offers a row of an existing N-tile, the old y
    word at its address is read (read port ``rd_*``, only in a cycle where ``rd_free`` says the
    shared port may be taken); the next cycle the row is taken into ``D``
    :class:`hw.fp.add.Fp32Adder` (module ``fp32_add_s4``: registers on the operands, after the
    alignment, on the exact sum and inside the rounding) and
    ``RNE_fp32(y_old + y_unit)`` is written lane by lane :attr:`ADD_LATENCY` cycles later. One row
    per two cycles. Rows of padding tiles are taken without a read in both modes. Overwrites are
    written :attr:`ADD_LATENCY` cycles after their take as well, so writes stay in take order, and
    ``busy`` holds until the last write has landed. Each y word is read and written once per
    command, so a write in flight never holds a word a later read of the same command wants.

    Members
    -------
    start : In(1)
    m, nt, n_groups : In(16)
        M, ceil(N/D), groups.
    y_addr : In(addr_bits)
        y[m, nt*D:] goes to word ``y_addr + m*ceil(N/D) + nt`` (D FP32 lanes; lanes past N hold
        the padding columns' results, +0 for zero weights).
    acc : In(1)
        The command's accumulate bit (held for the whole command).
    y0 .. y{units-1} : In(stream)
        The units' result streams (``unit.y_layout``).
    wr_addr, wr_data, wr_en : Out
        Scratchpad write port (this engine has priority over the host).
    rd_addr, rd_en : Out
        Scratchpad read request of the old y (``acc = 1``); the word is on ``rd_data`` next cycle.
    rd_free : In(1)
        The shared read port may be used this cycle.
    rd_data : In(32*D)
    row_error : Out(1)
        Sticky: a unit returned a row index other than the one expected.
    busy : Out(1)

    Parameters
    ----------
    unit : MatrixUnitSignature
        The units' interface (D, rows).
    units : int
        Number of units.
    addr_bits : int
        Scratchpad word address width.
    """

    #: Cycles from a row's take to its write: the FP32 adders' register stages.
    ADD_LATENCY = 4

    def __init__(self, *, unit: MatrixUnitSignature, units: int, addr_bits: int):
        width = unit.width
        self._d, self._r, self._n, self._aw = width, unit.rows, units, addr_bits
        self._row_bits = unit.row_bits
        super().__init__({
            "start": In(1), "m": In(16), "nt": In(16), "n_groups": In(16),
            "y_addr": In(addr_bits), "acc": In(1),
            **{f"y{u}": In(stream.Signature(unit.y_layout)) for u in range(units)},
            "wr_addr": Out(addr_bits), "wr_data": Out(32 * width), "wr_en": Out(1),
            "rd_addr": Out(addr_bits), "rd_en": Out(1), "rd_free": In(1),
            "rd_data": In(32 * width),
            "row_error": Out(1), "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        R, N = self._r, self._n
        ys = [getattr(self, f"y{u}") for u in range(N)]
        m0 = Signal(16)
        g = Signal(16)
        gb = Signal(16)      # g * units: N-tile of unit 0
        mi = Signal(16)
        u = Signal(range(max(2, N)))
        rowaddr = Signal(self._aw)
        passbase = Signal(self._aw)
        rows_here = Mux(self.m - m0 >= R, R, self.m - m0)

        sel_valid = Signal()
        sel_data = Signal(32 * self._d)
        sel_row = Signal(max(1, self._row_bits))
        exists = Signal()   # the expected row's N-tile exists (else a padding tile: dropped)
        old_ok = Signal()   # acc: the old y of the expected row is on rd_data this cycle
        take = Signal()     # the expected unit's row may be taken this cycle
        active = Signal()   # rows of the command still to take
        # exists is a register (it gates the units' ready): set at start (N >= 1) and, at each take,
        # from the comparisons for the next row's tile, made from registers beforehand
        m.d.comb += take.eq(active & (~self.acc | ~exists | old_ok))
        for j, y in enumerate(ys):
            m.d.comb += y.ready.eq(take & (u == j))
            with m.If(u == j):
                m.d.comb += [sel_valid.eq(y.valid), sel_data.eq(y.payload.data)]
                if R > 1:
                    m.d.comb += sel_row.eq(y.payload.row)
        xfer = Signal()
        m.d.comb += [
            xfer.eq(take & sel_valid),
            self.rd_addr.eq(rowaddr + gb + u),
            self.rd_en.eq(active & self.acc & exists & sel_valid & ~old_ok & self.rd_free),
        ]
        # old_ok is set by a read and cleared by the take that follows it (a row that is offered
        # stays offered, so that take is the very next cycle)
        m.d.sync += old_ok.eq(self.rd_en)
        summed = Signal(32 * self._d)
        for j in range(self._d):
            add = Fp32Adder(stages=self.ADD_LATENCY)
            hier.place(m, f"add{j}", add)
            m.d.comb += [add.a.eq(self.rd_data[32 * j:32 * (j + 1)]),
                         add.b.eq(sel_data[32 * j:32 * (j + 1)]),
                         summed[32 * j:32 * (j + 1)].eq(add.y)]
        # the write (enable, address, overwrite data) follows the take by the adders' latency
        wr_en, wr_addr, over, inflight = xfer & exists, rowaddr + gb + u, sel_data, Const(0, 1)
        for i in range(self.ADD_LATENCY):
            en_d, addr_d = Signal(name=f"wr_en_d{i}"), Signal(self._aw, name=f"wr_addr_d{i}")
            over_d = Signal(32 * self._d, name=f"over_d{i}")
            m.d.sync += [en_d.eq(wr_en), addr_d.eq(wr_addr), over_d.eq(over)]
            wr_en, wr_addr, over, inflight = en_d, addr_d, over_d, inflight | en_d
        m.d.comb += [
            self.wr_en.eq(wr_en), self.wr_addr.eq(wr_addr),
            self.wr_data.eq(Mux(self.acc, summed, over)),
            self.busy.eq(active | inflight),
        ]
        with m.If(xfer & (sel_row != mi[:len(sel_row)]) & (R > 1)):
            m.d.sync += self.row_error.eq(1)

        with m.If(self.start):
            m.d.sync += [active.eq(1), m0.eq(0), g.eq(0), gb.eq(0), mi.eq(0), u.eq(0),
                         rowaddr.eq(self.y_addr), passbase.eq(self.y_addr), exists.eq(1)]
        with m.Elif(xfer):   # units, rows of the pass, groups, passes
            advance(m, [
                Level(u + 1 < N, [u.eq(u + 1), exists.eq(gb + u + 1 < self.nt)],
                      [u.eq(0), exists.eq(gb < self.nt)]),
                Level(mi + 1 < rows_here, [mi.eq(mi + 1), rowaddr.eq(rowaddr + self.nt)], [mi.eq(0)]),
                Level(g + 1 < self.n_groups, [g.eq(g + 1), gb.eq(gb + N), rowaddr.eq(passbase),
                                              exists.eq(gb + N < self.nt)],
                      [g.eq(0), gb.eq(0), m0.eq(m0 + R), exists.eq(1),
                       passbase.eq(rowaddr + self.nt), rowaddr.eq(rowaddr + self.nt)]),
            ], last=m0 + R >= self.m, done=[active.eq(0)])
        return m
