"""One place-and-route run: our synthesis, then qflow's placement and routing, SPEF, OpenSTA.

:func:`run_pnr` synthesizes a registered design flat (or user Verilog) with
:mod:`flows.synth.flow`, renames the mapped netlist for layout (:mod:`flows.pnr.netlist`), places
and routes it and checks DRC and LVS (:mod:`flows.pnr.qflow`), writes SPEF from qrouter's RC trees
(:mod:`flows.pnr.parasitics`), and times the routed netlist with OpenSTA twice, without and with the
SPEF (:mod:`flows.pnr.opensta`). The report folder ``build/reports/pnr/<variant>-u<percent>/``
holds the synthesis reports and ``metrics.json`` with the pre-route and post-route metrics
(:mod:`flows.metric_keys`), the routed DEF, the SPEF, and OpenSTA's reports.
"""

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
from ..synth.outputs import sta_defaults
from .layout import lef_sizes, read_def
from .netlist import physical
from .opensta import run_opensta
from .parasitics import read_rc, write_spef
from .qflow import run_qflow, tech_lef
from .tools import ToolError, require, versions

__all__ = ["run_pnr", "PnrOutput", "DEFAULT_UTIL", "WORK"]

#: Work directories (qflow projects) of the runs.
WORK = BUILD / "pnr"
#: Target utilization when none is given: room for the router on metal1-6 at this library.
DEFAULT_UTIL = 0.6


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


def _no_fill(verilog: str) -> str:
    """The routed netlist without its fill cells (they have no liberty entry and no pins)."""
    return re.sub(r"^\s*FILL\w*\s+\S+\s*\(\s*\);\s*\n", "", verilog, flags=re.M)


def run_pnr(design=None, given=None, *, verilog=(), top=None, util=DEFAULT_UTIL, liberty=None,
            clock_ps=None, booth=False, outdir=None, checks=True, log=print) -> PnrOutput:
    """Synthesize, place, route, check and time one design; write its reports.

    Parameters
    ----------
    design : str or None
        A registered design (synthesized flat); or give ``verilog`` and ``top``.
    given : dict or None
        Its generator options.
    util : float
        Target utilization (cell area / core area) that sets the die size.
    checks : bool
        Run magic DRC and netgen LVS on the routed layout.
    outdir : Path or None
        Exact report folder (default ``build/reports/pnr/<variant>-u<percent>/``).

    Raises
    ------
    flows.pnr.tools.ToolError
        A missing tool (naming its Debian package), a failed step, failed routes, nets without
        parasitics, or an OpenSTA warning.
    """
    t0 = time.monotonic()
    require()
    util = _check_util(util)
    synth_dir = WORK / "synth"
    if verilog or top:
        s = run_verilog(list(verilog), top, liberty=liberty, clock_ps=clock_ps, booth=booth,
                        reports_dir=synth_dir, log=log)
    else:
        s = synth_run(design, given or {}, liberty=liberty, clock_ps=clock_ps, flow="flat", booth=booth,
                      reports_dir=synth_dir, log=log)
    m = dict(s.metrics)
    variant = m["variant"]
    if "osu018" not in variant:
        raise ToolError(f"place and route uses the OSU 0.18 um cells (LEF from qflow-tech-osu018); "
                        f"{variant} was mapped to another library: leave LIBERTY unset")
    tag = f"{variant}-u{round(util * 100)}"
    outdir = Path(outdir) if outdir else USER_PNR / tag
    outdir.mkdir(parents=True, exist_ok=True)
    for f in s.outdir.iterdir():
        if f.is_file():
            shutil.copyfile(f, outdir / f.name)
    top_name = m["design__params"].get("top") if "top" in m.get("design__params", {}) else None
    mod_json = json.loads(s.netlist_json.read_text())["modules"]
    top_name = top_name or next(iter(mod_json))
    ph = physical(mod_json[top_name], top_name)
    log(f"{tag}: place and route of {len(ph.cells)} cells at target utilization {util:g}")
    t1 = time.monotonic()
    q = run_qflow(ph, WORK / tag, density=util, checks=checks, log=log)
    if q.failed_routes:
        raise ToolError(f"qrouter left {q.failed_routes} net(s) unrouted on {tag} (log "
                        f"{q.project / 'log' / 'route.log'}); lower the target utilization (UTIL=)")
    lay = read_def(q.routed_def.read_text(), lef_sizes(tech_lef().read_text()))
    rc = read_rc(q.rc.read_text())
    if len(rc) != lay.nets or len({n.name for n in rc}) != lay.nets:
        raise ToolError(f"qrouter's RC file {q.rc} has {len(rc)} nets, the routed DEF {lay.nets}: "
                        "some nets would be timed without wires")
    spef = outdir / f"{top_name}.spef"
    spef.write_text(write_spef(rc, top_name))
    netlist_v = outdir / f"{top_name}.routed.v"
    netlist_v.write_text(_no_fill(q.netlist_v.read_text()))
    shutil.copyfile(q.routed_def, outdir / f"{top_name}.def")
    clocks = sorted({pins["CLK"] for _, typ, pins in ph.cells if "CLK" in pins} & set(ph.inputs))
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
        K.PNR_TARGET_UTIL: util, K.DIE_AREA: round(lay.die_area, 2), K.CORE_AREA: round(lay.core_area, 2),
        K.UTIL: round(lay.utilization, 4), K.ROUTE_WL: round(lay.wirelength, 1), K.ROUTE_VIAS: lay.vias,
        K.ROUTE_FAILED: q.failed_routes, K.ROUTE_NETS: lay.nets, K.ROUTE_SPEF_NETS: len(rc),
        K.ROUTE_WIRE_CAP: round(sum(n.wire_cap for n in rc), 5),
        K.DRC_ERRORS: q.drc_errors, K.LVS_MATCH: q.lvs_match, K.LVS_ERRORS: q.lvs_errors,
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
        "flow__runtime__seconds_total": round(time.monotonic() - t0, 1),
    })
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


def _lib_of(liberty):
    from ..synth.flow import resolve_library

    return resolve_library(liberty, log=lambda *_: None)
