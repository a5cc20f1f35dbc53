"""Integrated clock gates built from liberty cells, and register groups clocked through them.

A register group that loads only in some cycles (a weight-buffer row loads once per tile) need not
see the clock in the others. :func:`gated_assign` gives such a group a clock of its own: a latch-based
clock gate of three OSU 0.18 um cells,

* ``INVX1``: the inverted clock;
* ``LATCH`` (transparent while its ``CLK`` is high, i.e. while the clock is low): holds the enable
  while the clock is high, so the gated clock cannot glitch when the enable changes after the edge;
* ``AND2X2``: the clock AND the latched enable, the gated clock,

and a ``BUFX2`` per :data:`GATE_GROUP` flops when one gate clocks up to :data:`LATCH_FANOUT` such
groups (the registers of one enable): the gate's three cells are all that sees the clock in the
cycles the enable is low.

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

:func:`fanout` uses the same two views for a wide select: with :data:`CELLS` a
:data:`FANOUT_BUFFER` per share of its loads (the mapping adds buffers only where a driver's
maximum load is exceeded, never for delay), otherwise a plain replication.

Simulating the emitted Verilog needs models of the three cells (and the buffers):
:func:`with_cell_models` appends behavioural ones (written from the cells' liberty ``function`` and
``latch`` groups) to a design's text; synthesis reads the cells from the liberty instead
(``read_liberty -lib``).
"""

import re

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Instance, ResetSignal, Signal

__all__ = ["CELLS", "CellsPlatform", "gated_assign", "gated_domain", "GATE_CELLS", "CLOCK_BUFFER",
           "FANOUT_BUFFER", "fanout",
           "GATE_GROUP", "LATCH_FANOUT", "SIM_MODELS", "with_cell_models"]


class CellsPlatform:
    """Marks an elaboration for Verilog emission: clock gates become liberty cell instances."""

    def __repr__(self):
        return "CELLS"


#: The platform :mod:`hw.hier` elaborates with when it emits Verilog.
CELLS = CellsPlatform()

#: The cells of one clock gate: (inverter, latch, and) in the OSU 0.18 um library.
GATE_CELLS = ("INVX1", "LATCH", "AND2X2")
#: The buffer from a shared gate's clock to each of its groups.
CLOCK_BUFFER = "BUFX2"

#: Behavioural Verilog of :data:`GATE_CELLS` and :data:`CLOCK_BUFFER` for simulation only (the
#: liberty's functions: ``Y = !A``; a latch with ``data_in D``, ``enable CLK``; ``Y = A & B``;
#: ``Y = A``).
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
module BUFX2(input A, output Y);
  assign Y = A;
endmodule
module BUFX4(input A, output Y);
  assign Y = A;
