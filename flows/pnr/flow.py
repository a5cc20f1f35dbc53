"""One place-and-route run: our synthesis, then qflow's placement and routing, SPEF, OpenSTA.

:func:`run_pnr` synthesizes a registered design flat (or user Verilog) with
:mod:`flows.synth.flow`, renames the mapped netlist for layout (:mod:`flows.pnr.netlist`), places
and routes it and checks DRC and LVS (:mod:`flows.pnr.qflow`), writes SPEF from qrouter's RC trees
(:mod:`flows.pnr.parasitics`), and times the routed netlist with OpenSTA twice, without and with the
SPEF (:mod:`flows.pnr.opensta`). The report folder ``build/reports/pnr/<variant>-u<percent>/``
holds the synthesis reports and ``metrics.json`` with the pre-route and post-route metrics
(:mod:`flows.metric_keys`), the routed DEF, the SPEF, and OpenSTA's reports.
"""

import datetime
import json
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .. import metric_keys as K
from ..paths import BUILD, USER_PNR
from ..synth.flow import run as synth_run
from ..synth.flow import run_verilog
from ..synth.metrics import git_revision, tool_versions
from ..synth.outputs import sta_defaults
from .layout import lef_sizes, read_def
from .netlist import physical
from .opensta import run_opensta
from .parasitics import read_rc, write_spef
from .qflow import StepTimeout, run_qflow, tech_lef
from .tools import ToolError, require, versions

__all__ = ["run_pnr", "PnrOutput", "DEFAULT_UTIL", "DEFAULT_STEP_TIMEOUT_S", "WORK", "check_step_timeout"]

#: Work directories (qflow projects) of the runs.
WORK = BUILD / "pnr"
#: Target utilization when none is given: room for the router on metal1-6 at this library.
DEFAULT_UTIL = 0.6
#: Wall-clock limit of each qflow step (seconds) when none is given.
DEFAULT_STEP_TIMEOUT_S = 3600


@dataclass
class PnrOutput:
    """Result of :func:`run_pnr`."""

    metrics: dict
    outdir: Path
    summary: str


def _check_util(util):
    try:
        u = float(util)
    except (TypeError, ValueError):
        raise ValueError(f"UTIL must be a number between 0.05 and 1, not {util!r} (e.g. UTIL=0.6)") from None
    if not 0.05 <= u <= 1.0:
        raise ValueError(f"UTIL must be a target utilization between 0.05 and 1, not {util!r} "
                         "(e.g. UTIL=0.6)")
    return u


def check_step_timeout(seconds) -> float:
    """``seconds`` as a positive finite float, else :class:`ValueError` naming the option to fix."""
    try:
        t = float(seconds)
    except (TypeError, ValueError):
        t = None
    if t is None or not 0 < t < float("inf"):
        raise ValueError(f"the step time limit must be a positive number of seconds, not {seconds!r} "
                         f"(e.g. --step-timeout 7200 or STEP_TIMEOUT=7200; default {DEFAULT_STEP_TIMEOUT_S})")
    return t


def _no_fill(verilog: str) -> str:
    """The routed netlist without its fill cells (they have no liberty entry and no pins)."""
    return re.sub(r"^\s*FILL\w*\s+\S+\s*\(\s*\);\s*\n", "", verilog, flags=re.M)


def _block_verilog(netlist, block):
    """Verilog of module ``block`` of an emitted hierarchy with every module below it."""
    names = [n for n in netlist.modules if n == block or n.startswith(block)]
    if len(names) != 1:
        raise ValueError(f"BLOCK={block!r} names {len(names)} modules of the design; one of: "
                         + ", ".join(netlist.modules))
    todo, seen = [names[0]], []
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.append(n)
            todo += list(netlist.modules[n].children)
    return names[0], "\n".join(netlist.modules[n].verilog for n in reversed(seen))


