"""The least wire a net left unrouted must have: the matrix unit's ideal clock.

The layouts keep the clock ideal (no tree, not routed), so its wire is missing from their
parasitics. Whatever tree a clock tree synthesis built, it connects every clock pin, so its wire is
at least the rectilinear Steiner minimal tree through them; and the rectilinear minimum spanning
tree is at most 3/2 of that (Hwang, 1976), so :func:`min_tree_um` (2/3 of the spanning tree, by
Prim's algorithm) is a lower bound on any tree's length. Buffers, and the detours a tree makes to
balance skew, only add to it.

The pins' positions are the centres of their first LEF shape placed with the component
(:func:`pin_points`).
"""

import numpy as np

from .defdb import Def, lef_macros, placed_rect

__all__ = ["rmst_um", "min_tree_um", "pin_points", "ClockWireError"]


class ClockWireError(ValueError):
    """A net's pin cannot be located; the message names it."""


def rmst_um(points) -> float:
    """Length (um) of the rectilinear minimum spanning tree of ``points`` (``(x, y)`` in um)."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    n = len(p)
    if n < 2:
        return 0.0
    inside = np.zeros(n, dtype=bool)
    inside[0] = True
    dist = np.abs(p - p[0]).sum(axis=1)
    total = 0.0
    for _ in range(n - 1):
        dist[inside] = np.inf
        j = int(np.argmin(dist))
        total += float(dist[j])
        inside[j] = True
        dist = np.minimum(dist, np.abs(p - p[j]).sum(axis=1))
    return total


def min_tree_um(points) -> float:
    """The shortest any tree through ``points`` can be: 2/3 of :func:`rmst_um` (see the module
    docstring)."""
    return 2.0 * rmst_um(points) / 3.0


def pin_points(d: Def, lef_texts, net: str) -> list:
    """``(x, y)`` (um) of every pin of ``net`` in the DEF ``d``: component pins at the centre of their
    first shape in the LEFs ``lef_texts`` (cells and macros), DEF pins at their rectangle's centre.

    Raises
    ------
    ClockWireError
        The net is not in the DEF, or a pin's cell, pin or position is unknown.
    """
    if net not in d.nets:
        raise ClockWireError(f"net {net} is not in the DEF")
    macros = {}
    for t in lef_texts:
        macros.update(lef_macros(t))
    where = {c[0]: c for c in d.components}
    out = []
    for inst, pin in d.nets[net]:
        if inst == "PIN":
            r = d.pins.get(pin, {}).get("rect")
            if r is None:
                raise ClockWireError(f"net {net}: DEF pin {pin} has no placed rectangle")
            out.append(((r[0] + r[2]) / 2, (r[1] + r[3]) / 2))
            continue
        if inst not in where:
            raise ClockWireError(f"net {net}: component {inst} is not placed in the DEF")
        _, cell, x, y, orient, _ = where[inst]
        if cell not in macros or pin not in macros[cell][1] or not macros[cell][1][pin].shapes:
            raise ClockWireError(f"net {net}: no LEF shape for pin {pin} of {cell} ({inst})")
        size, pins = macros[cell]
        _, x0, y0, x1, y1 = placed_rect(pins[pin].shapes[0], x, y, orient, size)
        out.append(((x0 + x1) / 2, (y0 + y1) / 2))
    return out
