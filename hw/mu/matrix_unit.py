"""Weight-stationary DxD matrix unit with FP8/FP4 inputs and exact dot products into FP32 rows.

The contract (ports, bit layout, tiles, counters, latency, throughput) is ``docs/mu_interface.md``;
the numerics are ``docs/numerics.md``. Structure:

* **Weights**: a ``w`` beat is registered (``wr``), then written into row k of every column's
  loading buffer; the tile is *complete* in the cycle after its D-th beat. An ``x`` beat with
  ``swap`` copies the loading buffers into the active ones as it is accepted (the last row is
  forwarded if it is being written in that cycle), and the next tile's first row may be accepted in
  the same cycle, so single-beat tiles stream at one tile per D cycles.
* **Activations**: an accepted ``x`` beat goes into the activation register ``xr``, which feeds all
  D :class:`~hw.mu.column.Column` blocks (marked with :func:`hw.hier.place`, emitted once). A
  control pipeline (valid, first, last, row) runs beside the columns' ``stages`` registers.
* **Output**: the columns' accumulator registers are the result; a skid register takes the result
  row when ``y`` is backpressured and a new row is written, and the whole pipeline stops (``en``
  low, a registered signal) only while the skid register is full.
* **Counters**: 48-bit event counters as output ports.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from ..formats import MATRIX_FORMATS
from .column import Column
from .numerics import dot_widths
from .tree import TREE_ARCHS, tree_levels

__all__ = ["MatrixUnit", "COUNTERS", "COUNTER_BITS"]

COUNTER_BITS = 48
#: Counter ports, in order (see docs/mu_interface.md for the exact definitions).
COUNTERS = ("cnt_cycles", "cnt_w_beats", "cnt_x_beats", "cnt_y_beats", "cnt_stall_tile",
            "cnt_stall_x", "cnt_stall_y", "cnt_macs")


def _check_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")


class MatrixUnit(wiring.Component):
    """DxD matrix unit: ``y[row] (+)= x . W`` with exact products and sums, FP32 accumulation.

    Parameters
    ----------
    width : int
        D, a power of two from 8 to 128.
    fmt : str
        Element format of ``w`` and ``x``: ``fp8_e4m3``, ``fp8_e5m2`` or ``fp4_e2m1``.
    rows : int
        R >= 1 accumulator rows (batch rows).
    stages : int
        Pipeline registers inside each column, 0 .. :meth:`max_stages` (D).
    tree : str
        Column sum: ``dadda`` (bit-level compressor tree, the synthesis default) or ``words``
        (word-level adder tree: same exact result and latency, far faster to Verilate).

    Members
    -------
    w : In(stream.Signature(D * b))
        Weight rows.
    x : In(stream.Signature(x_layout))
        Activation rows with flags ``swap``, ``first``, ``last`` and the row index.
    y : Out(stream.Signature(y_layout))
        FP32 result rows with the row index.
    cnt_cycles, cnt_w_beats, cnt_x_beats, cnt_y_beats, cnt_stall_tile, cnt_stall_x, cnt_stall_y,
    cnt_macs : Out(48)
        Event counters.

    Raises
    ------
    TypeError
        A parameter of the wrong type.
    ValueError
        A parameter out of range; the message names the parameter, the value and what is allowed.
    """

    def __init__(self, width: int = 64, fmt: str = "fp8_e4m3", rows: int = 1, stages: int = 2,
                 tree: str = "dadda"):
        if tree not in TREE_ARCHS:
            raise ValueError(f"tree must be one of {', '.join(TREE_ARCHS)}, not {tree!r}")
        self._tree = tree
        _check_int("width", width)
        if not 8 <= width <= 128 or width & (width - 1):
            raise ValueError(f"width must be a power of two in 8..128 (8, 16, 32, 64, 128), "
                             f"not {width}")
        if not isinstance(fmt, str):
            raise TypeError(f"fmt must be a format name (one of {', '.join(MATRIX_FORMATS)}), "
                            f"not {fmt!r}")
        if fmt not in MATRIX_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(MATRIX_FORMATS)}, not {fmt!r}")
        _check_int("rows", rows)
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows}")
        _check_int("stages", stages)
        if not 0 <= stages <= self.max_stages(width):
            raise ValueError(f"stages must lie in 0..{self.max_stages(width)} for width {width}, "
                             f"not {stages}")
        self._dw = dot_widths(fmt, width)
        self._rows, self._stages = rows, stages
        D, b = width, self._dw.fmt.bits
        row_field = {"row": range(rows)} if rows > 1 else {}
        self.x_layout = data.StructLayout({"data": D * b, "swap": 1, "first": 1, "last": 1,
                                           **row_field})
        self.y_layout = data.StructLayout({"data": D * 32, **row_field})
        members = {
            "w": In(stream.Signature(D * b)),
            "x": In(stream.Signature(self.x_layout)),
            "y": Out(stream.Signature(self.y_layout)),
        }
        members.update({name: Out(COUNTER_BITS) for name in COUNTERS})
        super().__init__(members)

    @staticmethod
    def max_stages(width: int) -> int:
        """Largest ``stages`` for width D: normalize + tree output + one per Dadda stage."""
        return 2 + tree_levels(width)

    @property
    def width(self) -> int:
        return self._dw.width

    @property
    def fmt(self) -> str:
        return self._dw.fmt.name

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def stages(self) -> int:
        return self._stages

    @property
    def row_bits(self) -> int:
        """Bits of the row index in ``x`` and ``y`` payloads (``ceil(log2 R)``)."""
        return (self._rows - 1).bit_length()

    @property
    def latency(self) -> int:
        """Cycles from accepting an ``x`` beat with ``last`` (cycle t) to ``y__valid`` (t + latency),
        without output backpressure: activation register + ``stages`` + accumulator register."""
        return self._stages + 2

    @property
    def widths(self):
        """The :class:`hw.mu.numerics.DotWidths` of this unit."""
        return self._dw

    def elaborate(self, platform):
        m = Module()
        D, b, S, R = self._dw.width, self._dw.fmt.bits, self._stages, self._rows
        kb = (D - 1).bit_length()

        # -- output buffer state (decides the pipeline enable) --------------------------------
        out_valid = Signal()  # the columns' result registers hold an unconsumed row
        skid_valid = Signal()
        en = Signal()
        m.d.comb += en.eq(~skid_valid)

        # -- weights --------------------------------------------------------------------------
        k = Signal(kb)  # row of the next accepted weight beat
        wr_valid, wr_k, wr_data = Signal(), Signal(kb), Signal(D * b, reset_less=True)
        pend = Signal()  # a complete tile waits in the loading buffers
        act_valid = Signal()  # an active tile exists
        full = Signal()  # complete, or its last row is being written now
        m.d.comb += full.eq(pend | (wr_valid & (wr_k == D - 1)))

        x = self.x.payload
        tile_ok = Signal()
        x_fire, swap_fire, w_fire = Signal(), Signal(), Signal()
        m.d.comb += [
            tile_ok.eq(Mux(x.swap, full, act_valid)),
            self.x.ready.eq(en & tile_ok),
            x_fire.eq(self.x.valid & self.x.ready),
            swap_fire.eq(x_fire & x.swap),
            self.w.ready.eq(~full | swap_fire),
            w_fire.eq(self.w.valid & self.w.ready),
        ]
        m.d.sync += [wr_valid.eq(w_fire), pend.eq(full & ~swap_fire)]
        with m.If(w_fire):
            m.d.sync += [wr_data.eq(self.w.payload), wr_k.eq(k), k.eq(k + 1)]
        with m.If(swap_fire):
            m.d.sync += act_valid.eq(1)
        we = Signal(D)
        m.d.comb += we.eq(Mux(wr_valid, 1 << wr_k, 0))

        # -- activation register and control pipeline -----------------------------------------
        xr = Signal(D * b, reset_less=True)  # data registers carry no reset
        with m.If(x_fire):
            m.d.sync += xr.eq(x.data)
        ctrl_layout = data.StructLayout({"valid": 1, "first": 1, "last": 1,
                                         **({"row": range(R)} if R > 1 else {})})
        ctrl = [Signal(ctrl_layout, name=f"ctrl{i}") for i in range(S + 1)]
        with m.If(en):
            m.d.sync += [ctrl[0].valid.eq(x_fire), ctrl[0].first.eq(x.first), ctrl[0].last.eq(x.last)]
            if R > 1:
                m.d.sync += ctrl[0].row.eq(x.row)
            for i in range(1, S + 1):
                m.d.sync += ctrl[i].eq(ctrl[i - 1])
        acc_ctl = ctrl[S]
        acc_we = Signal()
        m.d.comb += acc_we.eq(en & acc_ctl.valid)

        # -- columns --------------------------------------------------------------------------
        ys = []
        for j in range(D):
            col = Column(self._dw.fmt, D, R, S, self._tree)
            hier.place(m, f"col{j}", col, module=col.module_name)
            m.d.comb += [
                col.en.eq(en), col.wdata.eq(wr_data[j * b:(j + 1) * b]), col.we.eq(we),
                col.swap.eq(swap_fire), col.x.eq(xr), col.acc_we.eq(acc_we),
                col.first.eq(acc_ctl.first),
            ]
            if R > 1:
                m.d.comb += col.row.eq(acc_ctl.row)
            ys.append(col.y)
        res = Cat(*ys)

        # -- output: result registers + skid register ----------------------------------------
        skid = Signal(D * 32, reset_less=True)
        if R > 1:  # the row travels with the result
            res_row, skid_row = Signal(range(R)), Signal(range(R))
            res = Cat(res, res_row)
            skid = Cat(skid, skid_row)
        with m.If(skid_valid):
            with m.If(self.y.ready):
                m.d.sync += skid_valid.eq(0)
        with m.Elif(acc_we):
            with m.If(out_valid & ~self.y.ready):
                m.d.sync += [skid.eq(res), skid_valid.eq(1)]
            m.d.sync += out_valid.eq(acc_ctl.last)
            if R > 1:
                m.d.sync += res_row.eq(acc_ctl.row)
        with m.Elif(self.y.ready):
            m.d.sync += out_valid.eq(0)
        m.d.comb += [
            self.y.valid.eq(out_valid | skid_valid),
            self.y.payload.as_value().eq(Mux(skid_valid, skid, res)),
        ]

        # -- counters -------------------------------------------------------------------------
        events = {
            "cnt_cycles": 1,
            "cnt_w_beats": w_fire,
            "cnt_x_beats": x_fire,
            "cnt_y_beats": self.y.valid & self.y.ready,
            "cnt_stall_tile": self.x.valid & ~tile_ok,
            "cnt_stall_x": ~self.x.valid,
            "cnt_stall_y": self.y.valid & ~self.y.ready,
            "cnt_macs": Mux(x_fire, D * D, 0),
        }
        for name in COUNTERS:
            cnt = Signal(COUNTER_BITS, name=name)
            m.d.sync += cnt.eq(cnt + events[name])
            m.d.comb += getattr(self, name).eq(cnt)
        return m
