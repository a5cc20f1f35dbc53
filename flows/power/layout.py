"""Energy on a routed layout: the netlists place and route laid out, with their wires' capacitance.

A hierarchical place and route run (``make pnr HIER=1``, :mod:`flows.pnr.hierflow`) writes to its
folder the routed top's and the routed block's structural Verilog (``<top>.routed.v``,
``<block>.routed.v``) and their extracted parasitics (``<top>.spef``, ``<block>.spef``: wire
capacitance per net, in pF). :func:`run_layout` simulates those netlists (the block as it was laid
out, the top with the repeaters it was routed with; not the hierarchical synthesis that
:func:`flows.power.run.run` reads) on the same stimulus, checks every result against the bit-true
model, and computes the energy from that one simulation four times:

``pins``
    each net's load is its sink pins (and the default load on top outputs), as ``make power``;
``wires``
    the net's extracted wire capacitance is added (a net that crosses a block pin gets the top's
    wire and the block's);
``wires_x2``
    every wire doubled: a sensitivity, since the extraction counts a wire's area and one edge's
    fringe and no coupling, so a fuller extraction would add to the wires.
``wires_clock``
    ``wires`` plus the least wire any clock tree must have (:func:`clock_tree`) on the clock net,
    which the layouts leave unrouted (ideal): a lower bound on the clock's wire, without the tree's
    buffers.

``wires`` minus ``pins`` is the wires alone (one run of one netlist): their switching energy plus
what the heavier loads cost the drivers' internal energy (their tables are read at the larger load
and slew). The change from the synthesized netlist to the laid-out one (the block's flat synthesis,
the top's repeaters) is ``pins`` against ``synthesized``, ``make power``'s run of the same variant
on the same stimulus, which :func:`run_layout` also makes.

Left out: the clock tree's buffers and any clock wire beyond the least tree (the layouts keep the
clock ideal: neither routed nor buffered), coupling capacitance (the extraction has none) and
glitches (zero-delay simulation).
"""

import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..paths import BUILD
from ..pnr.clockwire import min_tree_um, pin_points
from ..pnr.defdb import Def
from ..pnr.netlist import port_bit_name
from ..pnr.qflow import tech_lef
from ..synth.flow import WORK, resolve_library
from ..synth.flow import run as synth_run
from .energy import Energy, compute
from .libpower import load_power
from .netlist import flatten
from .run import PowerError, drive, stimulus
from .run import run as power_run
from .sim import GateSim

__all__ = ["LayoutEnergy", "read_structural", "spef_caps", "bus_ports", "wire_caps", "run_layout",
           "layout_dir", "summary", "markdown"]

_ID = r"[A-Za-z_][A-Za-z0-9_$]*"
_MODULE = re.compile(rf"\bmodule\s+({_ID})\s*\((.*?)\)\s*;(.*?)\bendmodule\b", re.S)
_INST = re.compile(rf"({_ID})\s+({_ID})\s*\((.*)\)\Z", re.S)
_CONN = re.compile(rf"\.({_ID})\s*\(\s*({_ID})?\s*\)")
_DNET = re.compile(r"^\*D_NET\s+(\S+)\s+(\S+)", re.M)


@dataclass
class LayoutEnergy:
    """Result of :func:`run_layout`: one simulation of the layout's netlists, its energy with and
    without the wires, and ``synthesized``: ``make power``'s run of the same variant and stimulus."""

    tag: str
    variant: str
    workload: str
    wires: Energy
    pins: Energy
    synthesized: Energy
    wires_x2: Energy
    wires_clock: Energy | None
    clock: dict | None
    meta: dict
    period_ps: float
    layout_revision: str
    checked_results: int
    toggles: int
    nets: int
    cells: int
    wire_pf: dict
    wirelength_um: dict
    unwired_nets: list
    seconds: dict


