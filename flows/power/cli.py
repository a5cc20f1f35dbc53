"""``python -m flows power``: energy of the matrix unit on a workload (``make power``).

``python -m flows power --width 32 --fmt fp8_e4m3 [--workload tiles|random|zeros|all] [--runs 8]
[--sample K] [--set rows=R ...] [--publish]`` writes ``build/reports/power/<variant>/`` (``--publish``:
the committed ``reports/power/<variant>/``): ``energy-<workload>.json`` and ``.md`` per workload
(``-sample<K>`` and ``-runs<N>`` added when given), with provenance. ``--sample K`` simulates K
(1..width) evenly spaced columns and scales them (the composition of wide units); without it every
column is simulated. ``--check-composition K`` runs both and prints
how far apart they are.

``python -m flows power --layout TAG|DIR [--workload ...] [--runs 8] [--sample K] [--publish]``: the
energy of a routed matrix unit (a ``make pnr HIER=1`` run), or of the unit with a routed column macro
in every column (a ``make pnr BLOCK=mu_col`` run), given as its tag under ``build/reports/pnr/`` or
its folder, with its wires' capacitance, next to the same netlist without them and the synthesized
netlist (:mod:`flows.power.layout`); writes ``energy-<workload>.json`` and ``.md`` (named as above) to
the run's folder (``--publish``: ``reports/pnr/<tag>/``). The layout sets the width, format and
options.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from ..paths import BUILD, REPO
from ..synth.liberty import LibertyError
from ..synth.metrics import git_revision, tool_versions
from ..synth.yosys import SynthError
from . import layout
from .run import PowerError, check_counts, run

__all__ = ["main", "CATEGORIES", "summary", "category"]

#: Tile runs of a workload unless ``--runs`` says otherwise (other counts are named in the file).
RUNS = 8

#: Block categories of the report: module-name prefix -> category.
CATEGORIES = (("mu_lane", "multipliers"), ("mu_tree", "tree"), ("mu_acc", "accumulate"),
              ("mu_xacc", "accumulate"), ("mu_wbuf", "weight buffers"), ("mu_col", "column wiring"),
              ("clock", "clock net"), ("inputs", "control"), ("mu", "control"))


def category(block: str) -> str:
    for prefix, cat in CATEGORIES:
        if block == prefix or block.startswith(prefix + "_"):
            return cat
    return block


def summary(r) -> dict:
    """The figures of a :class:`flows.power.run.PowerRun` as a JSON-able dict."""
    e = r.energy
    cats: dict = {}
    for b, d in e.by_block.items():
        c = cats.setdefault(category(b), 0.0)
        cats[category(b)] = c + sum(d.values())
    t_s = e.cycles * e.period_ns * 1e-9
    return {
        "variant": r.variant, "workload": r.workload, "runs": r.meta["runs"],
        "width": r.meta["width"], "fmt": r.meta["fmt"], "rows": r.meta["rows"],
        "columns_simulated": r.sample or r.columns, "columns": r.columns,
        "cycles": e.cycles, "results_checked": r.checked_results, "toggles": r.toggles,
        "nets": r.nets, "cells": r.cells,
        "useful_macs": r.meta["useful_macs"], "issued_macs": r.meta["issued_macs"],
        "energy_pj": {"internal": e.internal, "switching": e.switching, "leakage": e.leakage,
                      "total": e.total},
        "pj_per_useful_mac": e.total / r.meta["useful_macs"],
        "pj_per_issued_mac": e.total / r.meta["issued_macs"],
        "fmax_mhz": r.fmax_mhz, "mw_at_fmax": e.total * 1e-12 / t_s * 1e3,
        "by_category_pj": dict(sorted(cats.items(), key=lambda kv: -kv[1])),
        "by_block_pj": e.by_block, "seconds": r.seconds, "peak_mb": r.peak_mb,
        "area_um2": r.area_um2, "pj_per_cycle": e.total / e.cycles,
        "nets_slower_than_tables": e.slow_nets,
    }


def _markdown(s: dict, prov: dict) -> str:
    e = s["energy_pj"]
    lines = [f"# Energy: {s['variant']}, workload {s['workload']}", "",
             f"{s['cycles']} cycles after reset, {s['results_checked']} results checked bit for bit "
             f"against the model, {s['columns_simulated']} of {s['columns']} columns simulated, "
             f"{s['toggles']} net toggles over {s['nets']} nets, {s['cells']} cells; "
             f"{s['nets_slower_than_tables']} nets have a slew beyond the internal-power tables "
             "(clamped; unbuffered high fanout).", "",
             "| figure | value |", "|---|---|",
             f"| energy (internal / switching / leakage) | {e['internal'] / 1e6:.4g} / "
             f"{e['switching'] / 1e6:.4g} / {e['leakage'] / 1e6:.4g} uJ |",
             f"| useful / issued MACs | {s['useful_macs']} / {s['issued_macs']} |",
             f"| pJ per useful MAC | {s['pj_per_useful_mac']:.2f} |",
             f"| pJ per issued MAC | {s['pj_per_issued_mac']:.2f} |",
             f"| power at fmax {s['fmax_mhz']} MHz | {s['mw_at_fmax']:.2f} mW |", "",
             "| block | energy (uJ) | share |", "|---|---|---|"]
    tot = e["total"]
    for c, v in s["by_category_pj"].items():
        lines.append(f"| {c} | {v / 1e6:.4g} | {100 * v / tot:.1f}% |")
    lines += ["", "Zero-delay gate-level simulation of the mapped netlist after the drive repair "
              "(glitches not counted); internal energy from the liberty's internal_power tables, "
              "switching C V^2 / 2 on pin capacitance (no wire load), ideal clock net (no clock "
              "tree; gated clocks pulse only when enabled); see flows/power.", "",
              f"Provenance: {json.dumps(prov)}"]
    return "\n".join(lines) + "\n"


def file_tag(workload: str, sample, runs) -> str:
    """The published file's tag: the workload, then every count that changes the result (the
    sampled columns; the tile runs, a count or the list of run names, unless the default count)."""
    n = len(runs) if isinstance(runs, list | tuple) else int(runs)
    return workload + (f"-sample{sample}" if sample else "") + (f"-runs{n}" if n != RUNS else "")


def _write(r, outroot: Path, argv) -> Path:
    s = summary(r)
    prov = {"git_revision": git_revision(), "tools": tool_versions(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": "python -m flows power " + " ".join(argv)}
    d = outroot / r.variant
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"energy-{file_tag(r.workload, r.sample, r.meta['runs'])}.json"
    path.write_text(json.dumps(dict(s, provenance=prov), indent=1) + "\n")
    path.with_suffix(".md").write_text(_markdown(s, prov))
    return d


def _parser():
    p = argparse.ArgumentParser(prog="python -m flows power", description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, default=None, help="D (default 32)")
    p.add_argument("--fmt", default=None, help="element format (default fp8_e4m3)")
    p.add_argument("--workload", default="tiles", choices=("tiles", "random", "zeros", "all"))
    p.add_argument("--runs", type=int, default=RUNS, help=f"tile runs (default {RUNS})")
    p.add_argument("--sample", type=int, default=None, help="simulate K columns and scale (composition)")
    p.add_argument("--check-composition", type=int, default=None, metavar="K",
                   help="also run with K sampled columns and print the difference")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="other generator option of mu (e.g. rows=16)")
    p.add_argument("--liberty", default=None)
    p.add_argument("--publish", action="store_true",
                   help="write reports/power/ (default build/reports/power/); with --layout reports/pnr/")
    p.add_argument("--layout", default=None, metavar="TAG|DIR",
                   help="energy on a routed unit (make pnr HIER=1) or column (BLOCK=mu_col) with its wires")
    return p


def _layout(a, argv, loads) -> int:
    given = [f for f, v in (("--width", a.width), ("--fmt", a.fmt),
                            ("--check-composition", a.check_composition), ("--set", a.set)) if v]
    if given:
        raise ValueError(f"{given[0]} cannot be combined with --layout: the layout fixes the design")
    d = layout.layout_dir(a.layout)
    out = REPO / "reports" / "pnr" / d.name if a.publish else d
    for wl in loads:
        r = layout.run_layout(d, wl, a.runs, a.sample, liberty=a.liberty)
        s = layout.summary(r)
        prov = {"git_revision": git_revision(), "tools": tool_versions(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "command": "python -m flows power " + " ".join(argv)}
        out.mkdir(parents=True, exist_ok=True)
        tag = file_tag(wl, r.columns_simulated if r.columns_simulated < r.meta["width"] else None, a.runs)
        (out / f"energy-{tag}.json").write_text(json.dumps(dict(s, provenance=prov), indent=1) + "\n")
        (out / f"energy-{tag}.md").write_text(layout.markdown(s, prov))
        p = s["pj_per_useful_mac"]
        print(f"{d.name} {wl}: {p['wires']:.2f} pJ/useful MAC with wires, {p['pins']:.2f} without "
              f"({100 * s['wire_share']:.1f}% wires), {p['synthesized']:.2f} synthesized; "
              f"{s['results_checked']} results checked in {s['seconds']['total']} s -> {out}")
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    a = _parser().parse_args(argv)
    params = dict(kv.split("=", 1) for kv in a.set)
    root = REPO / "reports" / "power" if a.publish else BUILD / "reports" / "power"
    loads = ("tiles", "random", "zeros") if a.workload == "all" else (a.workload,)
    try:
        if a.layout:
            return _layout(a, argv, loads)
        a.width, a.fmt = a.width or 32, a.fmt or "fp8_e4m3"
        check_counts(a.width, a.runs, a.sample)
        check_counts(a.width, a.runs, a.check_composition, what="--check-composition")
        for wl in loads:
            r = run(a.width, a.fmt, wl, a.runs, a.sample, params, liberty=a.liberty)
            s = summary(r)
            d = _write(r, root, argv)
            print(f"{r.variant} {wl}: {s['pj_per_useful_mac']:.2f} pJ/useful MAC, "
                  f"{s['pj_per_issued_mac']:.2f} pJ/issued MAC, {s['mw_at_fmax']:.2f} mW at "
                  f"{s['fmax_mhz']} MHz; {s['cycles']} cycles in {s['seconds']['total']} s, "
                  f"peak {s['peak_mb']} MB -> {d}")
            if a.check_composition:
                c = run(a.width, a.fmt, wl, a.runs, a.check_composition, params, liberty=a.liberty)
                _write(c, root, argv)
                diff = c.energy.total / r.energy.total - 1
                print(f"composed ({a.check_composition} of {a.width} columns) vs all columns: "
                      f"{100 * diff:+.2f}% ({c.seconds['total']} s vs {r.seconds['total']} s)")
    except (PowerError, LibertyError, SynthError, ValueError) as e:
        print(f"python -m flows power: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
