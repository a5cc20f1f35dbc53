"""The matrix units' control: the pipeline of ``{valid, first, last, row}`` records beside the data,
and its per-column copy.

The pipeline enable and the weight swap reach every pipeline register and every weight of the
unit. Driven from one flop, either net would fan out to D columns x hundreds of registers, and the
buffer tree alone would set the clock. So the top computes their *next* values from its registered
state and its inputs (the accumulate control's in :func:`control_pipeline`, the enable's and the
swap permission's in the unit), and each column registers its own copy
(:func:`column_control`): a column's enable, accumulate control and swap permission are flops in
the column, and the swap is decoded there from them and two input bits.
"""

from amaranth.hdl import Signal
from amaranth.lib import data
from amaranth.lib.wiring import In

__all__ = ["control_layout", "control_pipeline", "column_control_members", "column_control",
           "column_control_ahead"]


def control_layout(rows: int) -> data.StructLayout:
    """The record of one beat in flight: ``valid``, ``first``, ``last``, ``row`` (if R > 1)."""
    return data.StructLayout({"valid": 1, "first": 1, "last": 1,
                              **({"row": range(rows)} if rows > 1 else {})})


def control_pipeline(m, x, x_fire, en, rows: int, depth: int):
    """Registers that carry each beat's control beside its data, advancing while ``en`` is high.

    ``ctrl[0]`` sits beside the activation register; ``ctrl[depth - 1]`` is the beat at the
    columns' accumulate stage.

    Returns
    -------
    (list of Signal, Signal, Signal, Value)
        The ``depth`` control registers; ``acc_we`` (the last one holds a beat and ``en``);
        ``acc_next``, what the last register takes at an enabled clock edge (the columns' copies of
        it load the same value, :func:`column_control`); and ``ahead_next``, what the register two
        before it takes (for the columns whose accumulator reads the control two stages ahead,
        :func:`column_control_ahead`; None if ``depth < 3``).
    """
    layout = control_layout(rows)
    first_in = Signal(layout, name="ctrl_in")
    m.d.comb += [first_in.valid.eq(x_fire), first_in.first.eq(x.first), first_in.last.eq(x.last)]
    if rows > 1:
        m.d.comb += first_in.row.eq(x.row)
    ctrl = [Signal(layout, name=f"ctrl{i}") for i in range(depth)]
    ins = [first_in] + ctrl[:-1]
    with m.If(en):
        m.d.sync += [c.eq(i) for c, i in zip(ctrl, ins, strict=True)]
    acc_we = Signal(name="acc_we")
    m.d.comb += acc_we.eq(en & ctrl[-1].valid)
    return ctrl, acc_we, ins[-1], ins[-3] if depth > 2 else None


def column_control_members(rows: int, *, ahead: bool = False) -> dict:
    """A column's control inputs (see :func:`column_control`), as ``wiring`` members; ``ahead``
    adds ``ahead_next`` (:func:`column_control_ahead`)."""
    return {"en_next": In(1), "swap_req": In(1), "swap_ok_next": In(1),
            "acc_next": In(control_layout(rows)),
            **({"ahead_next": In(control_layout(rows))} if ahead else {})}


def column_control_ahead(m, col, rows: int, en):
    """The column's own copy of the control two stages before the accumulate stage (the beat that
    reaches it two enabled edges later), a flop in the column, so no control net fans out from the
    top to every column. Loads ``col.ahead_next`` while ``en``."""
    ahead = Signal(control_layout(rows), name="ctl_ahead")
    with m.If(en):
        m.d.sync += ahead.eq(col.ahead_next)
    return ahead


def column_control(m, col, rows: int):
    """The column's own copy of the unit's control registers, from the next values the top
    computes.

    ``col`` has the members of :func:`column_control_members`:

    * ``en_next``: the unit's pipeline enable in the next cycle (its copy resets high);
    * ``acc_next``: what the top's last control register (the beat at the accumulate stage) takes
      at the next enabled edge; the copy loads it while the copied enable is high;
    * ``swap_ok_next``: in the next cycle the unit is enabled and a complete tile waits;
    * ``swap_req``: this cycle's ``x`` beat is valid and has ``swap`` (and, with ``loop = 2``, is not
      held by the interlock).

    Returns
    -------
    (Signal, Signal, Signal, Signal)
        ``en`` (the enable, a flop), ``acc_we`` (``en`` and the beat at the accumulate stage is
        valid), ``ctl`` (that beat's control record, a register) and ``swap`` (the weights swap
        this cycle: ``swap_req`` and the registered permission).
    """
    en = Signal(name="en", init=1)
    swap_ok = Signal(name="swap_ok")
    ctl = Signal(control_layout(rows), name="ctl")
    m.d.sync += [en.eq(col.en_next), swap_ok.eq(col.swap_ok_next)]
    with m.If(en):
        m.d.sync += ctl.eq(col.acc_next)
    acc_we, swap = Signal(name="acc_we"), Signal(name="swap")
    m.d.comb += [acc_we.eq(en & ctl.valid), swap.eq(col.swap_req & swap_ok)]
    return en, acc_we, ctl, swap