def read_structural(text: str, source: str = "netlist") -> dict:
    """Modules of a structural Verilog netlist (scalar ports and nets, cell instances with named
    connections: what :meth:`flows.pnr.netlist.Physical.verilog` and qflow write) in the layout of
    Yosys's ``write_json``: ``{module: {"ports", "cells", "netnames"}}``, nets numbered from 2.

    Raises
    ------
    PowerError
        On anything else (a bus range, an ``assign``, an escaped name): the message names it.
    """
    text = re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", text), flags=re.S)
    mods = {}
    for name, header, body in _MODULE.findall(text):
        ids: dict = {}
        consts: dict = {}     # wire <name> = 1'b0 / 1'b1 (qflow's vdd and gnd)

        def bit(n, ids=ids, consts=consts):
            return consts[n] if n in consts else ids.setdefault(n, len(ids) + 2)

        ports, cells = {}, {}
        order = [p.strip() for p in header.split(",") if p.strip()]
        for stmt in (s.strip() for s in body.split(";")):
            if not stmt:
                continue
            kw = stmt.split(None, 1)[0]
            tie = re.fullmatch(rf"wire\s+({_ID})\s*=\s*1'b([01])", stmt)
            if tie:
                consts[tie.group(1)] = tie.group(2)
                continue
            if kw in ("input", "output", "wire"):
                names = [n.strip() for n in stmt[len(kw):].split(",")]
                bad = [n for n in names if not re.fullmatch(_ID, n)]
                if bad:
                    raise PowerError(f"{source}: module {name}: {kw} {bad[0]!r} is not a scalar net "
                                     "name; only bit-blasted structural netlists are read")
                for n in names:
                    b = bit(n)
                    if kw != "wire":
                        ports[n] = {"direction": kw, "bits": [b]}
                continue
            m = _INST.match(stmt)
            if not m or kw in ("assign", "reg", "always", "parameter", "localparam"):
                raise PowerError(f"{source}: module {name}: cannot read {stmt[:80]!r}; only cell "
                                 "instances with named connections are read")
            typ, inst, conns = m.groups()
            pins = _CONN.findall(conns)
            if len(pins) != conns.count("."):
                raise PowerError(f"{source}: module {name}: instance {inst} has a connection that is "
                                 "not a scalar net")
            cells[inst] = {"type": typ, "connections": {p: [bit(n)] for p, n in pins if n}}
        missing = [p for p in order if p not in ports]
        if missing:
            raise PowerError(f"{source}: module {name}: port {missing[0]} has no direction")
        mods[name] = {"ports": {p: ports[p] for p in order}, "cells": cells,
                      "netnames": {n: {"bits": [b]} for n, b in ids.items()}}
    if not mods:
        raise PowerError(f"{source}: no module found")
    return mods


def spef_caps(text: str, source: str = "SPEF") -> dict:
    """``{net: total capacitance}`` of every ``*D_NET`` of a SPEF, in its ``*C_UNIT`` converted to pF."""
    unit = re.search(r"^\*C_UNIT\s+(\S+)\s+(\S+)", text, re.M)
    if not unit:
        raise PowerError(f"{source}: no *C_UNIT line")
    scale = {"PF": 1.0, "FF": 1e-3}.get(unit.group(2).upper())
    if scale is None:
        raise PowerError(f"{source}: capacitance unit {unit.group(2)!r} is neither PF nor FF")
    scale *= float(unit.group(1))
    return {n: float(c) * scale for n, c in _DNET.findall(text)}


def bus_ports(layout_ports: dict, ref_ports: dict, source: str = "layout") -> dict:
    """The layout top's scalar ports (``<port>_<i>_``, :func:`flows.pnr.netlist.port_bit_name`)
    regrouped into the synthesized top's ports ``ref_ports`` (Yosys JSON), bit for bit; a bit the
    layout left out must be a constant of the synthesized top (it is then that constant).

    Raises
    ------
    PowerError
        A bit missing from the layout that is not a constant, or a layout port the synthesized top
        does not have.
    """
    out, used = {}, set()
    for p, d in ref_ports.items():
        bits = []
        for i, b in enumerate(d["bits"]):
            name = port_bit_name(p, i, len(d["bits"]))
            if name in layout_ports:
                bits.append(layout_ports[name]["bits"][0])
                used.add(name)
            elif isinstance(b, str) and b in "01":
                bits.append(b)
            else:
                raise PowerError(f"{source}: the routed top has no port {name} (bit {i} of {p}), which "
                                 "the synthesized top drives from logic: not the same design")
        out[p] = {"direction": d["direction"], "bits": bits}
    extra = sorted(set(layout_ports) - used)
    if extra:
        raise PowerError(f"{source}: the routed top's port(s) {extra[:3]} are not ports of the "
                         "synthesized top: not the same design")
    return out


