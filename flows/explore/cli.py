"""``python -m flows explore``: a verified design-space search (``make explore``).

Examples::

    python -m flows explore --design bf16_mul --trials 30 --publish
    python -m flows explore --design mu --objectives area_per_mac,delay --trials 40 \\
        --space space.toml --executor ray --study mu32 --sampler nsga2
    python -m flows explore --design mu --objectives area_per_mac,delay,energy_per_mac --trials 40 \\
        --space space.toml --study mu32e --storage sqlite:///reports/explore/mu32e.db

Runs the sampler's study and random search's (same budget, same seeds) unless ``--no-random``, then
writes the report: ``build/explore/<study>.md`` (``--publish``: the committed
``reports/explore/<study>.md``). Rerunning the same command resumes interrupted studies and only
adds the missing trials; cached verdicts and syntheses make repeated configurations free.
"""

import argparse
import os
import shlex
import sys
from pathlib import Path

from ..paths import BUILD, REPO
from ..sweep.executors import EXECUTORS
from . import objectives as obj
from .jobs import VERIFY_MODULE
from .report import write_report
from .space import SpaceError, load_space
from .study import SAMPLERS, StudyError, counted_trials, evaluate, open_study, progress_bar, run_study

__all__ = ["main"]

PUBLISHED = REPO / "reports" / "explore"
#: Designs with a MAC rate (:func:`flows.explore.objectives.macs_per_cycle`) and a ``tb.verify`` check.
SEARCHABLE = ("mu", "bf16_mul")


def _parser():
    p = argparse.ArgumentParser(prog="python -m flows explore", description=__doc__.splitlines()[0])
    p.add_argument("--design", required=True, help="registered design (mu, bf16_mul)")
    p.add_argument("--objectives", default="area_per_mac,delay",
                   help=f"comma-separated, minimized: {', '.join(obj.OBJECTIVES)} "
                   "(default area_per_mac,delay)")
    p.add_argument("--trials", type=int, required=True, help="trials per study (budget)")
    p.add_argument("--space", default=None, metavar="FILE", help="TOML/JSON file narrowing the space")
    p.add_argument("--study", default=None, help="study name prefix (default: the design)")
    p.add_argument("--storage", default=None,
                   help="SQLAlchemy URL of the study database (default sqlite:///build/explore/studies.db)")
    p.add_argument("--sampler", choices=SAMPLERS, default="tpe")
    p.add_argument("--seeds", type=int, default=1, help="independent studies per sampler (seeds 1..N)")
    p.add_argument("--no-random", action="store_true", help="skip the random-search baseline studies")
    p.add_argument("--executor", choices=sorted(EXECUTORS), default="local",
                   help="local process pool, or Ray (RAY_ADDRESS; else a local Ray instance)")
    p.add_argument("--jobs", "-j", type=int, default=1, help="trials run at a time (default 1)")
    p.add_argument("--retries", type=int, default=1, help="extra attempts of a gate or synthesis job "
                   "that could not run (a failed verification is a verdict, never retried)")
    p.add_argument("--effort", choices=("quick", "smoke"), default="quick",
                   help="verification effort (python -m tb.verify; smoke is for tests)")
    p.add_argument("--verify-module", default=VERIFY_MODULE, help=argparse.SUPPRESS)
    p.add_argument("--liberty", default=os.environ.get("LIBERTY") or None)
    p.add_argument("--energy-workload", choices=("random", "tiles", "zeros"),
                   default=obj.ENERGY["workload"], help="energy_per_mac: operands of the energy run "
                   f"(default {obj.ENERGY['workload']})")
    p.add_argument("--energy-runs", type=int, default=obj.ENERGY["runs"],
                   help=f"energy_per_mac: tile runs simulated (default {obj.ENERGY['runs']})")
    p.add_argument("--energy-sample", type=int, default=obj.ENERGY["sample"],
                   help=f"energy_per_mac: columns simulated and scaled (default {obj.ENERGY['sample']})")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--publish", action="store_true", help="write the report under reports/explore/")
    where.add_argument("--report-dir", default=None, help="write the report here (default build/explore/)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--report-only", action="store_true",
                   help="run no trials: write the report of the studies as they are")
    p.add_argument("--sweep-dir", default=None, help=argparse.SUPPRESS)
    return p


