"""Analytic estimate of the wires a column macro leaves out: the matrix unit's top-level nets.

A column macro (``--block mu_col``) is placed and routed alone; the unit places D of them and wires
them to its own registers. This module estimates those top-level wires from the routed macro's
measured size, labelled as an estimate (nothing here is routed):

* **floorplan**: the D macros abutted in one row, each ``w`` wide and ``h`` high, the top's
  registers along the row (so a broadcast net runs the length of the row, ``D * w``);
* **broadcast nets** (every column reads them): the activation row ``x`` (D x b bits), the one-hot
  weight-row enable ``we`` (D bits) and the column control (``en_next``, ``swap_req``,
  ``swap_ok_next``, ``acc_next``): each one net of length ``D * w`` with D taps;
* **point-to-point nets**: each column's weight element ``wdata`` (b bits) and result ``y``
  (32 bits), on average half the row long (the top's register for column j is anywhere along the
  row; a register placed above its column would make them short, so this is an upper estimate).

A broadcast net's delay is estimated two ways with the layer's R and C per micron from the
technology LEF (:func:`lef_layers`): the Elmore delay of the unbuffered wire with its taps spread
evenly (an ideal driver: the wire's own RC), and a chain of repeaters (the library's strongest
buffer, each driving the most load the liberty allows it: :meth:`flows.synth.liberty.Library.drive_limit`)
whose cell delays come from the liberty's tables at their segment's load.
"""

import math
import re
from dataclasses import dataclass

__all__ = ["WireRC", "lef_layers", "Broadcast", "broadcast", "strongest_buffer", "top_wirelength",
           "repeater_spacing", "CONTROL_NETS", "ROW_LAYER"]

#: Layer of the top-level row nets (the horizontal layer with the least capacitance per um).
ROW_LAYER = "metal5"

#: Control nets every column reads besides ``x`` and ``we`` (en_next, swap_req, swap_ok_next, and
#: the accumulate control record of a rows = 1 unit: valid, first, last).
CONTROL_NETS = 6


def top_wirelength(d: int, width_um: float, bits: int) -> float:
    """Estimated um of the unit's top-level nets for ``d`` macros ``width_um`` wide abutted in a
    row, ``bits``-bit activations: every broadcast net the row's length, every point-to-point net
    half of it (the module's floorplan)."""
    length = d * width_um
    return (d * bits + d + CONTROL_NETS) * length + d * (bits + 32) * length / 2


@dataclass(frozen=True)
class WireRC:
    """One routing layer's wire of minimum width: resistance (ohm/um) and capacitance (pF/um); and
    the LEF's own values: default width (um), RPERSQ (ohm), CPERSQDIST (pF/um^2), EDGECAPACITANCE
    (pF/um)."""

    layer: str
    direction: str
    r_ohm_um: float
    c_pf_um: float
    width_um: float = 0.0
    rpersq: float = 0.0
    carea: float = 0.0
    cedge: float = 0.0


def lef_layers(lef_text: str) -> dict:
    """``{layer: WireRC}`` of the routing layers of a LEF: R = RPERSQ / WIDTH, C = CPERSQDIST x WIDTH
    + 2 x EDGECAPACITANCE (pF/um^2 and pF/um, the LEF's units).

    Raises
    ------
    ValueError
        A routing layer lacks WIDTH, RESISTANCE RPERSQ or CAPACITANCE CPERSQDIST.
    """
    out = {}
    for m in re.finditer(r"^LAYER\s+(\S+)(.*?)^END\s+\1", lef_text, re.M | re.S):
        body = m[2]
        if not re.search(r"TYPE\s+ROUTING", body):
            continue

        def num(pat, body=body, name=m[1]):
            v = re.search(pat + r"\s+([-0-9.eE+]+)", body)
            if not v:
                raise ValueError(f"LEF layer {name}: no {pat.split(chr(92))[0]} value")
            return float(v[1])

        width = num(r"WIDTH")
        edge = re.search(r"EDGECAPACITANCE\s+([-0-9.eE+]+)", body)
        d = re.search(r"DIRECTION\s+(\w+)", body)
        rsq, carea = num(r"RESISTANCE\s+RPERSQ"), num(r"CAPACITANCE\s+CPERSQDIST")
        cedge = float(edge[1]) if edge else 0.0
        out[m[1]] = WireRC(m[1], d[1].lower() if d else "?", rsq / width, carea * width + 2 * cedge,
                           width, rsq, carea, cedge)
    return out


def strongest_buffer(lib):
    """``(cell name, output pin)`` of the non-inverting single-input cell with the largest drive
    limit (the repeater of :func:`broadcast`)."""
    cands = []
    for c in lib.cells.values():
        if c.is_seq or len(c.inputs) != 1 or len(c.outputs) != 1:
            continue
        func = c.functions.get(c.outputs[0], "").replace(" ", "")
        if func == next(iter(c.inputs)):
            cands.append((lib.drive_limit(c.name, c.outputs[0], within_tables=True), c.name, c.outputs[0]))
    if not cands:
        raise ValueError(f"liberty {lib.name}: no buffer cell (one input, output = input)")
    _, name, pin = max(cands)
    return name, pin


