"""Energy on a routed layout: the netlists place and route laid out, with their wires' capacitance.

A hierarchical place and route run (``make pnr HIER=1``, :mod:`flows.pnr.hierflow`) writes to its
folder the routed top's and the routed block's structural Verilog (``<top>.routed.v``,
``<block>.routed.v``) and their extracted parasitics (``<top>.spef``, ``<block>.spef``: wire
capacitance per net, in pF); a column macro run (``make pnr BLOCK=mu_col``, :mod:`flows.pnr.flow`)
writes the column's. :func:`run_layout` simulates those netlists (the block as it was laid out, the
top with the repeaters it was routed with; for a column run, the routed column in every column
under the synthesized top, which has no wires) on the same stimulus as ``make power``
(:func:`flows.power.run.run`), checks every result against the bit-true
model, and computes the energy from that one simulation four times, then adds the clock tree to
the last:

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
    buffers;
``wires_clock_tree``
    ``wires_clock`` plus the energy of the least buffer tree that drives that clock load at our
    STA's clock slew (:func:`flows.power.clocktree.least_tree`: the tree's cells and their input
    pins, once per cycle).

``wires`` minus ``pins`` is the wires alone (one run of one netlist): their switching energy plus
what the heavier loads cost the drivers' internal energy (their tables are read at the larger load
and slew). The change from the synthesized netlist to the laid-out one (the block's flat synthesis,
the top's repeaters) is ``pins`` against ``synthesized``, ``make power``'s run of the same variant
on the same stimulus, which :func:`run_layout` also makes.

Left out: any clock wire beyond the least tree, the wire between the clock tree's levels and
any buffers beyond the least tree (the layouts keep the clock ideal: neither routed nor buffered),
coupling capacitance (the extraction has none) and glitches (zero-delay simulation).
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
from ..pnr.parasitics import spef_caps
from ..pnr.qflow import tech_lef
from ..synth.flow import run as synth_run
from .clocktree import least_tree
from .energy import Energy, compute, net_loads
from .run import PowerError, check_counts, hier_modules, power_library, simulate
from .run import run as power_run

__all__ = ["LayoutEnergy", "read_structural", "bus_ports", "wire_caps", "run_layout",
           "layout_dir", "summary", "markdown"]

_ID = r"[A-Za-z_][A-Za-z0-9_$]*"
_MODULE = re.compile(rf"\bmodule\s+({_ID})\s*\((.*?)\)\s*;(.*?)\bendmodule\b", re.S)
_INST = re.compile(rf"({_ID})\s+({_ID})\s*\((.*)\)\Z", re.S)
_CONN = re.compile(rf"\.({_ID})\s*\(\s*({_ID})?\s*\)")


@dataclass
class LayoutEnergy:
    """Result of :func:`run_layout`: one simulation of the layout's netlists, its energy with and
    without the wires, and ``synthesized``: ``make power``'s run of the same variant and stimulus."""

    tag: str
    variant: str
    kind: str
    block: str
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
    columns_simulated: int
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
    (:func:`flows.pnr.parasitics.spef_caps`), and the nets of ``module`` with two or more connections
    that have no wire.

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


@dataclass
class _Layout:
    """The netlists of one run, ready to flatten: ``mods`` (Yosys JSON layout), ``caps`` (wire
    capacitance per module, :func:`wire_caps`), and what the summary reports of them."""

    kind: str              # "unit" (hierarchical run) or "column" (the column macro alone)
    mods: dict
    caps: dict
    block: str
    wire_pf: dict          # {"top": pF or None (not laid out), "column": pF}
    wirelength_um: dict    # the same, routed um
    unwired: list
    period_ps: float
    clock: dict | None


def _spefs(mods, parts, lib) -> tuple:
    """Wire caps, nets without wire and total pF of each ``(module, SPEF file)`` in ``parts``."""
    caps, unwired, pf = {}, [], {}
    for name, f in parts:
        c = spef_caps(f.read_text(), str(f))
        caps[name], u = wire_caps(mods[name], c, lib.cap_pf, str(f))
        unwired += [f"{name}/{n}" for n in u]
        pf[name] = round(sum(c.values()), 6)
    return caps, unwired, pf


