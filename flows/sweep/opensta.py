"""The signoff cross-check of a synthesized point: OpenSTA on the netlist our STA timed.

:func:`check_point` reads a point's report folder (``metrics.json``) and the repaired netlists its
flow run left in ``build/qor/<run>/`` (:func:`flows.pnr.crosscheck.run_netlists`), proves they are
the netlist the metrics were measured on (same cell count and area, and the same mapped-netlist
hash when the metrics record one), times them with OpenSTA (:func:`flows.pnr.crosscheck.crosscheck`)
and writes both numbers into ``metrics.json`` (:data:`flows.metric_keys.CP_PS_OPENSTA`,
:data:`flows.metric_keys.CP_DIFF_OPENSTA`, :data:`flows.metric_keys.OPENSTA_TIME`). A difference
beyond :data:`flows.pnr.crosscheck.TOLERANCE` is recorded and then raised.

``make qor`` runs it inside each synthesis job (:func:`flows.sweep.synth_jobs.synth_job`);
``python -m flows qor --opensta-only`` (:func:`check_published`) runs it on every published point
without synthesizing.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import metric_keys as K
from ..paths import PUBLISHED_QOR, REPO
from ..pnr.crosscheck import TOLERANCE, crosscheck, require_sta, run_netlists
from ..pnr.sta_netlist import read_repaired
from ..pnr.tools import ToolError

#: Where a hierarchical point's two timers part (said with a disagreement).
HIER_NOTE = ("On a hierarchical point our STA composes per-input-bit block timing models "
             "(flows/synth/blockmodel.py): a block's input pins are timed at the default input slew, "
             "not the one its parent drives, and its outputs leave at that slew (either way); an "
             "output's delay follows the parent's load linearly; an entry is the worst of its bit's "
             "rising and falling edges (pessimistic). OpenSTA times every pin of the composed netlist")

#: OpenSTA's resident memory per cell instance of the flattened design (bytes), measured with
#: OpenSTA 2.0.17 here: 3.41 GB for the 4-unit D = 32 slice (2.87 M instances), about 10 GB for the
#: D = 128 E4M3 unit (9.8 M).
OPENSTA_BYTES_PER_CELL = 1200

__all__ = ["HIER_NOTE", "OPENSTA_BYTES_PER_CELL", "check_point", "machine_memory", "check_published",
           "netlist_totals", "top_module", "opensta_version"]


def top_module(modules: dict) -> str:
    """The one module of ``modules`` that no other instantiates.

    Raises
    ------
    ToolError
        None or several.
    """
    used = {c["type"] for m in modules.values() for c in m["cells"].values()}
    tops = sorted(set(modules) - used)
    if len(tops) != 1:
        raise ToolError(f"the repaired netlists have {len(tops)} top modules ({', '.join(tops)}); "
                        "expected one: the work directory mixes runs, synthesize the point again")
    return tops[0]


def netlist_totals(modules: dict, top: str, lib) -> tuple:
    """``(cells, area)`` of the composed design: each module's library cells x its instances."""
    counts = {top: 1}
    order = [top]
    for n in order:                                 # breadth first: parents before children
        for c in modules[n]["cells"].values():
            if c["type"] in modules:
                if c["type"] not in counts:
                    order.append(c["type"])
                    counts[c["type"]] = 0
    for n in order:                                 # parents are complete before their children
        for c in modules[n]["cells"].values():
            if c["type"] in modules:
                counts[c["type"]] += counts[n]
    cells, area = 0, 0.0
    for n, k in counts.items():
        own = [lib.cells[c["type"]] for c in modules[n]["cells"].values() if c["type"] in lib.cells]
        cells += k * len(own)
        area += k * sum(c.area for c in own)
    return cells, area


