"""A slice: ``units`` matrix units, a scratchpad and a private HBM read port, run by matmul commands.

Command (``cmd`` stream, :func:`cmd_layout`): ``y[M x N] = x[M x K] . W[K x N]`` with x and y in the
scratchpad and W streamed from HBM in the group layout of :mod:`hw.slice.feed`. The slice

1. requests the command's weight region once per pass of ``rows`` activation rows
   (:class:`~hw.slice.feed.RequestGenerator`),
2. cuts the returned beats into super-rows of ``units * D`` weights and sends unit u its D-wide part
   (:class:`~hw.slice.feed.Gearbox` + a :class:`hw.stream.Fork`),
3. sends every unit the same activation beats read from the scratchpad, one per k-tile and row
   (:class:`~hw.slice.sequencer.ActivationIssue`), so unit u of group g computes N-tile
   ``g*units + u`` and accumulates over K inside its FP32 accumulator,
4. writes the result rows back (:class:`~hw.slice.sequencer.WriteBack`) and offers a ``done`` beat
   carrying the command's cycle count.

Every stream stalls its producer; nothing is dropped. One command runs at a time. The units'
ports are :class:`hw.mu.interface.MatrixUnitSignature`; the slice connects to them through it.
"""

from amaranth.hdl import Const, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from ..formats import BLOCK_FORMATS, MATRIX_FORMATS, get_block_format, get_format
from ..mu.counters import event_counter
from ..mu.exact_acc import GUARD_BITS
from ..mu.interface import MatrixUnitSignature
from ..mu.matrix_unit import MatrixUnit, MatrixUnitParams
from ..stream import Fork, SkidBuffer
from .feed import Gearbox, RequestGenerator, ScaleRows, request_layout
from .scratchpad import Scratchpad, ScratchpadParams
from .sequencer import ActivationIssue, WriteBack

__all__ = ["Slice", "cmd_layout", "spad_write_layout", "unit_counters_layout", "COUNTERS",
           "BLOCK_COUNTERS", "UNIT_COUNTERS", "SLICE_FORMATS"]

#: Slice-wide counters (32-bit output ports, cumulative since reset, wrap around).
COUNTERS = ("cycles", "hbm_req_bytes", "hbm_rcv_bytes", "w_useful_elems", "w_pad_elems", "x_beats",
            "y_rows")
#: Counters only a slice of block-scaled units has: ``w_scale_bytes``, the weight-scale bytes
#: delivered to the units (``units * D`` per scale row; the HBM side is in ``hbm_*_bytes``).
BLOCK_COUNTERS = ("w_scale_bytes",)
#: Element formats the slice takes: the plain ones and the block-scaled ones.
SLICE_FORMATS = MATRIX_FORMATS + tuple(BLOCK_FORMATS)
#: Per-unit counters (``units`` x 32-bit output ports, element u at bits [u*32 +: 32]).
UNIT_COUNTERS = ("unit_busy", "unit_starved", "unit_backpressured")


def cmd_layout(addr_bits: int, hbm_addr_bits: int) -> data.StructLayout:
    """Matmul descriptor, least significant field first.

    ``m``, ``k``, ``n``: sizes (1..65535); ``x_addr``, ``y_addr``: scratchpad word addresses;
    ``w_addr``: HBM byte address of the weight region; ``acc``: 0 overwrites y, 1 accumulates
    ``y <- RNE_fp32(y + x.W)`` (the unit's result added to the old y in the write-back, one more
    rounding; ``docs/numerics.md`` section 5).
    """
    return data.StructLayout({"m": 16, "k": 16, "n": 16, "x_addr": addr_bits, "y_addr": addr_bits,
                              "w_addr": hbm_addr_bits, "acc": 1})


def spad_write_layout(addr_bits: int, width: int) -> data.StructLayout:
    """Host scratchpad write (``spad_w``): word address, then the ``32 * D``-bit word."""
    return data.StructLayout({"addr": addr_bits, "data": 32 * width})


def unit_counters_layout(units: int) -> data.ArrayLayout:
    """A per-unit counter port: unit u's 32-bit count at ``[u*32 +: 32]``."""
    return data.ArrayLayout(32, units)


def _ceil_div_const(value, divisor: int):
    """ceil(value / divisor) for a constant power-of-two divisor (a shift)."""
    s = divisor.bit_length() - 1
    return (value + divisor - 1) >> s


