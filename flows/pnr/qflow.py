"""Placement (graywolf), routing (qrouter), DRC (magic) and LVS (netgen) through qflow's scripts.

:func:`run_qflow` makes a qflow project from a :class:`flows.pnr.netlist.Physical` netlist (the
BLIF our synthesis mapped, so qflow's own synthesis is skipped) and runs ``qflow place route
migrate drc lvs`` on it with the OSU 0.18 um technology. qflow's steps do: ``blif2cel`` (cells and
pins from the LEF), ``decongest`` (fill cells added to reach ``initial_density``: this sets the die
size from the target utilization), ``graywolf`` (placement), ``place2def``, ``addspacers`` (fill to
the row ends and power stripes: ``-stripe 2.0 50.0 PG``, 2 um wide every 50 um), ``arrangepins``
(pins on the die edge), ``qrouter`` (detailed routing on metal1-6, writes the routed DEF and RC
trees), ``migrate`` (magic reads the routed DEF over the cells' LEF abstracts; then our
:func:`min_area_script` patches minimum-area violations), ``drc`` (magic's DRC over that layout) and
``lvs`` (netgen compares magic's extracted netlist with the synthesized one).

The Debian package ships no cell GDS: the layout magic checks holds the cells as LEF abstracts
(pins and obstructions), so DRC covers the routing and the pin/obstruction geometry, not the
transistor-level inside of the cells; LVS compares connectivity of cell instances, not devices.
"""

import datetime
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .tools import TECH, ToolError

__all__ = ["QflowResult", "StepTimeout", "run_qflow", "route_script", "route_progress", "stage1_failed",
           "logged_steps", "cel_to_pin", "min_area_script"]

#: qflow's tool directory (graywolf, qrouter, ...).
QFLOW_BIN = Path("/usr/lib/qflow/bin")


@dataclass
class QflowResult:
    """Files and checks of one qflow run (paths inside the project)."""

    project: Path
    routed_def: Path
    rc: Path
    netlist_v: Path
    failed_routes: int
    failed_stage1: int | None
    ignored: tuple
    no_driver: tuple
    drc_errors: int | None
    lvs_match: bool | None
    lvs_errors: int | None
    seconds: dict
    logged: dict
    min_area_patches: int | None = None


class StepTimeout(ToolError):
    """A step ran past its time limit and was stopped (with every process it started).

    Attributes
    ----------
    step : str
        The qflow step (``place``, ``route``, ...) or ``min_area``.
    limit_s : float
        The limit it ran into.
    seconds : dict
        Wall seconds of the steps that finished before it.
    progress : dict
        For ``route``: :func:`route_progress` of its log; else empty.
    """

    def __init__(self, message, step, limit_s, seconds, progress):
        super().__init__(message)
        self.step, self.limit_s, self.seconds, self.progress = step, limit_s, dict(seconds), dict(progress)


def stage1_failed(log_text: str) -> int | None:
    """Nets qrouter's first stage left unrouted, from its log (None if the stage did not finish)."""
    first = re.search(r"Stage 1 total routes completed: \d+\s*\n(No failed routes!|Failed net routes: (\d+))",
                      log_text)
    return None if not first else 0 if first[1].startswith("No") else int(first[2])


def route_progress(log_text: str) -> dict:
    """How far qrouter got, from its log: ``{"nets": nets in the design, "remaining": nets left
    unrouted when it last said so, "stage": the last stage it started}`` (keys it never printed are
    left out)."""
    out = {}
    n = re.search(r"^There are (\d+) nets in this design", log_text, re.M)
    if n:
        out["nets"] = int(n[1])
    r = re.findall(r"^Nets remaining: (\d+)", log_text, re.M)
    if r:
        out["remaining"] = int(r[-1])
    st = re.findall(r"^\*\*\* Running stage(\d)", log_text, re.M)
    if st:
        out["stage"] = int(st[-1])
    return out


