"""OpenSTA beside our STA on the same mapped netlist, before placement: the signoff cross-check.

:func:`crosscheck` writes the repaired netlist (after drive repair; flat, or every block of a
hierarchical run with its instances: :mod:`flows.pnr.sta_netlist`) as one Verilog file, times it
with OpenSTA under our STA's assumptions (no wires, ideal clock, the default input slew and output
load: :func:`flows.synth.outputs.sta_defaults`) and compares the critical paths. OpenSTA
interpolates the same NLDM tables but takes per-edge pin capacitances (rise/fall) where ours takes
the pin's single ``capacitance``, and on a hierarchical netlist it times through the blocks where
ours composes their timing models (:mod:`flows.synth.hier`), so the two are expected to agree
closely, not exactly; :data:`TOLERANCE` is the agreement the flow asks for. A black-box macro (the
slice's modelled SRAM) is timed through a liberty model restating our STA's assumption for it
(:mod:`flows.pnr.macro_lib`), so both timers see the same paths into and out of it.

:func:`run_netlists` finds the repaired netlists a flow run left in its work directory
(``build/qor/<run>/flat/repaired.json`` or ``build/qor/<run>/hier/<block>/repaired.json``), so a
published point can be checked again without synthesizing it.
"""

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..synth.outputs import sta_defaults
from .macro_lib import macro_liberty
from .opensta import run_opensta
from .sta_netlist import clock_ports, input_ports, read_repaired, sta_verilog
from .tools import ToolError

__all__ = ["crosscheck", "CrossCheck", "TOLERANCE", "run_netlists", "require_sta"]

#: Largest relative difference of the critical paths accepted.
TOLERANCE = 0.02


@dataclass
class CrossCheck:
    """Our STA's and OpenSTA's critical path (ps) on one netlist, and OpenSTA's wall time (s)."""

    ours_ps: float
    opensta_ps: float
    seconds: float = 0.0
    log: Path | None = None
    top: str = "the netlist"

    @property
    def rel_diff(self) -> float:
        """(OpenSTA - ours) / ours."""
        return (self.opensta_ps - self.ours_ps) / self.ours_ps

    def require(self, tolerance=TOLERANCE) -> None:
        """Raise :class:`ToolError` naming both numbers, OpenSTA's log and the way on when the two
        differ by more than ``tolerance``."""
        if abs(self.rel_diff) > tolerance:
            raise ToolError(
                f"OpenSTA times {self.top} at {self.opensta_ps:.1f} ps, our STA at {self.ours_ps:.1f} ps: "
                f"{100 * self.rel_diff:+.2f}% is beyond the {100 * tolerance:.0f}% agreement. OpenSTA's "
                f"path is in {self.log}, ours in the point's timing.txt: compare them cell by cell and "
                "fix the STA that is wrong (or the netlist handed to OpenSTA); --no-opensta skips the "
                "check")


def require_sta() -> None:
    """Raise :class:`ToolError` unless OpenSTA's ``sta`` executable is on the PATH."""
    if not shutil.which("sta"):
        raise ToolError("the OpenSTA cross-check needs the Debian package opensta (executable `sta`): "
                        "run `apt-get install opensta` (as root), or skip the check with --no-opensta")


def run_netlists(work: Path, flow: str) -> list:
    """The repaired netlists of a flow run's work directory ``work`` (``build/qor/<run>``).

    Raises
    ------
    FileNotFoundError
        None there (the run was never made here, or before the flow kept them): the message says
        how to make them.
    """
    work = Path(work)
    found = ([work / "flat" / "repaired.json"] if flow == "flat"
             else sorted((work / "hier").glob("*/repaired.json")))
    found = [p for p in found if p.is_file()]
    if not found:
        raise FileNotFoundError(f"no repaired netlist of the {flow} run under {work}: synthesize the "
                                "point again (python -m flows qor with the same --widths/--formats/"
                                "--acc; Yosys runs are cached) and rerun")
    return found


def crosscheck(netlists, top: str, lib, ours_ps: float, workdir: Path, *,
               tolerance=TOLERANCE, macros=()) -> CrossCheck:
    """Time ``top`` of the repaired netlist(s) ``netlists`` with OpenSTA and compare with
    ``ours_ps`` (our STA's critical path of the same netlist).

    Parameters
    ----------
    netlists : Path or list of Path
        ``repaired.json`` files: the flat design, or every block of a hierarchical run.
    top : str
        The module to time.
    lib : flows.synth.liberty.Library
    ours_ps : float
        Our STA's critical path (``synth__timing__critical_path__delay_ps``).
    workdir : Path
        Where the Verilog, ``sta.tcl`` and ``sta.log`` go.
    tolerance : float or None
        The agreement required (:meth:`CrossCheck.require`); None only measures.
    macros : list of dict
        The black-box macros (``module``, ``area_um2``: the run's :data:`flows.metric_keys.MACROS`),
        timed through :func:`flows.pnr.macro_lib.macro_liberty` (written as ``macros.lib``).

    Raises
    ------
    flows.pnr.tools.ToolError
        OpenSTA missing, failed or warned, or the two differ by more than ``tolerance``.
    """
    require_sta()
    if isinstance(netlists, (str, Path)):
        netlists = [netlists]
    modules = read_repaired(netlists)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    v = workdir / f"{top}.v"
    v.write_text(sta_verilog(modules, top, [mac["module"] for mac in macros]))
    d = sta_defaults(lib)
    extra = ()
    if macros:      # their outputs launch at the slew OpenSTA's inputs and clock get
        extra = (workdir / "macros.lib",)
        extra[0].write_text(macro_liberty(modules, macros, slew_ps=d["input_slew_ps"]))
    t0 = time.monotonic()
    r = run_opensta(lib.path, v, top, workdir, period_ps=ours_ps, inputs=input_ports(modules[top]),
                    clocks=clock_ports(modules, top), input_slew_ps=d["input_slew_ps"],
                    output_load_pf=d["output_load_pf"], extra_liberty=extra)
    c = CrossCheck(ours_ps, r.critical_ps, time.monotonic() - t0, workdir / "sta.log", top)
    if tolerance is not None:
        c.require(tolerance)
    return c
