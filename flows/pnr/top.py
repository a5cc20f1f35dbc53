"""The top level of the hierarchical flow: floorplan, placement of the top's own cells, the DEF
qrouter routes, and the check of the routed top with the blocks' real layouts.

Floorplan
    The block macros sit FIXED in one row along the bottom of the die, ``gap`` apart, at positions
    on the routing grid (x a multiple of 1.6 um, y of 1.0 um: the block's tracks start at its die
    corner as the top's start at the top's, so every block pin lands on a top grid point). Their
    pins face up (:func:`flows.pnr.abstract.plan_pins`), and above the row, after a channel, lie the
    standard-cell rows of the top's own logic (registers, buffers, control), as many as that logic
    needs at the target utilization over the row's width; the top's ports are on the die's upper
    edge. Routing uses all six layers; over the blocks, metal5 and metal6 (the blocks route on
    metal1-4; their power stripes on metal6 are obstructions), except metal5 over the strip between
    a block's cells and its upper edge, where its pins' wires run: there qrouter reached a pin's
    wire from metal5 through vias off the top's grid and left notches against the block's metal6
    stripes (magic found 30 spacing errors on the matrix unit at D = 8).

Placement
    The top's own cells are placed by :func:`flows.pnr.place.place_cells` (quadratic placement
    around the fixed macro pins, spread to the rows' target utilization, legalized into the rows),
    then, their buffer trees rebuilt by position (:mod:`flows.pnr.repeat`), placed again. No fill
    cells: the top has no power grid (the cells' rails are not joined up), which the magic
    check ignores by comparing signal connectivity only.

Check
    :func:`check_top` loads each block's real layout (magic's ``.mag`` from qflow's migrate step,
    its bounding box pinned to the LEF's SIZE box), reads the routed top DEF over it, runs magic's
    DRC over the whole hierarchy, extracts it, and compares every signal pin's net with the top's
    netlist: opens, shorts and pins missing from the layout. qrouter's "No failed routes" does not
    cover a wrong abstract: a short against a block wire the abstract did not show is only found
    here.
"""

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .defdb import lef_macros
from .qflow import MIN_AREA_LOOP

__all__ = ["Floorplan", "floorplan", "port_slots", "top_def", "top_route_script",
           "check_script", "read_check", "TopCheck", "connectivity", "macro_pin_x", "ROW_HEIGHT", "SITE"]

#: The OSU 0.18 um standard-cell row height and site width (um).
ROW_HEIGHT, SITE = 10.0, 0.8
#: DEF units per micron of the DEFs written here (qflow's).
UNITS = 100
_TRACKS = (("metal1", "Y", 1.0), ("metal2", "X", 0.8), ("metal3", "Y", 1.0), ("metal4", "X", 0.8),
           ("metal5", "Y", 1.0), ("metal6", "X", 1.6))


def _snap(v: float, g: float) -> float:
    return round(round(v / g) * g, 3)


@dataclass
class Floorplan:
    """Die and positions (um): ``macros`` ``[(instance, x, y)]``, ``rows`` ``[(y, orientation)]``;
    ``util``: the rows' target utilization."""

    width: float
    height: float
    macro_size: tuple
    macros: list
    rows: list
    margin: float
    util: float = 1.0


