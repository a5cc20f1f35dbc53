"""A routed block as a hard macro: its pins where the top level wants them, and its LEF abstract.

The hierarchical flow (:mod:`flows.pnr.hierflow`) lays a repeated block out once and places copies
of it in the top level, which qrouter routes over and between them. That needs the block's

- **pins on known edges** (:func:`plan_pins`): qflow spreads a block's pins over all four sides;
  the plan moves them, after placement and before routing, to the edges the top level routes to
  (metal2 on the top and bottom edges, metal3 on the sides), every other track, off the power
  stripes, ordered by the cells they connect to. qflow's own pin hints (``.cel2`` side
  restrictions) were tried and left a pin on a side whose layer qflow's router obstructs there.
- **LEF abstract** (:func:`lef_abstract`): CLASS BLOCK, SIZE = the block's DIEAREA, every pin with
  its own wires between the pin and the cell core as extra port shapes (written as obstructions
  they cover the pin and qrouter finds no way in; left out, the top router may run another net
  across them: a short it does not see), and as obstructions the cell core on the layers the block
  routes on (bloated by how far the cells' rails reach beyond their size boxes: without it the top
  router ran metal1 beside the bottom row's rail), plus every other wire and via outside the core or
  above those layers (the power stripes on metal6 and their vias).

The top level sees the block only through the abstract, so a wrong abstract is a short or an open
the router cannot know of: :func:`flows.pnr.top.check_top` checks the routed top with the block's
real layout in magic.
"""

import fnmatch
import re
from pathlib import Path

from .defdb import Def, Via, Wire, cell_overhang, lef_macros, lef_vias
from .wires import lef_layers

__all__ = ["core_box", "plan_pins", "lef_abstract", "PinPlanError", "ROUTING_LAYERS"]

#: The routing layers of the OSU 0.18 um technology, bottom up.
ROUTING_LAYERS = ("metal1", "metal2", "metal3", "metal4", "metal5", "metal6")
#: Clearance (um) of a planned pin from a power stripe's centre line.
STRIPE_CLEARANCE = 2.0


class PinPlanError(ValueError):
    """The block's pins do not fit on the edges asked for; the message says how many do."""


def plan_pins(def_paths, sides="*=T") -> dict:
    """Move the signal pins of a placed qflow DEF (and its copies, e.g. ``<top>_unroute.def``, which
    qflow's router copies back before routing) to the edges ``sides`` names.

    Parameters
    ----------
    def_paths : sequence of Path
        The first is read; every one is rewritten with the same pins.
    sides : str
        Comma-separated ``PATTERN=SIDE`` rules (fnmatch patterns of pin names, SIDE one of T, B, L,
        R); the first rule a pin matches wins.

    Returns
    -------
    dict
        ``{side: number of pins}``.

    Raises
    ------
    PinPlanError
        A side has fewer free track slots than pins, or a pin matches no rule.
    """
    rules = [r.split("=") for r in sides.split(",")]
    if any(len(r) != 2 or r[1] not in ("T", "B", "L", "R") for r in rules):
        raise PinPlanError(f"pin sides {sides!r}: expected PATTERN=SIDE rules with SIDE in T, B, L, R")
    d = Def.read(def_paths[0])
    s = d.scale
    x0, y0, x1, y1 = d.die
    stripes = [w.points[0][0] for net in ("vdd", "gnd") for w in d.special.get(net, ())
               if isinstance(w, Wire) and w.layer == "metal6"]
    comp = {c[0]: c for c in d.components}
    where = {}
    for net, conns in d.nets.items():
        xs = [(comp[i][2], comp[i][3]) for i, _ in conns if i in comp]
        if xs:
            where[net] = (sum(x for x, _ in xs) / len(xs), sum(y for _, y in xs) / len(xs))
    by_side = {}
    for name in d.pins:
        if name in ("vdd", "gnd"):
            continue
        side = next((sd for pat, sd in rules if fnmatch.fnmatch(name, pat)), None)
        if side is None:
            raise PinPlanError(f"pin {name} matches none of the pin side rules {sides!r}")
        by_side.setdefault(side, []).append(name)
    new = {}
    for side, names in by_side.items():
        layer = "metal2" if side in "TB" else "metal3"
        start, count, step = d.tracks[layer]
        k = 0 if side in "TB" else 1
        names.sort(key=lambda n: where.get(d.pins[n]["net"], (0.0, 0.0))[k])
        lo, hi = (x0, x1) if side in "TB" else (y0, y1)
        slots = [v for v in (start + i * step for i in range(2, count - 2, 2))
                 if lo < v < hi and all(abs(v - st) > STRIPE_CLEARANCE for st in stripes)]
        if len(slots) < len(names):
            raise PinPlanError(f"{len(names)} pins for side {side} but {len(slots)} free {layer} track slots "
                               f"on it ({hi - lo:.1f} um): put some pins on another side")
        for j, n in enumerate(names):
            v = slots[int((j + 0.5) * len(slots) / len(names))]
            pos = {"T": (v, y1), "B": (v, y0 + d.tracks["metal1"][2]), "L": (x0 + d.tracks["metal2"][2], v),
                   "R": (x1, v)}[side]
            new[n] = (layer, pos)
    pat = re.compile(r"^- (\S+) \+ NET (\S+)(.*?)\n\s+\+ LAYER \S+ \( -?\d+ -?\d+ \) \( -?\d+ -?\d+ \)\n"
                     r"\s+\+ PLACED \( -?\d+ -?\d+ \) N ;", re.M)
    for path in def_paths:
        text = Path(path).read_text()
        moved = []

        def repl(m, moved=moved):
            if m[1] not in new:
                return m[0]
            layer, (x, y) = new[m[1]]
            moved.append(m[1])
            return (f"- {m[1]} + NET {m[2]}{m[3]}\n  + LAYER {layer} ( -15 -15 ) ( 15 15 )\n"
                    f"  + PLACED ( {round(x * s)} {round(y * s)} ) N ;")
        text = pat.sub(repl, text)
        if len(moved) != len(new):
            raise PinPlanError(f"{path}: {len(new)} pins to move, {len(moved)} found in its PINS section "
                               "(not a DEF written by qflow's placement)")
        Path(path).write_text(text)
    return {sd: len(v) for sd, v in by_side.items()}


