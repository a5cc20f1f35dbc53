"""What energy needs from a liberty file: internal-power tables, leakage, flop behaviour and units.

:mod:`flows.synth.liberty` keeps what timing needs (areas, pin capacitances, delay arcs, logic
functions). This module reads the rest from the same file, with the same parser and the same table
reader (:func:`flows.synth.liberty._table`, so templates, index order and extrapolation agree with
the STA):

``internal_power``
    Groups under a pin. On an output pin with ``related_pin``: energy per *output* transition
    (``rise_power`` when the output rises, ``fall_power`` when it falls), indexed by the output
    net's load and the related input's transition. On an input pin (no output change, "passive"):
    energy per transition of that input, indexed by its transition.
``cell_leakage_power``
    Static power per cell instance.
``ff``
    ``next_state`` and ``clocked_on`` of edge-triggered flops (one data pin, one clock pin, either
    edge); cells with ``clear``/``preset``, flop banks and tristate outputs are listed in
    :attr:`PowerLibrary.unsupported` and rejected by the simulator if a netlist uses them.
``latch``
    ``enable`` and ``data_in`` of a simple latch (the latch of a clock gate).

Units (read from the library, not assumed): internal energy is in ``capacitive_load_unit x
voltage_unit^2`` (the Liberty convention; pF x V^2 = pJ for OSU 0.18 um), leakage in
``leakage_power_unit``, the supply is ``nom_voltage`` (else the default operating conditions'
``voltage``). Internal energy is taken to exclude the output load's ``C V^2`` (the usual
characterisation); :mod:`flows.power.energy` adds ``C V^2 / 2`` per transition of every net.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..paths import BUILD
from ..synth.liberty import LibertyError, Table, _floats, _table, _unit, cached_parse

__all__ = ["PowerEntry", "PowerCell", "PowerLibrary", "load_power", "lookup"]

CACHE_DIR = BUILD / "qor-cache" / "power-liberty"
_FORMAT = 2


@dataclass
class PowerEntry:
    """One ``internal_power`` group: energy per transition of ``pin`` (related to ``related``).

    ``related`` is None for a passive input-pin entry. ``rise``/``fall`` are tables in library
    energy units (None when the group lacks one).
    """

    pin: str
    related: str | None
    rise: Table | None
    fall: Table | None


@dataclass
class PowerCell:
    """Energy data of one cell: leakage (library leakage units), internal-power entries, for an
    edge-triggered flop ``(clock pin, edge "rise"/"fall", data pin, output pins)`` and for a
    latch ``(enable pin, data pin, output pins)``."""

    name: str
    leakage: float
    entries: list
    flop: tuple | None = None
    functions: dict = field(default_factory=dict)
    latch: tuple | None = None


@dataclass
class PowerLibrary:
    """Energy view of a liberty file.

    Attributes
    ----------
    voltage : float
        Supply in volts.
    energy_pj : float
        Picojoules per internal-power table unit (capacitive unit x voltage unit^2).
    leak_nw : float
        Nanowatts per leakage unit.
    cells : dict[str, PowerCell]
    unsupported : dict[str, str]
        Cells the gate simulator cannot model, with the reason.
    """

    name: str
    voltage: float
    energy_pj: float
    leak_nw: float
    cells: dict
    unsupported: dict
    sha256: str = ""

    def to_json(self):
        def tab(t):
            return None if t is None else [t.index_1, t.index_2, t.values, t.load_first]
        return {"format": _FORMAT, "name": self.name, "voltage": self.voltage,
                "energy_pj": self.energy_pj, "leak_nw": self.leak_nw, "sha256": self.sha256,
                "unsupported": self.unsupported,
                "cells": {n: [c.leakage, [[e.pin, e.related, tab(e.rise), tab(e.fall)] for e in c.entries],
                              c.flop, c.functions, c.latch] for n, c in self.cells.items()}}

    @classmethod
    def from_json(cls, d):
        def tab(v):
            return None if v is None else Table(*v)
        cells = {n: PowerCell(n, lk, [PowerEntry(p, r, tab(a), tab(b)) for p, r, a, b in ents],
                              tuple(fl) if fl else None, fn, tuple(la) if la else None)
                 for n, (lk, ents, fl, fn, la) in d["cells"].items()}
        return cls(d["name"], d["voltage"], d["energy_pj"], d["leak_nw"], cells, d["unsupported"],
                   d.get("sha256", ""))


def lookup(table: Table, load, slew) -> np.ndarray:
    """Vectorized :meth:`flows.synth.liberty.Table.lookup`: the table at arrays of output load and
    input transition (library units), bilinear inside the grid, linear beyond its end segments."""
    load = np.asarray(load, dtype=np.float64)
    slew = np.asarray(slew, dtype=np.float64)
    x1, x2 = (load, slew) if table.load_first else (slew, load)
    v = np.asarray(table.values, dtype=np.float64)
    if not table.index_1:
        return np.broadcast_to(v[0, 0], np.broadcast(x1, x2).shape).astype(np.float64)
    if not table.index_2:
        row = v[:, 0] if v.shape[0] > 1 else v[0]
        return _interp1(np.asarray(table.index_1, dtype=np.float64), row, x1)
    a = np.asarray(table.index_1, dtype=np.float64)
    b = np.asarray(table.index_2, dtype=np.float64)
    i = np.clip(np.searchsorted(a, x1, side="right") - 1, 0, len(a) - 2)
    j = np.clip(np.searchsorted(b, x2, side="right") - 1, 0, len(b) - 2)
    t = (x1 - a[i]) / (a[i + 1] - a[i])
    u = (x2 - b[j]) / (b[j + 1] - b[j])
    return ((1 - t) * (1 - u) * v[i, j] + t * (1 - u) * v[i + 1, j]
            + (1 - t) * u * v[i, j + 1] + t * u * v[i + 1, j + 1])


def _interp1(axis, vals, x):
    if len(axis) == 1:
        return np.broadcast_to(vals[0], np.shape(x)).astype(np.float64)
    i = np.clip(np.searchsorted(axis, x, side="right") - 1, 0, len(axis) - 2)
    t = (x - axis[i]) / (axis[i + 1] - axis[i])
    return (1 - t) * vals[i] + t * vals[i + 1]


def _strip(v):
    return str(getattr(v, "value", v)).strip().strip('"').strip()


def _latch(cg, outputs):
    """(enable pin, data pin, output pins) of a simple latch (one data pin, one enable pin, no
    clear or preset), or None."""
    groups = list(cg.get_groups("latch"))
    if len(groups) != 1 or "clear" in groups[0] or "preset" in groups[0]:
        return None
    en, d = _strip(groups[0].get("enable", "")), _strip(groups[0].get("data_in", ""))
    return (en, d, list(outputs)) if en.isidentifier() and d.isidentifier() else None


def _flop(cg, cname, outputs):
    """(clock pin, edge, data pin, output pins) of a simple edge-triggered flop, or a reason string."""
    ffs = list(cg.get_groups("ff"))
    if cg.get_groups("latch") and _latch(cg, outputs) is None:
        return "latch with clear, preset or a compound enable"
    if cg.get_groups("ff_bank"):
        return "flop bank"
    if not ffs:
        return None
    ff = ffs[0]
    if "clear" in ff or "preset" in ff:
        return "asynchronous clear/preset"
    nxt, clk = _strip(ff.get("next_state", "")), _strip(ff.get("clocked_on", ""))
    edge = "rise"
    if clk.startswith("(!") and clk.endswith(")"):
        clk, edge = clk[2:-1], "fall"
    elif clk.startswith("!"):
        clk, edge = clk[1:], "fall"
    if not (nxt.isidentifier() and clk.isidentifier()):
        return f"flop next_state {nxt!r} / clocked_on {clk!r} is not a single pin"
    return (clk, edge, nxt, list(outputs))


def _templates(lib):
    out = {}
    for kind in ("lu_table_template", "power_lut_template"):
        for g in lib.get_groups(kind):
            out[str(g.args[0])] = {
                "variable_1": str(g.get("variable_1", "")), "variable_2": str(g.get("variable_2", "")),
                "index_1": _floats(g["index_1"]) if "index_1" in g else [],
                "index_2": _floats(g["index_2"]) if "index_2" in g else []}
    return out


def _voltage(lib):
    if "nom_voltage" in lib:
        return float(lib["nom_voltage"])
    for oc in lib.get_groups("operating_conditions"):
        if "voltage" in oc:
            return float(oc["voltage"])
    raise LibertyError("the liberty states no supply voltage (nom_voltage or operating_conditions "
                       "voltage); energy needs it")


def _parse(path: Path) -> PowerLibrary:
    from liberty.parser import parse_liberty

    lib = parse_liberty(path.read_text(errors="replace"))
    volt = _unit(lib.get("voltage_unit", "1V"), {"mv": 1e-3, "v": 1.0}, "voltage_unit")
    cap = lib.get_attributes("capacitive_load_unit")
    c = cap[0] if cap else [1, "pf"]
    cap_pf = float(c[0]) * {"pf": 1.0, "ff": 1e-3}[str(c[1]).lower()] if isinstance(c, list) else 1.0
    leak_nw = _unit(lib.get("leakage_power_unit", "1nW"),
                    {"pw": 1e-3, "nw": 1.0, "uw": 1e3, "mw": 1e6, "w": 1e9}, "leakage_power_unit")
    tmpl = _templates(lib)
    cells, unsupported = {}, {}
    for cg in lib.get_groups("cell"):
        cname = _strip(cg.args[0])
        entries, outputs, funcs = [], [], {}
        for pg in cg.get_groups("pin"):
            pname = _strip(pg.args[0])
            if str(pg.get("direction", "")) == "output":
                outputs.append(pname)
                if "function" in pg:
                    funcs[pname] = _strip(pg["function"])
                if "three_state" in pg:
                    unsupported[cname] = "tristate output"
            for ig in pg.get_groups("internal_power"):
                rel = _strip(ig.get("related_pin", "")) or None
                tabs = {k: _table(ig.get_groups(k)[0], tmpl) if ig.get_groups(k) else None
                        for k in ("rise_power", "fall_power")}
                for r in (rel.split() if rel else [None]):
                    entries.append(PowerEntry(pname, r, tabs["rise_power"], tabs["fall_power"]))
        fl = _flop(cg, cname, outputs)
        if isinstance(fl, str):
            unsupported[cname] = fl
            fl = None
        leak = float(cg.get("cell_leakage_power", 0.0))
        cells[cname] = PowerCell(cname, leak, entries, fl, funcs, _latch(cg, outputs))
    name = str(lib.args[0]) if lib.args else path.stem
    return PowerLibrary(name, _voltage(lib), cap_pf * volt * volt, leak_nw, cells, unsupported)


def load_power(path) -> PowerLibrary:
    """Read the energy data of a liberty file (cached by content hash under
    ``build/qor-cache/power-liberty``).

    Raises
    ------
    flows.synth.liberty.LibertyError
        If the file is missing or states no supply voltage.
    """
    return cached_parse(path, CACHE_DIR, _FORMAT, _parse, PowerLibrary.from_json)
