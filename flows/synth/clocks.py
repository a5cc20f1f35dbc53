"""The clock network of a netlist for :class:`flows.synth.sta.Sta`: where each flop's clock comes from.

A flop's clock pin may be driven through gates from a clock input: a clock gate (an inverter, a latch
holding the enable, an AND; :mod:`hw.clock_gate`). :func:`trace_clocks` follows every sequential
cell's clock pin back to the input and gives the pin's *inversion* (a latch on the inverted clock
captures at the clock's rising edge: its arcs swap, :func:`swap_edge`) and its *latency*, the gates'
delay from the input's rising edge (the STA adds it to the paths the pin launches and credits it to
the paths it captures). The gate's latches only gate a clock: they launch no data path.
"""

__all__ = ["StaError", "EDGE_TABLES", "swap_edge", "trace_clocks"]

#: Delay and output-slew tables of a rising (index 0) and a falling (index 1) output edge.
EDGE_TABLES = (("cell_rise", "rise_transition"), ("cell_fall", "fall_transition"))

_SWAP_EDGE = {"rising_edge": "falling_edge", "falling_edge": "rising_edge",
              "setup_rising": "setup_falling", "setup_falling": "setup_rising"}


class StaError(RuntimeError):
    """The netlist cannot be timed (unknown cell, combinational loop); the message says where."""


def swap_edge(kind: str) -> str:
    """A sequential arc's timing type on an inverted clock (rising and falling swap)."""
    return _SWAP_EDGE.get(kind, kind)


def trace_clocks(sta) -> tuple:
    """``(clock_of, gate_latches)`` of a built :class:`flows.synth.sta.Sta` (its cells, drivers and
    loads): ``clock_of[inst]`` is every sequential cell's clock pin (inversion 0/1, latency ps);
    ``gate_latches`` are the sequential cells whose output gates a clock. The traced nets join
    ``sta.clock_bits``. A generic (technology-free) library has no clock network to trace.

    Raises
    ------
    StaError
        A clock net without a driver, driven by a sequential cell, or gated by an input that is
        not a latched enable (not a glitch-free clock gate).
    """
    clock_of, gate_latches, memo = {}, set(), {}
    if sta.lib.generic:
        return clock_of, gate_latches
    for inst, (ctype, conns, kind) in sta.cells.items():
        if kind != "seq":
            continue
        pins = sta.lib.cells[ctype].clock_pins
        b = sta._conn_bit(conns, pins[0]) if pins else None
        if isinstance(b, int):
            clock_of[inst] = _trace(sta, b, memo, gate_latches)[:2]
    sta.clock_bits.update(memo)
    return clock_of, gate_latches


def _trace(sta, b, memo, gate_latches):
    """(inversion 0/1, latency ps, slew) of clock net ``b``."""
    if b in memo:
        return memo[b]
    inst, pin = sta.driver.get(b, (None, None))
    if inst is None:
        raise StaError(f"clock net {sta.name(b)} has no driver")
    if inst == "":
        memo[b] = (0, 0.0, sta.input_slew)
        return memo[b]
    ctype, conns, kind = sta.cells[inst]
    if kind != "comb":
        raise StaError(f"clock net {sta.name(b)} is driven by {inst} ({ctype}), a {kind} cell: "
                       "a clock must come from an input through gates")
    clock_in, gating = [], []
    for p in sta.lib.cells[ctype].inputs:
        ib = sta._conn_bit(conns, p)
        if isinstance(ib, int):
            src = sta.driver.get(ib, (None, None))[0]
            if src and sta.cells[src][2] == "seq":
                gating.append(src)
            else:
                clock_in.append((p, ib))
    if len(clock_in) != 1:
        raise StaError(f"clock gate {inst} ({ctype}) has {len(clock_in)} inputs that are not "
                       f"latched enables ({', '.join(p for p, _ in clock_in)}): a clock may be "
                       "gated only by latched enables (a glitch-free clock gate)")
    gate_latches.update(gating)
    p, ib = clock_in[0]
    inv, lat, slew = _trace(sta, ib, memo, gate_latches)
    arcs = [a for a in sta.lib.cells[ctype].arcs if a.pin == pin and a.related == p]
    if not arcs or arcs[0].sense not in ("positive_unate", "negative_unate"):
        raise StaError(f"clock gate {inst} ({ctype}): no unate arc {p}->{pin}")
    out = inv ^ (arcs[0].sense == "negative_unate")
    d, s = sta._drive(arcs[0], *EDGE_TABLES[out], sta.load.get(b, 0.0), slew)
    memo[b] = (out, lat + d, s)
    return memo[b]
