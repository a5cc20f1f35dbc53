"""The matrix unit on block-scaled formats (OCP MX, NVFP4): :class:`BlockMatrixUnit`.

Ports and tiles: ``docs/mu_interface.md`` (last section); numerics: ``docs/numerics.md`` section 7.
The structure is :class:`hw.mu.matrix_unit.MatrixUnit`'s (``fp32`` accumulate) with these additions:

* **Weight scales**: a ``ws`` beat is registered (``sr``), then written into scale i of every
  column's loading scale buffer; a tile is complete when its D ``w`` beats and its D/B ``ws`` beats
  have both been written (either stream may run ahead within the loading tile; each stream's
  ``ready`` is ``!complete | swap_fire`` for its own part). The swap makes weights and scales active
  together; the last beat of either stream is forwarded if it is written in the swap's cycle.
* **Activation scales**: the ``scales`` field of an ``x`` beat is registered beside ``xr``.
* **Columns**: :class:`hw.mu.block_column.BlockColumn`.

``MatrixUnit(fmt=<block-scaled format>, ...)`` builds this class.
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from .. import hier
from ..formats import get_block_format
from ..hier import BlockParams
from ..stream import skid_register
from .block_column import BlockColumn, BlockColumnParams
from .control import control_pipeline
from .counters import event_counter
from .exact_acc import GUARD_BITS
from .interface import MatrixUnitSignature, _check_int
from .tree import TREE_ARCHS, TreeParams, tree_levels

__all__ = ["BlockMatrixUnit", "BlockMatrixUnitParams"]

#: The activation register between the ``x`` port and the columns (one cycle, as the plain unit's).
X_REGISTER = 1


@dataclass(frozen=True)
class BlockMatrixUnitParams(BlockParams):
    """Everything that changes a :class:`BlockMatrixUnit`'s logic (and its module name when a slice
    places it)."""

    MODULE: ClassVar[str] = "mu_w{width}_{fmt}_r{rows}_s{stages}{tree}"
    TAGS: ClassVar[dict] = {"tree": TreeParams.TAGS["arch"]}
    width: int
    fmt: str
    rows: int
    stages: int
    tree: str = "dadda"


class BlockMatrixUnit(wiring.Component):
    """DxD matrix unit on a block-scaled format: ``y[row] (+)= x . W`` with per-block scales,
    block terms summed in a window, FP32 accumulation rounded per beat.

    Parameters
    ----------
    width : int
        D, a power of two from 8 to 128 and a multiple of the format's block B.
    fmt : str
        One of :data:`hw.formats.BLOCK_FORMATS`.
    rows, stages, tree :
        As :class:`hw.mu.matrix_unit.MatrixUnit` (``stages`` up to :meth:`max_stages`).
    acc, guard_bits :
        Must be ``fp32`` and the default (no exact mode on block-scaled formats).

    Members
    -------
    w, ws, x, y, cnt_* :
        As :class:`hw.mu.interface.MatrixUnitSignature` says.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named in the message.
    """

    def __init__(self, width: int = 64, fmt: str = "mxfp8_e4m3", rows: int = 1, stages: int = 2,
                 tree: str = "dadda", acc: str = "fp32", guard_bits: int = GUARD_BITS):
        if tree not in TREE_ARCHS:
            raise ValueError(f"tree must be one of {', '.join(TREE_ARCHS)}, not {tree!r}")
        sig = MatrixUnitSignature(width, fmt, rows, acc)  # checks width, fmt (D % B), rows, acc
        _check_int("stages", stages)
        if not 0 <= stages <= self.max_stages(width, fmt):
            raise ValueError(f"stages must lie in 0..{self.max_stages(width, fmt)} for {fmt} "
                             f"(trees of B lanes), not {stages}")
        if guard_bits != GUARD_BITS:
            raise ValueError(f"guard_bits is for acc='exact' only; leave it at {GUARD_BITS}")
        self._tree, self._rows, self._stages = tree, rows, stages
        self.params = BlockMatrixUnitParams(width, fmt, rows, stages, tree)
        super().__init__(sig)

    @staticmethod
    def max_stages(width: int, fmt: str = "mxfp8_e4m3") -> int:
        """Largest ``stages``: normalize + tree output + one per Dadda stage of a B-lane tree."""
        return 2 + tree_levels(get_block_format(fmt).block)

    width = property(lambda self: self.signature.width)
    fmt = property(lambda self: self.signature.fmt)
    rows = property(lambda self: self.signature.rows)
    acc = property(lambda self: self.signature.acc)
    stages = property(lambda self: self._stages)
    row_bits = property(lambda self: self.signature.row_bits)

    @property
    def column(self) -> BlockColumnParams:
        """The parameters of every column."""
        return BlockColumnParams(self.width, self.fmt, self._rows, self._stages, self._tree)

    @property
    def latency(self) -> int:
        """Cycles from accepting an ``x`` beat with ``last`` (cycle t) to ``y__valid`` (t + latency),
        without output backpressure: the activation register + the column's latency."""
        return X_REGISTER + self.column.latency

    def _weights(self, m, x_swap, x_fire, en_next):
        """The ``w`` and ``ws`` loading state; returns (wr_data, we, sr_data, swe, swap_fire,
        tile_ok, w_fire, swap_ok_next). ``wr_data``/``sr_data`` are taken every cycle and read
        only under their one-hot row enables ``we``/``swe`` (registers)."""
        D, b, nb = self.width, self.signature.bits, self.signature.blocks
        kb, ib = (D - 1).bit_length(), (nb - 1).bit_length()
        k, we = Signal(kb), Signal(D)
        wr_data = Signal(D * b, reset_less=True)
        i, swe = Signal(ib, name="si"), Signal(nb, name="swe")
        sr_data = Signal(8 * D, name="sr_data", reset_less=True)
        pend_w, pend_s, act_valid = Signal(), Signal(), Signal()
        full_w, full_s, full = Signal(), Signal(), Signal()
        tile_ok, swap_fire, w_fire, s_fire = Signal(), Signal(), Signal(), Signal()
        m.d.comb += [
            full_w.eq(pend_w | we[D - 1]),
            full_s.eq(pend_s | swe[nb - 1]),
            full.eq(full_w & full_s),
            tile_ok.eq(Mux(x_swap, full, act_valid)),
            swap_fire.eq(x_fire & x_swap),
            self.w.ready.eq(~full_w | swap_fire),
            self.ws.ready.eq(~full_s | swap_fire),
            w_fire.eq(self.w.valid & self.w.ready),
            s_fire.eq(self.ws.valid & self.ws.ready),
        ]
        m.d.sync += [we.eq(Mux(w_fire, 1 << k, 0)), pend_w.eq(full_w & ~swap_fire),
                     swe.eq(Mux(s_fire, 1 << i, 0)), pend_s.eq(full_s & ~swap_fire),
                     wr_data.eq(self.w.payload), sr_data.eq(self.ws.payload)]
        with m.If(w_fire):
            m.d.sync += k.eq(k + 1)
        with m.If(s_fire):
            m.d.sync += i.eq(i + 1)
        with m.If(swap_fire):
            m.d.sync += act_valid.eq(1)
        swap_ok_next = Signal()  # the columns' swap permission in the next cycle
        m.d.comb += swap_ok_next.eq(
            en_next & ((full_w & ~swap_fire) | (w_fire & (k == D - 1)))
            & ((full_s & ~swap_fire) | (s_fire & (i == nb - 1))))
        return wr_data, we, sr_data, swe, swap_fire, tile_ok, w_fire, swap_ok_next

    def elaborate(self, platform):
        m = Module()
        D, b, R = self.width, self.signature.bits, self._rows

        out_valid, skid_valid = Signal(), Signal()
        en, en_next, stall_next = Signal(init=1), Signal(), Signal()  # en = ~skid_valid, as the plain unit's
        m.d.comb += en_next.eq(~stall_next)
        m.d.sync += en.eq(en_next)
        x = self.x.payload
        x_fire = Signal()
        wr_data, we, sr_data, swe, swap_fire, tile_ok, w_fire, swap_ok_next = self._weights(
            m, x.swap, x_fire, en_next)
        m.d.comb += [self.x.ready.eq(en & tile_ok), x_fire.eq(self.x.valid & self.x.ready)]

        xr = Signal(D * b, reset_less=True)
        xsr = Signal(len(x.scales), name="xsr", reset_less=True)
        with m.If(en):  # a bubble's data is never read
            m.d.sync += [xr.eq(x.data), xsr.eq(x.scales)]
        ctrl, acc_we, acc_next = control_pipeline(m, x, x_fire, en, R,
                                                  X_REGISTER + self.column.write_delay)
        acc_ctl = ctrl[-1]

        ys = []
        for j in range(D):
            col = BlockColumn(self.fmt, D, R, self._stages, self._tree)
            hier.place(m, f"col{j}", col)
            m.d.comb += [
                col.wdata.eq(wr_data[j * b:(j + 1) * b]), col.we.eq(we),
                col.sdata.eq(sr_data[j * 8:(j + 1) * 8]), col.swe.eq(swe),
                col.x.eq(xr), col.xs.eq(xsr),
                col.en_next.eq(en_next), col.acc_next.eq(acc_next),
                col.swap_ok_next.eq(swap_ok_next), col.swap_req.eq(self.x.valid & x.swap),
            ]
            ys.append(col.y)
        res = Cat(*ys)

        skid = Signal(D * 32, reset_less=True)
        load = []
        if R > 1:
            res_row, skid_row = Signal(range(R)), Signal(range(R))
            res, skid = Cat(res, res_row), Cat(skid, skid_row)
            load = [res_row.eq(acc_ctl.row)]
        skid_register(m, self.y, res, write=acc_we, write_valid=acc_ctl.last, load=load,
                      out_valid=out_valid, skid_valid=skid_valid, skid=skid, stall_next=stall_next)

        events = {  # (1-bit event, log2 of the step), as the plain unit's
            "cnt_cycles": (1, 0),
            "cnt_w_beats": (w_fire, 0),
            "cnt_x_beats": (x_fire, 0),
            "cnt_y_beats": (self.y.valid & self.y.ready, 0),
            "cnt_stall_tile": (self.x.valid & ~tile_ok, 0),
            "cnt_stall_x": (~self.x.valid, 0),
            "cnt_stall_y": (self.y.valid & ~self.y.ready, 0),
            "cnt_macs": (x_fire, 2 * (D.bit_length() - 1)),  # D * D per beat
        }
        for name in self.signature.counter_ports:
            event, shift = events[name]
            m.d.comb += getattr(self, name).eq(
                event_counter(m, name, self.signature.counter_bits, event, shift=shift))
        return m