def _need(*files):
    gone = [str(f) for f in files if not f.is_file()]
    if gone:
        raise PowerError(f"{gone[0]} is missing: a run's routed netlists and parasitics are kept in its "
                         "build folder only; place and route the design again")


def _unit_layout(d: Path, m: dict, hier: dict, lib) -> _Layout:
    """A hierarchical run: the routed top (its ports regrouped into the synthesized top's buses)
    over the routed column, both with their wires."""
    top, block = "mu", m["hier__block"]
    tv, ts, bv, bs = (d / f"{top}.routed.v", d / f"{top}.spef", d / f"{block}.routed.v", d / f"{block}.spef")
    mods = read_structural(tv.read_text(), str(tv))
    mods.update(read_structural(bv.read_text(), str(bv)))
    if top not in mods or block not in mods:
        raise PowerError(f"{d}: the routed netlists lack module {top if top not in mods else block}")
    mods[top]["ports"] = bus_ports(mods[top]["ports"], hier[top]["ports"], str(tv))
    caps, unwired, pf = _spefs(mods, ((top, ts), (block, bs)), lib)
    wl = {"top": float(m["route__wirelength"]), "column": float(m["hier__block__wirelength_um"])}
    period = max(float(m["route__timing__critical_path__delay_ps"]),
                 float(m["hier__block__critical_path_ps_post"]))
    width = int(m["design__params"]["width"])
    pfs = {"top": pf[top], "column": pf[block]}
    return _Layout("unit", mods, caps, block, pfs, wl, unwired, period, clock_tree(d, block, width, pfs, wl))


def _column_layout(d: Path, m: dict, hier: dict, lib) -> _Layout:
    """A column macro run: the routed column, with its wires, in place of the synthesized column
    under the synthesized top (which has no wires: it was not laid out)."""
    block = m["design__params"]["block"]
    if block not in hier:
        raise PowerError(f"{d}: the hierarchical synthesis of this variant has no module {block} (it has "
                         f"{', '.join(sorted(hier))}): not the same design")
    bv, bs = d / f"{block}.routed.v", d / f"{block}.spef"
    mods = dict(hier)
    routed = read_structural(bv.read_text(), str(bv))
    if block not in routed:
        raise PowerError(f"{bv}: no module {block}")
    mods[block] = dict(routed[block], ports=bus_ports(routed[block]["ports"], hier[block]["ports"], str(bv)))
    caps, unwired, pf = _spefs(mods, ((block, bs),), lib)
    pfs = {"top": None, "column": pf[block]}
    wl = {"top": None, "column": float(m["route__wirelength"])}
    clock = None
    if (d / f"{block}.def").is_file():
        clock = _least_clock({"column": (d / f"{block}.def", [], pfs["column"] / wl["column"]), "top": None},
                             int(m["design__params"]["width"]))
    return _Layout("column", mods, caps, block, pfs, wl, unwired,
                   float(m["route__timing__critical_path__delay_ps"]), clock)


