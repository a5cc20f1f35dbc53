"""RC extraction of a routed DEF into SPEF (the top level of the hierarchical flow).

qrouter's own RC writer (``write_delays``) walks each net's route from its pins; at a top level it
loses sinks on macro pins reached through a via from metal1 (its walker looks the pin up on the via's
lower layer): the sink is then missing from the net's RC tree and OpenSTA times it without its
wire. :func:`extract` reads the routed DEF instead. Per net, every wire piece is cut at each point
where another piece or a via of the net touches it, and each cut piece is a resistor
``R = RPERSQ x length / width`` with ``C = length x (width x CPERSQDIST + EDGECAPACITANCE)`` split
to its ends: qrouter's formulas (one edge's fringe per unit length, so the top level and the blocks,
whose parasitics come from qrouter, are extracted alike; the LEF's definition of EDGECAPACITANCE
per edge would add the second edge's fringe). Vias are 0 ohm (the LEF gives them no resistance).
Every pin of the net (a component's pin, its LEF shapes placed with the component's orientation,
or a DEF pin) is joined to the first node lying on one of its shapes on the same layer.
"""

import re
from collections import defaultdict
from dataclasses import dataclass, field

from .defdb import Def, Via, Wire, lef_macros, lef_vias, placed_rect
from .wires import lef_layers

__all__ = ["extract", "Extraction", "ExtractionError"]

#: How far (um) a node may lie outside a pin shape and still be joined to it.
TOLERANCE = 0.2


class ExtractionError(ValueError):
    """A net's wiring leaves a pin unattached or a component unknown; the message names it."""


@dataclass
class Extraction:
    """The SPEF text and what went into it."""

    spef: str
    nets: int = 0
    nodes: int = 0
    wire_cap_pf: float = 0.0
    unrouted: list = field(default_factory=list)
    unattached: list = field(default_factory=list)


def _layer_index(name: str) -> int:
    m = re.search(r"(\d+)$", name)
    return int(m[1]) if m else 0


def extract(d: Def, tech_text: str, macro_lefs=(), *, design: str) -> Extraction:
    """Extract every routed net of ``d`` (standard cells from ``tech_text``, other macros from
    ``macro_lefs``) into SPEF (pF, ohm).

    Nets without wiring are left out (listed in ``unrouted``); a pin no node of its net touches is
    listed in ``unattached`` (its net is still written, without that pin).

    Raises
    ------
    ExtractionError
        A component of a cell no LEF defines, or a pin its LEF macro lacks.
    """
    layers = lef_layers(tech_text)
    vias = lef_vias(tech_text)
    macros = lef_macros(tech_text)
    for text in macro_lefs:
        macros.update(lef_macros(text))
        vias.update(lef_vias(text))
    vias.update(d.vias)
    comp = {c[0]: c for c in d.components}
    head = ['*SPEF "IEEE 1481-1998"', f'*DESIGN "{design}"', '*DATE ""', '*VENDOR "flows.pnr"',
            '*PROGRAM "flows.pnr.extract"', '*VERSION "1"', '*DESIGN_FLOW ""', "*DIVIDER /",
            "*DELIMITER :", "*BUS_DELIMITER [ ]", "*T_UNIT 1 NS", "*C_UNIT 1 PF", "*R_UNIT 1 OHM",
            "*L_UNIT 1 HENRY", ""]
    out = Extraction("")
    body = []
    for net, conns in d.nets.items():
        items = d.wiring.get(net, []) + d.special.get(net, [])
        pieces, points, edges = [], defaultdict(set), []
        for it in items:
            if isinstance(it, Wire):
                w = it.width or layers[it.layer].width_um
                pieces += [(it.layer, a, b, w) for a, b in zip(it.points, it.points[1:], strict=False)]
                points[it.layer].update(it.points)
            elif isinstance(it, Via):
                ls = sorted({g[0] for g in vias.get(it.name, ()) if g[0] in layers}, key=_layer_index)
                for layer in ls:
                    points[layer].add(it.at)
                edges += [((a, it.at), (b, it.at), 0.0, 0.0) for a, b in zip(ls, ls[1:], strict=False)]
        if not pieces and not edges:
            out.unrouted.append(net)
            continue
        for layer, a, b, w in pieces:
            rsq, carea, cedge = layers[layer].rpersq, layers[layer].carea, layers[layer].cedge
            on = sorted((q for q in points[layer]
                         if min(a[0], b[0]) - 1e-6 <= q[0] <= max(a[0], b[0]) + 1e-6
                         and min(a[1], b[1]) - 1e-6 <= q[1] <= max(a[1], b[1]) + 1e-6),
                        key=lambda q: abs(q[0] - a[0]) + abs(q[1] - a[1]))
            for p, q in zip(on, on[1:], strict=False):
                n = abs(p[0] - q[0]) + abs(p[1] - q[1])
                if n > 0:
                    edges.append(((layer, p), (layer, q), rsq * n / w, n * (w * carea + cedge)))
        nodes, cap = {}, defaultdict(float)
        for a, b, _, c in edges:
            for x in (a, b):
                nodes.setdefault(x, len(nodes) + 1)
            cap[a] += c / 2
            cap[b] += c / 2
        names, joins, conn_lines = {}, [], []
        for inst, pin in conns:
            if inst == "PIN":
                p = d.pins[pin]
                shapes = [(p["layer"], *p["rect"])] if "rect" in p else []
                name = pin
                conn_lines.append(f"*P {pin} {'I' if p['direction'] == 'INPUT' else 'O'}")
            else:
                if inst not in comp or comp[inst][1] not in macros:
                    raise ExtractionError(f"net {net}: component {inst} is of a cell no LEF given defines")
                _, cell, x, y, orient, _ = comp[inst]
                size, pins = macros[cell]
                if pin not in pins:
                    raise ExtractionError(f"net {net}: {cell} has no pin {pin} in its LEF")
                shapes = [placed_rect(s, x, y, orient, size) for s in pins[pin].shapes]
                name = f"{inst}:{pin}"
                conn_lines.append(f"*I {name} {'O' if pins[pin].direction == 'OUTPUT' else 'I'}")
            hit = next((k for (layer, (qx, qy)), k in nodes.items()
                        if any(s[0] == layer and s[1] - TOLERANCE <= qx <= s[3] + TOLERANCE
                               and s[2] - TOLERANCE <= qy <= s[4] + TOLERANCE for s in shapes)), None)
            if hit is None:
                out.unattached.append(f"{net}:{name}")
            elif hit in names:
                joins.append((names[hit], name))
            else:
                names[hit] = name

        def nm(k, net=net, names=names):
            return names.get(k, f"{net}:{k}")
        total = sum(cap.values())
        body += [f"*D_NET {net} {total:.6g}", "*CONN", *conn_lines, "*CAP"]
        caps = [(x, c) for x, c in cap.items() if c]
        body += [f"{i} {nm(nodes[x])} {c:.6g}" for i, (x, c) in enumerate(caps, 1)]
        body.append("*RES")
        res = [(nm(nodes[a]), nm(nodes[b]), r) for a, b, r, _ in edges] + [(a, b, 0.0) for a, b in joins]
        body += [f"{i} {a} {b} {r:.6g}" for i, (a, b, r) in enumerate(res, 1)]
        body += ["*END", ""]
        out.nets += 1
        out.nodes += len(nodes)
        out.wire_cap_pf += total
    out.spef = "\n".join(head + body) + "\n"
    return out
