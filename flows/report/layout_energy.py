"""``reports/physical.md``'s energy tables: the energy of routed layouts with their wires.

``make power LAYOUT=<run> PUBLISH=1`` (:mod:`flows.power.layout`) writes ``energy-tiles*.json``
beside a published run's ``metrics.json``; :func:`attach_energy` reads it into the run, and the two
sections render the runs that have one: whole units (the routed top and columns) and column macros
(the routed column in every column under the synthesized top, whose wires are not laid out).
"""

import json

__all__ = ["attach_energy", "unit_energy_section", "column_energy_section", "energy_table", "label_key"]

_METHOD = (
    "simulated gate by gate on real MiniLM tiles (every result checked bit for bit against "
    "the model) and charged from the liberty with each net loaded by its sink pins alone, then with its "
    "extracted wire added; \"synthesized\" is `make power`'s netlist (the hierarchical synthesis) on "
    "the same tiles and columns. The clock carries its pins only (ideal, unrouted). The extraction "
    "counts a wire's area and one edge's fringe, no coupling; \"2x wires\" doubles every wire as a "
    "sensitivity. The clock's least wire: 2/3 of the rectilinear spanning tree through its pins (no "
    "tree is shorter), at the extracted pF per um, added to the wires. The clock's least tree: the "
    "cheapest tree of one buffer or inverter cell that drives the clock's pins and least wire at our "
    "STA's clock slew, every buffer loaded with the most it drives within that slew (its cells' "
    "internal energy and input pins, once per cycle; no wire between its levels). pJ per useful MAC.")


def attach_energy(run):
    """``run`` with ``extra["energy"]``: its folder's ``energy-tiles.json``, else its one
    ``energy-tiles-sample<K>.json`` (when there is exactly one); unchanged without a folder or file."""
    if run.folder is None:
        return run
    f = run.folder / "energy-tiles.json"
    found = [f] if f.is_file() else sorted(run.folder.glob("energy-tiles-sample*.json"))
    if len(found) == 1:
        run.extra["energy"] = json.loads(found[0].read_text())
    return run


def _n(v, digits=1) -> str:
    return "not laid out" if v is None else f"{v:,.{digits}f}"