def synth_block(design, given, block, *, clock_ps=None, booth=False, log=print):
    """Synthesize one block of a hierarchical design flat (children included) and time it with our
    STA: ``(metrics, repaired netlist path)``; the metrics hold the pre-route numbers."""
    from hw import hier
    from hw.designs import get_design

    from ..synth.flow import check_clock
    from ..synth.hier import own_area
    from ..synth.repair import repair, write_repaired
    from ..synth.sta import Sta
    from ..synth.yosys import run_yosys

    clock_ps = check_clock(clock_ps)
    d = get_design(design)
    params = d.params(given or {})
    netlist = hier.emit(d.build(params), d.top_name)
    name, text = _block_verilog(netlist, block)
    lib = _lib_of(None)
    variant = f"{d.variant(params)}{'-ysbooth' if booth else ''}-{name}-{lib.short}"
    log(f"{variant}: flat synthesis of block {name} with {lib.name}")
    r = run_yosys(text, name, WORK / "synth-block" / variant, lib, booth=booth, clock_ps=clock_ps)
    mapped, rep = repair(lib, r.netlist)
    path = write_repaired(r.workdir, name, mapped)
    area, seq, cells = own_area(lib, mapped)
    worst = Sta(lib, mapped).run()
    m = {"design": design, "variant": variant, "design__params": {**{k: str(v) for k, v in params.items()},
                                                                   "block": name, "top": name},
         K.AREA: round(area, 3), K.SEQ: round(seq, 3), K.CELLS: cells, K.CP_PS: round(worst.delay_ps, 1),
         K.CP_LV: worst.levels, K.CP_KIND: worst.kind,
         K.FMAX: round(1e6 / worst.delay_ps, 2) if worst.delay_ps else None,
         "flow__notes": [f"block {name} synthesized flat with its children; {rep.line()}"]}
    return m, path


