"""OpenSTA beside our STA on the same mapped netlist, before placement: the signoff cross-check.

:func:`crosscheck` writes the mapped netlist (after drive repair) as Verilog with the layout names
(:mod:`flows.pnr.netlist`), times it with OpenSTA under our STA's assumptions (no wires, ideal
clock, the default input slew and output load: :func:`flows.synth.outputs.sta_defaults`) and
compares the critical paths. OpenSTA interpolates the same NLDM tables but takes per-edge pin
capacitances (rise/fall) where ours takes the pin's single ``capacitance``, so the two are expected
to agree closely, not exactly; :data:`TOLERANCE` is the agreement the flow asks for.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from ..synth.outputs import sta_defaults
from .netlist import physical
from .opensta import run_opensta
from .tools import ToolError

__all__ = ["crosscheck", "CrossCheck", "TOLERANCE"]

#: Largest relative difference of the critical paths accepted.
TOLERANCE = 0.02


@dataclass
class CrossCheck:
    """Our STA's and OpenSTA's critical path (ps) on one netlist."""

    ours_ps: float
    opensta_ps: float

    @property
    def rel_diff(self) -> float:
        return (self.opensta_ps - self.ours_ps) / self.ours_ps


def crosscheck(netlist_json: Path, top: str, lib, ours_ps: float, workdir: Path, *,
               tolerance=TOLERANCE) -> CrossCheck:
    """Time ``top`` of the repaired netlist ``netlist_json`` with OpenSTA and compare with
    ``ours_ps`` (our STA's critical path of the same netlist).

    Raises
    ------
    flows.pnr.tools.ToolError
        OpenSTA failed or warned, or the two differ by more than ``tolerance``.
    """
    ph = physical(json.loads(Path(netlist_json).read_text())["modules"][top], top)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    v = workdir / f"{top}.v"
    v.write_text(ph.verilog())
    d = sta_defaults(lib)
    clocks = ph.clock_inputs()
    r = run_opensta(lib.path, v, top, workdir, period_ps=ours_ps, inputs=ph.inputs, clocks=clocks,
                    input_slew_ps=d["input_slew_ps"], output_load_pf=d["output_load_pf"])
    c = CrossCheck(ours_ps, r.critical_ps)
    if abs(c.rel_diff) > tolerance:
        raise ToolError(f"OpenSTA times {top} at {c.opensta_ps:.1f} ps, our STA at {ours_ps:.1f} ps: "
                        f"{100 * c.rel_diff:+.2f}% is beyond the {100 * tolerance:.0f}% agreement "
                        f"(OpenSTA's report: {workdir / 'sta.log'})")
    return c