def energy_table(rows, layout_of) -> list:
    """The table's lines: one row per run with ``extra["energy"]``; ``layout_of(run)`` names its
    layout (the top's utilization, or the columns simulated)."""
    L = ["| format | D | layout | tiles (results checked) | synthesized | routed, pins | routed, "
         "pins + wires | wires' share | pins + 2x wires | + the clock's least wire | + its least tree (cell: "
         "buffers) | columns: pins / + wires "
         "| top: pins / + wires | clock net | wire (pF): columns / top / the clock's least "
         "| wire per um (fF): column / top | layout / energy revision |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        e = r.extra["energy"]
        p, u = e["pj_per_useful_mac"], e["useful_macs"]
        part = {k: {q: e["by_part_pj"][k].get(q, 0.0) / u for q in ("columns", "top", "clock net")}
                for k in ("pins", "wires")}
        clock = (e.get("clock_wire") or {}).get("pf")
        least = "not measured" if "wires_clock" not in p else _n(p["wires_clock"])
        tree = (e.get("clock_wire") or {}).get("tree")
        tree = "not measured" if tree is None or "wires_clock_tree" not in p else \
            f"{p['wires_clock_tree']:.1f} ({tree['cell']}: {sum(tree['levels']):,})"
        L.append(f"| {r.label} | {r.width} | {layout_of(r)} | "
                 f"{e['workload']} x {len(e['runs'])} ({e['results_checked']}) | {p['synthesized']:.1f} | "
                 f"{p['pins']:.1f} | **{p['wires']:.1f}** | {100 * e['wire_share']:.1f}% | "
                 f"{p['wires_x2']:.1f} | {least} | {tree} | "
                 f"{part['pins']['columns']:.1f} / {part['wires']['columns']:.1f} | "
                 f"{part['pins']['top']:.1f} / {part['wires']['top']:.1f} | "
                 f"{part['wires']['clock net']:.1f} | "
                 f"{e['wire_pf']['columns']:.1f} / {_n(e['wire_pf']['top'])} / "
                 f"{'not measured' if clock is None else _n(clock)} | "
                 f"{e['wire_ff_per_um']['column']:.3f} / {_n(e['wire_ff_per_um']['top'], 3)} | "
                 f"{r.metrics.get('flow__git_revision', '?')} / {e['provenance']['git_revision']} |")
    share = [100 * r.extra["energy"]["wire_share"] for r in rows]
    with_tree = [e for e in (r.extra["energy"] for r in rows) if "wires_clock_tree" in e["pj_per_useful_mac"]]
    tree = [100 * (e["pj_per_useful_mac"]["wires_clock_tree"] / e["pj_per_useful_mac"]["wires_clock"] - 1)
            for e in with_tree]
    slower = [t["at_2x_slew"]["pj_per_cycle"] / t["pj_per_cycle"] for e in with_tree
              for t in [e["clock_wire"]["tree"]]]
    return L + ["", f"The extracted wires are {min(share):.1f}-{max(share):.1f}% of the energy per MAC."
                + (f" The clock's least tree adds {min(tree):.1f}-{max(tree):.1f}% to the figure with the "
                   f"clock's least wire; a clock of twice the slew needs a tree of {min(slower):.2f}-"
                   f"{max(slower):.2f}x that energy (each run's energy page)." if tree else "")]


def label_key(label: str, formats) -> tuple:
    """Sort key of a run label (``<fmt>`` or ``<fmt> + clock gates``): the formats in ``formats``'
    order first, each without clock gates before with them."""
    fmt = label.split(" + ")[0]
    return (formats.index(fmt) if fmt in formats else len(formats)), label


def _across_d(best: dict, formats) -> list:
    """Per format with two widths or more: the energy per MAC with wires of ``best[(fmt, D)]``."""
    out = []
    for f in sorted({f for f, _ in best}, key=lambda f: label_key(f, formats)):
        ds = sorted(d for g, d in best if g == f)
        if len(ds) > 1:
            pj = {d: best[(f, d)].extra["energy"]["pj_per_useful_mac"]["wires"] for d in ds}
            out.append(f"- **{f}**, pJ per useful MAC with wires: "
                       + ", ".join(f"D={d} {pj[d]:.1f}" for d in ds)
                       + f" ({pj[ds[-1]] / pj[ds[0]]:.2f}x from D={ds[0]} to D={ds[-1]})")
    return out


def unit_energy_section(units, best_units, formats=("fp8_e4m3", "fp4_e2m1")) -> list:
    """Whole units (in the report's order) with an energy; ``best_units(runs)`` is the claim's choice
    per (format, D) (``{(fmt, D): (run, top path, column path)}``)."""
    rows = [r for r in units if "energy" in r.extra]
    if not rows:
        return []
    L = ["### Energy on the routed units", "",
         "`make power LAYOUT=<run> PUBLISH=1`: the routed top and column netlists, " + _METHOD
         + " A net crossing a column pin gets the top's wire and the column's; the clock's least wire "
         "is the columns' and the top's.", ""]
    L += energy_table(rows, lambda r: f"top util {r.metrics.get('hier__top__target_util', 0):.2f}, trees "
                      + ("by position" if r.metrics.get("hier__top__rebuffer") else "as synthesized"))
    best = {k: r for k, (r, _, _) in best_units(rows).items()}
    across = _across_d(best, formats)
    if across:
        L[-1] += " Per format, each D's run chosen as in the claim above among the runs with an energy:"
    return L + across + [""]


def column_energy_section(chosen, formats=("fp8_e4m3", "fp4_e2m1")) -> list:
    """The chosen column runs (``{(fmt, D): run}``) with an energy."""
    best = {k: r for k, r in sorted(chosen.items()) if "energy" in r.extra}
    if not best:
        return []
    rows = sorted(best.values(), key=lambda r: (formats.index(r.fmt) if r.fmt in formats else 9, r.width))
    L = ["### Energy with the routed columns", "",
         "`make power LAYOUT=<column run> PUBLISH=1`: the routed column macro (its netlist and its "
         "extracted wires) in place of every column, under the synthesized top, which is not laid out: "
         "**the top's wires (activation broadcast, weight rows, results) are in none of these "
         "figures**, nor the top's clock wire. Columns sampled as in `make power`, " + _METHOD, ""]
    L += energy_table(rows, lambda r: f"column ({r.extra['energy']['columns_simulated']} of {r.width} "
                      "simulated)")
    across = _across_d(best, formats)
    if across:
        L[-1] += " Per format, across D:"
    return L + across + [""]