def run_layout(tag_or_dir, workload="tiles", runs=8, sample=None, liberty=None, log=print) -> LayoutEnergy:
    """Energy of a routed matrix unit, or of a unit whose columns are a routed column macro, on
    ``workload`` (see the module docstring); ``sample`` columns simulated (None: all).

    Raises
    ------
    PowerError
        Not a run of ``mu`` (hierarchical, or of its column), a file missing, the netlists not
        matching their SPEFs or the synthesized design, or a result differing from the bit-true model.
    """
    t = {"start": time.monotonic()}
    d = layout_dir(tag_or_dir)
    m = json.loads((d / "metrics.json").read_text())
    params = {k: str(v) for k, v in (m.get("design__params") or {}).items() if k not in ("block", "top")}
    column = str((m.get("design__params") or {}).get("block", "")).startswith("mu_col")
    if m.get("design") != "mu" or not (m.get("flow__hierarchical") or column):
        raise PowerError(f"{d}: energy on a layout needs a run of the matrix unit, hierarchical (make pnr "
                         "DESIGN=mu HIER=1) or of its column (BLOCK=mu_col), not "
                         f"{m.get('design')!r} ({'hierarchical' if m.get('flow__hierarchical') else 'flat'})")
    if "width" not in params or "fmt" not in params:
        raise PowerError(f"{d}: its metrics.json names no width or format (design__params): not a run of "
                         "`make pnr`")
    block = m.get("hier__block") if m.get("flow__hierarchical") else m["design__params"]["block"]
    names = ["mu.routed.v", "mu.spef"] if m.get("flow__hierarchical") else []
    _need(*(d / n for n in names + [f"{block}.routed.v", f"{block}.spef"]))
    width, fmt = int(params["width"]), params["fmt"]
    check_counts(width, runs, sample)
    syn = synth_run("mu", params, flow="hier", log=lambda s: None, liberty=liberty)
    hier = hier_modules(syn.metrics["variant"])
    lib, plib = power_library(liberty)
    lay = (_unit_layout if m.get("flow__hierarchical") else _column_layout)(d, m, hier, lib)
    t["synth"] = time.monotonic()
    s = simulate(lay.mods, lay.block, params, workload, runs, sample, lib, plib, wire_caps=lay.caps, t=t,
                 log=log, label=m["variant"])
    flat, sim, meta, cols, checked = s.flat, s.sim, s.meta, s.cols, s.checked
    samp = cols.size < width
    ns = lay.period_ps / 1e3
    wires = compute(flat, sim, lib, plib, ns)
    pins = compute(replace(flat, wire=None), sim, lib, plib, ns)
    wires_x2 = compute(replace(flat, wire=2 * flat.wire), sim, lib, plib, ns)
    wires_clock = None
    if lay.clock:
        w = flat.wire.copy()
        w[flat.ports["clk"][1]] += lay.clock["pf"] / lib.cap_pf
        wires_clock = compute(replace(flat, wire=w), sim, lib, plib, ns)
        load = net_loads(replace(flat, wire=w), lib)[flat.ports["clk"][1]]
        tree = least_tree(float(load.sum()), lib, plib)
        slower = least_tree(float(load.sum()), lib, plib, slew=2 * lib.default_input_slew())
        tree["at_2x_slew"] = {k: slower[k] for k in ("cell", "levels", "pj_per_cycle")}
        lay = replace(lay, clock=dict(lay.clock, tree=tree))
    t["energy"] = time.monotonic()
    syn_run = power_run(width, fmt, workload, runs, sample if samp else None, params=params,
                        log=lambda s: None, liberty=liberty)
    t["synthesized"] = time.monotonic()
    secs = {k: round(t[k] - t[p], 2) for p, k in zip(list(t)[:-1], list(t)[1:], strict=True)}
    secs["total"] = round(t["synthesized"] - t["start"], 2)
    cells = sum(len(g["weight"]) for g in flat.groups.values())
    return LayoutEnergy(d.name, m["variant"], lay.kind, lay.block, workload, wires, pins, syn_run.energy,
                        wires_x2, wires_clock, lay.clock, meta, lay.period_ps,
                        str(m.get("flow__git_revision", "unknown")), len(cols), checked,
                        int(sim.toggles.sum()), flat.n_nets, cells, lay.wire_pf, lay.wirelength_um,
                        lay.unwired, secs)


def clock_tree(d: Path, block: str, width: int, wire_pf: dict, wirelength: dict) -> dict | None:
    """The least wire of the ideal clock (:func:`flows.pnr.clockwire.min_tree_um` through the clock
    pins of the column and of the top, from the run's placed DEFs in its work folder
    ``build/pnr/<run>``), as capacitance at the column's and the top's mean extracted pF per um
    (``wire_pf`` over ``wirelength``, keys ``column`` and ``top``); None when the work folder is gone."""
    work = d.parents[2] / "pnr" / d.name if len(d.parents) > 2 else None
    defs = {"column": work / "block" / "layout" / f"{block}.def", "top": work / "top" / "mu_route.def"} \
        if work else {}
    if not defs or not all(f.is_file() for f in defs.values()):
        return None
    return _least_clock({"column": (defs["column"], [], wire_pf["column"] / wirelength["column"]),
                         "top": (defs["top"], [(d / f"{block}.lef").read_text()],
                                 wire_pf["top"] / wirelength["top"])}, width)