def core_box(d: Def, tech_text: str) -> tuple:
    """The box (um, the DEF's coordinates) of a placed block's cells, bloated by how far their
    rails reach beyond their size boxes."""
    sizes = {c: sz for c, (sz, _) in lef_macros(tech_text).items()}
    over = cell_overhang(tech_text)
    ox = max(over.get(c[1], (0, 0))[0] for c in d.components)
    oy = max(over.get(c[1], (0, 0))[1] for c in d.components)
    return (min(c[2] for c in d.components) - ox, min(c[3] for c in d.components) - oy,
            max(c[2] + sizes[c[1]][0] for c in d.components) + ox,
            max(c[3] + sizes[c[1]][1] for c in d.components) + oy)


def lef_abstract(d: Def, macro: str, inputs, outputs, tech_text: str, core_layers: int = 4) -> str:
    """The LEF abstract (CLASS BLOCK) of a routed block (see the module docstring).

    Parameters
    ----------
    d : Def
        The block's routed DEF.
    inputs, outputs : sequence of str
        Its pin names by direction (the DEF does not say).
    tech_text : str
        The technology LEF (vias, cell sizes and their overhang, wire widths).
    core_layers : int
        The layers the block routed on (metal1 .. metal<core_layers>), obstructed over its core.
    """
    vias = {**lef_vias(tech_text), **d.vias}
    half = {layer: rc.width_um / 2 for layer, rc in lef_layers(tech_text).items()}
    x0, y0, x1, y1 = d.die
    if not d.components:
        raise ValueError(f"block {macro}: its DEF has no components")
    core = core_box(d, tech_text)
    inner = set(ROUTING_LAYERS[:core_layers])

    def inside(r):
        return core[0] <= r[0] and core[1] <= r[1] and r[2] <= core[2] and r[3] <= core[3]

    pin_of_net = {p["net"]: name for name, p in d.pins.items() if name not in ("vdd", "gnd")}
    obs, ports = {}, {}

    def shapes(items):
        for it in items:
            if isinstance(it, Wire):
                h = it.width / 2 if it.width else half.get(it.layer, 0.15)
                for (ax, ay), (bx, by) in zip(it.points, it.points[1:], strict=False):
                    yield it.layer, (min(ax, bx) - h, min(ay, by) - h, max(ax, bx) + h, max(ay, by) + h)
            elif isinstance(it, Via):
                for layer, rx0, ry0, rx1, ry1 in vias.get(it.name, ()):
                    yield layer, (it.at[0] + rx0, it.at[1] + ry0, it.at[0] + rx1, it.at[1] + ry1)

    for net, items in [*d.wiring.items(), *d.special.items()]:
        into = ports.setdefault(pin_of_net[net], {}) if net in pin_of_net else obs
        for layer, r in shapes(items):
            if layer not in half or (layer in inner and inside(r)):
                continue   # cut layers (the metal shapes cover them); the core is one obstruction
            into.setdefault(layer, set()).add(tuple(round(v, 3) for v in r))

    def rect(r):
        return " ".join(f"{v:.3f}" for v in (r[0] - x0, r[1] - y0, r[2] - x0, r[3] - y0))

    ins, outs = set(inputs), set(outputs)
    out = ["VERSION 5.6 ;", 'BUSBITCHARS "[]" ;', 'DIVIDERCHAR "/" ;', "", f"MACRO {macro}",
           "  CLASS BLOCK ;", f"  FOREIGN {macro} 0 0 ;", "  ORIGIN 0 0 ;",
           f"  SIZE {x1 - x0:.3f} BY {y1 - y0:.3f} ;",
           "  SYMMETRY X Y ;"]
    for name, p in d.pins.items():
        if name in ("vdd", "gnd"):
            stripes = [w for w in d.special.get(name, ()) if isinstance(w, Wire) and w.layer == "metal6"]
            geo = {"metal6": [(w.points[0][0] - w.width / 2, min(q[1] for q in w.points),
                               w.points[0][0] + w.width / 2, max(q[1] for q in w.points)) for w in stripes]}
            head = ["    DIRECTION INOUT ;", f"    USE {'POWER' if name == 'vdd' else 'GROUND'} ;"]
        else:
            if name not in ins | outs:
                raise ValueError(f"block {macro}: DEF pin {name} is neither an input nor an output")
            geo = {layer: sorted(rs) for layer, rs in ports.get(name, {}).items()}
            geo.setdefault(p["layer"], []).append(p["rect"])
            head = [f"    DIRECTION {'INPUT' if name in ins else 'OUTPUT'} ;", "    USE SIGNAL ;"]
        out += [f"  PIN {name}", *head, "    PORT"]
        for layer in sorted(geo):
            out += [f"      LAYER {layer} ;"] + [f"        RECT {rect(r)} ;" for r in geo[layer]]
        out += ["    END", f"  END {name}"]
    out.append("  OBS")
    for layer in ROUTING_LAYERS:
        rs = ([core] if layer in inner else []) + sorted(obs.get(layer, ()))
        if rs:
            out += [f"    LAYER {layer} ;"] + [f"      RECT {rect(r)} ;" for r in rs]
    out += ["  END", f"END {macro}", "", "END LIBRARY", ""]
    return "\n".join(out)
