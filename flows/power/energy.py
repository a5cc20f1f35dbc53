"""Energy of a simulated netlist from its toggle counts and the liberty.

For every net ``n`` with load ``C_n`` (the input capacitances of its sink pins, plus the phantom
load of replaced instances and, on a top output, the STA's default output load; no wire load,
except on a routed layout's netlist, whose extracted wire capacitance is added:
:mod:`flows.power.layout`) and
``t_n`` transitions (``r_n`` rises, ``f_n`` falls):

switching
    ``C_n V^2 / 2`` per transition.
internal
    Per output transition of a cell, the ``internal_power`` table of that output (``rise_power`` on a
    rise, ``fall_power`` on a fall) at the output's load and the related input's slew. With several
    related inputs the tables are weighted by how often each input toggled on that cell (a
    zero-delay simulation does not say which input caused an output change). Entries on input pins
    without a related pin (a flop's clock and data) count per transition of that input.
leakage
    ``cell_leakage_power`` x the simulated time.
clock
    The ideal clock net (no clock tree) makes one rise and one fall per cycle; its load is every
    flop's clock pin and every clock gate's clock inputs. A gated clock (a clock gate's output)
    pulses only in the cycles its enable allows (:class:`flows.power.sim.GateSim`); the switching
    of every clock-network net is under the block ``"clock"``, and each flop's clock pin internal
    energy counts per transition of its own (gated or not) clock.

Slews: a net's slew is its driver's output transition (mean of rise and fall, over the driver's
arcs to that output) at the net's load, with the STA's default input slew at the driver's inputs
(one step of the STA's slew propagation); top inputs and the clock have the default input slew.
Internal-power tables are read with the slew clamped to their characterised range: a Yosys-only
netlist has unbuffered high-fanout nets whose extrapolated transition (tens of ns) would put the
internal energy of their sinks far outside the tables; :attr:`Energy.slow_nets` counts those nets.
Loads are extrapolated linearly, as the STA does.
Every cell and the net it drives are weighted by the cell's weight (see :mod:`flows.power.netlist`).
"""

from dataclasses import dataclass, field

import numpy as np

from .libpower import lookup
from .netlist import COPY

__all__ = ["Energy", "net_loads", "compute"]


@dataclass
class Energy:
    """Energy of one simulation, in picojoules, by kind and by block (module name).

    ``by_block[module] = {"internal": pJ, "switching": pJ, "leakage": pJ}``; the clock net's
    switching energy is under the block ``"clock"``.
    """

    internal: float
    switching: float
    leakage: float
    cycles: int
    period_ns: float
    by_block: dict = field(default_factory=dict)
    slow_nets: int = 0

    @property
    def dynamic(self) -> float:
        return self.internal + self.switching

    @property
    def total(self) -> float:
        return self.internal + self.switching + self.leakage


def net_loads(flat, lib, output_load=None) -> np.ndarray:
    """Load per net in library capacitance units: sink pin capacitances + phantom + output load,
    plus the net's wire capacitance on a routed layout (:attr:`flows.power.netlist.Flat.wire`)."""
    c = flat.phantom.copy() if flat.phantom is not None else np.zeros(flat.n_nets)
    if flat.wire is not None:
        c += flat.wire
    for t, g in flat.groups.items():
        if t == COPY:
            continue
        cell = lib.cell(t)
        for p, nets in g["pins"].items():
            if p in cell.inputs:
                np.add.at(c, nets, cell.inputs[p])
    out_load = lib.default_output_load() if output_load is None else output_load
    for d, nets in flat.ports.values():
        if d == "output":
            np.add.at(c, nets, out_load)
    c[:2] = 0.0
    return c


def _slew_axis(table):
    """The input-transition axis of a table (empty for a scalar table or None)."""
    if table is None:
        return []
    return table.index_2 if table.load_first else table.index_1


def _power(table, load, slew):
    """An internal-power table at ``load`` and ``slew``, the slew clamped to the table's axis."""
    axis = _slew_axis(table)
    if axis:
        slew = np.clip(slew, axis[0], axis[-1])
    return lookup(table, load, slew)


def _slews(flat, lib, load, default):
    slew = np.full(flat.n_nets, default)
    for t, g in flat.groups.items():
        if t == COPY:
            continue
        cell = lib.cell(t)
        for out in cell.outputs:
            arcs = cell.arcs_to(out)
            tabs = [tb for a in arcs for k, tb in a.tables.items() if k.endswith("transition")]
            if not tabs or out not in g["pins"]:
                continue
            nets = g["pins"][out]
            slew[nets] = np.mean([lookup(tb, load[nets], default) for tb in tabs], axis=0)
    return slew


