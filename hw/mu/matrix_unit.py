"""Weight-stationary DxD matrix unit with FP8/FP6/FP4 inputs, per-tensor or block-scaled, and exact
dot products into FP32 rows.

The contract (ports, bit layout, tiles, counters, latency, throughput) is ``docs/mu_interface.md``;
the numerics are ``docs/numerics.md``. Structure:

* **Weights**: a ``w`` beat is registered (``wr``), then written into row k of every column's
  loading buffer; the tile is *complete* in the cycle after its D-th beat. An ``x`` beat with
  ``swap`` copies the loading buffers into the active ones as it is accepted (the last row is
  forwarded if it is being written in that cycle), and the next tile's first row may be accepted in
  the same cycle, so single-beat tiles stream at one tile per D cycles.
* **Block scales** (block-scaled formats): a ``ws`` beat is registered (``sr_data``), then written
  into scale i of every column's loading scale buffer; a tile is complete when its D ``w`` beats and
  its D/B ``ws`` beats have both been written (either stream may run ahead within the loading tile;
  each stream's ``ready`` is ``!complete | swap`` for its own part). The swap makes weights and
  scales active together. The ``scales`` field of an ``x`` beat is registered beside ``xr``.
* **Activations**: an accepted ``x`` beat goes into the activation register ``xr``, which feeds all
  D :class:`~hw.mu.column.Column` blocks (marked with :func:`hw.hier.place`, emitted once). A
  control pipeline (valid, first, last, row) runs beside the columns' ``stages`` registers.
* **Output**: the columns' result registers (the accumulators in the ``fp32`` mode, the drained
  results in the ``exact`` mode) are the result; a skid register (:func:`hw.stream.skid_register`)
  takes the result row when ``y`` is backpressured and a new row is written, and the whole pipeline
  stops (``en`` low, a register) only while the skid register is full. The enable, the control at
  the accumulate stage and the swap permission are registered again in every column from their
  next values (:mod:`hw.mu.control`), so none of them fans out from one flop to all D columns.
  In the ``exact`` mode the control pipeline goes on for the columns' drain (``valid & last`` and
  the row), so the result registers are written only with results.
* **Counters**: 48-bit event counters as output ports (``cnt_acc_overflow`` in the ``exact`` mode,
  counted from column 0: every column drains the same beat count), segmented with precomputed
  increments (:func:`hw.mu.counters.event_counter`) so no carry runs through all 48 bits.

The ports, payload layouts and counters are :class:`hw.mu.interface.MatrixUnitSignature`; the
latency is composed from the blocks' (:attr:`MatrixUnit.latency`).
"""

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring

from .. import hier
from ..clock_gate import gated_assign
from ..formats import BLOCK_FORMATS
from ..hier import BlockParams
from ..stream import skid_register
from .accumulate import LOOP_CYCLES
from .column import Column, ColumnParams
from .control import control_pipeline
from .counters import event_counter
from .exact_acc import GUARD_BITS
from .interface import MatrixUnitSignature, _check_int
from .numerics import dot_widths
from .tree import TREE_ARCHS, TreeParams, tree_levels

__all__ = ["MatrixUnit", "MatrixUnitParams", "max_stages"]

#: The activation register between the ``x`` port and the columns (one cycle).
X_REGISTER = 1