def opensta_version() -> str:
    """``sta -version`` (the Debian ``opensta`` package's release)."""
    try:
        r = subprocess.run(["sta", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else "unknown"


def machine_memory() -> int:
    """This machine's physical memory in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _fits(m: dict, f: Path, memory: int) -> None:
    """Refuse (and record why in ``metrics.json`` ``f``) a point whose flattened instances would
    need more memory in OpenSTA than the machine has: it would be killed after minutes."""
    cells = m.get(K.CELLS) or 0
    need = cells * OPENSTA_BYTES_PER_CELL
    if need <= memory:
        m.pop(K.OPENSTA_SKIPPED, None)
        return
    why = (f"OpenSTA holds the flattened design: {cells / 1e6:.1f} M cell instances need about "
           f"{need / 2**30:.0f} GiB ({OPENSTA_BYTES_PER_CELL} bytes each, measured), this machine has "
           f"{memory / 2**30:.0f} GiB")
    m[K.OPENSTA_SKIPPED] = why
    f.write_text(json.dumps(m, indent=2) + "\n")
    raise ToolError(f"{why}: run `python -m flows qor --opensta-only --points {f.parent.name}` on a "
                    f"machine with at least {need / 2**30 * 1.1:.0f} GiB (its work directory, "
                    "build/qor/<run>, holds the netlist), or synthesize without the check (--no-opensta)")


def _same_netlist(m: dict, modules: dict, top: str, lib, work: Path, metrics_path: Path) -> None:
    """Refuse a work directory whose netlist is not the one ``m`` was measured on."""
    from ..synth.flow import netlist_sha

    cells, area = netlist_totals(modules, top, lib)
    want_cells, want_area = m.get(K.CELLS), m.get(K.AREA)
    sha, want_sha = netlist_sha(work, m.get("flow__mode", "flat")), m.get(K.NETLIST_SHA)
    if (cells != want_cells or abs(area - (want_area or 0)) > 1e-6 * max(area, 1.0)
            or (want_sha and sha != want_sha)):
        raise ToolError(f"the netlist in {work} ({cells} cells, {area:.1f} area, hash {sha}) is not the "
                        f"one {metrics_path} was measured on ({want_cells} cells, {want_area} area, "
                        f"hash {want_sha or 'not recorded'}): synthesize the point again "
                        "(python -m flows qor with its --widths/--formats/--acc) and rerun")


def check_point(outdir: Path, *, lib=None, work: Path | None = None, tolerance=TOLERANCE,
                log=print, memory: int | None = None):
    """Cross-check the point whose reports are in ``outdir`` and record the result in its
    ``metrics.json``.

    Parameters
    ----------
    outdir : Path
        The point's report folder (``reports/qor/<variant>`` or ``build/reports/qor/<variant>``).
    lib : flows.synth.liberty.Library or None
        The library the point was synthesized with (default: the one its metrics name).
    work : Path or None
        The flow run's work directory (default ``build/qor/<flow__run>``).
    memory : int or None
        The machine's memory in bytes (default :func:`machine_memory`): a point whose flattened
        design needs more in OpenSTA (:data:`OPENSTA_BYTES_PER_CELL`) is refused, the reason recorded.

    Returns
    -------
    flows.pnr.crosscheck.CrossCheck or None
        None when the point has no delay to check (the generic library's levels).

    Raises
    ------
    flows.pnr.tools.ToolError
        OpenSTA missing or failing, a work directory holding another netlist, a design too large
        for the machine's memory, or a difference beyond ``tolerance`` (the last two recorded in
        ``metrics.json`` first).
    FileNotFoundError
        No repaired netlist in the work directory.
    """
    from ..synth.flow import WORK, resolve_library

    outdir = Path(outdir)
    f = outdir / "metrics.json"
    m = json.loads(f.read_text())
    ours = m.get(K.CP_PS)
    if not isinstance(ours, (int, float)) or ours <= 0:
        return None
    require_sta()
    _fits(m, f, machine_memory() if memory is None else memory)
    lib = lib or resolve_library((m.get("flow__liberty") or {}).get("path"), log)
    work = Path(work) if work else WORK / (m.get("flow__run") or outdir.name)
    paths = run_netlists(work, m.get("flow__mode", "flat"))
    modules = read_repaired(paths)
    top = top_module(modules)
    _same_netlist(m, modules, top, lib, work, f)
    macros = m.get(K.MACROS) or []
    c = crosscheck(paths, top, lib, ours, work / "opensta", tolerance=None, macros=macros)
    m[K.CP_PS_OPENSTA] = round(c.opensta_ps, 1)
    m[K.CP_DIFF_OPENSTA] = round(100 * c.rel_diff, 3)
    m[K.OPENSTA_TIME] = round(c.seconds, 2)
    m[K.OPENSTA_VERSION] = opensta_version()
    if macros:
        m[K.OPENSTA_MACROS] = [mac["module"] for mac in macros]
    else:
        m.pop(K.OPENSTA_MACROS, None)
    f.write_text(json.dumps(m, indent=2) + "\n")
    log(f"{outdir.name}: OpenSTA {c.opensta_ps:.1f} ps, our STA {ours:.1f} ps "
        f"({100 * c.rel_diff:+.2f}%), OpenSTA {c.seconds:.1f} s")
    try:
        c.require(tolerance)
    except ToolError as e:
        if m.get("flow__mode") != "hier":
            raise
        raise ToolError(f"{e}. {HIER_NOTE}") from None
    return c


def check_published(qor_dir: Path = PUBLISHED_QOR, names=None, log=print) -> int:
    """``python -m flows qor --opensta-only``: :func:`check_point` on every point under ``qor_dir``
    (or those named in ``names``) from the work directories of their runs; exit status 1 when any
    point failed or could not be checked, each named with the reason."""
    try:
        require_sta()
    except ToolError as e:
        print(f"python -m flows qor --opensta-only: error: {e}", file=sys.stderr)
        return 2
    dirs = sorted(p.parent for p in Path(qor_dir).glob("*/metrics.json"))
    if names:
        dirs = [d for d in dirs if d.name in names]
    failed = []
    t0 = time.monotonic()
    for d in dirs:
        try:
            check_point(d, log=log)
        except (ToolError, FileNotFoundError, ValueError) as e:
            failed.append(d.name)
            print(f"{d.name}: {e}", file=sys.stderr)
    rel = qor_dir.relative_to(REPO) if Path(qor_dir).is_relative_to(REPO) else qor_dir
    log(f"OpenSTA cross-check: {len(dirs) - len(failed)} of {len(dirs)} point(s) under {rel} within "
        f"{100 * TOLERANCE:.0f}% in {time.monotonic() - t0:.1f} s"
        + (f"; failed or not checked: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0