def _cell_delay(lib, cell, pin, load_pf, slew):
    """Worst rise/fall delay and output transition (library units) of ``cell``'s arc to ``pin``."""
    arc = lib.cell(cell).arcs_to(pin)[0]
    load = load_pf / lib.cap_pf
    delay = max(t.lookup(load, slew) for k, t in arc.tables.items() if k.startswith("cell_"))
    tran = max(t.lookup(load, slew) for k, t in arc.tables.items() if k.endswith("transition"))
    return delay, tran


def _stage_ps(lib, buf, pin, seg_um, spread_pf, end_pf, slew, rc):
    """One repeater and the segment it drives: ``(ps, output transition)``. The buffer's liberty
    delay at the whole load (with input transition ``slew``) plus the segment's Elmore delay,
    ``spread_pf`` (wire and taps) spread evenly over ``seg_um`` and ``end_pf`` (the next repeater's
    input) at its far end."""
    d, slew = _cell_delay(lib, buf, pin, spread_pf + end_pf, slew)
    return d * lib.time_ps + rc.r_ohm_um * seg_um * (spread_pf / 2 + end_pf), slew   # ohm x pF = ps


def _chain_ps(lib, buf, pin, n, seg_len, seg_c, rc):
    """Delay (ps) of ``n`` repeaters in a chain, each driving ``seg_c`` pF spread over ``seg_len`` um."""
    slew = lib.default_input_slew()
    total = 0.0
    for _ in range(n):
        t, slew = _stage_ps(lib, buf, pin, seg_len, seg_c, 0.0, slew, rc)
        total += t
    return total


@dataclass
class Broadcast:
    """Estimated top-level broadcast net (lengths um, capacitances pF, delays ps)."""

    length_um: float
    taps: int
    wire_cap_pf: float
    load_cap_pf: float
    elmore_ps: float
    buffer: str
    repeaters: int
    repeated_ps: float


def broadcast(length_um, taps, tap_cap_pf, rc: WireRC, lib) -> Broadcast:
    """Estimate one net of ``length_um`` on layer ``rc`` with ``taps`` loads of ``tap_cap_pf``
    spread evenly (see module docstring).

    ``elmore_ps`` is the far end's Elmore delay of the unbuffered wire from an ideal driver,
    ``r L (c L / 2 + taps C_tap / 2)``; ``repeated_ps`` is the fastest chain of ``repeaters`` equal
    segments (at least as many as keep each segment's wire and tap load within the buffer's drive
    limit), each the buffer's liberty delay at its segment's load (with the slew its predecessor
    produces) plus the segment's Elmore delay.
    """
    if length_um <= 0 or taps < 1:
        raise ValueError(f"a broadcast net needs a positive length and taps, not {length_um} um, {taps}")
    wire_c = rc.c_pf_um * length_um
    load_c = taps * tap_cap_pf
    elmore_ps = rc.r_ohm_um * length_um * (wire_c / 2 + load_c / 2)   # ohm x pF = ps
    buf, pin = strongest_buffer(lib)
    limit_pf = lib.drive_limit(buf, pin, within_tables=True) * lib.cap_pf
    n_min = max(1, math.ceil((wire_c + load_c) / limit_pf))
    best = None
    for n in range(n_min, 4 * n_min + 64):
        t = _chain_ps(lib, buf, pin, n, length_um / n, (wire_c + load_c) / n, rc)
        if best is None or t < best[1]:
            best = (n, t)
    return Broadcast(length_um, taps, wire_c, load_c, elmore_ps, buf, best[0], best[1])


def repeater_spacing(lib, rc: WireRC, tap_pf_um: float = 0.0, buffer=None) -> float:
    """The segment (um) at which a chain of ``buffer`` (``(cell, output pin, load limit pF)``; default
    :func:`strongest_buffer` at its drive limit) over a wire of ``rc`` with ``tap_pf_um`` of loads
    per um is fastest per um: each buffer's liberty delay at its segment's load (wire, taps and the
    next buffer's input, at the slew an equal predecessor hands on) plus the segment's Elmore delay,
    over the segment's length; no longer than the buffer's limit allows.

    Raises
    ------
    ValueError
        A negative tap load.
    """
    if tap_pf_um < 0:
        raise ValueError(f"tap load {tap_pf_um} pF/um: must not be negative")
    if buffer is None:
        buf, pin = strongest_buffer(lib)
        buffer = (buf, pin, lib.drive_limit(buf, pin, within_tables=True) * lib.cap_pf)
    buf, pin, limit_pf = buffer
    cin = max(lib.cell(buf).inputs.values()) * lib.cap_pf
    c_um = rc.c_pf_um + tap_pf_um
    longest = (limit_pf - cin) / c_um
    best = None
    for k in range(1, 201):
        seg = longest * k / 200
        slew = lib.default_input_slew()
        for _ in range(3):   # the slew an equal predecessor hands on
            t, slew = _stage_ps(lib, buf, pin, seg, c_um * seg, cin, slew, rc)
        per_um = t / seg
        if best is None or per_um < best[0]:
            best = (per_um, seg)
    return round(best[1], 1)
