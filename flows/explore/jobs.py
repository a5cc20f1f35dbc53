"""A trial's work as sweep jobs (:mod:`flows.sweep.runner`): the verification gate, then synthesis.

The gate runs ``python -m tb.verify`` (the bit-exact quick regression of the candidate, at its own
width, with stalls) in a subprocess, so ``flows`` never imports ``tb``. Its verdict is a job result:
a candidate that fails is a *successful* job whose result says ``passed: false`` with the reason, so
it is cached like a pass and never retried; only a gate that could not run (a crash, a bad request)
raises, and the sweep retries it. The cache key covers the configuration, the gate's effort and
seed, and the bytes of every file the command imports (:func:`verify_inputs`), so the verdict of
an unchanged configuration costs nothing the second time and any edit of a file it runs redoes it.

Synthesis jobs are the sweeps' own (:func:`flows.sweep.synth_jobs.synth_jobs`), sharing their cache.

An energy job (objective ``energy_per_mac``) runs :func:`flows.power.run.run` on one matrix-unit
configuration: the hierarchical synthesis (cached by the synthesis flow), the stimulus from
``python -m tb.power_stim`` (a subprocess, as the power flow does), a gate-level simulation of
sampled columns checked bit for bit against the model, and the energy sum. Its cache key covers the
configuration, the run's settings, the liberty and the bytes of every file the power flow and the
stimulus command import (:func:`energy_inputs`).
"""

import json
import os
import subprocess
import sys

from ..deps import closure
from ..paths import REPO
from ..sweep.runner import Job
from ..sweep.synth_jobs import REGISTRY, liberty_input, synth_jobs

__all__ = ["verify_job", "verify_job_for", "verify_inputs", "synth_job_for", "energy_job", "energy_job_for",
           "energy_inputs", "VERIFY_FUNC", "VERIFY_MODULE", "ENERGY_FUNC", "ENERGY_MODULE", "GateError"]

#: Worker function of a verification job.
VERIFY_FUNC = "flows.explore.jobs:verify_job"
#: Worker function of an energy job.
ENERGY_FUNC = "flows.explore.jobs:energy_job"
#: The module an energy job runs (it runs ``python -m tb.power_stim`` for the stimulus).
ENERGY_MODULE = "flows.power.run"
#: The command-line module that verifies one configuration (on the tb side).
VERIFY_MODULE = "tb.verify"


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


def _factory(design: str) -> tuple:
    from hw.designs import OptionError, get_design

    try:
        return (get_design(design).factory,)
    except OptionError:     # the command refuses it; its verdict depends on no generator
        return ()


def verify_inputs(design: str, module: str = VERIFY_MODULE) -> tuple:
    """Cache inputs of a verification of ``design`` by ``python -m <module>``: the import closure
    (:func:`flows.deps.closure`) of the command, of :data:`VERIFY_MODULE` (a test double may stand
    in front of it) and of the design's generator, without the other generators the registry names.
    """
    return closure(module, VERIFY_MODULE, *_factory(design), menus=(REGISTRY,))


def energy_inputs() -> tuple:
    """Cache inputs of an energy job: the import closure of :data:`ENERGY_MODULE` (which names
    ``tb.power_stim``, its stimulus command) and of the matrix unit's generator."""
    return closure(ENERGY_MODULE, *_factory("mu"), menus=(REGISTRY,))


def verify_job_for(design: str, params: dict, name: str, effort: str, seed: int,
                    module: str = VERIFY_MODULE) -> Job:
    """The gate's :class:`~flows.sweep.runner.Job` for one configuration (``name``: its job name)."""
    inputs = verify_inputs(design, module)
    kwargs = {"design": design, "params": {k: params[k] for k in sorted(params)}, "effort": effort,
              "seed": seed, "module": module}
    return Job(f"verify-{name}", VERIFY_FUNC, kwargs, inputs=tuple(dict.fromkeys(inputs)))


def synth_job_for(design: str, params: dict, liberty=None, clock_ps=None) -> Job:
    """The sweeps' synthesis job of one full configuration (every option given, so the cache key
    names all of them)."""
    grid = {k: [v] for k, v in params.items() if v is not None}
    (job,) = synth_jobs(design, grid, liberty, clock_ps)
    return job


def energy_job(params: dict, workload: str, runs: int, sample: int, liberty=None) -> dict:
    """Worker side: the energy of one matrix-unit configuration (all options in ``params``).

    Returns
    -------
    dict
        ``pj_per_useful_mac``, ``pj_per_issued_mac``, ``energy_pj`` (total), ``cycles``,
        ``results_checked``, ``columns_simulated``, ``fmax_mhz``, ``variant`` and the settings.

    Raises
    ------
    flows.power.run.PowerError
        If the gate-level netlist disagrees with the model, or the stimulus fails.
    """
    from ..power.run import run

    p = dict(params)
    width, fmt = int(p.pop("width")), str(p.pop("fmt"))
    r = run(width, fmt, workload, runs, sample, {k: _text(v) for k, v in p.items() if v is not None},
            liberty=liberty)
    e = r.energy
    return {"pj_per_useful_mac": e.total / r.meta["useful_macs"],
            "pj_per_issued_mac": e.total / r.meta["issued_macs"], "energy_pj": e.total,
            "cycles": e.cycles, "results_checked": r.checked_results,
            "columns_simulated": r.sample or r.columns, "fmax_mhz": r.fmax_mhz, "variant": r.variant,
            "workload": workload, "runs": runs, "sample": sample}


def energy_job_for(params: dict, name: str, settings: dict, liberty=None) -> Job:
    """The energy :class:`~flows.sweep.runner.Job` of one matrix-unit configuration (``name``: its
    job name; ``settings``: ``workload``, ``runs``, ``sample``)."""
    liberty, lib_input = liberty_input(liberty)     # the liberty's bytes are part of the key
    kwargs = {"params": {k: params[k] for k in sorted(params)}, "workload": settings["workload"],
              "runs": int(settings["runs"]), "sample": int(settings["sample"]), "liberty": liberty}
    inputs = energy_inputs() + lib_input
    return Job(f"energy-{name}", ENERGY_FUNC, kwargs, inputs=tuple(dict.fromkeys(inputs)))