def wire_caps(module: dict, caps_pf: dict, cap_unit_pf: float, source: str = "SPEF") -> tuple:
    """``(local bits, capacitances in library units)`` of ``module``'s nets from ``caps_pf``
    (:func:`spef_caps`), and the nets of ``module`` with two or more connections that have no wire.

    Raises
    ------
    PowerError
        A SPEF net that is not a net of the module.
    """
    names = module["netnames"]
    unknown = sorted(set(caps_pf) - set(names))
    if unknown:
        raise PowerError(f"{source}: net(s) {unknown[:3]} are not nets of the netlist: not the same layout")
    bits = [names[n]["bits"][0] for n in caps_pf]
    vals = [c / cap_unit_pf for c in caps_pf.values()]
    conns: dict = {}
    for c in module["cells"].values():
        for v in c["connections"].values():
            conns[v[0]] = conns.get(v[0], 0) + 1
    for d in module["ports"].values():
        conns[d["bits"][0]] = conns.get(d["bits"][0], 0) + 1
    unwired = sorted(n for n, d in names.items() if n not in caps_pf and conns.get(d["bits"][0], 0) > 1)
    return (np.asarray(bits, dtype=np.int64), np.asarray(vals)), unwired


def layout_dir(tag_or_dir) -> Path:
    """A place-and-route run's folder: the path itself, or ``build/reports/pnr/<tag>``."""
    p = Path(tag_or_dir)
    d = p if p.is_dir() else BUILD / "reports" / "pnr" / str(tag_or_dir)
    if not (d / "metrics.json").is_file():
        raise PowerError(f"no place-and-route run at {tag_or_dir} ({d / 'metrics.json'} is missing): "
                         "give a run folder or the tag of a `make pnr HIER=1` run of the matrix unit")
    return d


def run_layout(tag_or_dir, workload="tiles", runs=8, liberty=None, log=print) -> LayoutEnergy:
    """Energy of a routed matrix unit on ``workload`` (see the module docstring).

    Raises
    ------
    PowerError
        Not a hierarchical run of ``mu``, a file missing, the netlists not matching their SPEFs or
        the synthesized top, or a result differing from the bit-true model.
    """
    t = {"start": time.monotonic()}
    d = layout_dir(tag_or_dir)
    m = json.loads((d / "metrics.json").read_text())
    if m.get("design") != "mu" or not m.get("flow__hierarchical"):
        raise PowerError(f"{d}: energy on a layout needs a hierarchical run of the matrix unit (make pnr "
                         f"DESIGN=mu HIER=1), not {m.get('design')!r} "
                         f"({'hierarchical' if m.get('flow__hierarchical') else 'flat'})")
    top, block = "mu", m["hier__block"]
    files = {"top_v": d / f"{top}.routed.v", "top_spef": d / f"{top}.spef",
             "block_v": d / f"{block}.routed.v", "block_spef": d / f"{block}.spef"}
    gone = [str(f) for f in files.values() if not f.is_file()]
    if gone:
        raise PowerError(f"{d}: {gone[0]} is missing: the run's routed netlists and parasitics are kept "
                         "in its build folder only; place and route the design again")
    params = {k: str(v) for k, v in m["design__params"].items()}
    width, fmt = int(params["width"]), params["fmt"]
    syn = synth_run("mu", params, flow="hier", log=lambda s: None, liberty=liberty)
    variant = syn.metrics["variant"]
    ref = json.loads((WORK / variant / "hier" / top / "repaired.json").read_text())["modules"][top]
    lib = resolve_library(liberty, log=lambda s: None)
    if lib.generic:
        raise PowerError("energy needs a liberty with internal_power tables and leakage; install the "
                         "OSU 0.18 um library (apt-get install qflow-tech-osu018)")
    plib = load_power(lib.path)
    mods = read_structural(files["top_v"].read_text(), str(files["top_v"]))
    mods.update(read_structural(files["block_v"].read_text(), str(files["block_v"])))
    if top not in mods or block not in mods:
        raise PowerError(f"{d}: the routed netlists lack module {top if top not in mods else block}")
    mods[top]["ports"] = bus_ports(mods[top]["ports"], ref["ports"], str(files["top_v"]))
    caps, unwired, pf = {}, [], {}
    for name, key in ((top, "top_spef"), (block, "block_spef")):
        c = spef_caps(files[key].read_text(), str(files[key]))
        caps[name], u = wire_caps(mods[name], c, lib.cap_pf, str(files[key]))
        unwired += [f"{name}/{n}" for n in u]
        pf[name] = round(sum(c.values()), 6)
    t["synth"] = time.monotonic()
    rows = int(params.get("rows", 1))
    acc, guard = params.get("acc", "fp32"), int(params.get("guard_bits", 16))
    stim_path = BUILD / "power" / "stim" / f"{workload}-w{width}-{fmt}-r{rows}-{acc}-n{runs}.npz"
    meta = stimulus(width, fmt, rows, workload, runs, stim_path, acc, guard)
    with np.load(stim_path) as z:
        stim = {k: z[k] for k in ("w", "ws", "x", "y") if k in z.files}
    t["stimulus"] = time.monotonic()
    flat = flatten(mods, top, plib.cells, wire_caps=caps)
    sim = GateSim(flat, plib)
    t["build"] = time.monotonic()
    log(f"{m['variant']} {workload}: {sum(len(g['weight']) for g in flat.groups.values())} cells, "
        f"{flat.n_nets} nets, {sum(pf.values()):.2f} pF of wire; {meta['w_beats']} w / {meta['x_beats']} "
        f"x beats")
    max_cycles = 4 * (meta["w_beats"] + meta.get("ws_beats", 0) + meta["x_beats"]) + 100
    checked = drive(sim, flat, stim, np.arange(width), width, max_cycles)
    t["sim"] = time.monotonic()
    wirelength = {"top": float(m["route__wirelength"]), "column": float(m["hier__block__wirelength_um"])}
    period = max(float(m["route__timing__critical_path__delay_ps"]),
                 float(m["hier__block__critical_path_ps_post"]))
    wires = compute(flat, sim, lib, plib, period / 1e3)
    pins = compute(replace(flat, wire=None), sim, lib, plib, period / 1e3)
    wires_x2 = compute(replace(flat, wire=2 * flat.wire), sim, lib, plib, period / 1e3)
    clock, wires_clock = clock_tree(d, block, width, pf, wirelength), None
    if clock:
        w = flat.wire.copy()
        w[flat.ports["clk"][1]] += clock["pf"] / lib.cap_pf
        wires_clock = compute(replace(flat, wire=w), sim, lib, plib, period / 1e3)
    t["energy"] = time.monotonic()
    syn_run = power_run(width, fmt, workload, runs, params=params, log=lambda s: None, liberty=liberty)
    t["synthesized"] = time.monotonic()
    secs = {k: round(t[k] - t[p], 2) for p, k in zip(list(t)[:-1], list(t)[1:], strict=True)}
    secs["total"] = round(t["synthesized"] - t["start"], 2)
    cells = sum(len(g["weight"]) for g in flat.groups.values())
    return LayoutEnergy(d.name, m["variant"], workload, wires, pins, syn_run.energy, wires_x2, wires_clock,
                        clock, meta, period,
                        str(m.get("flow__git_revision", "unknown")), checked, int(sim.toggles.sum()),
                        flat.n_nets, cells, pf, wirelength, unwired, secs)