def run_pnr(design=None, given=None, *, verilog=(), top=None, block=None, util=DEFAULT_UTIL, liberty=None,
            clock_ps=None, booth=False, outdir=None, checks=True, fast=None, groute=True, cleanup=True,
            route_clock=True, reuse=False, step_timeout_s=DEFAULT_STEP_TIMEOUT_S, log=print) -> PnrOutput:
    """Synthesize, place, route, check and time one design; write its reports.

    Parameters
    ----------
    design : str or None
        A registered design (synthesized flat); or give ``verilog`` and ``top``.
    given : dict or None
        Its generator options.
    block : str or None
        Place and route only this module of the design's hierarchy (a name or a unique prefix,
        e.g. ``mu_col`` for the matrix unit's column), synthesized flat with the modules below it.
    util : float
        Target utilization (cell area / core area) that sets the die size.
    checks : bool
        Run magic DRC and netgen LVS on the routed layout.
    fast : int or None
        graywolf effort divisor (``TWSC*fast``; None: its default effort). The report folder
        name carries it (``-f<N>``).
    groute : bool
        graywolf's global routing (see :func:`flows.pnr.qflow.run_qflow`); off adds ``-ng`` to the
        report folder name.
    cleanup : bool
        qrouter's full route; off: the bounded route (see :func:`flows.pnr.qflow.run_qflow`) and
        ``-nc`` in the folder name. Nets it leaves unrouted are counted and timed without wires
        (pin capacitances only) instead of failing the run. So are routed nets qrouter leaves out
        of its RC file for want of a driver pin (it logs ``No driver for net``; named in the
        metrics).
    route_clock : bool
        Off: qrouter leaves the clock nets unrouted (``-nclk`` in the folder name). The timing's
        clock is ideal either way, so its wire changes no delay; routing it as one net to every
        flip-flop is a clock tree's job, and on a large block the slowest net of qrouter's first
        stage. Its tracks are then free for the signal nets.
    step_timeout_s : float
        Wall-clock limit of each qflow step (seconds). A step past it is stopped: ``metrics.json``
        records how far it got (``route__status: "timeout"``) and :class:`StepTimeout` is raised.
    reuse : bool
        Re-read a layout this run's settings already placed and routed (its qflow project under
        ``build/pnr/``) instead of placing and routing again: synthesis, SPEF and timing are redone.
        The step times of the run that made the layout come from its ``metrics.json``, else from
        qflow's log time stamps (:func:`flows.pnr.qflow.logged_steps`).
    outdir : Path or None
        Exact report folder (default ``build/reports/pnr/<variant>-u<percent>/``).

    Raises
    ------
    flows.pnr.tools.ToolError
        A missing tool (naming its Debian package), a failed step, failed routes, nets without
        parasitics, or an OpenSTA warning.
    flows.pnr.qflow.StepTimeout
        A step ran past ``step_timeout_s`` (a :class:`ToolError`).
    """
    t0 = time.monotonic()
    revision, started = git_revision(), datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    require()
    util = _check_util(util)
    step_timeout_s = check_step_timeout(step_timeout_s)
    synth_dir = WORK / "synth"
    s = None
    if block:
        if liberty:
            raise ToolError("place and route uses the OSU 0.18 um cells: leave LIBERTY unset")
        m, netlist_json = synth_block(design, given, block, clock_ps=clock_ps, booth=booth, log=log)
    elif verilog or top:
        s = run_verilog(list(verilog), top, liberty=liberty, clock_ps=clock_ps, booth=booth,
                        reports_dir=synth_dir, log=log)
    else:
        s = synth_run(design, given or {}, liberty=liberty, clock_ps=clock_ps, flow="flat", booth=booth,
                      reports_dir=synth_dir, log=log)
    if s is not None:
        m, netlist_json = dict(s.metrics), s.netlist_json
    variant = m["variant"]
    if "osu018" not in variant:
        raise ToolError(f"place and route uses the OSU 0.18 um cells (LEF from qflow-tech-osu018); "
                        f"{variant} was mapped to another library: leave LIBERTY unset")
    tag = (f"{variant}-u{round(util * 100)}" + (f"-f{int(fast)}" if fast else "") + ("" if groute else "-ng")
           + ("" if cleanup else "-nc") + ("" if route_clock else "-nclk"))
    outdir = Path(outdir) if outdir else USER_PNR / tag
    outdir.mkdir(parents=True, exist_ok=True)
    layout_run = _layout_run(outdir / "metrics.json") if reuse else None
    for f in s.outdir.iterdir() if s is not None else ():
        if f.is_file():
            shutil.copyfile(f, outdir / f.name)
    top_name = m["design__params"].get("top") if "top" in m.get("design__params", {}) else None
    mod_json = json.loads(netlist_json.read_text())["modules"]
    top_name = top_name or next(iter(mod_json))
    ph = physical(mod_json[top_name], top_name)
    log(f"{tag}: place and route of {len(ph.cells)} cells at target utilization {util:g}")
    t1 = time.monotonic()
    clocks = ph.clock_inputs()
    settings = {K.PNR_TARGET_UTIL: util, "place__graywolf__fast": fast or 1,
                "place__graywolf__global_route": groute, "route__qrouter__cleanup": cleanup,
                "route__step_timeout_seconds": step_timeout_s,
                "flow__git_revision": revision, "flow__date": started}
    try:
        q = run_qflow(ph, WORK / tag, density=util, fast=fast, groute=groute, cleanup=cleanup, checks=checks,
                      ignore=() if route_clock else clocks, reuse=reuse, timeout_s=step_timeout_s, log=log)
    except StepTimeout as e:   # how far it got is a result of the study: recorded, then raised
        m.update({**settings, "route__status": "timeout", "route__steps_seconds": e.seconds,
                  "route__timeout": {"step": e.step, "limit_seconds": e.limit_s, **e.progress},
                  "route__qrouter__ignored_nets": [] if route_clock else list(clocks),
                  "flow__runtime__seconds_total": round(time.monotonic() - t0, 1)})
        (outdir / "metrics.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
        raise
    lay = read_def(q.routed_def.read_text(), lef_sizes(tech_lef().read_text()))
    if q.failed_routes and cleanup:
        m.update({**settings, "route__qrouter__ignored_nets": list(q.ignored),
                  K.DIE_AREA: round(lay.die_area, 2), K.UTIL: round(lay.utilization, 4),
                  K.ROUTE_FAILED: q.failed_routes,
                  K.ROUTE_FAILED_STAGE1: q.failed_stage1, "route__steps_seconds": q.seconds,
                  "route__status": "failed"})
        (outdir / "metrics.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
        raise ToolError(f"qrouter left {q.failed_routes} net(s) unrouted on {tag} (log "
                        f"{q.project / 'log' / 'route.log'}); lower the target utilization (UTIL=)")
    rc = read_rc(q.rc.read_text())
    unrouted = q.failed_routes + len(q.ignored)
    names = {n.name for n in rc}
    if len(names) != len(rc) or names & set(q.no_driver) \
            or not lay.nets - unrouted - len(q.no_driver) <= len(rc) <= lay.nets:
        raise ToolError(f"qrouter's RC file {q.rc} has {len(rc)} nets, the routed DEF {lay.nets} "
                        f"({q.failed_routes} unrouted, {len(q.ignored)} left out, {len(q.no_driver)} "
                        "without a driver in qrouter's RC writer): some nets would be timed without wires")
    spef = outdir / f"{top_name}.spef"
    spef.write_text(write_spef(rc, top_name))
    netlist_v = outdir / f"{top_name}.routed.v"
    netlist_v.write_text(_no_fill(q.netlist_v.read_text()))
    shutil.copyfile(q.routed_def, outdir / f"{top_name}.def")
    lib = _lib_of(liberty)
    d = sta_defaults(lib)
    period = m[K.CP_PS]
    kw = dict(period_ps=period, inputs=ph.inputs, clocks=clocks, input_slew_ps=d["input_slew_ps"],
              output_load_pf=d["output_load_pf"])
    lib_path = lib.path
    nowire = run_opensta(lib_path, netlist_v, top_name, outdir / "sta_nowire", **kw)
    routed = run_opensta(lib_path, netlist_v, top_name, outdir / "sta_routed", spef=spef, **kw)
    (outdir / "timing_routed.txt").write_text(routed.report)
    m.update({
        **settings, "route__qrouter__ignored_nets": list(q.ignored),
        "route__timing__unrouted_nets_without_wires": unrouted,
        "route__rc__nets_without_driver": list(q.no_driver),
        "route__rc__unnamed_sinks": sum(n.unnamed for n in rc), "route__reused_layout": not q.seconds,
        K.DIE_AREA: round(lay.die_area, 2),
        K.CORE_AREA: round(lay.core_area, 2),
        K.UTIL: round(lay.utilization, 4), K.ROUTE_WL: round(lay.wirelength, 1), K.ROUTE_VIAS: lay.vias,
        K.ROUTE_FAILED: q.failed_routes, K.ROUTE_FAILED_STAGE1: q.failed_stage1, K.ROUTE_NETS: lay.nets,
        K.ROUTE_SPEF_NETS: len(rc),
        K.ROUTE_WIRE_CAP: round(sum(n.wire_cap for n in rc), 5),
        K.DRC_ERRORS: q.drc_errors, K.LVS_MATCH: q.lvs_match, K.LVS_ERRORS: q.lvs_errors,
        "route__drc__min_area_patches": q.min_area_patches,
        K.ROUTE_WS: round(routed.slack_ps, 1), K.ROUTE_CP_PS: round(routed.critical_ps, 1),
        K.ROUTE_FMAX: round(routed.fmax_mhz, 2), K.ROUTE_CP_PS_NOWIRE: round(nowire.critical_ps, 1),
        K.PNR_RUNTIME: round(time.monotonic() - t1, 1),
        "route__tools": versions(), "route__project": str(q.project), "route__steps_seconds": q.seconds,
        "route__assumptions": {
            "clock": (f"ideal clock on {', '.join(clocks)}: no insertion delay, zero skew (skew "
                      "budget: the clock tree must keep its skew below the setup slack)") if clocks
            else "no clock port: paths timed against a virtual clock",
            "period_ps": period, "inputs": "arrive at 0 ps", "outputs": "no output delay",
            "input_slew_ps": d["input_slew_ps"], "output_load_pf": d["output_load_pf"],
            "power": "qflow addspacers power stripes (2 um every 50 um); rails in the cell rows",
            "drc_lvs": "magic DRC over the cells' LEF abstracts (no cell GDS in the Debian package: "
                       "the cells' insides are unchecked); netgen LVS on cell instances"},
        "flow__runtime__seconds_total": round(time.monotonic() - t0, 1), "synth__tools": tool_versions(),
    })
    if not q.seconds and not layout_run and q.logged:   # no metrics of the run that made it: its logs
        layout_run = {"revision": None, "seconds_total": None, "source": "qflow's log time stamps",
                      **q.logged}
    if not q.seconds and layout_run:
        m["route__layout_run"] = layout_run
    (outdir / "metrics.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    summary = "\n".join([
        f"== {tag}  (placed and routed, OSU 0.18 um, qflow {versions().get('qflow', '?')})",
        f"  die         {lay.die_area:.0f} um^2 (core {lay.core_area:.0f} um^2, utilization "
        f"{lay.utilization:.3f}, target {util:g})",
        f"  routing     {lay.wirelength:.0f} um wire, {lay.vias} vias, {q.failed_routes} failed nets, "
        f"{len(rc)}/{lay.nets} nets with parasitics",
        f"  checks      DRC {q.drc_errors} errors, LVS {'match' if q.lvs_match else 'MISMATCH'}"
        if checks else "  checks      DRC/LVS not run",
        f"  critical    {routed.critical_ps:.1f} ps post-route (pre-route {period:.1f} ps, our STA; "
        f"OpenSTA without wires {nowire.critical_ps:.1f} ps), fmax {routed.fmax_mhz:.1f} MHz",
        f"  runtime     {m[K.PNR_RUNTIME]:.1f} s place/route/check/time",
        f"  reports     {outdir}/"])
    log(summary)
    return PnrOutput(m, outdir, summary)


def _layout_run(path: Path) -> dict | None:
    """What the run that placed and routed a reused layout measured (revision, date, step seconds,
    total seconds), read from its ``metrics.json`` (carried along by an earlier reuse), or None."""
    if not path.is_file():
        return None
    o = json.loads(path.read_text())
    if o.get("route__layout_run"):
        return o["route__layout_run"]
    if o.get("route__reused_layout") or not o.get("route__steps_seconds"):
        return None
    return {"revision": o.get("flow__git_revision"), "date": o.get("flow__date"),
            "steps_seconds": o["route__steps_seconds"],
            "seconds_total": o.get("flow__runtime__seconds_total")}


def _lib_of(liberty):
    from ..synth.flow import resolve_library

    return resolve_library(liberty, log=lambda *_: None)
