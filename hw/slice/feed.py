"""The slice's HBM side: a read-request generator and a byte gearbox that cuts beats into weight rows.

Weight layout in HBM (written by the compiler, documented in ``docs/slice.md``): W[K x N] is split
into *groups* of ``units * D`` columns (group g holds columns ``g*units*D ..``); each group is stored
as ``Kp = ceil(K / D) * D`` consecutive *super-rows* of ``S = units * D * b / 8`` bytes (row k holds
W[k, group columns], element j of unit u at byte offset ``(u*D + j) * b / 8``), padded past N and
past K (the padding may hold anything: the gearbox zeroes it). Groups follow each other without
gaps, so one command's weights are one contiguous region of ``G * Kp * S`` bytes, read once per
pass of ``rows`` activation rows. Both engines step their part of the slice's loop nest with
:func:`hw.slice.loops.advance`.

Block-scaled formats (:data:`hw.formats.BLOCK_FORMATS`, block B along K) add the weight scales to
the group: each k-tile of a group is its ``D`` super-rows of ``S`` bytes followed by ``D/B`` *scale
rows* of ``units * D`` bytes (scale row i holds the codes scaling rows ``kt*D + iB .. + B-1``,
column ``u*D + j``'s code at byte ``u*D + j``). A group is ``ceil(K/D) * (D*S + (D/B)*units*D)``
bytes; nothing else changes. The gearbox then gives the k-tile's last super-row together with the
tile's scale rows (one output beat), and :class:`ScaleRows` turns those into one ``ws`` row per
cycle, so the scale rows take no output cycle of their own.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .lanes import thermometer
from .loops import Level, advance

__all__ = ["RequestGenerator", "Gearbox", "ScaleRows", "ceil_beats", "request_layout"]


def request_layout(addr_bits: int, burst: int) -> data.StructLayout:
    """HBM read request: byte address (low bits), then the beat count 1..burst."""
    return data.StructLayout({"addr": addr_bits, "beats": range(burst + 1)})


def ceil_beats(rem, beat_bytes: int, burst: int):
    """Beats needed for ``rem`` bytes when ``0 < rem <= burst * beat_bytes``: comparators, no divider."""
    total = Const(1, range(burst + 1))
    for i in range(1, burst):
        total = total + (rem > i * beat_bytes)
    return total


class RequestGenerator(wiring.Component):
    """Issues HBM read requests for one command's weight region, once per pass.

    Requests are bursts of ``burst`` beats of ``beat_bytes`` bytes; the last request of each group
    is shortened to ``ceil(remaining / beat_bytes)`` beats, so every group starts a new request at its
    own byte address ``w_addr + g * Kp * S``.

    Parameters
    ----------
    beat_bytes : int
        B, bytes per read-data beat.
    burst : int
        Maximum beats per request.
    addr_bits, len_bits : int
        Widths of the byte address and of the per-group byte count.

    Members
    -------
    start : In(1)
        Pulse: latch the command parameters and begin.
    group_bytes : In(len_bits)
        ``Kp * S``, bytes per group.
    n_groups, n_passes : In(16)
        Groups per pass and passes per command.
    w_addr : In(addr_bits)
        Byte address of the command's weight region.
    req : Out(stream)
        Payload ``addr`` (bytes) then ``beats``.
    busy : Out(1)
    """

    def __init__(self, *, beat_bytes: int, burst: int, addr_bits: int, len_bits: int):
        self._b, self._burst = beat_bytes, burst
        self._aw, self._lw = addr_bits, len_bits
        super().__init__({
            "start": In(1), "group_bytes": In(len_bits), "n_groups": In(16), "n_passes": In(16),
            "w_addr": In(addr_bits),
            "req": Out(stream.Signature(request_layout(addr_bits, burst))),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        b, burst = self._b, self._burst
        addr = Signal(self._aw)
        gbase = Signal(self._aw)
        rem = Signal(self._lw + 1)
        g = Signal(16)
        p = Signal(16)
        full = rem > burst * b
        beats = Mux(full, burst, ceil_beats(rem, b, burst))
        m.d.comb += [self.req.payload.addr.eq(addr), self.req.payload.beats.eq(beats)]
        m.d.comb += self.req.valid.eq(self.busy)
        with m.If(self.start):
            m.d.sync += [self.busy.eq(1), addr.eq(self.w_addr), gbase.eq(self.w_addr),
                         rem.eq(self.group_bytes), g.eq(0), p.eq(0)]
        with m.Elif(self.req.valid & self.req.ready):
            # next burst of the group; or next group; or next pass from the region start
            advance(m, [
                Level(full, [addr.eq(addr + burst * b), rem.eq(rem - burst * b)],
                      [rem.eq(self.group_bytes)]),
                Level(g + 1 < self.n_groups,
                      [g.eq(g + 1), gbase.eq(gbase + self.group_bytes),
                       addr.eq(gbase + self.group_bytes)],
                      [g.eq(0), gbase.eq(self.w_addr), addr.eq(self.w_addr), p.eq(p + 1)]),
            ], last=p + 1 >= self.n_passes, done=[self.busy.eq(0)])
        return m


class Gearbox(wiring.Component):
    """Cuts HBM beats of B bytes into super-rows of S bytes, dropping each group's tail bytes.

    With ``scale_rows`` (block-scaled formats) each k-tile of ``width`` super-rows is followed by
    ``scale_rows`` scale rows of ``scale_bytes`` bytes. The output beat is one super-row (``data``)
    and, on the tile's last super-row (``last``), the tile's scale rows too (``scales``, scale row i
    at ``[8*i*scale_bytes +: 8*scale_bytes]``): that beat pops ``S + scale_rows * scale_bytes``
    bytes, so a tile leaves in ``width`` beats, one per cycle at full feed, and the buffer is
    ``S + scale_rows * scale_bytes + B - 1`` bytes. A scale row whose block starts at ``k >= K``
    leaves as zeros (a NaN scale there would poison the block's zero products).

    A buffer of ``S + B - 1`` bytes: a beat is accepted when the bytes left after this cycle's row
    pop leave room for it, so with B >= S a row leaves every cycle and with B < S the feed is used
    on every cycle it offers data. Only the first ``min(B, bytes left in the group)`` bytes of a beat
    are kept (the rest belong past the group's end). Rows with index ``k >= K`` leave as zeros, so
    whatever HBM holds in the K padding cannot turn a zero activation into a NaN. So do the columns
    at or past N (elements and scale codes): the units' lanes there hold zero weights whatever HBM
    holds in the N padding, so their results are defined (a zero weight's) and, with the units'
    operand isolation, their trees' inputs do not toggle.

    Parameters
    ----------
    beat_bytes : int
        B.
    row_bytes : int
        S, bytes per super-row.
    len_bits : int
        Width of ``group_bytes``.
    group_cols : int
        Weight columns of a super-row (``units * D``).
    width, scale_rows, scale_bytes, block : int, optional
        Block-scaled formats only: D (super-rows per k-tile), D/B, ``units * D`` and B.

    Members
    -------
    start : In(1)
    group_bytes : In(len_bits)
    n_groups, n_passes : In(16)
    kp, k : In(16)
        Padded and true K: rows per group and rows that carry data.
    i : In(stream)
        Read data, ``8 * B`` bits, byte 0 in bits [7:0].
    n : In(16)
        N, for the useful-element count.
    o : Out(stream)
        One super-row per beat, ``8 * S`` bits (block-scaled: ``data`` of ``8 * S`` bits, then
        ``scales``, ``8 * scale_rows * scale_bytes`` bits, then ``last``: the beat is the k-tile's
        last super-row and ``scales`` holds the tile's scale rows; otherwise ``scales`` means nothing).
    o_useful : Out(16)
        Weight elements of the current row that are inside W (``k < K`` and column ``< N``); the
        other ``units * D`` minus these are padding.
    busy : Out(1)
        Bytes of the command still to arrive or rows still to leave.
    """

    def __init__(self, *, beat_bytes: int, row_bytes: int, len_bits: int, group_cols: int,
                 width: int = 0, scale_rows: int = 0, scale_bytes: int = 0, block: int = 0):
        self._b, self._s, self._lw, self._gc = beat_bytes, row_bytes, len_bits, group_cols
        self._d, self._nb, self._ss, self._blk = width, scale_rows, scale_bytes, block
        if scale_rows:
            o_shape = data.StructLayout({"data": 8 * row_bytes, "scales": 8 * scale_rows * scale_bytes,
                                         "last": 1})
        else:
            o_shape = 8 * row_bytes
        super().__init__({
            "start": In(1), "group_bytes": In(len_bits), "n_groups": In(16), "n_passes": In(16),
            "kp": In(16), "k": In(16), "n": In(16),
            "i": In(stream.Signature(8 * beat_bytes)),
            "o": Out(stream.Signature(o_shape)),
            "o_useful": Out(16),
            "busy": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        B, S = self._b, self._s
        D, nb, SS = self._d, self._nb, self._ss
        smax = S + nb * SS   # the largest pop: a tile's last super-row and its scale rows
        cap = smax + B - 1
        buf = Signal(8 * cap)
        count = Signal(range(cap + 1))
        # input side: bytes left in the current group, group and pass counters
        in_busy = Signal()
        rem = Signal(self._lw + 1)
        ig = Signal(16)
        ip = Signal(16)
        # output side
        out_busy = Signal()
        row = Signal(16)
        og = Signal(16)
        op = Signal(16)
        cols_left = Signal(16)   # N - og * units * D

        pop = Signal()
        push = Signal()
        after_pop = Signal(range(cap + 1))
        # columns at or past N (the last group's padding) leave as zeros, element and scale code
        gc, eb = self._gc, 8 * S // self._gc
        assert eb * gc == 8 * S and (not nb or SS == gc), "a super-row is group_cols elements"
        # The mask of the current group is a register (its lanes fan out to every byte of the
        # row): loaded with the command's at start and, at each group wrap, with the next group's,
        # which `mask_next` computes from registers in the cycles before (groups are D or more
        # rows apart, and cols_left holds still between wraps).
        inside, all_inside = Signal(gc), Signal()
        mask_next = Signal(gc + 1)
        m.d.sync += mask_next.eq(Cat(*thermometer(
            Mux(og + 1 < self.n_groups, cols_left - gc, self.n)[:len(cols_left)], gc)))
        useful = Mux(all_inside, gc, cols_left)
        if nb:
            # row: position in the k-tile (D super-rows, the last one with the nb scale rows behind
            # it); k0: the tile's k
            k0 = Signal(16)
            tile_end = Signal()
            live = Signal()   # the super-row has k < K
            size = Mux(tile_end, smax, S)
            m.d.comb += [tile_end.eq(row == D - 1), live.eq(k0 + row < self.k)]
        else:
            size = S
        m.d.comb += [
            self.o.valid.eq(count >= size),
            pop.eq(self.o.valid & self.o.ready),
            after_pop.eq(Mux(pop, count - size, count)),
            # after_pop < smax, both cases compared before the pop is known
            self.i.ready.eq(in_busy & Mux(pop, count < smax + size, count < smax)),
            push.eq(self.i.valid & self.i.ready),
        ]
        elems = Cat(*(Mux(inside[j], buf[eb * j:eb * (j + 1)], 0) for j in range(gc)))
        if nb:
            # scale row i (behind the super-row) leaves as zeros if its block starts at k >= K
            scales = [Mux(k0 + i * self._blk < self.k,
                          Cat(*(Mux(inside[j], buf[8 * (S + i * SS + j):8 * (S + i * SS + j + 1)], 0)
                                for j in range(SS))), 0)
                      for i in range(nb)]
            m.d.comb += [
                self.o.payload.data.eq(Mux(live, elems, 0)),
                self.o.payload.scales.eq(Cat(*scales)),
                self.o.payload.last.eq(tile_end),
                self.o_useful.eq(Mux(live, useful, 0)),
            ]
        else:
            m.d.comb += [
                self.o.payload.eq(Mux(row < self.k, elems, 0)),
                self.o_useful.eq(Mux(row < self.k, useful, 0)),
            ]
        m.d.comb += self.busy.eq(in_busy | out_busy)
        take = Signal(range(B + 1))
        taken, whole_beat = thermometer(rem, B)   # bytes j < take = min(rem, B)
        m.d.comb += take.eq(Mux(whole_beat, B, rem))
        keep = Signal(8 * B)
        for j in range(B):
            m.d.comb += keep[8 * j:8 * j + 8].eq(Mux(taken[j], self.i.payload[8 * j:8 * j + 8], 0))
        # The beat's bytes go in behind the bytes held now (at byte `count`), and the pop then
        # shifts both down by a constant: (buf | keep << count) >> size is buf >> size | keep <<
        # (count - size), as a pop needs count >= size. The variable shift depends on registers
        # only; the pop (the units' ready) selects among constant shifts at the end. keep << count
        # is exact in cap + B bytes (count <= cap); the buffer keeps its low cap bytes.
        placed = Signal(8 * (cap + B))
        m.d.comb += placed.eq(keep << (count * 8))
        merged = buf | Mux(push, placed, 0)
        if nb:
            shifted = Mux(pop, Mux(tile_end, merged >> (8 * smax), merged >> (8 * S)), merged)
        else:
            shifted = Mux(pop, merged >> (8 * S), merged)
        m.d.sync += [
            buf.eq(shifted),
            count.eq(after_pop + Mux(push, take, 0)),
        ]

        with m.If(self.start):
            m.d.sync += [in_busy.eq(1), out_busy.eq(1), rem.eq(self.group_bytes), ig.eq(0),
                         ip.eq(0), row.eq(0), og.eq(0), op.eq(0), cols_left.eq(self.n),
                         Cat(inside, all_inside).eq(Cat(*thermometer(self.n, gc)))]
            if nb:
                m.d.sync += k0.eq(0)
        with m.Else():
            with m.If(push):   # input side: beats of a group, groups, passes
                advance(m, [
                    Level(rem > B, [rem.eq(rem - B)], [rem.eq(self.group_bytes)]),
                    Level(ig + 1 < self.n_groups, [ig.eq(ig + 1)], [ig.eq(0), ip.eq(ip + 1)]),
                ], last=ip + 1 >= self.n_passes, done=[in_busy.eq(0)])
            if nb:   # output side: rows of a k-tile, k-tiles of a group, groups, passes
                rows_of_group = [Level(row + 1 < D, [row.eq(row + 1)], [row.eq(0)]),
                                 Level(k0 + D < self.kp, [k0.eq(k0 + D)], [k0.eq(0)])]
            else:    # output side: super-rows of a group, groups, passes
                rows_of_group = [Level(row + 1 < self.kp, [row.eq(row + 1)], [row.eq(0)])]
            with m.If(pop):
                advance(m, rows_of_group + [
                    Level(og + 1 < self.n_groups, [og.eq(og + 1), cols_left.eq(cols_left - self._gc),
                                                   Cat(inside, all_inside).eq(mask_next)],
                          [og.eq(0), op.eq(op + 1), cols_left.eq(self.n),
                           Cat(inside, all_inside).eq(mask_next)]),
                ], last=op + 1 >= self.n_passes, done=[out_busy.eq(0)])
        return m


class ScaleRows(wiring.Component):
    """Turns a k-tile's scale rows, delivered in one beat, into one row per beat.

    The first row leaves in the cycle the beat arrives (combinationally, no added latency), the
    other ``rows - 1`` from a register in the following cycles; the next beat is taken in the
    cycle the last row of the previous one leaves. With ``rows = 1`` it is wires.

    Parameters
    ----------
    rows : int
        Scale rows per beat (D/B).
    row_bits : int
        Bits per row.

    Members
    -------
    i : In(stream(rows * row_bits))
        Row r at ``[r*row_bits +: row_bits]``.
    o : Out(stream(row_bits))
        The rows in order.
    """

    def __init__(self, rows: int, row_bits: int):
        self._rows, self._rb = rows, row_bits
        super().__init__({"i": In(stream.Signature(rows * row_bits)),
                          "o": Out(stream.Signature(row_bits))})

    latency = 0

    def elaborate(self, platform):
        m = Module()
        n, rb = self._rows, self._rb
        if n == 1:
            m.d.comb += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid),
                         self.i.ready.eq(self.o.ready)]
            return m
        held = Signal((n - 1) * rb, reset_less=True)   # rows 1 .. n-1 of the beat, next one lowest
        left = Signal(range(n))                        # rows of ``held`` still to leave
        busy = left != 0
        m.d.comb += [
            self.o.valid.eq(busy | self.i.valid),
            self.o.payload.eq(Mux(busy, held[:rb], self.i.payload[:rb])),
            self.i.ready.eq(~busy & self.o.ready),
        ]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [held.eq(self.i.payload[rb:]), left.eq(n - 1)]
        with m.Elif(busy & self.o.ready):
            m.d.sync += [held.eq(held >> rb), left.eq(left - 1)]
        return m
