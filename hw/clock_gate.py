"""Integrated clock gates built from liberty cells, and register groups clocked through them.

A register group that loads only in some cycles (a weight-buffer row loads once per tile) need not
see the clock in the others. :func:`gated_assign` gives such a group a clock of its own: a latch-based
clock gate of three OSU 0.18 um cells per :data:`GATE_GROUP` flops (groups of one enable share the
first two, up to :data:`LATCH_FANOUT` groups per latch),

* ``INVX1``: the inverted clock;
* ``LATCH`` (transparent while its ``CLK`` is high, i.e. while the clock is low): holds the enable
  while the clock is high, so the gated clock cannot glitch when the enable changes after the edge;
* ``AND2X2``: the clock AND the latched enable, the gated clock of the group.

The gated clock rises at an edge exactly when the enable was high in the cycle before it, which is
when an enabled register would load; the group's registers then need no enable logic (no
multiplexer per bit). A register with a reset is reset through its gate (the enable ORs the reset).

Two views of the same function, chosen by the elaboration's ``platform``:

* :data:`CELLS` (the Verilog that :mod:`hw.hier` emits for synthesis and Verilator): the three cell
  instances and a local clock domain driven by each gate, the registers loading on every edge of it;
* any other platform (Amaranth's simulator): the group's registers stay in the parent domain under
  ``m.If(en)``. Amaranth's simulator would update a clock driven by logic one delta cycle after the
  parent clock's registers, so the gated registers would see the new values; Verilog's scheduling
  (and Verilator's) evaluates the gate before non-blocking updates, as the silicon does.

Simulating the emitted Verilog needs models of the three cells: :func:`with_cell_models` appends
behavioural ones (written from the cells' liberty ``function`` and ``latch`` groups) to a design's
text; synthesis reads the cells from the liberty instead (``read_liberty -lib``).
"""

import re

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Instance, ResetSignal, Signal

__all__ = ["CELLS", "CellsPlatform", "gated_assign", "GATE_CELLS", "GATE_GROUP", "LATCH_FANOUT",
           "SIM_MODELS", "with_cell_models"]


class CellsPlatform:
    """Marks an elaboration for Verilog emission: clock gates become liberty cell instances."""

    def __repr__(self):
        return "CELLS"


#: The platform :mod:`hw.hier` elaborates with when it emits Verilog.
CELLS = CellsPlatform()

#: The cells of one clock gate: (inverter, latch, and) in the OSU 0.18 um library.
GATE_CELLS = ("INVX1", "LATCH", "AND2X2")

#: Behavioural Verilog of :data:`GATE_CELLS` for simulation only (the liberty's functions:
#: ``Y = !A``; a latch with ``data_in D``, ``enable CLK``; ``Y = A & B``).
SIM_MODELS = """
// Simulation models of the liberty cells that hw/clock_gate.py instantiates (not for synthesis).
module INVX1(input A, output Y);
  assign Y = ~A;
endmodule
module LATCH(input D, input CLK, output reg Q);
  always_latch if (CLK) Q <= D;
endmodule
module AND2X2(input A, input B, output Y);
  assign Y = A & B;
endmodule
"""

_USES_CELLS = re.compile(r"^\s*(?:" + "|".join(GATE_CELLS) + r")\s+\S+\s*\(", re.M)


def with_cell_models(verilog: str) -> str:
    """``verilog`` with :data:`SIM_MODELS` appended when it instantiates a clock gate's cells."""
    return verilog + SIM_MODELS if _USES_CELLS.search(verilog) else verilog


#: Flops behind one clock gate: the gate's AND drives this many clock pins (its delay is the
#: group's clock latency, 0.28 ns for 8 pins in OSU 0.18 um).
GATE_GROUP = 8
#: Groups of one enable that share a gate's inverter and latch (each group has its own AND): the
#: latch's output drives this many AND inputs. The inverter and latch see the clock every cycle,
#: so sharing them cuts the gates' own clock load (per 64 flops: 8 ANDs, one inverter and one latch,
#: 0.135 pF against 0.355 pF with a latch per group).
LATCH_FANOUT = 8


