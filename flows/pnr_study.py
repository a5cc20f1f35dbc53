"""``python -m flows pnr-study``: place and route the matrix unit's ``exact`` columns, publish the
runs, write ``reports/physical.md``.

With ``--run FMT:D`` (repeatable) it first places and routes those columns one after the other
(``--place-fast``, ``--util``, ``--graywolf-groute``, ``--route-cleanup``, ``--route-clock``,
``--step-timeout``; DRC and LVS are skipped on these large macros), each exactly as ``python -m
flows pnr --design mu --set width=D --set fmt=FMT --set acc=exact --block mu_col --no-checks``
would. With ``--unit FMT:D`` it lays out the whole unit hierarchically (``make pnr DESIGN=mu
HIER=1``, :func:`flows.pnr.hierflow.run_pnr_hier`, with the same effort and clock options, the
top's utilization ``--top-util``, the column's at that flow's default). Every column and whole-unit run
under ``build/reports/pnr/`` is then published (:func:`publish`): its
``metrics.json`` goes to ``reports/pnr/<run>/`` (committed) with the facts the report takes from
its layout files (die width and height from the routed DEF, the load of each activation input bit
from the SPEF and the routed netlist, the nets left unrouted), so the report is rendered from
committed files only and any clone can regenerate it; a published run that is no longer in the
build tree stays published.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean

from . import metric_keys as K
from .paths import PUBLISHED_PNR, REPO, USER_PNR
from .pnr.tools import TECH, ToolError
from .pnr.wires import ROW_LAYER, broadcast, lef_layers, top_wirelength
from .report.physical import FORMATS, WIDTHS, choose, load_runs, load_units, port_load, render, unrouted_names
from .synth.metrics import git_revision

__all__ = ["main", "estimate", "layout_facts", "publish", "provenance", "REPORT"]

#: The committed report.
REPORT = REPO / "reports" / "physical.md"


def layout_facts(run, lib) -> dict:
    """What the report needs from a run's layout files, as metrics: the nets qrouter left unrouted
    and, for a routed run, the die's width and height (routed DEF) and each activation input bit's
    load (:func:`flows.report.physical.port_load`: SPEF and routed netlist).

    Raises
    ------
    ValueError
        A routed run whose DEF, SPEF or routed netlist is missing, or whose SPEF has no ``x`` input.
    """
    from .pnr.layout import die_size

    if run.metrics.get("flow__hierarchical"):    # a whole-unit run: its metrics hold what the report needs
        return {}
    facts = {K.ROUTE_UNROUTED: unrouted_names(run.metrics.get("route__project"))}
    if not run.routed:
        return facts
    top = run.metrics["design__params"]["top"]
    files = {ext: run.folder / f"{top}.{ext}" for ext in ("def", "spef", "routed.v")}
    missing = [str(f) for f in files.values() if not f.is_file()]
    if missing:
        raise ValueError(f"run {run.folder.name} is timed but its layout files are missing "
                         f"({', '.join(missing)}): rerun it (python -m flows pnr-study --run "
                         f"{run.fmt}:{run.width}) or remove its folder")
    w, h = die_size(files["def"].read_text())
    loads = port_load(files["spef"].read_text(), files["routed.v"].read_text(), lib, "x_")
    if not loads:
        raise ValueError(f"{run.folder}: no activation input net x_<i>_ in the SPEF; was it written by "
                         "this flow?")
    return {**facts, K.DIE_WIDTH: w, K.DIE_HEIGHT: h, K.X_PIN_LOADS: [round(c, 7) for c in loads]}


def publish(runs, lib, out=PUBLISHED_PNR) -> list:
    """Write each run's metrics with its :func:`layout_facts` to ``out/<run folder>/metrics.json``
    (nothing when any run's facts cannot be read); returns the files written."""
    facts = [layout_facts(r, lib) for r in runs]
    written = []
    for r, fact in zip(runs, facts, strict=True):
        m = {**r.metrics, **fact}
        f = Path(out) / r.folder.name / "metrics.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(m, indent=2) + "\n")
        written.append(f)
    return written


def estimate(run, lib, layers) -> dict:
    """The top-level wire estimate of one routed, published column run (see
    :func:`flows.report.physical.wires_section`).

    Raises
    ------
    ValueError
        The run's metrics lack the layout facts :func:`publish` adds.
    """
    from hw.formats import get_format

    m = run.metrics
    if not all(k in m for k in (K.DIE_WIDTH, K.DIE_HEIGHT, K.X_PIN_LOADS)):
        raise ValueError(f"run {run.folder.name}: its metrics have no die size or input loads; publish "
                         "it with python -m flows pnr-study on the machine that holds its build folder")
    w, h, loads = m[K.DIE_WIDTH], m[K.DIE_HEIGHT], m[K.X_PIN_LOADS]
    d, b = run.width, get_format(run.fmt).bits
    c_in = mean(loads)
    rc = layers[ROW_LAYER]
    length = d * w
    bc = broadcast(length, d, c_in, rc, lib)
    top_wl = top_wirelength(d, w, b)
    return {"w": w, "h": h, "c_in": c_in, "layer": rc.layer, "length": length, "wire_c": bc.wire_cap_pf,
            "elmore_ps": bc.elmore_ps, "repeated_ps": bc.repeated_ps, "repeaters": bc.repeaters,
            "buffer": bc.buffer, "top_wl": top_wl, "bits": b}


def provenance(runs) -> list:
    """Lines: the report's revision, the runs' revisions and what changed in ``hw/``, ``flows/``
    since each, the tools' versions."""
    head = git_revision()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    L = [f"- Generated {now} at git revision `{head}` by `python -m flows pnr-study`."]
    revs = sorted({r.metrics.get("flow__git_revision", "unknown") for r in runs})
    for rev in revs:
        base = rev.split("+")[0]
        try:
            log = subprocess.run(["git", "log", "--format=%h %s", f"{base}..HEAD", "--", "hw", "flows"],
                                 cwd=REPO, capture_output=True, text=True, timeout=30).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            log = ["(git unavailable)"]
        dates = sorted(r.metrics.get("flow__date", "?") for r in runs
                       if r.metrics.get("flow__git_revision", "unknown") == rev)
        L.append(f"- Runs at revision `{rev}` ({dates[0]} to {dates[-1]}); commits touching `hw/` or "
                 f"`flows/` since then: " + ("; ".join(f"`{c}`" for c in log) if log else "none"))
    tools = {}
    for r in runs:
        tools.update({k: v for k, v in (r.metrics.get("route__tools") or {}).items() if v})
        tools.update({k: v for k, v in (r.metrics.get("synth__tools") or {}).items() if v})
    L.append("- Tools: " + "; ".join(f"{k} {v}" for k, v in sorted(tools.items())) + ".")
    L.append(f"- Technology: OSU 0.18 um (`{TECH}`: liberty `osu018_stdcells.lib`, LEF "
             "`osu018_stdcells.lef`), qflow's `osu018` scripts (graywolf, qrouter on metal1-6).")
    return L


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m flows pnr-study", description=__doc__.splitlines()[0])
    p.add_argument("--run", action="append", default=[], metavar="FMT:D",
                   help=f"place and route this column first (formats {', '.join(FORMATS)}; D in "
                   f"{', '.join(map(str, WIDTHS))}); repeatable")
    p.add_argument("--unit", action="append", default=[], metavar="FMT:D",
                   help="lay out this whole unit hierarchically first (make pnr DESIGN=mu HIER=1: the column "
                   "once as a macro, the top routed around its copies; D a power of two from 8); repeatable")
    p.add_argument("--top-util", type=float, default=float(os.environ.get("TOP_UTIL") or 0.5),
                   help="with --unit: target utilization of the top's cell rows (default 0.5, or TOP_UTIL; a "
                   "lower one gives the top's routes more rows)")
    p.add_argument("--rebuffer", choices=("on", "off"), default="on",
                   help="with --unit: rebuild the top's buffer trees by position once placed (default on; "
                   "off: the drive repair's trees as synthesized)")
    p.add_argument("--place-fast", type=int, default=4, help="graywolf effort divisor (default 4)")
    p.add_argument("--graywolf-groute", choices=("on", "off"), default="off",
                   help="graywolf's own global routing (default off: qrouter routes everything)")
    p.add_argument("--route-cleanup", choices=("on", "off"), default="off",
                   help="qrouter's full route (off: stage 1, two stage-2 passes, no cleanup; unrouted "
                   "nets counted and timed without wires)")
    p.add_argument("--route-clock", choices=("on", "off"), default="off",
                   help="route the clock net (default off: left unrouted, as an ideal clock is timed; "
                   "qrouter's first stage spends minutes on that one net to every flip-flop)")
    p.add_argument("--util", type=float, default=0.7,
                   help="target utilization (default 0.7: qrouter's time per net grows with the die's "
                   "area, so a denser die routes faster while its nets still route)")
    p.add_argument("--step-timeout", default=None, metavar="SECONDS",
                   help="wall-clock limit of each qflow step (default 3600); a point past it is "
                   "stopped, recorded as not routed with how far it got, and the study goes on")
    p.add_argument("--out", default=str(REPORT), help="report path (default reports/physical.md)")
    p.add_argument("--published", type=Path, default=PUBLISHED_PNR,
                   help="where the runs are published and the report reads them (default reports/pnr)")
    a = p.parse_args(argv)
    from .pnr.flow import check_step_timeout, run_pnr
    from .pnr.hierflow import run_pnr_hier

    if a.step_timeout is not None:
        try:
            check_step_timeout(a.step_timeout)
        except ValueError as e:
            raise SystemExit(f"--step-timeout: {e}") from None

    units = []
    for item in a.unit:
        fmt, _, d = item.partition(":")
        if fmt not in FORMATS or not d.isdigit() or int(d) < 8 or int(d) & (int(d) - 1):
            raise SystemExit(f"--unit {item!r}: expected FMT:D with FMT in {FORMATS} and D a power of two "
                             "from 8")
        units.append((fmt, int(d)))
    for item in a.run:
        fmt, _, d = item.partition(":")
        if fmt not in FORMATS or not d.isdigit() or int(d) not in WIDTHS:
            raise SystemExit(f"--run {item!r}: expected FMT:D with FMT in {FORMATS} and D in {WIDTHS}")
        try:
            run_pnr("mu", {"width": d, "fmt": fmt, "acc": "exact"}, block="mu_col", util=a.util,
                    fast=a.place_fast, groute=a.graywolf_groute == "on",
                    cleanup=a.route_cleanup == "on", route_clock=a.route_clock == "on", checks=False,
                    **({"step_timeout_s": a.step_timeout} if a.step_timeout is not None else {}))
        except ToolError as e:   # failed routes and timeouts are results (metrics.json says so); go on
            print(f"pnr-study: {item}: {e}", file=sys.stderr)
    for fmt, d in units:
        try:
            run_pnr_hier("mu", {"width": d, "fmt": fmt, "acc": "exact"}, fast=a.place_fast,
                         top_util=a.top_util, groute=a.graywolf_groute == "on",
                         route_clock=a.route_clock == "on", rebuffer_top=a.rebuffer == "on",
                         **({"step_timeout_s": a.step_timeout} if a.step_timeout is not None else {}))
        except ToolError as e:   # a unit that does not lay out leaves no metrics: say so and go on
            print(f"pnr-study: unit {fmt}:{d}: {e}", file=sys.stderr)
    from .synth.liberty import load

    lib = load(TECH / "osu018_stdcells.lib")
    try:
        done = publish(load_runs(USER_PNR) + load_units(USER_PNR), lib, a.published)
    except ValueError as e:
        raise SystemExit(f"pnr-study: {e}") from None
    if done:
        print(f"published {len(done)} run(s) under {a.published}")
    runs = load_runs(a.published)
    if not runs:
        raise SystemExit(f"no column runs under {a.published} or {USER_PNR}: run with --run fp8_e4m3:32 "
                         "first")
    layers = lef_layers((TECH / "osu018_stdcells.lef").read_text())
    est = {k: estimate(r, lib, layers) for k, r in choose(runs).items()}
    units = load_units(a.published)
    text = render(runs, est, provenance(runs + units), units)
    with open(a.out, "w") as f:
        f.write(text)
    routed = sum(1 for f, d in choose(runs) if f in FORMATS and d in WIDTHS)   # the study's points only
    print(f"wrote {a.out} ({routed} routed points of {len(FORMATS) * len(WIDTHS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