@dataclass(frozen=True)
class MatrixUnitParams(BlockParams):
    """A matrix unit's parameters as one typed, immutable value, validated when it is made: the one
    place that decides which combinations exist (the registry, the slice, the testbenches and the
    flows build units from it). Also everything that changes a :class:`MatrixUnit`'s logic, so it
    names the unit's module when a slice places it.

    Fields are :class:`MatrixUnit`'s parameters.

    Raises
    ------
    TypeError
        A parameter of the wrong type.
    ValueError
        A parameter out of range or a combination that does not exist; the message names the
        parameter, the value and what is allowed.
    """

    MODULE: ClassVar[str] = "mu_w{width}_{fmt}_r{rows}_s{stages}{tree}{acc}{guard_bits}{loop}{gate}{isolate}"
    TAGS: ClassVar[dict] = {"tree": TreeParams.TAGS["arch"], "acc": ColumnParams.TAGS["acc"],
                            "guard_bits": ColumnParams.TAGS["guard_bits"],
                            "loop": ColumnParams.TAGS["loop"], "gate": ColumnParams.TAGS["gate"],
                            "isolate": ColumnParams.TAGS["isolate"]}
    width: int = 64
    fmt: str = "fp8_e4m3"
    rows: int = 1
    stages: int = 2
    tree: str = "dadda"
    acc: str = "fp32"
    guard_bits: int = GUARD_BITS
    loop: int = 1
    gate: bool = False
    isolate: bool = False

    def __post_init__(self):
        if self.tree not in TREE_ARCHS:
            raise ValueError(f"tree must be one of {', '.join(TREE_ARCHS)}, not {self.tree!r}")
        self.signature()  # checks width, fmt (D % B), rows, acc
        _check_int("stages", self.stages)
        top = max_stages(self.width, self.acc, self.fmt)
        if not 0 <= self.stages <= top:
            trees = f" ({self.fmt}: trees of B lanes)" if self.fmt in BLOCK_FORMATS else ""
            raise ValueError(f"stages must lie in 0..{top} for width {self.width} and "
                             f"acc={self.acc!r}{trees}, not {self.stages}")
        _check_int("guard_bits", self.guard_bits)
        if self.guard_bits < 1 or (self.acc == "fp32" and self.guard_bits != GUARD_BITS):
            raise ValueError(f"guard_bits must be an integer >= 1 with acc='exact' (and stay "
                             f"{GUARD_BITS} with acc='fp32'), not {self.guard_bits}")
        _check_int("loop", self.loop)
        if self.loop not in LOOP_CYCLES or (self.acc != "fp32" and self.loop != 1):
            raise ValueError(f"loop must be one of {LOOP_CYCLES} with acc='fp32' (and stay 1 with "
                             f"acc='exact'), not {self.loop}")
        if not isinstance(self.gate, bool):
            raise TypeError(f"gate must be a bool (True: clock-gate the weight buffers), not "
                            f"{self.gate!r}")
        if not isinstance(self.isolate, bool):
            raise TypeError(f"isolate must be a bool (True: zero products hold the trees' inputs), "
                            f"not {self.isolate!r}")

    def signature(self) -> MatrixUnitSignature:
        """The unit's ports (:class:`hw.mu.interface.MatrixUnitSignature`)."""
        return MatrixUnitSignature(self.width, self.fmt, self.rows, self.acc)

    def options(self) -> dict:
        """The parameters as keyword arguments of :class:`MatrixUnit`."""
        return dataclasses.asdict(self)

    @property
    def column(self) -> ColumnParams:
        """The parameters of every column (they are all alike)."""
        return ColumnParams(**self.options())

    @property
    def latency(self) -> int:
        """Cycles from accepting an ``x`` beat with ``last`` to ``y__valid``, without output
        backpressure: the activation register + the column's latency (:attr:`MatrixUnit.latency`)."""
        return X_REGISTER + self.column.latency


def max_stages(width: int, acc: str = "fp32", fmt: str = "fp8_e4m3") -> int:
    """Largest ``stages`` for width D: normalize + tree output + one per Dadda stage (``fp32``);
    the tree's two rows + one per Dadda stage (``exact``). The trees of a block-scaled format are
    B lanes wide."""
    bf = BLOCK_FORMATS.get(fmt)  # block sums are resolved in either mode: a NORM cut as in fp32
    if bf is not None:  # (exact: + the register on the scaled block terms)
        return 2 + (acc == "exact") + tree_levels(bf.block)
    return (1 if acc == "exact" else 2) + tree_levels(width)