def floorplan(instances, macro_size, cell_area: float, *, util: float, gap: float = 0.0,
              channel: float = 20.0, margin: float = 10.0) -> Floorplan:
    """Macros ``instances`` in a row, rows above for ``cell_area`` um^2 of top cells at ``util``.

    Raises
    ------
    ValueError
        ``util`` outside (0, 1].
    """
    if not 0 < util <= 1:
        raise ValueError(f"top-level target utilization {util}: must be in (0, 1]")
    mw, mh = macro_size
    n = len(instances)
    step = math.ceil((mw + gap) / 1.6 - 1e-9) * 1.6     # every macro on the grid, none overlapping
    x0, y0 = _snap(margin, 1.6), _snap(margin, 1.0)
    macros = [(inst, round(x0 + k * step, 3), y0) for k, inst in enumerate(instances)]
    width = _snap(x0 + (n - 1) * step + mw + margin + 0.8, 1.6)
    usable = width - 2 * margin
    nrows = 1 + -(-cell_area // (usable * ROW_HEIGHT * util)) if cell_area else 0   # one spare row
    first = _snap(y0 + mh + channel, ROW_HEIGHT)
    rows = [(first + r * ROW_HEIGHT, "N" if r % 2 == 0 else "FS") for r in range(int(nrows))]
    height = _snap((rows[-1][0] + ROW_HEIGHT if rows else y0 + mh) + channel, 1.0)
    return Floorplan(width, height, macro_size, macros, rows, margin, util)


def port_slots(want: dict, fp: Floorplan) -> dict:
    """``{port: x}``: the ports on the upper edge's slots (every other metal2 track between the
    margins), each as near the x it wants (``want``) as the order of the wanted x's allows.

    Raises
    ------
    ValueError
        More ports than slots.
    """
    x0 = math.ceil(fp.margin / 1.6 - 1e-9) * 1.6      # every other metal2 track (0.8 um from 0)
    count = int((fp.width - fp.margin - x0) / 1.6 + 1e-9) + 1
    if count < len(want):
        raise ValueError(f"{len(want)} top-level ports but {count} pin slots on the die's upper edge")
    order = sorted(want, key=lambda p: (want[p], p))
    idx = []
    for p in order:
        k = min(max(round((want[p] - x0) / 1.6), 0), count - 1)
        idx.append(max(k, idx[-1] + 1) if idx else k)
    for j in range(len(idx) - 1, -1, -1):   # pushed past the end: shift back, keeping the order
        idx[j] = min(idx[j], count - len(idx) + j, idx[j + 1] - 1 if j + 1 < len(idx) else count - 1)
    return {p: round(x0 + 1.6 * k, 3) for p, k in zip(order, idx, strict=True)}


def top_def(design: str, fp: Floorplan, macro: str, placed: dict, cells, macro_conns, inputs, outputs,
            ports_at: dict) -> str:
    """The unrouted top DEF: die, tracks from its corner, components (macros FIXED, cells PLACED),
    the ports on the upper edge at ``ports_at`` (:func:`port_slots`; metal2), and the nets, one
    connection per line (qrouter's DEF writer finds a net's line by its name and stops at the first
    ``;``: a net on one line loses its routes).

    ``macro_conns``: ``[(instance, {pin: net})]`` of the macros, in floorplan order.
    """
    u = UNITS
    d = ["VERSION 5.6 ;", "NAMESCASESENSITIVE ON ;", 'DIVIDERCHAR "/" ;', 'BUSBITCHARS "[]" ;',
         f"DESIGN {design} ;", f"UNITS DISTANCE MICRONS {u} ;", "",
         f"DIEAREA ( 0 0 ) ( {round(fp.width * u)} {round(fp.height * u)} ) ;", ""]
    for layer, axis, pitch in _TRACKS:
        span = fp.height if axis == "Y" else fp.width
        d.append(f"TRACKS {axis} 0 DO {int(span / pitch) + 1} STEP {round(pitch * u)} LAYER {layer} ;")
    d += ["", f"COMPONENTS {len(fp.macros) + len(cells)} ;"]
    d += [f"- {inst} {macro} + FIXED ( {round(x * u)} {round(y * u)} ) N ;" for inst, x, y in fp.macros]
    for inst, cell, _ in cells:
        x, y, o = placed[inst]
        d.append(f"- {inst} {cell} + PLACED ( {round(x * u)} {round(y * u)} ) {o} ;")
    ports = [(p, "INPUT") for p in inputs] + [(p, "OUTPUT") for p in outputs]
    d += ["END COMPONENTS", "", f"PINS {len(ports)} ;"]
    for p, direction in ports:
        x = ports_at[p]
        d.append(f"- {p} + NET {p} + DIRECTION {direction} + LAYER metal2 ( -15 -15 ) ( 15 15 ) "
                 f"+ PLACED ( {round(x * u)} {round(fp.height * u)} ) N ;")
    d += ["END PINS", ""]
    nets = {p: [("PIN", p)] for p, _ in ports}
    for inst, conns in macro_conns:
        for pin, n in conns.items():
            nets.setdefault(n, []).append((inst, pin))
    for inst, _, pins in cells:
        for pin, n in pins.items():
            nets.setdefault(n, []).append((inst, pin))
    nets = {n: c for n, c in nets.items() if len(c) > 1}
    d.append(f"NETS {len(nets)} ;")
    for n, conns in nets.items():
        d.append(f"- {n}")
        d += [f"  ( {i} {p} )" for i, p in conns[:-1]] + [f"  ( {conns[-1][0]} {conns[-1][1]} ) ;"]
    d += ["END NETS", "", "END DESIGN", ""]
    return "\n".join(d)


def top_route_script(design: str, lefs, fp: Floorplan, *, strip: float, ignore=(), give_up: int) -> str:
    """qrouter's script for the top: the LEFs, six layers, the die-edge obstruction strips qflow's
    own scripts write, metal5 obstructed over each block's top ``strip`` um (its pins' wires), the
    DEF, then the bounded route (stage 1 and two stage-2 passes; the stage-2 passes are skipped
    when stage 1 leaves more than ``give_up`` nets unrouted, a layout their rip-up would spend hours
    on), the routed DEF and a ``Final:`` line. No ``cleanup all``: where it merges a pin's via with
    a neighbouring one it can move the pin's metal1 segment to metal2 (qrouter 1.4.71; the matrix
    unit's top at D = 8 lost a pin so); adjacent vias it would merge are left to magic's DRC of the
    routed top."""
    w, h, e = fp.width, fp.height, 0.5
    r = ["verbose 1", *(f"read_lef {p}" for p in lefs), "catch {layers 6}", "via stack 1", "vdd vdd",
         "gnd gnd"]
    for layer in ("metal1", "metal3", "metal5"):
        r += [f"obstruction -1 {h - e} {w + 1} {h + 1} {layer}", f"obstruction -1 -1 {w + 1} {e} {layer}"]
    for layer in ("metal1", "metal2", "metal4", "metal6"):
        r += [f"obstruction -1 -1 {e} {h + 1} {layer}", f"obstruction {w - e} -1 {w + 1} {h + 1} {layer}"]
    mw, mh = fp.macro_size
    for _, x, y in fp.macros:      # no via onto the pins' wires (see the module's Floorplan)
        r.append(f"obstruction {x} {round(y + mh - strip, 3)} {round(x + mw, 3)} {round(y + mh, 3)} metal5")
    r.append(f"read_def {design}.def")
    if ignore:
        r.append(f"ignore {' '.join(ignore)}")
    r += ['puts stdout "*** Running stage1 routing with defaults"', "set result [stage1]",
          f'if {{$result > {int(give_up)}}} {{ puts stdout "Stage 1 left $result nets: no rip-up" }} else {{',
          "if {$result > 0} { set result [stage2 mask 10 effort 10] }",
          "if {$result > 0} { set result [stage2 mask none effort 50] }", "}",
          f"write_def {design}_route.def",
          'if {$result > 0} { puts stdout "Final: Failed net routes: $result" } '
          'else { puts stdout "Final: No failed routes!" }']
    r.append("quit")
    return "\n".join(r) + "\n"


@dataclass
class TopCheck:
    """magic's DRC count and the signal connectivity of the extracted top against its netlist."""

    drc_errors: int
    drc_rules: dict
    pins: int
    missing: list = field(default_factory=list)
    opens: dict = field(default_factory=dict)
    shorts: dict = field(default_factory=dict)
    min_area_patches: int = 0

    @property
    def clean(self) -> bool:
        return not (self.drc_errors or self.missing or self.opens or self.shorts)


def check_script(tech_lef: Path, block_layout: Path, block: str, bbox: tuple, routed_def: Path,
                 top: str) -> str:
    """magic: the block's real layout with its bounding box pinned to its DIEAREA (magic units,
    0.1 um), the routed top read into a fresh cell, qflow's minimum-area patches on the top's wires
    (:data:`flows.pnr.qflow.MIN_AREA_LOOP`, as on a flat layout), DRC over the hierarchy,
    extraction to SPICE."""
    box = " ".join(f"{round(v * 10)}" for v in bbox)
    return f"""drc off
snap int
lef read {tech_lef}
addpath {block_layout}
load {block}
property FIXED_BBOX "{box}"
load {top}
def read {routed_def.with_suffix('')}
{MIN_AREA_LOOP}select top cell
expand
drc on
drc check
drc catchup
puts stdout "top_drc = [drc list count total]"
foreach {{rule boxes}} [drc listall why] {{ puts stdout "DRCRULE [llength $boxes] | $rule" }}
save {top}
extract all
ext2spice hierarchy on
ext2spice format ngspice
ext2spice scale off
ext2spice renumber off
ext2spice cthresh infinite
ext2spice rthresh infinite
ext2spice blackbox on
ext2spice subcircuit top auto
ext2spice global off
ext2spice
quit -noprompt
"""


def connectivity(spice: str, top: str, expected: dict, power=("vdd", "gnd")) -> tuple:
    """Compare magic's extracted top (``spice``) with ``expected`` ``{(instance, pin): net}``:
    ``(missing, opens, shorts)`` over the signal pins (power pins ignored)."""
    lines = []
    for ln in spice.splitlines():
        if ln.startswith("+") and lines:
            lines[-1] += " " + ln[1:]
        elif ln.strip() and not ln.startswith("*"):
            lines.append(ln)
    pins, cur, layout = {}, None, {}
    for ln in lines:
        w = ln.split()
        if w[0].lower() == ".subckt":
            pins[w[1]], cur = w[2:], w[1]
        elif w[0].lower() == ".ends":
            cur = None
        elif cur == top and w[0][0] in "Xx":
            inst, nets, cell = w[0][1:], w[1:-1], w[-1]
            for p, n in zip(pins.get(cell, ()), nets, strict=False):
                if p not in power:
                    layout[(inst, p)] = n
    s2l, l2s = {}, {}
    for k, n in expected.items():
        if k in layout:
            s2l.setdefault(n, set()).add(layout[k])
            l2s.setdefault(layout[k], set()).add(n)
    missing = sorted(f"{i}/{p}" for i, p in expected if (i, p) not in layout)
    opens = {n: sorted(ls) for n, ls in s2l.items() if len(ls) > 1}
    shorts = {n: sorted(ss) for n, ss in l2s.items() if len(ss) > 1}
    return missing, opens, shorts


def read_check(log_text: str, spice: str, top: str, expected: dict) -> TopCheck:
    """The :class:`TopCheck` of a :func:`check_script` run (its output and extracted SPICE).

    Raises
    ------
    ValueError
        magic printed no DRC count (the run failed).
    """
    m = re.findall(r"^top_drc = (\d+)", log_text, re.M)
    if not m:
        raise ValueError("magic's check of the top printed no DRC count")
    rules = {r: int(n) for n, r in re.findall(r"^DRCRULE (\d+) \| (.*)$", log_text, re.M)}
    patched = re.findall(r"^min_area_patches = (\d+)", log_text, re.M)
    missing, opens, shorts = connectivity(spice, top, expected)
    return TopCheck(int(m[-1]), rules, len(expected), missing, opens, shorts,
                    int(patched[-1]) if patched else 0)


def macro_pin_x(lef_text: str, macro: str) -> dict:
    """``{pin: x}`` of a macro's pins (the centre of each pin's first shape), relative to its origin."""
    _, pins = lef_macros(lef_text)[macro]
    return {p: (mp.shapes[0][1] + mp.shapes[0][3]) / 2 for p, mp in pins.items() if mp.shapes}
