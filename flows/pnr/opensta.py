"""Post-route timing with OpenSTA (Debian ``opensta``) on the routed netlist and its SPEF.

The constraints restate our STA's assumptions (:func:`flows.synth.outputs.sta_defaults`): inputs
arrive at 0 with the default input slew, outputs end at their arrival with the default output load,
and the clock is ideal (no insertion delay, no skew, the default input slew at every clock pin: a
clock tree would have to keep its skew within the reported slack). Designs without a clock are timed
against a virtual clock, so input-to-output paths are checked too. The period is the pre-route
critical path, so the worst setup slack is (pre-route delay) - (post-route delay) and the post-route
critical path is ``period - slack``.

Every OpenSTA warning fails the run: in particular a SPEF name OpenSTA cannot find ("pin ... not
found", "net ... not found") would leave a wire out of the timing.

OpenSTA holds the whole flat netlist in memory (about 10 GB for a D = 128 unit), so the runs of one
machine take turns: each holds an exclusive ``flock`` on :data:`LOCK` (``$OPENSTA_LOCK`` or
``build/opensta.lock``) while OpenSTA runs; two at once were killed by the out-of-memory killer
under ``make qor``'s two jobs on a 24 GB machine.
"""

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..paths import BUILD, exclusive
from .tools import ToolError

__all__ = ["StaResult", "run_opensta", "run_script", "LOCK"]

#: The file whose ``flock`` OpenSTA runs take turns on (one machine: one OpenSTA at a time).
LOCK = Path(os.environ.get("OPENSTA_LOCK") or BUILD / "opensta.lock")


@dataclass
class StaResult:
    """OpenSTA's worst setup slack and the critical path it implies (ps)."""

    period_ps: float
    slack_ps: float
    report: str
    warnings: list

    @property
    def critical_ps(self) -> float:
        return self.period_ps - self.slack_ps

    @property
    def fmax_mhz(self) -> float:
        return 1e6 / self.critical_ps if self.critical_ps > 0 else 0.0


def run_opensta(liberty, netlist_v: Path, top: str, workdir: Path, *, period_ps, inputs, clocks=(),
                spef: Path | None = None, input_slew_ps, output_load_pf, timeout_s=1800,
                extra_liberty=()) -> StaResult:
    """Time ``netlist_v`` (module ``top``) with ``liberty`` (and the ``extra_liberty`` files, e.g.
    macro models) and optional ``spef``; ``inputs`` are the input port names, ``clocks`` those of
    them that clock flip-flops.

    Raises
    ------
    ToolError
        OpenSTA failed, warned (an unannotated name), or printed no slack.
    """
    ns = 1e-3
    clk = " ".join(clocks)
    lines = [f"read_liberty {lib}" for lib in (liberty, *extra_liberty)]
    lines += [f"read_verilog {netlist_v}", f"link_design {top}"]
    if spef:
        lines.append(f"read_spef {spef}")
    if clocks:
        lines.append(f"create_clock -name clk -period {period_ps * ns:.6f} [get_ports {{{clk}}}]")
        # our STA's ideal clock arrives with the default input slew (CLK->Q and setup depend on it)
        lines.append(f"set_clock_transition {input_slew_ps * ns:.6f} [get_clocks clk]")
        data = [p for p in inputs if p not in clocks]
        inputs = f"[get_ports {{{' '.join(data)}}}]" if data else ""
    else:
        lines.append(f"create_clock -name clk -period {period_ps * ns:.6f}")
        inputs = "[all_inputs]"
    lines += [f"set_input_delay 0 -clock clk {inputs}" if inputs else "",
              "set_output_delay 0 -clock clk [all_outputs]",
              f"set_input_transition {input_slew_ps * ns:.6f} [all_inputs]",
              f"set_load {output_load_pf:.6f} [all_outputs]",
              "report_checks -path_delay max -digits 4 -fields {slew cap input_pins}",
              "puts \"WORST_SLACK [sta::worst_slack -max]\"",
              "exit"]
    out = run_script(lines, workdir, top, timeout_s=timeout_s)
    m = re.search(r"WORST_SLACK\s+(-?[0-9.eE+-]+)", out)
    if not m:
        raise ToolError(f"OpenSTA printed no slack for {top}; log {workdir / 'sta.log'}")
    return StaResult(period_ps, float(m[1]) / ns, out, [])


def run_script(lines, workdir: Path, top: str, *, name: str = "sta", timeout_s=1800) -> str:
    """Run OpenSTA on the script ``lines`` (``workdir/<name>.tcl``, its output in ``<name>.log``),
    holding :data:`LOCK`; its output.

    Raises
    ------
    ToolError
        OpenSTA warned (an unannotated name, an unread file), was killed, or exited with an error.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / f"{name}.tcl").write_text("\n".join(lines) + "\n")
    log = workdir / f"{name}.log"
    with exclusive(LOCK):
        r = subprocess.run(["sta", "-no_init", "-exit", f"{name}.tcl"], cwd=workdir, capture_output=True,
                           text=True, timeout=timeout_s)
    out = r.stdout + r.stderr
    log.write_text(out)
    warns = [ln for ln in out.splitlines() if re.match(r"\s*(Warning|Error)", ln)]
    if warns:
        raise ToolError(f"OpenSTA warned on {top} ({len(warns)} line(s); log {log}): " + "; ".join(warns[:5]))
    if r.returncode < 0:
        raise ToolError(f"OpenSTA on {top} was killed by signal {-r.returncode}"
                        + (" (SIGKILL: most likely the kernel's out-of-memory killer; OpenSTA holds the "
                           "whole flat netlist, about 10 GB at D = 128: free memory or run fewer jobs, "
                           "JOBS=1 / --jobs 1)" if r.returncode == -9 else "")
                        + f"; log {log}")
    if r.returncode != 0:
        raise ToolError(f"OpenSTA failed on {top} (exit {r.returncode}); log {log}")
    return out