class MatrixUnit(wiring.Component):
    """DxD matrix unit: ``y[row] (+)= x . W`` with exact products and sums, FP32 accumulation
    rounded per beat (``fp32``) or once per accumulation (``exact``).

    Parameters
    ----------
    width : int
        D, a power of two from 8 to 128.
    fmt : str
        Element format of ``w`` and ``x`` (:data:`hw.formats.MATRIX_FORMATS`), or a block-scaled
        format (:data:`hw.formats.BLOCK_FORMATS`: D a multiple of its block B; ``acc = "exact"``
        sums on one fixed-point grid for a scale format with a narrow exponent range, NVFP4, and
        in a window anchored at the largest term for OCP MX, :mod:`hw.mu.window`).
        The block scale is an axis of the same unit: it adds the ``ws`` stream and its loading
        state beside the weights', the activation scale register beside ``xr``, and in every
        column the scale buffer, D/B trees of B lanes and the scaled window sum
        (:mod:`hw.mu.scales`).
    rows : int
        R >= 1 accumulator rows (batch rows).
    stages : int
        Pipeline registers inside each column, 0 .. :meth:`max_stages` (D, acc).
    tree : str
        Column sum: ``dadda`` (bit-level compressor tree, the synthesis default) or ``words``
        (word-level adder tree: same exact result and latency, far faster to Verilate).
    acc : str
        Accumulate mode (:data:`hw.mu.numerics.ACC_MODES`): ``fp32`` rounds ``acc + S`` to FP32 on every
        beat; ``exact`` sums the beats first..last exactly and rounds once (``docs/numerics.md``).
    guard_bits : int
        ``exact`` mode: accumulations up to ``2**guard_bits`` beats are exact; longer ones give NaN
        and count in ``cnt_acc_overflow``. Must stay at its default in the ``fp32`` mode.
    loop : int
        ``fp32`` mode: cycles of the accumulate loop, 1 or 2. With 2 the loop's add and its
        rounding take a cycle each (a shorter critical path, one more cycle of latency) and an
        ``x`` beat whose row equals that of the beat accepted in the previous enabled cycle waits
        one cycle (``docs/mu_interface.md``, throughput). Must stay 1 in the ``exact`` mode.
    gate : bool
        Clock gates (:mod:`hw.clock_gate`) in the columns (:class:`hw.mu.column.Column`) and on the
        top's weight-row and scale-row registers (enable: a ``w``/``ws`` beat is taken) and its
        activation register (an ``x`` beat is taken).
    isolate : bool
        Operand isolation in every lane (:class:`hw.mu.lane.Lane`): a zero product (a zero weight,
        e.g. the padding columns beyond a matmul's N, or a zero activation) hands the column tree
        ``t = 0, neg = 0`` whatever the other operand's sign, so those lanes hold the tree's inputs.

    Members
    -------
    w, ws, x, y, cnt_* :
        As :class:`hw.mu.interface.MatrixUnitSignature` (``self.signature``) says: weight rows,
        weight-scale rows (block-scaled formats), activation rows with flags (and scale codes),
        FP32 result rows, event counters.

    Raises
    ------
    TypeError
        A parameter of the wrong type.
    ValueError
        A parameter out of range; the message names the parameter, the value and what is allowed.
    """

    def __init__(self, width: int = 64, fmt: str = "fp8_e4m3", rows: int = 1, stages: int = 2,
                 tree: str = "dadda", acc: str = "fp32", guard_bits: int = GUARD_BITS,
                 loop: int = 1, gate: bool = False, isolate: bool = False):
        self.params = MatrixUnitParams(width, fmt, rows, stages, tree, acc, guard_bits, loop, gate,
                                       isolate)
        self._tree = tree
        self._bf = BLOCK_FORMATS.get(fmt)
        self._dw = dot_widths(fmt if self._bf is None else self._bf.element, width)
        self._rows, self._stages, self._acc, self._guard = rows, stages, acc, guard_bits
        self._loop = loop
        super().__init__(self.params.signature())

    @classmethod
    def from_params(cls, params: MatrixUnitParams) -> "MatrixUnit":
        """The unit of a parameter value."""
        return cls(**params.options())

    max_stages = staticmethod(max_stages)

    @property
    def width(self) -> int:
        return self.signature.width

    @property
    def fmt(self) -> str:
        return self.signature.fmt

    @property
    def rows(self) -> int:
        return self.signature.rows

    @property
    def stages(self) -> int:
        return self._stages

    @property
    def row_bits(self) -> int:
        """Bits of the row index in ``x`` and ``y`` payloads (``ceil(log2 R)``)."""
        return self.signature.row_bits

    @property
    def acc(self) -> str:
        return self.signature.acc

    @property
    def column(self) -> ColumnParams:
        """The parameters of every column (they are all alike)."""
        return self.params.column

    @property
    def latency(self) -> int:
        """Cycles from accepting an ``x`` beat with ``last`` (cycle t) to ``y__valid`` (t + latency),
        without output backpressure: the activation register + the column's latency (tree,
        normalize register, accumulator register; the add register with ``loop = 2``; and the
        drain pipeline in the ``exact`` mode)."""
        return self.params.latency

    @property
    def widths(self):
        """The :class:`hw.mu.numerics.DotWidths` of this unit."""
        return self._dw

    def elaborate(self, platform):
        m = Module()
        D, b, S, R = self._dw.width, self._dw.fmt.bits, self._stages, self._rows

        # -- output buffer state (decides the pipeline enable) --------------------------------
        out_valid = Signal()  # the columns' result registers hold an unconsumed row
        skid_valid = Signal()
        # the pipeline enable (= ~skid_valid), a register of its own: the columns keep their own
        # copies of it, from its next value (hw.mu.control.column_control)
        en, en_next, stall_next = Signal(init=1), Signal(), Signal()
        m.d.comb += en_next.eq(~stall_next)
        m.d.sync += en.eq(en_next)

        # -- weights (and their block scales) --------------------------------------------------
        loads = [_Load.make(self.w, D, D * b, ("k", "we", "wr_data", "pend"))]
        if self._bf is not None:  # D/B weight-scale beats per tile, loaded beside the weights
            nb = D // self._bf.block
            loads.append(_Load.make(self.ws, nb, 8 * D, ("si", "swe", "sr_data", "pend_s"),
                                    full="full_s"))
        act_valid = Signal()  # an active tile exists
        full = Signal()  # complete, or its last rows are being written now
        if len(loads) == 1:
            loads[0].full = full
        else:
            loads[0].full = Signal(name="full_w")
        for ld in loads:
            m.d.comb += ld.full.eq(ld.pend | ld.we[ld.n - 1])
        if len(loads) > 1:
            m.d.comb += full.eq(loads[0].full & loads[1].full)

        x = self.x.payload
        tile_ok = Signal()
        x_fire, swap_fire, w_fire = Signal(), Signal(), Signal()
        loads[0].fire = w_fire
        for ld in loads[1:]:
            ld.fire = Signal(name="s_fire")
        hazard = Signal() if self._loop == 2 else None  # the beat would read the row being written
        m.d.comb += [
            tile_ok.eq(Mux(x.swap, full, act_valid)),
            self.x.ready.eq(en & tile_ok if hazard is None else en & tile_ok & ~hazard),
            x_fire.eq(self.x.valid & self.x.ready),
            swap_fire.eq(x_fire & x.swap),
        ]
        for ld in loads:  # either stream may run ahead within the loading tile
            m.d.comb += [ld.stream.ready.eq(~ld.full | swap_fire),
                         ld.fire.eq(ld.stream.valid & ld.stream.ready)]
        for ld in loads:
            if self.params.gate:  # the row register loads only with a beat
                m.d.sync += [ld.we.eq(Mux(ld.fire, 1 << ld.count, 0)), ld.pend.eq(ld.full & ~swap_fire)]
                gated_assign(m, platform, ld.fire, [(ld.data, ld.stream.payload)], f"{ld.data.name}_g")
                continue
            m.d.sync += [ld.we.eq(Mux(ld.fire, 1 << ld.count, 0)), ld.pend.eq(ld.full & ~swap_fire),
                         ld.data.eq(ld.stream.payload)]
        for ld in loads:
            with m.If(ld.fire):
                m.d.sync += ld.count.eq(ld.count + 1)
        with m.If(swap_fire):
            m.d.sync += act_valid.eq(1)
        # the columns' swap permission: enabled and a complete tile waits, in the next cycle
        swap_ok_next = Signal()
        ok = en_next
        for ld in loads:
            ok = ok & ((ld.full & ~swap_fire) | (ld.fire & (ld.count == ld.n - 1)))
        m.d.comb += swap_ok_next.eq(ok)
        we, wr_data = loads[0].we, loads[0].data

        # -- activation register and control pipeline -----------------------------------------
        xr = Signal(D * b, reset_less=True)  # data registers carry no reset
        x_regs = [xr.eq(x.data)]
        if self._bf is not None:  # the beat's activation scale codes
            xsr = Signal(len(x.scales), name="xsr", reset_less=True)
            x_regs.append(xsr.eq(x.scales))
        if self.params.gate:  # loads only with a beat (x_fire includes en)
            gated_assign(m, platform, x_fire, [(a.lhs, a.rhs) for a in x_regs], "xr")
        else:
            with m.If(en):  # a bubble's data is never read (its control says it is not a beat)
                m.d.sync += x_regs
        ctrl, acc_we, acc_next, ahead_next = control_pipeline(m, x, x_fire, en, R,
                                                              X_REGISTER + self.column.write_delay)
        acc_ctl = ctrl[-1]
        if hazard is not None:  # ctrl[0] holds the beat accepted in the previous enabled cycle; every
            # stage behind it moves with en, so one bubble here keeps the two beats of a row one
            # enabled cycle apart at the accumulator's read
            same = (ctrl[0].row == x.row) if R > 1 else 1
            m.d.comb += hazard.eq(ctrl[0].valid & same)
        exact = self._acc == "exact"
        delayed = self.column.result_delay > 0
        if delayed:  # results leave column.result_delay cycles after the accumulate: the exact
            # mode's drain (valid & last and the row), the loop's write cycle (valid, last, row)
            res_layout = data.StructLayout({"valid": 1, **({} if exact else {"last": 1}),
                                            **({"row": range(R)} if R > 1 else {})})
            res_ctl = [Signal(res_layout, name=f"res{i}") for i in range(self.column.result_delay)]
            with m.If(en):
                if exact:
                    m.d.sync += [res_ctl[0].valid.eq(acc_ctl.valid & acc_ctl.last)]
                else:
                    m.d.sync += [res_ctl[0].valid.eq(acc_ctl.valid), res_ctl[0].last.eq(acc_ctl.last)]
                if R > 1:
                    m.d.sync += res_ctl[0].row.eq(acc_ctl.row)
                for i in range(1, len(res_ctl)):
                    m.d.sync += res_ctl[i].eq(res_ctl[i - 1])
            res_we = Signal()
            m.d.comb += res_we.eq(en & res_ctl[-1].valid)

        # the columns decode the swap from this and their own swap permission: an offered swap beat
        # the interlock holds back (loop = 2) must not swap
        swap_req = self.x.valid & x.swap if hazard is None else self.x.valid & x.swap & ~hazard

        # -- columns --------------------------------------------------------------------------
        ys = []
        for j in range(D):
            col = Column(self.fmt if self._bf is not None else self._dw.fmt, D, R, S, self._tree,
                         self._acc, self._guard, self._loop, self.params.gate, self.params.isolate)
            hier.place(m, f"col{j}", col)
            if exact and j == 0:
                overflow = col.overflow
            m.d.comb += [
                col.wdata.eq(wr_data[j * b:(j + 1) * b]), col.we.eq(we), col.x.eq(xr),
                col.en_next.eq(en_next), col.acc_next.eq(acc_next),
                col.swap_ok_next.eq(swap_ok_next), col.swap_req.eq(swap_req),
            ]
            if self._bf is not None:
                m.d.comb += [col.sdata.eq(loads[1].data[j * 8:(j + 1) * 8]), col.swe.eq(loads[1].we),
                             col.xs.eq(xsr)]
            if hasattr(col, "ahead_next"):
                m.d.comb += col.ahead_next.eq(ahead_next)
            if self.params.gate:
                m.d.comb += col.xv_next.eq(x_fire)
            ys.append(col.y)
        res = Cat(*ys)

        # -- output: result registers + skid register ----------------------------------------
        skid = Signal(D * 32, reset_less=True)
        load = []
        if R > 1:  # the row travels with the result
            res_row, skid_row = Signal(range(R)), Signal(range(R))
            res = Cat(res, res_row)
            skid = (Signal(len(res), name="skid", reset_less=True) if self.params.gate
                    else Cat(skid, skid_row))
            load = [res_row.eq(res_ctl[-1].row if delayed else acc_ctl.row)]
        # gated: the skid register sees the clock only when it saves a result
        out = dict(out_valid=out_valid, skid_valid=skid_valid, skid=skid, stall_next=stall_next,
                   gate=platform if self.params.gate else None)
        if exact:  # the result registers change only with results
            skid_register(m, self.y, res, write=res_we, write_valid=1, load=load, **out)
        elif delayed:  # loop = 2: every write overwrites the result registers, a last beat's is a row
            skid_register(m, self.y, res, write=res_we, write_valid=res_ctl[-1].last, load=load, **out)
        else:  # every accumulate overwrites the result registers; only a ``last`` beat makes a row
            skid_register(m, self.y, res, write=acc_we, write_valid=acc_ctl.last, load=load, **out)

        # -- counters -------------------------------------------------------------------------
        events = {  # (1-bit event, log2 of the step)
            "cnt_cycles": (1, 0),
            "cnt_w_beats": (w_fire, 0),
            "cnt_x_beats": (x_fire, 0),
            "cnt_y_beats": (self.y.valid & self.y.ready, 0),
            "cnt_stall_tile": (self.x.valid & ~tile_ok, 0),
            "cnt_stall_x": (~self.x.valid, 0),
            "cnt_stall_y": (self.y.valid & ~self.y.ready, 0),
            "cnt_macs": (x_fire, 2 * (D.bit_length() - 1)),  # D * D per beat
        }
        if exact:  # column 0's overflow is high from the result's write to the next enabled edge
            events["cnt_acc_overflow"] = (en & overflow, 0)
        for name in self.signature.counter_ports:
            event, shift = events[name]
            m.d.comb += getattr(self, name).eq(
                event_counter(m, name, self.signature.counter_bits, event, shift=shift,
                              gate=platform if self.params.gate else None))
        return m


@dataclass
class _Load:
    """The loading state of one tile stream (the weights, or the block-scaled formats' weight
    scales): the row counter, the one-hot row enable and the registered beat (registers), the
    complete flag, ``full`` (complete, or its last row is being written now) and the stream's
    handshake ``fire``."""

    stream: object
    n: int
    count: Signal
    we: Signal
    data: Signal
    pend: Signal
    full: Signal | None = None
    fire: Signal | None = None

    @classmethod
    def make(cls, stream, n: int, bits: int, names: tuple, full: str | None = None):
        count, we, data, pend = names
        return cls(stream, n, Signal((n - 1).bit_length(), name=count), Signal(n, name=we),
                   Signal(bits, name=data, reset_less=True), Signal(name=pend),
                   None if full is None else Signal(name=full))