def _internal(pins, pc, tog, rises, falls, load, slew):
    """Internal energy (table units) of each instance of one cell type (see the module docstring)."""
    e = np.zeros(len(next(iter(pins.values()))))
    for out in {en.pin for en in pc.entries if en.related}:
        ents = [en for en in pc.entries if en.pin == out and en.related in pins]
        on = pins[out]
        share = np.stack([tog[pins[en.related]] for en in ents]).astype(np.float64)
        tot = share.sum(axis=0)
        share = np.where(tot > 0, share / np.where(tot > 0, tot, 1), 1.0 / len(ents))
        for sh, en in zip(share, ents, strict=True):
            s_in = slew[pins[en.related]]
            if en.rise is not None:
                e += rises[on] * sh * _power(en.rise, load[on], s_in)
            if en.fall is not None:
                e += falls[on] * sh * _power(en.fall, load[on], s_in)
    for en in pc.entries:
        if en.related is None and en.pin in pins:
            n = pins[en.pin]
            if en.rise is not None:
                e += rises[n] * _power(en.rise, load[n], slew[n])
            if en.fall is not None:
                e += falls[n] * _power(en.fall, load[n], slew[n])
    return e


def compute(flat, sim, lib, plib, period_ns: float, input_slew=None,
            output_load=None) -> Energy:
    """Energy of ``sim``'s counted cycles (see the module docstring for the model).

    Parameters
    ----------
    flat : flows.power.netlist.Flat
    sim : flows.power.sim.GateSim
        After the counted cycles.
    lib : flows.synth.liberty.Library
        Pin capacitances and transition tables.
    plib : flows.power.libpower.PowerLibrary
    period_ns : float
        Clock period, for the leakage time.
    input_slew : float or None
        A fixed slew for every net (library time units) instead of the one-step estimate.
    output_load : float or None
        Load on top outputs (default: the STA's, :meth:`flows.synth.liberty.Library.default_output_load`).
    """
    cycles = sim.cycles
    rises, falls = sim.rises_falls()
    tog = sim.toggles.astype(np.int64)
    load = net_loads(flat, lib, output_load)
    if input_slew is None:
        slew = _slews(flat, lib, load, lib.default_input_slew())
    else:
        slew = np.full(flat.n_nets, float(input_slew))
    e_unit = plib.energy_pj
    v2 = plib.voltage ** 2
    t_s = cycles * period_ns * 1e-9
    net_w = np.ones(flat.n_nets)
    net_blk = np.full(flat.n_nets, -1)
    blocks = {}

    def add(bi, kind, val):
        name = "clock" if bi == -2 else (flat.blocks[bi] if bi >= 0 else "inputs")
        d = blocks.setdefault(name, {"internal": 0.0, "switching": 0.0, "leakage": 0.0})
        d[kind] += float(val)

    for t, g in flat.groups.items():
        w, blk = g["weight"], g["block"]
        if t == COPY:
            net_w[g["pins"]["Y"]] = 0.0
            continue
        pc = plib.cells[t]
        for out in lib.cell(t).outputs:
            if out in g["pins"]:
                net_w[g["pins"][out]] = w
                net_blk[g["pins"][out]] = blk
        e = _internal(g["pins"], pc, tog, rises, falls, load, slew)
        e_int = e * e_unit * w
        e_leak = pc.leakage * plib.leak_nw * 1e-9 * t_s * 1e12 * w
        for bi in np.unique(blk):
            sel = blk == bi
            add(int(bi), "internal", e_int[sel].sum())
            add(int(bi), "leakage", e_leak[sel].sum())
    net_blk[sim.clock_nets] = -2     # the clock and gated clocks: the clock network's switching
    e_sw = 0.5 * load * lib.cap_pf * v2 * tog * net_w
    e_sw[:2] = 0.0
    for bi in np.unique(net_blk):
        add(int(bi), "switching", e_sw[net_blk == bi].sum())
    tot = {k: sum(d[k] for d in blocks.values()) for k in ("internal", "switching", "leakage")}
    axes = [_slew_axis(t) for pc in plib.cells.values() for en in pc.entries for t in (en.rise, en.fall)]
    slow = int((slew > max((a[-1] for a in axes if a), default=np.inf)).sum())
    return Energy(tot["internal"], tot["switching"], tot["leakage"], cycles, period_ns, blocks, slow)