endmodule
"""

#: The buffer :func:`fanout` puts in front of each share of a wide select's loads.
FANOUT_BUFFER = "BUFX4"

_USES_CELLS = re.compile(r"^\s*(?:" + "|".join(GATE_CELLS + (CLOCK_BUFFER, FANOUT_BUFFER)) + r")\s+\S+\s*\(",
                         re.M)


def fanout(m, platform, sig, width: int, name: str, *, per_buffer: int = 32):
    """``sig`` (one bit) replicated ``width`` times for a wide AND-OR select, each share of at most
    ``per_buffer`` bits behind a :data:`FANOUT_BUFFER` cell with :data:`CELLS` (the register or
    gate that forms ``sig`` then drives a few buffer inputs, not ``width`` gates: the mapping adds
    no buffers for delay, only for a driver's maximum load). Any other platform gets
    ``sig.replicate(width)``."""
    n = -(-width // per_buffer)
    if platform is not CELLS or n < 2:
        return sig.replicate(width)
    parts = []
    for i in range(n):
        o = Signal(name=f"{name}_f{i}")
        m.submodules[f"{name}_f{i}"] = Instance(FANOUT_BUFFER, i_A=sig, o_Y=o)
        parts.append(o.replicate(min(per_buffer, width - i * per_buffer)))
    return Cat(*parts)


def with_cell_models(verilog: str) -> str:
    """``verilog`` with :data:`SIM_MODELS` appended when it instantiates a clock gate's cells."""
    return verilog + SIM_MODELS if _USES_CELLS.search(verilog) else verilog


#: Flops per clock pin driver: a gate's AND (a group alone) or a buffer behind it drives this many
#: clock pins (0.28 ns for 8 pins through the AND in OSU 0.18 um).
GATE_GROUP = 8
#: Groups of one enable behind one gate, each through a :data:`CLOCK_BUFFER`. The gate's inverter,
#: latch and AND see the clock every cycle and the buffers only in enabled ones: per 64 idle flops
#: the clock's load is the inverter's and the AND's inputs (0.022 pF), against 0.113 pF with an
#: AND per group on the clock.
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
        ngroups = -(-len(loads) // group)
        shared = None
        for gi, lo in enumerate(range(0, len(loads), group)):
            gate = f"{name}_{kind}{gi}_g"
            if gi % LATCH_FANOUT == 0:
                held = _latched_enable(m, enable, f"{name}_{kind}{gi}_e", domain)
                if min(LATCH_FANOUT, ngroups - gi) > 1:     # one gate, a buffer per group
                    shared = _and_clock(m, held, f"{name}_{kind}{gi}_s", domain)
                else:
                    shared = None
            if shared is None:
                _local_domain(m, gate, _and_clock(m, held, gate, domain), domain, not reset_less)
            else:
                buf = Signal(name=f"{gate}_clk")
                m.submodules[f"{gate}_buf"] = Instance(CLOCK_BUFFER, i_A=shared, o_Y=buf)
                _local_domain(m, gate, buf, domain, not reset_less)
            n = min(group, len(loads) - lo)
            init = sum(b << i for i, b in enumerate(inits[lo:lo + n]))
            reg = Signal(n, name=f"{name}_{kind}{gi}", init=init, reset_less=reset_less)
            m.d[gate] += reg.eq(Cat(*loads[lo:lo + n]))
            bits += [reg[i] for i in range(n)]
        at = 0
        for t, _ in part:
            m.d.comb += t.eq(Cat(*bits[at:at + len(t)]))
            at += len(t)


def gated_domain(m, platform, en, name: str, *, domain: str = "sync") -> str:
    """A clock domain that sees the edges of ``domain`` only after cycles with ``en`` high: a coarse
    clock gate in front of finer ones.

    :func:`gated_assign` with ``domain=`` the returned name puts its gates behind this one, so that
    in cycles with ``en`` low they (their inverters, latches and ANDs) do not see the clock either.
    Every enable given to those gates must imply ``en`` (a register behind both loads when both are
    high); the domain has no reset, so its registers must be reset-less.

    With :data:`CELLS` this is one gate (inverter, latch, AND) driving a local domain ``name``; with
    any other platform it is ``domain`` itself (the finer enables already say when to load).
    """
    if platform is not CELLS:
        return domain
    gclk = _and_clock(m, _latched_enable(m, en, f"{name}_e", domain), name, domain)
    _local_domain(m, name, gclk, domain, reset=False)
    return name


def _latched_enable(m, en, name, domain):
    """The inverter and the latch of a clock gate: ``en`` held while the clock is high."""
    clkn = Signal(name=f"{name}_clkn")
    held = Signal(name=f"{name}_held")
    inv, latch, _ = GATE_CELLS
    m.submodules[f"{name}_inv"] = Instance(inv, i_A=ClockSignal(domain), o_Y=clkn)
    m.submodules[f"{name}_latch"] = Instance(latch, i_D=en, i_CLK=clkn, o_Q=held)
    return held


def _and_clock(m, held, name, domain):
    """The AND of a clock gate: ``domain``'s clock gated by the latched enable ``held``."""
    gclk = Signal(name=f"{name}_clk")
    m.submodules[f"{name}_and"] = Instance(GATE_CELLS[2], i_A=ClockSignal(domain), i_B=held, o_Y=gclk)
    return gclk


def _local_domain(m, name, clk, domain, reset):
    """A local clock domain ``name`` clocked by ``clk`` (reset with ``domain`` when ``reset``)."""
    m.domains += ClockDomain(name, local=True, reset_less=not reset)
    m.d.comb += ClockSignal(name).eq(clk)
    if reset:
        m.d.comb += ResetSignal(name).eq(ResetSignal(domain))