def _least_clock(parts: dict, width: int) -> dict:
    """:func:`flows.pnr.clockwire.min_tree_um` through the ``clk`` pins of each part's placed DEF
    (``{"column": (DEF, extra LEF texts, pF per um), "top": ... or None}``), as capacitance: the
    column's counted ``width`` times; a part given as None has no wire (not laid out)."""
    tech = tech_lef().read_text()
    um = {k: min_tree_um(pin_points(Def.read(v[0]), [tech, *v[1]], "clk")) if v else None
          for k, v in parts.items()}
    pf = sum((width if k == "column" else 1) * um[k] * v[2] for k, v in parts.items() if v)
    return {"min_tree_um": um, "pf": pf}


def _part(block: str, block_name: str) -> str:
    return {"clock": "clock net", block_name: "columns"}.get(block, "top")


def summary(r: LayoutEnergy) -> dict:
    """The figures of :func:`run_layout` as a JSON-able dict.

    ``by_part_pj``: the columns (the block's cells and nets), the top (its cells, nets and inputs)
    and the clock net, with and without the wires.
    """
    u, block = r.meta["useful_macs"], r.block

    def kinds(e):
        return {"internal": e.internal, "switching": e.switching, "leakage": e.leakage, "total": e.total}

    def parts(e):
        out: dict = {}
        for b, d in e.by_block.items():
            out[_part(b, block)] = out.get(_part(b, block), 0.0) + sum(d.values())
        return out

    return {
        "run": r.tag, "layout_variant": r.variant, "layout_revision": r.layout_revision, "layout": r.kind,
        "columns_simulated": r.columns_simulated,
        "workload": r.workload, "runs": r.meta["runs"], "width": r.meta["width"], "fmt": r.meta["fmt"],
        "cycles": r.wires.cycles, "results_checked": r.checked_results, "toggles": r.toggles,
        "nets": r.nets, "cells": r.cells, "useful_macs": u, "issued_macs": r.meta["issued_macs"],
        "period_ps": r.period_ps,
        "energy_pj": {"wires": kinds(r.wires), "pins": kinds(r.pins), "synthesized": kinds(r.synthesized)},
        "pj_per_useful_mac": {k: e.total / u for k, e in (("wires", r.wires), ("pins", r.pins),
                                                           ("synthesized", r.synthesized),
                                                           ("wires_x2", r.wires_x2),
                                                           ("wires_clock", r.wires_clock)) if e}
        | ({"wires_clock_tree": (r.wires_clock.total + r.clock["tree"]["pj_per_cycle"] * r.wires.cycles) / u}
           if r.wires_clock and "tree" in (r.clock or {}) else {}),
        "clock_wire": r.clock,
        "wire_share": 1 - r.pins.total / r.wires.total,
        "by_part_pj": {"wires": parts(r.wires), "pins": parts(r.pins)},
        "wire_pf": dict(r.wire_pf, columns=r.wire_pf["column"] * r.meta["width"]),
        "wire_ff_per_um": {k: 1e3 * r.wire_pf[k] / r.wirelength_um[k] if r.wire_pf[k] is not None else None
                           for k in ("column", "top")},
        "nets_without_wire": r.unwired_nets, "seconds": r.seconds,
    }


