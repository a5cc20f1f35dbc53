"""The least buffer tree an ideal clock needs: its energy per cycle, from the liberty.

The layouts keep the clock ideal: one net from the clock port to every clock pin, with no tree (our
STA times every clock pin at the default input slew, :meth:`flows.synth.liberty.Library.default_input_slew`).
A clock tree that delivers that slew must split the load among buffers, each loaded with no more
than it drives within the slew (:meth:`flows.synth.liberty.Library.load_within_slew`, with the slew at
its own input too), level by level up to one buffer, which the port drives. :func:`least_tree`
builds that tree from each buffer cell of the liberty (one input, one output, function ``A`` or
``!A``; an inverter tree's polarity is ignored) and keeps the cheapest:

* leaves: ``n = ceil(load / c)`` buffers, where ``c`` is the cell's load within the slew, sharing
  ``load`` evenly; each level above: ``ceil(n_below * cin / c)`` buffers sharing the input pins
  below, until one;
* energy per cycle (the clock rises and falls once): every buffer's rise and fall internal energy
  at its load and the slew, plus every buffer's input pin charged and discharged (``cin V^2``).

It is what the tree's cells add to the clock net already counted (the clock pins and the wire);
the wire between the tree's levels, skew balancing and any detour are left out, so a clock tree
synthesis would add more.
"""

import math

import numpy as np

from .libpower import lookup

__all__ = ["least_tree", "ClockTreeError"]


class ClockTreeError(ValueError):
    """The liberty has no cell a clock tree can be built from; the message says what is missing."""


def _buffers(lib, plib):
    """(cell, input pin, output pin) of the liberty's buffers and inverters with energy tables."""
    out = []
    for name, c in sorted(lib.cells.items()):
        if c.is_seq or len(c.inputs) != 1 or len(c.outputs) != 1 or name not in plib.cells:
            continue
        a, y = next(iter(c.inputs)), c.outputs[0]
        if c.functions.get(y, "").replace(" ", "").strip("()") in (a, f"!{a}"):
            out.append((name, a, y))
    return out


def _tree(lib, plib, cell, a, y, load, slew):
    cin, c = lib.cell(cell).inputs[a], lib.load_within_slew(cell, y, slew)
    if c <= cin:
        return None         # a buffer cannot drive even one copy of itself within the slew
    levels, below = [], load
    while True:
        n = max(1, math.ceil(below / c))
        levels.append((n, below / n))
        if n == 1:
            break
        below = n * cin
    internal = 0.0
    for n, each in levels:
        for e in plib.cells[cell].entries:
            for t in (e.rise, e.fall):
                if t is not None:
                    internal += n * float(lookup(t, each, slew))
    internal *= plib.energy_pj
    pins = sum(n for n, _ in levels) * cin * lib.cap_pf * plib.voltage ** 2
    return {"cell": cell, "slew_ns": slew * lib.time_ps / 1e3, "load_pf": load * lib.cap_pf,
            "buffer_load_pf": c * lib.cap_pf, "levels": [n for n, _ in levels],
            "internal_pj": internal, "input_pins_pj": pins, "pj_per_cycle": internal + pins}


def least_tree(load: float, lib, plib, slew: float | None = None) -> dict:
    """The cheapest single-cell tree (see the module docstring) that drives ``load`` (library units)
    within ``slew`` (library units; default: the library's default input slew, the clock's slew in
    our STA).

    Returns
    -------
    dict
        ``cell``, ``levels`` (buffers per level, leaves first), ``load_pf``, ``buffer_load_pf`` (the
        most a buffer takes within the slew), ``slew_ns``, ``internal_pj`` and ``input_pins_pj`` per
        cycle, and their sum ``pj_per_cycle``.

    Raises
    ------
    ClockTreeError
        No buffer or inverter in the liberty, or none that drives a copy of itself within the slew.
    """
    slew = lib.default_input_slew() if slew is None else slew
    if not np.isfinite(load) or load < 0:
        raise ClockTreeError(f"clock load {load!r}: expected a finite load >= 0")
    cands = _buffers(lib, plib)
    if not cands:
        raise ClockTreeError(f"{lib.path}: no buffer or inverter cell with energy tables to build a "
                             "clock tree from")
    trees = [t for t in (_tree(lib, plib, c, a, y, load, slew) for c, a, y in cands) if t]
    if not trees:
        raise ClockTreeError(f"{lib.path}: no buffer or inverter drives a copy of itself within the "
                             f"clock slew {slew * lib.time_ps / 1e3:.3f} ns")
    return min(trees, key=lambda t: (t["pj_per_cycle"], t["cell"]))