def clock_tree(d: Path, block: str, width: int, wire_pf: dict, wirelength: dict) -> dict | None:
    """The least wire of the ideal clock (:func:`flows.pnr.clockwire.min_tree_um` through the clock
    pins of the column and of the top, from the run's placed DEFs in its work folder
    ``build/pnr/<run>``), as capacitance at the column's and the top's mean extracted pF per um;
    None when the work folder is gone."""
    work = d.parents[2] / "pnr" / d.name if len(d.parents) > 2 else None
    defs = {"column": work / "block" / "layout" / f"{block}.def", "top": work / "top" / "mu_route.def"} \
        if work else {}
    if not defs or not all(f.is_file() for f in defs.values()):
        return None
    lefs = [tech_lef().read_text()]
    um = {"column": min_tree_um(pin_points(Def.read(defs["column"]), lefs, "clk")),
          "top": min_tree_um(pin_points(Def.read(defs["top"]), lefs + [(d / f"{block}.lef").read_text()],
                                        "clk"))}
    per_um = {"column": wire_pf[block] / wirelength["column"], "top": wire_pf["mu"] / wirelength["top"]}
    pf = width * um["column"] * per_um["column"] + um["top"] * per_um["top"]
    return {"min_tree_um": um, "pf": pf}


def _part(block: str, block_name: str) -> str:
    return {"clock": "clock net", block_name: "columns"}.get(block, "top")


