"""A trial's work as sweep jobs (:mod:`flows.sweep.runner`): the verification gate, then synthesis.

The gate runs ``python -m tb.verify`` (the bit-exact quick regression of the candidate, at its own
width, with stalls) in a subprocess, so ``flows`` never imports ``tb``. Its verdict is a job result:
a candidate that fails is a *successful* job whose result says ``passed: false`` with the reason, so
it is cached like a pass and never retried; only a gate that could not run (a crash, a bad request)
raises, and the sweep retries it. The cache key covers the configuration, the gate's effort and
seed, and the bytes of ``hw``, ``perf`` and the testbench files the check uses, so the verdict of
an unchanged configuration costs nothing the second time.

Synthesis jobs are the sweeps' own (:func:`flows.sweep.synth_jobs.synth_jobs`), sharing their cache.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from ..paths import REPO
from ..sweep.runner import Job
from ..sweep.synth_jobs import synth_jobs

__all__ = ["verify_job", "verify_job_for", "synth_job_for", "VERIFY_FUNC", "VERIFY_MODULE", "GateError",
           "TB_INPUTS"]

#: Worker function of a verification job.
VERIFY_FUNC = "flows.explore.jobs:verify_job"
#: The command-line module that verifies one configuration (on the tb side).
VERIFY_MODULE = "tb.verify"
#: Testbench files the verdict of each design depends on (relative to the repository).
TB_INPUTS = {
    "mu": ("tb/__init__.py", "tb/sim.py", "tb/lib", "tb/mu"),
    "bf16_mul": ("tb/__init__.py", "tb/sim.py", "tb/lib", "tb/fp"),
}


class GateError(RuntimeError):
    """The verification command could not give a verdict (crashed, or refused the request)."""


def _text(v) -> str:
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


def verify_job(design: str, params: dict, effort: str = "quick", seed: int = 1,
               module: str = VERIFY_MODULE, timeout_s: float = 3600.0) -> dict:
    """Worker side: run ``python -m <module>`` on one configuration and return its verdict.

    ``module`` may carry leading arguments (``"tb.flows.explore_verify fake"``, a test double).

    Returns
    -------
    dict
        The ``VERIFY`` record of the command (``passed``, ``reason``, ``tests``, ``wall_s`` ...) plus
        ``command`` and ``output_tail`` (the last lines of its output: the evidence of a failure).

    Raises
    ------
    GateError
        If the command exits with a status other than 0 (passed) or 1 (failed a check), or prints no
        ``VERIFY`` line.
    """
    cmd = [sys.executable, "-m", *module.split(), "--design", design, "--effort", effort, "--seed", str(seed)]
    for k, v in params.items():
        cmd += ["--set", f"{k}={_text(v)}"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_s)
    sys.stdout.write(r.stdout[-200_000:])
    sys.stdout.write(r.stderr[-200_000:])
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("VERIFY ")]
    if r.returncode not in (0, 1) or not lines:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise GateError(f"{module} exited {r.returncode} without a verdict: {tail}")
    rec = json.loads(lines[-1][len("VERIFY "):])
    rec["command"] = " ".join(["python"] + cmd[1:])
    rec["output_tail"] = "\n".join((r.stdout + r.stderr).splitlines()[-15:])
    if r.returncode == 1 and rec.get("passed"):
        raise GateError(f"{module} exited 1 but reported a pass")
    return rec


def _module_inputs(module: str) -> tuple:
    p = Path(*module.split()[0].split(".")).with_suffix(".py")
    return (str(p),) if (REPO / p).is_file() else ()


def verify_job_for(design: str, params: dict, name: str, effort: str, seed: int,
                    module: str = VERIFY_MODULE) -> Job:
    """The gate's :class:`~flows.sweep.runner.Job` for one configuration (``name``: its job name)."""
    inputs = ("hw", "perf") + TB_INPUTS.get(design, ("tb",)) + _module_inputs(module) + \
        _module_inputs(VERIFY_MODULE)
    kwargs = {"design": design, "params": {k: params[k] for k in sorted(params)}, "effort": effort,
              "seed": seed, "module": module}
    return Job(f"verify-{name}", VERIFY_FUNC, kwargs, inputs=tuple(dict.fromkeys(inputs)))


def synth_job_for(design: str, params: dict, liberty=None, clock_ps=None) -> Job:
    """The sweeps' synthesis job of one full configuration (every option given, so the cache key
    names all of them)."""
    grid = {k: [v] for k, v in params.items() if v is not None}
    (job,) = synth_jobs(design, grid, liberty, clock_ps)
    return job