def _clock_text(c) -> str:
    if not c:
        return "not estimated (the run's placed DEFs are gone)"
    um = c["min_tree_um"]
    top = "the top not laid out" if um["top"] is None else f"{um['top'] / 1e3:.2f} mm in the top"
    text = (f"(2/3 of the rectilinear spanning tree through its pins: {um['column'] / 1e3:.2f} mm per "
            f"column, {top}) is {c['pf']:.2f} pF")
    t = c.get("tree")
    if t:
        text += (f"; its least tree at the clock slew {1e3 * t['slew_ns']:.0f} ps "
                 f"(flows/power/clocktree.py): {t['cell']}, {' + '.join(map(str, t['levels']))} cells from "
                 f"the leaves up, each taking at most {t['buffer_load_pf']:.3f} pF, on {t['load_pf']:.1f} pF "
                 f"of clock pins and least wire: {t['pj_per_cycle']:.1f} pJ per cycle "
                 f"({t['internal_pj']:.1f} internal, {t['input_pins_pj']:.1f} its input pins); at twice "
                 f"that slew {t['at_2x_slew']['pj_per_cycle']:.1f} pJ per cycle ({t['at_2x_slew']['cell']}, "
                 f"{sum(t['at_2x_slew']['levels']):,} cells), a sensitivity")
    return text


def _pf(v, digits=2) -> str:
    return "none: not laid out" if v is None else f"{v:.{digits}f}"


def markdown(s: dict, prov: dict) -> str:
    """The summary as a short Markdown page."""
    p = s["pj_per_useful_mac"]
    what = ("the routed unit (top and columns)" if s["layout"] == "unit" else
            "the routed column macro in every column, under the synthesized top (not laid out: no wires)")
    lines = [f"# Energy on the layout {s['run']}, workload {s['workload']}", "",
             f"D = {s['width']} {s['fmt']}, {what}; {len(s['runs'])} tile runs: {s['cycles']} cycles "
             f"after reset, {s['results_checked']} results checked bit for bit against the model, "
             f"{s['columns_simulated']} of {s['width']} columns simulated, {s['cells']} cells, "
             f"{s['nets']} nets; the layout from revision {s['layout_revision']}.", "",
             "| netlist, loads | pJ per useful MAC |", "|---|---|",
             f"| synthesized (as `make power`), pins | {p['synthesized']:.2f} |",
             f"| routed, pins | {p['pins']:.2f} |",
             f"| routed, pins + wires | {p['wires']:.2f} |",
             f"| routed, pins + twice the wires | {p['wires_x2']:.2f} |",
             f"| routed, pins + wires + the clock's least wire | "
             f"{p['wires_clock']:.2f} |" if "wires_clock" in p else
             "| routed, pins + wires + the clock's least wire | not estimated (placed DEFs gone) |",
             f"| routed, pins + wires + the clock's least wire and least tree | "
             f"{p['wires_clock_tree']:.2f} |" if "wires_clock_tree" in p else
             "| routed, pins + wires + the clock's least wire and least tree | not estimated |", "",
             "| part | pins (pJ/MAC) | pins + wires (pJ/MAC) | wire (pF) |", "|---|---|---|---|"]
    u = s["useful_macs"]
    wpf = s["wire_pf"]
    for part in ("columns", "top", "clock net"):
        a, b = s["by_part_pj"]["pins"].get(part, 0.0), s["by_part_pj"]["wires"].get(part, 0.0)
        wire = _pf(wpf[part]) if part in wpf else "none (ideal clock)"
        lines.append(f"| {part} | {a / u:.2f} | {b / u:.2f} | {wire} |")
    ff = s["wire_ff_per_um"]
    lines += ["", f"The columns' wire is one column's extraction ({wpf['column']:.2f} pF), counted once "
              f"per column. Extracted wire per um: {ff['column']:.4f} fF in the column, "
              + ("none in the top (not laid out)" if ff["top"] is None else f"{ff['top']:.4f} fF in the top")
              + " (area and one edge's fringe, no coupling; the doubled "
              "wires are a sensitivity to a fuller extraction). Nets "
              f"without a wire: {', '.join(s['nets_without_wire']) or 'none'}. Zero-delay simulation "
              "(no glitches), no coupling capacitance, ideal clock: unrouted, no tree; its least wire "
              f"{_clock_text(s['clock_wire'])}; see flows/power/layout.py.", "",
              f"Provenance: {json.dumps(prov)}"]
    return "\n".join(lines) + "\n"