class Slice(wiring.Component):
    """Matrix units + scratchpad + HBM feed, with a matmul command stream.

    Parameters
    ----------
    units : int
        Matrix units (1..64).
    width : int
        D, each unit's width (power of two, 8..128).
    fmt : str
        Element format of x and W: :data:`SLICE_FORMATS`, the plain ``fp8_e4m3``, ``fp8_e5m2``,
        ``fp4_e2m1`` or a block-scaled one (:data:`hw.formats.BLOCK_FORMATS`; D a multiple of its
        block B, ``acc = fp32``): weight scales in HBM beside the weights (:mod:`hw.slice.feed`),
        activation scales in the scratchpad beside the elements.
    spad_bytes : int
        Scratchpad size; words are ``4*D`` bytes (one FP32 result row), so it holds
        ``spad_bytes // (4*D)`` words.
    feed_bytes : int or None
        B, bytes per HBM read-data beat. Default: what the units consume at full rate,
        ``units * D * b / 8`` (block-scaled: ``ceil(units * D * (b + 8/B_blk) / 8)``, scales included).
    rows : int
        Accumulator rows per unit: activation rows sharing one pass over the weights.
    stages : int
        The units' pipeline option.
    acc : str
        The units' accumulate mode (:data:`hw.mu.numerics.ACC_MODES`): ``fp32`` or ``exact`` (each unit
        rounds its K-long sums once; the ``acc = 1`` write-back still adds with one FP32 rounding).
    tree, guard_bits, loop :
        The units' column tree, ``exact``-mode guard bits and ``fp32`` accumulate-loop cycles
        (:class:`hw.mu.matrix_unit.MatrixUnit`).
    mu : MatrixUnitParams or None
        The units' whole parameter value, instead of ``width`` .. ``loop`` (leave those unset).
    burst : int
        Maximum beats per HBM read request.
    hbm_addr_bits : int
        Width of HBM byte addresses.
    spad_macro : bool
        Emit the scratchpad as a black-box SRAM placeholder (for synthesis; area from
        :func:`hw.slice.scratchpad.sram_area_um2`) instead of a behavioral memory.
    unit : callable, optional
        Factory ``(width, fmt, rows, stages, tree, acc, guard_bits, loop) -> component`` (keywords:
        :meth:`MatrixUnitParams.options`) for the units (default
        :class:`hw.mu.matrix_unit.MatrixUnit`): a component whose signature is
        ``MatrixUnitSignature(width, fmt, rows, acc)``, that follows the unit's stream contract and has
        :class:`hw.hier.BlockParams` ``params`` (its module name).

    Members
    -------
    cmd : In(stream(cmd_layout))
    done : Out(stream(32))
        One beat per finished command: cycles from its acceptance to its last result write.
    hbm_req : Out(stream(addr, beats))
    hbm_rdata : In(stream(8*B))
        Read data in request order; byte 0 in bits [7:0].
    spad_w : In(stream(addr, data))
        Host writes (the write-back has priority).
    spad_rreq : In(stream(addr)), spad_rdata : Out(stream(32*D))
        Host reads, one word per request, in order.
    row_error : Out(1)
        Sticky: a unit returned an unexpected accumulator row.
    cycles, hbm_req_bytes, ... : Out(32)
        :data:`COUNTERS`; ``unit_busy`` etc.: :data:`UNIT_COUNTERS`.

    Raises
    ------
    ValueError
        On a parameter out of range, with the allowed values.
    TypeError
        A unit factory whose units do not have the matrix unit's signature.
    """

    def __init__(self, *, units: int = 2, width: int = 8, fmt: str = "fp8_e4m3",
                 spad_bytes: int = 16384, feed_bytes: int | None = None, rows: int = 1,
                 stages: int = 2, acc: str = "fp32", tree: str = "dadda",
                 guard_bits: int = GUARD_BITS, loop: int = 1, mu: MatrixUnitParams | None = None,
                 burst: int = 16, hbm_addr_bits: int = 32, spad_macro: bool = False, unit=None):
        if mu is not None:
            given = {k: v for k, v in (("width", width), ("fmt", fmt), ("rows", rows),
                                      ("stages", stages), ("acc", acc), ("tree", tree),
                                      ("guard_bits", guard_bits), ("loop", loop))
                     if v != Slice.__init__.__kwdefaults__[k]}
            if not isinstance(mu, MatrixUnitParams) or given:
                raise ValueError(f"mu must be a MatrixUnitParams and the unit options "
                                 f"{', '.join(given) or ''} left unset with it, not {mu!r}")
            width, fmt, rows, stages = mu.width, mu.fmt, mu.rows, mu.stages
            acc, tree, guard_bits, loop = mu.acc, mu.tree, mu.guard_bits, mu.loop
        if not isinstance(units, int) or not 1 <= units <= 64:
            raise ValueError(f"units must be an integer in [1, 64], not {units!r}")
        if not isinstance(width, int) or width < 8 or width > 128 or width & (width - 1):
            raise ValueError(f"width must be a power of two in [8, 128], not {width!r}")
        if fmt not in SLICE_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(SLICE_FORMATS)}, not {fmt!r}")
        blk = get_block_format(fmt) if fmt in BLOCK_FORMATS else None
        bits = get_format(fmt if blk is None else blk.element).bits
        row_bytes = units * width * bits // 8
        if feed_bytes is None:
            feed_bytes = row_bytes if blk is None else -(-units * width * (bits * blk.block + 8)
                                                         // (8 * blk.block))
        if not isinstance(feed_bytes, int) or not 1 <= feed_bytes <= 4096:
            raise ValueError(f"feed_bytes must be an integer in [1, 4096], not {feed_bytes!r}")
        words = spad_bytes // (4 * width) if isinstance(spad_bytes, int) else 0
        if words < 2:
            raise ValueError(f"spad_bytes must hold at least two {4 * width}-byte words at width "
                             f"{width}, not {spad_bytes!r}")
        if not isinstance(rows, int) or rows < 1:
            raise ValueError(f"rows must be an integer >= 1, not {rows!r}")
        if not isinstance(burst, int) or not 1 <= burst <= 256:
            raise ValueError(f"burst must be an integer in [1, 256], not {burst!r}")
        self.units, self.width, self.fmt, self.rows, self.stages = units, width, fmt, rows, stages
        self.acc = acc
        self.bits, self.row_bytes, self.feed_bytes, self.burst = bits, row_bytes, feed_bytes, burst
        self.spad_words, self.spad_bytes = words, spad_bytes
        self.addr_bits = max(1, (words - 1).bit_length())
        self.hbm_addr_bits = hbm_addr_bits
        self._unit = unit
        self.unit_signature = MatrixUnitSignature(width, fmt, rows, acc)  # checks acc, D % B
        #: The units' parameters (validated: a combination the unit lacks is refused here).
        self.mu = mu if mu is not None else MatrixUnitParams(width, fmt, rows, stages, tree, acc,
                                                             guard_bits, loop)
        #: Block-scaled: scale rows per k-tile (D/B) and bytes per scale row (units * D); else 0.
        self.scale_rows = self.unit_signature.blocks
        self.scale_bytes = units * width if blk is not None else 0
        try:   # a probe: checks the factory's units now rather than at elaboration
            self._make_unit()._MustUse__silence = True
        except TypeError:
            self._MustUse__silence = True
            raise
        self.spad_macro = bool(spad_macro)
        aw = self.addr_bits
        sig = {
            "cmd": In(stream.Signature(cmd_layout(aw, hbm_addr_bits))),
            "done": Out(stream.Signature(32)),
            "hbm_req": Out(stream.Signature(request_layout(hbm_addr_bits, burst))),
            "hbm_rdata": In(stream.Signature(8 * feed_bytes)),
            "spad_w": In(stream.Signature(spad_write_layout(aw, width))),
            "spad_rreq": In(stream.Signature(aw)),
            "spad_rdata": Out(stream.Signature(32 * width)),
            "row_error": Out(1),
        }
        sig.update({c: Out(32) for c in COUNTERS})
        if self.scale_rows:
            sig.update({c: Out(32) for c in BLOCK_COUNTERS})
        sig.update({c: Out(unit_counters_layout(units)) for c in UNIT_COUNTERS})
        super().__init__(sig)

    def macros(self) -> list:
        """Black-box macros the netlist leaves unsynthesized, with their modelled area.

        Empty unless ``spad_macro``; else the scratchpad SRAM: a dict with ``module``,
        ``instances``, ``words``, ``bits``, ``area_um2`` (:func:`hw.slice.scratchpad.sram_area_um2`)
        and ``model`` (the area model and its source, one line).
        """
        if not self.spad_macro:
            return []
        from .scratchpad import SRAM_MODEL_NOTE, sram_area_um2
        params = ScratchpadParams(self.spad_words, 32 * self.width, macro=True)
        return [{"module": params.module_name, "instances": 1,
                 "words": self.spad_words,
                 "bits": 32 * self.width,
                 "area_um2": round(sram_area_um2(self.spad_words, 32 * self.width), 1),
                 "model": SRAM_MODEL_NOTE}]

    def _make_unit(self):
        opts = self.mu.options()
        for k in ("gate", "isolate"):  # the factory's keywords (see ``unit``) leave out the defaults
            if not opts[k]:
                del opts[k]
        unit = (self._unit or MatrixUnit)(**opts)
        if unit.signature != self.unit_signature:
            unit._MustUse__silence = True
            raise TypeError(f"the slice's units must have the signature {self.unit_signature!r}, "
                            f"not {unit.signature!r}; build them on hw.mu.interface")
        return unit

    def _scale_path(self, m: Module, rows, w_out):
        """Block-scaled: split the gearbox's beats (``rows``) into the element rows, which go to
        ``w_out`` (the units' ``w`` fork) through ``D/B - 1`` skid buffers, and the tile's scale rows,
        which go one per cycle (:class:`~hw.slice.feed.ScaleRows`, first row without delay) to a
        fork to the units' ``ws``; returns that fork.

        The skid buffers delay every element row by ``D/B - 1`` cycles, so a tile's last scale row
        reaches the units no later than its last element row and the tile is complete after its D
        element beats.
        """
        nb, SS, S = self.scale_rows, self.scale_bytes, self.row_bytes
        m.submodules.split = split = Fork(2, rows.payload.shape())
        wiring.connect(m, rows, split.i)
        m.submodules.scale_rows = ser = ScaleRows(nb, 8 * SS)
        m.submodules.bc_ws = bc_ws = Fork(self.units, 8 * SS)
        wiring.connect(m, ser.o, bc_ws.i)
        o_e, o_s = split.outputs()
        last = o_s.payload.last
        m.d.comb += [ser.i.payload.eq(o_s.payload.scales), ser.i.valid.eq(o_s.valid & last),
                     o_s.ready.eq(ser.i.ready | ~last)]
        elem = o_e
        for i in range(nb - 1):
            skid = SkidBuffer(8 * S)
            m.submodules[f"w_lead{i}"] = skid
            m.d.comb += [skid.i.payload.eq(elem.payload.data if i == 0 else elem.payload),
                         skid.i.valid.eq(elem.valid), elem.ready.eq(skid.i.ready)]
            elem = skid.o
        m.d.comb += [w_out.payload.eq(elem.payload.data if nb == 1 else elem.payload),
                     w_out.valid.eq(elem.valid), elem.ready.eq(w_out.ready)]
        return bc_ws

    def elaborate(self, platform):
        m = Module()
        D, U, R, b = self.width, self.units, self.rows, self.bits
        aw = self.addr_bits
        S = self.row_bytes
        nb, SS = self.scale_rows, self.scale_bytes
        # per k-tile: D super-rows, then (block-scaled) nb scale rows of SS bytes
        tile_bytes = D * S + nb * SS
        len_bits = (65536 * S).bit_length() if not nb else ((65536 // D + 1) * tile_bytes).bit_length()

        m.submodules.reqgen = reqgen = RequestGenerator(
            beat_bytes=self.feed_bytes, burst=self.burst, addr_bits=self.hbm_addr_bits,
            len_bits=len_bits)
        blk = {} if not nb else {"width": D, "scale_rows": nb, "scale_bytes": SS,
                                 "block": self.unit_signature.block.block}
        m.submodules.gearbox = gbox = Gearbox(beat_bytes=self.feed_bytes, row_bytes=S,
                                              len_bits=len_bits, group_cols=U * D, **blk)
        m.submodules.issue = issue = ActivationIssue(unit=self.unit_signature, addr_bits=aw)
        m.submodules.wb = wb = WriteBack(unit=self.unit_signature, units=U, addr_bits=aw)
        m.submodules.bc_w = bc_w = Fork(U, 8 * S if nb else gbox.o.payload.shape())
        m.submodules.bc_x = bc_x = Fork(U, self.unit_signature.x_layout)
        spad = Scratchpad(self.spad_words, 32 * D, macro=self.spad_macro)
        if self.spad_macro:
            hier.place(m, "spad", spad)
        else:
            m.submodules.spad = spad

        units = []
        for u in range(U):
            mu = self._make_unit()
            hier.place(m, f"mu{u}", mu)   # module name from the unit's own params
            units.append(mu)

        # ---- command registers and control
        c = Signal(cmd_layout(aw, self.hbm_addr_bits))
        kt = Signal(16)
        nt = Signal(16)
        n_groups = Signal(16)
        n_passes = Signal(16)
        group_bytes = Signal(len_bits)
        cmd_cycles = Signal(32)
        start = Signal()
        m.d.comb += [
            kt.eq(_ceil_div_const(c.k, D)),
            nt.eq(_ceil_div_const(c.n, D)),
            group_bytes.eq((kt * D) * S if not nb else kt * tile_bytes),
        ]
        setup_g = Signal(16)
        setup_p = Signal(16)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.cmd.ready.eq(1)
                with m.If(self.cmd.valid):
                    m.d.sync += [c.eq(self.cmd.payload), cmd_cycles.eq(1), n_groups.eq(0),
                                 n_passes.eq(0), setup_g.eq(0), setup_p.eq(0)]
                    m.next = "SETUP"
            with m.State("SETUP"):
                # groups = ceil(NT / units), passes = ceil(M / rows): one step per cycle
                m.d.sync += cmd_cycles.eq(cmd_cycles + 1)
                with m.If(setup_g < nt):
                    m.d.sync += [setup_g.eq(setup_g + U), n_groups.eq(n_groups + 1)]
                with m.If(setup_p < c.m):
                    m.d.sync += [setup_p.eq(setup_p + R), n_passes.eq(n_passes + 1)]
                with m.If((setup_g >= nt) & (setup_p >= c.m)):
                    m.d.comb += start.eq(1)
                    m.next = "START"
            with m.State("START"):
                m.d.sync += cmd_cycles.eq(cmd_cycles + 1)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.sync += cmd_cycles.eq(cmd_cycles + 1)
                with m.If(~(reqgen.busy | gbox.busy | issue.busy | wb.busy)):
                    m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += [self.done.valid.eq(1), self.done.payload.eq(cmd_cycles)]
                with m.If(self.done.ready):
                    m.next = "IDLE"

        m.d.comb += [
            reqgen.start.eq(start), reqgen.group_bytes.eq(group_bytes),
            reqgen.n_groups.eq(n_groups), reqgen.n_passes.eq(n_passes), reqgen.w_addr.eq(c.w_addr),
            gbox.start.eq(start), gbox.group_bytes.eq(group_bytes), gbox.n_groups.eq(n_groups),
            gbox.n_passes.eq(n_passes), gbox.kp.eq(kt * D), gbox.k.eq(c.k), gbox.n.eq(c.n),
            issue.start.eq(start), issue.m.eq(c.m), issue.k.eq(c.k), issue.kt.eq(kt),
            issue.n_groups.eq(n_groups), issue.x_addr.eq(c.x_addr),
            wb.start.eq(start), wb.m.eq(c.m), wb.nt.eq(nt), wb.n_groups.eq(n_groups),
            wb.y_addr.eq(c.y_addr), wb.acc.eq(c.acc),
            self.row_error.eq(wb.row_error),
        ]
        wiring.connect(m, wiring.flipped(self.hbm_req), reqgen.req)
        wiring.connect(m, wiring.flipped(self.hbm_rdata), gbox.i)
        if nb:
            bc_ws = self._scale_path(m, gbox.o, bc_w.i)
        else:
            wiring.connect(m, gbox.o, bc_w.i)
        wiring.connect(m, issue.x, bc_x.i)

        # ---- units
        wslice = D * b
        # Unit u takes its D-wide part of the super-row; x and y have the units' own layouts on
        # both sides (checked when the units are made). The member-by-member assignments keep the
        # Verilog's statement order (wiring.connect would emit the same logic in another order).
        for u, mu in enumerate(units):
            ow, ox = bc_w.outputs()[u], bc_x.outputs()[u]
            yin = getattr(wb, f"y{u}")
            if nb:   # scale rows: unit u's D codes to its ws
                os_ = bc_ws.outputs()[u]
                m.d.comb += [Value.cast(mu.ws.payload).eq(os_.payload[u * 8 * D:(u + 1) * 8 * D]),
                             mu.ws.valid.eq(os_.valid), os_.ready.eq(mu.ws.ready)]
            m.d.comb += [
                Value.cast(mu.w.payload).eq(ow.payload[u * wslice:(u + 1) * wslice]),
                mu.w.valid.eq(ow.valid), ow.ready.eq(mu.w.ready),
            ]
            m.d.comb += [
                mu.x.payload.eq(ox.payload), mu.x.valid.eq(ox.valid), ox.ready.eq(mu.x.ready),
                yin.payload.eq(mu.y.payload), yin.valid.eq(mu.y.valid), mu.y.ready.eq(yin.ready),
            ]

        # ---- scratchpad ports
        m.d.comb += [spad.r0_addr.eq(issue.rd_addr), spad.r0_en.eq(issue.rd_en),
                     issue.rd_data.eq(spad.r0_data)]
        # read port 1 is shared: the write-back's old-y reads (acc = 1) have priority over host
        # reads, and take it only when no host word is waiting in the port's output register
        h_valid = Signal()
        h_adv = Signal()
        m.d.comb += [
            h_adv.eq(~h_valid | self.spad_rdata.ready),
            wb.rd_free.eq(h_adv), wb.rd_data.eq(spad.r1_data),
            spad.r1_addr.eq(Mux(wb.rd_en, wb.rd_addr, self.spad_rreq.payload)),
            spad.r1_en.eq(h_adv),
            self.spad_rreq.ready.eq(h_adv & ~wb.rd_en),
            self.spad_rdata.valid.eq(h_valid), self.spad_rdata.payload.eq(spad.r1_data),
        ]
        with m.If(h_adv):
            m.d.sync += h_valid.eq(self.spad_rreq.valid & ~wb.rd_en)
        m.d.comb += self.spad_w.ready.eq(~wb.wr_en)
        with m.If(wb.wr_en):
            m.d.comb += [spad.w_addr.eq(wb.wr_addr), spad.w_data.eq(wb.wr_data), spad.w_en.eq(1)]
        with m.Else():
            m.d.comb += [spad.w_addr.eq(self.spad_w.payload.addr),
                         spad.w_data.eq(self.spad_w.payload.data), spad.w_en.eq(self.spad_w.valid)]

        # ---- counters
        # One-bit events: segmented counters (hw.mu.counters.event_counter, as the units' own), exact
        # in every cycle with no carry chain behind the events, which come late through the units'
        # ready logic. Events that add an amount (bytes, elements) are registered with it and
        # added a cycle later (long before the command's done), so no adder hangs on a ready.
        def xfer(s):
            return s.valid & s.ready

        def count_events(counter, event, name):
            m.d.comb += counter.eq(event_counter(m, name, len(counter), event))

        def add_later(counter, event, amount, name):
            seen = Signal(name=f"{name}_event")
            m.d.sync += seen.eq(event)
            held = amount
            if not isinstance(amount, int):
                held = Signal(len(Value.cast(amount)), name=f"{name}_amount")
                m.d.sync += held.eq(amount)
            with m.If(seen):
                m.d.sync += counter.eq(counter + held)

        running = gbox.busy
        count_events(self.cycles, Const(1, 1), "cycles")
        with m.If(xfer(self.hbm_req)):
            m.d.sync += self.hbm_req_bytes.eq(self.hbm_req_bytes + self.hbm_req.payload.beats *
                                              self.feed_bytes)
        add_later(self.hbm_rcv_bytes, xfer(self.hbm_rdata), self.feed_bytes, "hbm_rcv")
        add_later(self.w_useful_elems, xfer(gbox.o), gbox.o_useful, "w_useful")
        add_later(self.w_pad_elems, xfer(gbox.o), U * D - gbox.o_useful, "w_pad")
        if nb:   # a tile's scale rows, with its last element row
            add_later(self.w_scale_bytes, xfer(gbox.o) & gbox.o.payload.last, nb * SS, "w_scale")
        count_events(self.x_beats, xfer(issue.x), "x_beats")
        count_events(self.y_rows, wb.wr_en, "y_rows")
        for u, mu in enumerate(units):
            events = {"unit_busy": xfer(mu.w) | xfer(mu.x),
                      "unit_starved": running & mu.w.ready & ~mu.w.valid,
                      "unit_backpressured": mu.y.valid & ~mu.y.ready}
            for name, event in events.items():
                count_events(getattr(self, name)[u], event, f"{name}{u}")
        return m
