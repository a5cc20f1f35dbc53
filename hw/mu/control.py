"""The matrix units' control pipeline: one ``{valid, first, last, row}`` record per beat in flight."""

from amaranth.hdl import Signal
from amaranth.lib import data

__all__ = ["control_pipeline"]


def control_pipeline(m, x, x_fire, en, rows: int, depth: int):
    """Registers that carry each beat's control beside its data, advancing while ``en`` is high.

    ``ctrl[0]`` sits beside the activation register; ``ctrl[depth - 1]`` is the beat at the
    columns' accumulate stage.

    Returns
    -------
    (list of Signal, Signal)
        The ``depth`` control registers and ``acc_we`` (the last one holds a beat and ``en``).
    """
    ctrl_layout = data.StructLayout({"valid": 1, "first": 1, "last": 1,
                                     **({"row": range(rows)} if rows > 1 else {})})
    ctrl = [Signal(ctrl_layout, name=f"ctrl{i}") for i in range(depth)]
    with m.If(en):
        m.d.sync += [ctrl[0].valid.eq(x_fire), ctrl[0].first.eq(x.first), ctrl[0].last.eq(x.last)]
        if rows > 1:
            m.d.sync += ctrl[0].row.eq(x.row)
        for i in range(1, depth):
            m.d.sync += ctrl[i].eq(ctrl[i - 1])
    acc_we = Signal(name="acc_we")
    m.d.comb += acc_we.eq(en & ctrl[-1].valid)
    return ctrl, acc_we