def _run_limited(cmd, cwd: Path, out_path: Path, timeout_s: float) -> int:
    """Run ``cmd`` in its own process group with its output in ``out_path``; its exit code. Past
    ``timeout_s`` (or on an interrupt) the whole group is killed (qflow's steps are shell scripts
    whose tools would outlive them) and :class:`subprocess.TimeoutExpired` (or the interrupt) is
    raised."""
    with open(out_path, "w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return p.wait(timeout=timeout_s)
        except BaseException:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            raise


def _timeout_error(step, top, project, limit_s, seconds, log_name):
    progress = route_progress(_log(project, "route")) if step == "route" else {}
    how = ""
    if progress.get("nets") and "remaining" in progress:
        how = (f"; qrouter was in stage {progress.get('stage', '?')} with {progress['remaining']:,} of "
               f"{progress['nets']:,} nets still to route")
    done = ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
    return StepTimeout(
        f"{step} of {top} did not finish within its {limit_s:g} s limit and was stopped{how} (log "
        f"{log_name}{'; finished before it: ' + done if done else ''}). Give it more time "
        "(--step-timeout SECONDS, STEP_TIMEOUT= in make), lower the effort (--place-fast N, "
        "--no-route-cleanup, --no-route-clock) or lay out a smaller block", step, limit_s, seconds, progress)


#: qrouter script of the bounded route (``cleanup=False``); the "Final:" line is what
#: :func:`run_qflow` reads, as it reads standard_route's.
_BOUNDED_ROUTE = """{ignore}puts stdout "*** Running stage1 routing with defaults"
set result [stage1]
if {{$result > 0}} {{
    puts stdout "*** Running stage2 routing with options mask 10, effort 10"
    set result [stage2 mask 10 effort 10]
}}
if {{$result > 0}} {{
    puts stdout "*** Running stage2 routing with options mask none, effort 50"
    set result [stage2 mask none effort 50]
}}
cleanup all
write_def {top}_route.def
if {{$result > 0}} {{
    write_failed fail.out
    puts stdout "Final: Failed net routes: $result"
}} else {{
    puts stdout "Final: No failed routes!"
}}
write_delays {top}_route.rc
quit
"""

#: qrouter script of the full route with nets left out (qflow's own command when there is no
#: ``<top>.cfg2``, after the ``ignore`` line).
_FULL_ROUTE = """{ignore}qrouter::standard_route {top}_route.def false
quit
"""


def route_script(top: str, *, cleanup: bool, ignore=()) -> str | None:
    """qrouter's routing commands for qflow's ``<top>.cfg2`` (None: qflow's own full route).

    ``ignore``: nets qrouter leaves out (its ``ignore`` command, given after it read the placed
    DEF): e.g. the clock under an ideal-clock timing, whose one net to every flip-flop is a clock
    tree's job and, on a large block, the slowest net of qrouter's first stage."""
    bad = [n for n in ignore if not re.fullmatch(r"[A-Za-z_][\w\[\].]*", n)]
    if bad:
        raise ValueError(f"net names to leave unrouted must be plain identifiers, not {bad!r}")
    line = f"ignore {' '.join(ignore)}\n" if ignore else ""
    if cleanup:
        return _FULL_ROUTE.format(top=top, ignore=line) if ignore else None
    return _BOUNDED_ROUTE.format(top=top, ignore=line)


def _project_vars(density, extra) -> str:
    lines = ["#!/usr/bin/tcsh -f", "# written by flows.pnr"]
    if density is not None:
        lines.append(f"set initial_density = {density}")
    lines += [f"set {k} = {v}" for k, v in extra.items()]
    return "\n".join(lines) + "\n"


MIN_AREA_LOOP = r"""drc on
select top cell
expand
drc check
drc catchup
set n 0
set left 0
foreach {rule boxes} [drc listall why] {
  if {![regexp {^Metal(\d) area < ([0-9.]+)} $rule -> layer amin]} continue
  foreach b $boxes {
    lassign $b x1 y1 x2 y2
    set gx [expr {max(1, int(ceil($amin / double($y2 - $y1) - ($x2 - $x1))))}]
    set gy [expr {max(1, int(ceil($amin / double($x2 - $x1) - ($y2 - $y1))))}]
    set ok 0
    foreach {dir g} [list e $gx w $gx n $gy s $gy] {
      box values $x1 $y1 $x2 $y2
      box grow $dir $g
      paint metal$layer
      box grow c 8
      drc check
      drc catchup
      if {[llength [drc listall why]] == 0} { set ok 1; break }
      undo
    }
    if {$ok} { incr n } else { incr left }
  }
}
puts stdout "min_area_patches = $n"
puts stdout "min_area_unpatched = $left"
"""


def min_area_script(top: str) -> str:
    """magic script run on the migrated layout before DRC: every routing-metal piece below the
    minimum area (magic's rule "Metal<n> area < A", which qrouter can leave where a via lands with
    no wire beside it) is extended on one side (east, west, north, then south: the first whose
    neighbourhood then has no DRC error) to at least that area, and the layout is saved when
    anything was painted. It prints ``min_area_patches = N`` and ``min_area_unpatched = M``. DRC
    then checks the whole patched layout and qflow's ``lvs``, seeing a layout newer than its
    extracted netlist, extracts it again: a patch that touched another net fails LVS."""
    return (f"lef read {TECH / 'osu018_stdcells.lef'}\nload {top}\n" + MIN_AREA_LOOP
            + f"if {{$n > 0}} {{ save {top} }}\nquit -noprompt\n")


def _patch_min_area(project: Path, top: str, timeout_s: float) -> int:
    """Run :func:`min_area_script` in the project's layout directory; the number of patches."""
    lay = project / "layout"
    (lay / "min_area.tcl").write_text(min_area_script(top))
    rc = _run_limited(["magic", "-dnull", "-noconsole", "min_area.tcl"], lay, project / "qflow_min_area.out",
                      timeout_s)
    text = (project / "qflow_min_area.out").read_text(errors="replace")
    n = re.findall(r"^min_area_patches = (\d+)", text, re.M)
    if rc != 0 or not n:
        raise ToolError(f"magic's minimum-area patch failed on {top} (output "
                        f"{project / 'qflow_min_area.out'})")
    return int(n[-1])


def _log(project: Path, name: str) -> str:
    p = project / "log" / f"{name}.log"
    return p.read_text(errors="replace") if p.exists() else ""


def logged_steps(project: Path) -> dict:
    """``{"date": ISO date, "steps_seconds": {step: seconds}}`` from the time stamps qflow writes at
    the start and end of each step's log (one-second resolution; steps without both stamps are left
    out), or ``{}``: what a re-read layout knows of the run that made it."""
    out = {}
    for step in ("place", "route", "migrate", "drc", "lvs"):
        text = _log(project, step)
        a = re.search(r"logfile created on (.+?)\s*$", text, re.M)
        b = re.search(r"script ended on (.+?)\s*$", text, re.M)
        if a and b:
            t0, t1 = (datetime.datetime.strptime(x[1], "%a %b %d %H:%M:%S %Z %Y") for x in (a, b))
            out.setdefault("date", t0.strftime("%Y-%m-%dT%H:%M:%SZ"))
            out.setdefault("steps_seconds", {})[step] = (t1 - t0).total_seconds()
    return out


def run_qflow(ph, project: Path, *, density=None, fast=None, groute=True, cleanup=True, checks=True,
              lvs=True, ignore=(), extra_vars=None, timeout_s=3600, reuse=False, after_place=None,
              log=print) -> QflowResult:
    """Place and route ``ph`` in the qflow project directory ``project`` (made afresh).

    Parameters
    ----------
    ph : flows.pnr.netlist.Physical
    density : float or None
        Target utilization (qflow's ``initial_density``); None: graywolf's own packing.
    fast : int or None
        graywolf's ``TWSC*fast N``: N times fewer annealing moves per cell and temperature (its
        default effort grows as cells^(4/3); this is the knob for large blocks).
    groute : bool
        graywolf's own global routing (``TWSC*do.global.route``; the ``osu018`` default is on).
        qrouter routes the whole layout afterwards, so it is not needed for a routed result; on
        large blocks it takes most of graywolf's time.
    cleanup : bool
        qrouter's full ``standard_route``: stage 1, stage 2 passes until every net routes (up to
        15 of them), stage 3 (every net ripped up and rerouted twice to shorten it). Off: a bounded
        route for large blocks: stage 1, at most two stage-2 passes (mask 10 effort 10, then no
        mask effort 50), no stage 3; nets still unrouted are counted in ``failed_routes``.
    ignore : sequence of str
        Nets qrouter does not route (:func:`route_script`); they are in the routed DEF without
        wires and not in its RC file, and not counted in ``failed_routes``.
    checks : bool
        Also run ``migrate``, ``drc`` and (with ``lvs``) ``lvs``.
    lvs : bool
        Run ``lvs`` among the checks (it needs every net routed: off when ``ignore`` leaves the
        clock unrouted).
    timeout_s : float
        Wall-clock limit of each step (seconds).
    reuse : bool
        Keep a project already placed and routed with the same settings: read its results again
        (its step times are lost) instead of running qflow. Its netlist must be ``ph``'s.
    after_place : callable or None
        Called with the project directory between placement and routing (e.g. to move the pins:
        :func:`flows.pnr.abstract.plan_pins`).

    Raises
    ------
    StepTimeout
        A step ran past ``timeout_s``: it was stopped, with the tools it started; the message says
        how far the route got and what to change.
    ToolError
        A step failed (the message names the step's log), or routes failed.
    """
    top = ph.top
    done = reuse and all((project / p).is_file() for p in (f"layout/{top}.def", f"layout/{top}.rc",
                                                             "log/route.log"))
    src = project / "source" / f"{top}.v"
    if done and src.is_file() and src.read_text() != ph.verilog():
        raise ToolError(f"the netlist laid out in {project} is not this design's (the design or its "
                        "synthesis changed since): place and route it again (without --reuse-layout)")
    if project.exists() and not done:
        shutil.rmtree(project)
    if not done:
        for d in ("source", "synthesis", "layout"):
            (project / d).mkdir(parents=True, exist_ok=False)
        (project / "source" / f"{top}.v").write_text(ph.verilog())
        (project / "synthesis" / f"{top}.blif").write_text(ph.blif())
        (project / "synthesis" / f"{top}.rtl.v").write_text(ph.verilog())
        (project / "synthesis" / f"{top}.rtlnopwr.v").write_text(ph.verilog())
        (project / "synthesis" / f"{top}_powerground").write_text('set vddnet="vdd"\nset gndnet="gnd"\n')
        if fast or not groute:
            par = (TECH / "osu018.par").read_text()
            if fast:
                par += f"\nTWSC*fast : {int(fast)}\n"
            if not groute:
                extra_vars = {**(extra_vars or {}), **_graywolf_without_groute(project)}
                par = re.sub(r"^TWSC\*do\.global\.route\s*:.*$", "TWSC*do.global.route  : off", par,
                             flags=re.M)
            (project / "layout" / f"{top}.par").write_text(par)
        script = route_script(top, cleanup=cleanup, ignore=tuple(ignore))
        if script:   # qflow appends <top>.cfg2 to qrouter's script in place of its own route command
            (project / "layout" / f"{top}.cfg2").write_text(script)
        (project / "project_vars.sh").write_text(_project_vars(density, extra_vars or {}))
    steps = [] if done else ["place", "route"] + (["migrate", "drc"] + ["lvs"] * lvs if checks else [])
    seconds, patches = {}, None
    for step in steps:
        t0 = time.monotonic()
        try:
            rc = _run_limited(["qflow", step, "-T", "osu018", top], project, project / f"qflow_{step}.out",
                              timeout_s)
        except subprocess.TimeoutExpired:
            raise _timeout_error(step, top, project, timeout_s, seconds,
                                 project / "log" / f"{step}.log") from None
        seconds[step] = round(time.monotonic() - t0, 2)
        text = (project / f"qflow_{step}.out").read_text(errors="replace")
        failed = rc != 0 or "Premature exit" in text or "Synthesis flow stopped" in text
        if step == "drc" and re.search(r"^drc = \d+", _log(project, "drc"), re.M):
            failed = False   # DRC errors are counted below (a result, not a failed run); LVS still runs
        if failed:
            tail = "\n".join(text.strip().splitlines()[-8:])
            raise ToolError(f"qflow {step} failed on {top} (output {project / f'qflow_{step}.out'}, "
                            f"logs in {project / 'log'}):\n{tail}")
        log(f"  {step}: {seconds[step]:.1f} s")
        if step == "place" and after_place is not None:
            after_place(project)
        if step == "migrate":
            t0 = time.monotonic()
            try:
                patches = _patch_min_area(project, top, timeout_s)
            except subprocess.TimeoutExpired:
                raise _timeout_error("min_area", top, project, timeout_s, seconds,
                                     project / "qflow_min_area.out") from None
            seconds["min_area"] = round(time.monotonic() - t0, 2)
            log(f"  min-area patches: {patches} ({seconds['min_area']:.1f} s)")
    route = _log(project, "route")
    m = re.findall(r"Final: (No failed routes!|Failed net routes: (\d+))", route)
    if not m:
        m2 = re.findall(r"Final:.*?(\d+)\s+(?:unrouted|failed)", route)
        if not m2:
            raise ToolError(f"qrouter's final result not found in {project / 'log' / 'route.log'}")
        failed = int(m2[-1])
    else:
        failed = 0 if m[-1][0].startswith("No") else int(m[-1][1])
    stage1 = stage1_failed(route)
    # nets qrouter routed but left out of its RC file (its delay writer finds no driver pin)
    no_driver = tuple(dict.fromkeys(re.findall(r"^No driver for net (\S+)", route, re.M)))
    lay = project / "layout"
    cfg2 = lay / f"{top}.cfg2"   # what the routed layout left out, also when re-read
    ign = re.search(r"^ignore\s+(.+)$", cfg2.read_text(), re.M) if cfg2.is_file() else None
    ignored = tuple(ign[1].split()) if ign else ()
    drc = lvs_match = lvs_err = None
    if checks:
        d = re.findall(r"^drc = (\d+)", _log(project, "drc"), re.M)
        drc = int(d[-1]) if d else None
    if checks and lvs:
        lv = _log(project, "lvs")
        lvs_match = "Circuits match uniquely" in lv
        e = re.findall(r"Total errors = (\d+)", lv)
        lvs_err = int(e[-1]) if e else None
    return QflowResult(project, lay / f"{top}.def", lay / f"{top}.rc",
                       project / "synthesis" / f"{top}.rtlnopwr.v", failed, stage1, ignored, no_driver,
                       drc, lvs_match, lvs_err, seconds, logged_steps(project), patches)


def cel_to_pin(cel_text: str) -> str:
    """The net list graywolf writes as ``<top>.pin`` after its global routing, from its input ``.cel``.

    Without global routing graywolf writes no ``.pin`` file, and qflow's ``place2def.tcl`` reads
    only the nets from it (net name, instance, pin; coordinates and rows unused). One line per cell
    or pad pin: ``<net> <k> <instance> <pin> 0 0 0 1 1``, grouped by net; feedthrough pins
    (``TW_PASS_THRU``) are left out.
    """
    by_net = {}
    inst = None
    for line in cel_text.splitlines():
        w = line.split()
        if not w:
            continue
        if w[0] == "cell" and len(w) >= 3:
            inst = w[2]
        elif w[0] == "pad" and len(w) >= 4 and w[2] == "name":
            inst = w[3]
        elif w[0] == "pin" and len(w) >= 5 and w[1] == "name" and w[3] == "signal":
            if inst is None:
                raise ToolError(f"graywolf .cel: a pin before any cell: {line.strip()!r}")
            if w[4] != "TW_PASS_THRU":
                by_net.setdefault(w[4], []).append((inst, w[2]))
    out = []
    for net, pins in by_net.items():
        out += [f"{net} {k} {i} {p} 0 0 0 1 1" for k, (i, p) in enumerate(pins, 1)]
    return "\n".join(out) + "\n"


def _graywolf_without_groute(project: Path) -> dict:
    """A tool directory for qflow (``bindir``) whose graywolf writes the ``.pin`` file itself
    (:func:`cel_to_pin`) when graywolf's global routing is off; the other tools are qflow's."""
    import sys

    from ..paths import REPO

    bindir = project / "bin"
    bindir.mkdir()
    for tool in QFLOW_BIN.iterdir():
        if tool.name != "graywolf":
            (bindir / tool.name).symlink_to(tool)
    wrapper = bindir / "graywolf"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'{QFLOW_BIN / "graywolf"} "$@" || exit $?\n'
        'for root; do :; done\n'
        f'[ -f "$root.pin" ] || PYTHONPATH="{REPO}" exec "{sys.executable}" -m flows.pnr.qflow '
        '"$root.cel" "$root.pin"\n')
    wrapper.chmod(0o755)
    return {"bindir": str(bindir)}


def main(argv=None) -> int:
    """``python -m flows.pnr.qflow CEL PIN``: write graywolf's ``.pin`` net list from its ``.cel``."""
    import sys

    cel, pin = (sys.argv[1:] if argv is None else argv)
    Path(pin).write_text(cel_to_pin(Path(cel).read_text()))
    return 0


def tech_lef() -> Path:
    """The standard cells' LEF."""
    return TECH / "osu018_stdcells.lef"


if __name__ == "__main__":
    raise SystemExit(main())