def summary(r: LayoutEnergy, block: str) -> dict:
    """The figures of :func:`run_layout` as a JSON-able dict; ``block``: the column's module name.

    ``by_part_pj``: the columns (the block's cells and nets), the top (its cells, nets and inputs)
    and the clock net, with and without the wires.
    """
    u = r.meta["useful_macs"]

    def kinds(e):
        return {"internal": e.internal, "switching": e.switching, "leakage": e.leakage, "total": e.total}

    def parts(e):
        out: dict = {}
        for b, d in e.by_block.items():
            out[_part(b, block)] = out.get(_part(b, block), 0.0) + sum(d.values())
        return out

    return {
        "run": r.tag, "layout_variant": r.variant, "layout_revision": r.layout_revision,
        "workload": r.workload, "runs": r.meta["runs"], "width": r.meta["width"], "fmt": r.meta["fmt"],
        "cycles": r.wires.cycles, "results_checked": r.checked_results, "toggles": r.toggles,
        "nets": r.nets, "cells": r.cells, "useful_macs": u, "issued_macs": r.meta["issued_macs"],
        "period_ps": r.period_ps,
        "energy_pj": {"wires": kinds(r.wires), "pins": kinds(r.pins), "synthesized": kinds(r.synthesized)},
        "pj_per_useful_mac": {k: e.total / u for k, e in (("wires", r.wires), ("pins", r.pins),
                                                           ("synthesized", r.synthesized),
                                                           ("wires_x2", r.wires_x2),
                                                           ("wires_clock", r.wires_clock)) if e},
        "clock_wire": r.clock,
        "wire_share": 1 - r.pins.total / r.wires.total,
        "by_part_pj": {"wires": parts(r.wires), "pins": parts(r.pins)},
        "wire_pf": {"top": r.wire_pf["mu"], "column": r.wire_pf[block],
                    "columns": r.wire_pf[block] * r.meta["width"]},
        "wire_ff_per_um": {"top": 1e3 * r.wire_pf["mu"] / r.wirelength_um["top"],
                           "column": 1e3 * r.wire_pf[block] / r.wirelength_um["column"]},
        "nets_without_wire": r.unwired_nets, "seconds": r.seconds,
    }


def _clock_text(c) -> str:
    if not c:
        return "not estimated (the run's work folder with its placed DEFs is gone)"
    um = c["min_tree_um"]
    return (f"(2/3 of the rectilinear spanning tree through its pins: {um['column'] / 1e3:.2f} mm per "
            f"column, {um['top'] / 1e3:.2f} mm in the top) is {c['pf']:.2f} pF")


def markdown(s: dict, prov: dict) -> str:
    """The summary as a short Markdown page."""
    p = s["pj_per_useful_mac"]
    lines = [f"# Energy on the layout {s['run']}, workload {s['workload']}", "",
             f"D = {s['width']} {s['fmt']}, {len(s['runs'])} tile runs: {s['cycles']} cycles after reset, "
             f"{s['results_checked']} results checked bit for bit against the model, {s['cells']} cells, "
             f"{s['nets']} nets; the layout from revision {s['layout_revision']}.", "",
             "| netlist, loads | pJ per useful MAC |", "|---|---|",
             f"| synthesized (as `make power`), pins | {p['synthesized']:.2f} |",
             f"| routed, pins | {p['pins']:.2f} |",
             f"| routed, pins + wires | {p['wires']:.2f} |",
             f"| routed, pins + twice the wires | {p['wires_x2']:.2f} |",
             f"| routed, pins + wires + the clock's least wire | "
             f"{p['wires_clock']:.2f} |" if "wires_clock" in p else
             "| routed, pins + wires + the clock's least wire | not estimated (work folder gone) |", "",
             "| part | pins (pJ/MAC) | pins + wires (pJ/MAC) | wire (pF) |", "|---|---|---|---|"]
    u = s["useful_macs"]
    wpf = s["wire_pf"]
    for part in ("columns", "top", "clock net"):
        a, b = s["by_part_pj"]["pins"].get(part, 0.0), s["by_part_pj"]["wires"].get(part, 0.0)
        wire = f"{wpf[part]:.2f}" if part in wpf else "none (ideal clock)"
        lines.append(f"| {part} | {a / u:.2f} | {b / u:.2f} | {wire} |")
    ff = s["wire_ff_per_um"]
    lines += ["", f"The columns' wire is one column's extraction ({wpf['column']:.2f} pF), counted once "
              f"per column. Extracted wire per um: {ff['column']:.4f} fF in the column, {ff['top']:.4f} fF "
              "in the top (area and one edge's fringe, no coupling; the doubled wires are a "
              "sensitivity to a fuller extraction). Nets "
              f"without a wire: {', '.join(s['nets_without_wire']) or 'none'}. Zero-delay simulation "
              "(no glitches), no coupling capacitance, ideal clock: unrouted, no tree; its least wire "
              f"{_clock_text(s['clock_wire'])}; see flows/power/layout.py.", "",
              f"Provenance: {json.dumps(prov)}"]
    return "\n".join(lines) + "\n"