def _check(a) -> list:
    if a.trials < 1:
        raise StudyError(f"--trials must be >= 1, not {a.trials}")
    if a.seeds < 1 or a.jobs < 1:
        raise StudyError("--seeds and --jobs must be >= 1")
    if a.design not in SEARCHABLE:
        raise StudyError(f"--design {a.design}: the search knows the MAC rate and the verification "
                         f"command of {', '.join(SEARCHABLE)} only (flows/explore/objectives.py, "
                         "tb/verify.py)")
    if min(a.energy_runs, a.energy_sample) < 1:
        raise StudyError("--energy-runs and --energy-sample must be >= 1")
    return obj.check_objectives(a.objectives.split(","), a.design)


def _ray_session(a):
    """Start one local Ray instance for the whole search (None when not needed or already up)."""
    if a.executor != "ray":
        return None
    import ray

    if ray.is_initialized():
        return None
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
    else:
        ray.init(num_cpus=a.jobs, include_dashboard=False, log_to_driver=False)
    return ray


def _baseline(space, names, run_opts, gate, energy) -> dict:
    (rec,) = evaluate(space, names, [space.baseline()], run_opts, gate, energy)
    if "fail_reason" in rec:
        raise StudyError(f"the baseline {rec['config']} did not pass: {rec['fail_reason']}")
    return rec


def _run_all(studies, space, names, a, run_opts, gate, base, energy) -> None:
    """Advance the studies round-robin, ``jobs`` trials at a time, so that an interrupted search
    leaves them at (nearly) equal budgets."""
    counts = {s.study_name: len(counted_trials(s)) for s in studies}
    bar = progress_bar(a.trials * len(studies), sum(min(c, a.trials) for c in counts.values()),
                       not a.no_progress)
    try:
        for k in range(a.jobs, a.trials + a.jobs, a.jobs):
            for s in studies:
                res = run_study(s, space, names, min(k, a.trials), run_opts, gate, a.jobs, base["values"],
                                bar, energy)
                if res["interrupted"]:
                    print(f"python -m flows explore: {s.study_name}: closed {res['interrupted']} trial(s) "
                          "left running by an interrupted run; their configurations are asked again",
                          file=sys.stderr)
    finally:
        if bar is not None:
            bar.close()
    for s in studies:
        print(f"python -m flows explore: {s.study_name}: {len(counted_trials(s))} trials", file=sys.stderr)


def main(argv=None) -> int:
    """Run the search and write its report; exit 0, 2 on a bad request, 130 when interrupted."""
    a = _parser().parse_args(argv)
    prog = "python -m flows explore"
    command = "python -m flows explore " + " ".join(shlex.quote(x) for x in
                                                   (sys.argv[1:] if argv is None else argv))
    try:
        names = _check(a)
        space = load_space(a.design, a.space)
    except (SpaceError, StudyError, ValueError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    prefix = a.study or a.design
    gate = {"effort": a.effort, "seed": 1, "module": a.verify_module}
    run_opts = {"executor": a.executor, "n_jobs": a.jobs, "retries": a.retries, "progress": False,
                "liberty": a.liberty, **({"sweep_dir": Path(a.sweep_dir)} if a.sweep_dir else {})}
    settings = {"effort": a.effort, "gate_seed": 1, "verify_module": a.verify_module}
    energy = None
    if "energy_per_mac" in names:
        energy = {"workload": a.energy_workload, "runs": a.energy_runs, "sample": a.energy_sample}
        settings["energy"] = energy
    samplers = [a.sampler] + ([] if a.no_random or a.sampler == "random" else ["random"])
    ray = _ray_session(a)
    try:
        base = _baseline(space, names, run_opts, gate, energy)
        print(f"{prog}: baseline {base['config']}: {base['values']}", file=sys.stderr)
        done = {s: [] for s in samplers}
        for seed in range(1, a.seeds + 1):
            for sampler in samplers:
                done[sampler].append(open_study(f"{prefix}-{sampler}-seed{seed}", a.storage, space, names,
                                                sampler, seed, settings))
        if not a.report_only:
            _run_all([s for ss in done.values() for s in ss], space, names, a, run_opts, gate, base, energy)
        out = PUBLISHED if a.publish else Path(a.report_dir) if a.report_dir else BUILD / "explore"
        path = write_report(done[a.sampler], done.get("random", []) if a.sampler != "random" else [],
                            base, out, prefix, command, a.trials)
        print(f"{prog}: report {path}")
    except (SpaceError, StudyError, obj.ObjectiveError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; rerun the same command to resume (finished trials are stored, "
              "verdicts and syntheses cached)", file=sys.stderr)
        return 130
    finally:
        if ray is not None:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