def gated_assign(m, platform, en, pairs, name: str, *, domain: str = "sync", group: int = GATE_GROUP):
    """Registers ``target`` (for every ``(target, value)`` in ``pairs``) take ``value`` at the
    edges of ``domain`` after cycles with ``en`` high, through clock gates.

    Parameters
    ----------
    m : amaranth.hdl.Module
    platform
        The ``platform`` of the enclosing ``elaborate``: :data:`CELLS` builds the clock gates.
    en : Value
        The load enable (one bit), valid in the cycle before the edge.
    pairs : list of (Signal, Value)
        The registers and what they load (an ``eq``: ``value`` is truncated or extended to the
        target's shape). The targets must not be assigned elsewhere.
    name : str
        Prefix of the gates' names, unique in ``m``.
    domain : str
        The clock being gated.
    group : int
        Flops per clock gate: the targets' bits are packed in order into groups of at most this
        many, each behind an AND of its own, :data:`LATCH_FANOUT` groups sharing one inverter and
        latch; registers with a reset and without one go in separate groups. A group with a reset
        also loads (its reset value) while the domain's reset is high, so the gate's enable is
        ``en | rst``.

    With :data:`CELLS` each target becomes a wire driven by its groups' registers; otherwise the
    targets are ordinary registers of ``domain`` under ``m.If(en)`` (see the module docstring).
    """
    if platform is not CELLS:
        with m.If(en):
            m.d[domain] += [t.eq(v) for t, v in pairs]
        return
    for kind, reset_less in (("n", True), ("r", False)):
        part = [(t, v) for t, v in pairs if t.reset_less == reset_less]
        if not part:
            continue
        bits, inits, loads = [], [], []
        for t, v in part:
            cast = Signal.like(t, name=f"{t.name}_d")
            m.d.comb += cast.eq(v)
            loads += [cast[i] for i in range(len(t))]
            inits += [(t.init >> i) & 1 for i in range(len(t))]
        enable = en if reset_less else en | ResetSignal(domain)
        held = None
        for gi, lo in enumerate(range(0, len(loads), group)):
            if gi % LATCH_FANOUT == 0:
                held = _latched_enable(m, enable, f"{name}_{kind}{gi}_e", domain)
            n = min(group, len(loads) - lo)
            init = sum(b << i for i, b in enumerate(inits[lo:lo + n]))
            reg = Signal(n, name=f"{name}_{kind}{gi}", init=init, reset_less=reset_less)
            gate = f"{name}_{kind}{gi}_g"
            _gated_clock(m, held, gate, domain, reset=not reset_less)
            m.d[gate] += reg.eq(Cat(*loads[lo:lo + n]))
            bits += [reg[i] for i in range(n)]
        at = 0
        for t, _ in part:
            m.d.comb += t.eq(Cat(*bits[at:at + len(t)]))
            at += len(t)


def _latched_enable(m, en, name, domain):
    """The inverter and the latch of a clock gate: ``en`` held while the clock is high."""
    clkn = Signal(name=f"{name}_clkn")
    held = Signal(name=f"{name}_held")
    inv, latch, _ = GATE_CELLS
    m.submodules[f"{name}_inv"] = Instance(inv, i_A=ClockSignal(domain), o_Y=clkn)
    m.submodules[f"{name}_latch"] = Instance(latch, i_D=en, i_CLK=clkn, o_Q=held)
    return held


def _gated_clock(m, held, name, domain, reset=False):
    """The AND of a clock gate and a local clock domain ``name`` driven by it."""
    gclk = Signal(name=f"{name}_clk")
    m.submodules[f"{name}_and"] = Instance(GATE_CELLS[2], i_A=ClockSignal(domain), i_B=held, o_Y=gclk)
    m.domains += ClockDomain(name, local=True, reset_less=not reset)
    m.d.comb += ClockSignal(name).eq(gclk)
    if reset:
        m.d.comb += ResetSignal(name).eq(ResetSignal(domain))
