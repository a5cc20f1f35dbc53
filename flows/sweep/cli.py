"""``python -m flows sweep``: run a grid of synthesis or function jobs (:mod:`flows.sweep.runner`).

Examples::

    python -m flows sweep --design mu --grid width=32,64 --grid fmt=fp8_e4m3,fp4_e2m1 --jobs 2
    python -m flows sweep --call tb.tiles.replay:run_one --grid width=32,64 --executor ray

Synthesis reports go under ``build/reports/qor/<variant>/``; ``--publish`` writes the committed
``reports/qor/<variant>/`` instead.
"""

import argparse
import itertools
import json
import os
import re
import sys
import time

from ..deps import closure, module_file
from ..paths import REPO
from .executors import EXECUTORS
from .runner import SWEEP_DIR, Job, SweepError, run, summary
from .synth_jobs import synth_jobs

__all__ = ["main", "call_jobs", "add_run_args", "clock_from_env", "run_from_cli"]


def call_jobs(func: str, grid: dict) -> list[Job]:
    """One :class:`Job` calling ``func(**point)`` per point of ``grid``.

    Cache inputs: the import closure of ``func``'s module (:func:`flows.deps.closure`) when it is a
    module of the repository, else every module of ``hw``, ``perf``, ``tb`` and ``flows``.
    """
    mod = func.partition(":")[0]
    inputs = closure(mod) if module_file(mod) else ("hw", "perf", "tb", "flows")
    keys = list(grid)
    base = func.rpartition(":")[2].replace(".", "_")
    jobs = []
    for values in itertools.product(*(grid[k] for k in keys)):
        kw = dict(zip(keys, values, strict=True))
        varying = [k for k in keys if len(grid[k]) > 1]
        name = "-".join([base] + [re.sub(r"[^A-Za-z0-9_.+=-]", "_", f"{k}={kw[k]}") for k in varying])
        jobs.append(Job(name, func, kw, inputs=inputs))
    return jobs


def _parse_grid(items: list[str]) -> dict:
    grid = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep or not k or not v:
            raise SweepError(f"--grid {it!r}: expected name=v1,v2,...")
        vals = []
        for s in v.split(","):
            try:
                vals.append(json.loads(s))
            except json.JSONDecodeError:
                vals.append(s)
        grid[k.replace("-", "_")] = vals
    return grid


def add_run_args(p: argparse.ArgumentParser) -> None:
    """Options shared by ``sweep`` and ``qor``."""
    p.add_argument("--jobs", "-j", type=int, default=None, help="parallel jobs (default: CPU count)")
    p.add_argument("--executor", choices=sorted(EXECUTORS), default="local",
                   help="local process pool, or a Ray cluster (RAY_ADDRESS; else a local Ray instance)")
    p.add_argument("--retries", type=int, default=1, help="extra attempts for a failed job (default 1)")
    p.add_argument("--force", action="store_true", help="ignore cached results")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def main(argv=None) -> int:
    """``python -m flows sweep``: run a grid of synthesis or function jobs."""
    p = argparse.ArgumentParser(prog="python -m flows sweep", description=__doc__.splitlines()[0])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--design", help="synthesize variants of this registered design (hw/designs.py)")
    what.add_argument("--call", metavar="MODULE:FUNC", help="call this function once per grid point")
    p.add_argument("--grid", action="append", metavar="NAME=V1,V2",
                   help="a swept option (repeatable; the sweep is the cross product)")
    p.add_argument("--liberty", default=os.environ.get("LIBERTY") or None)
    p.add_argument("--clock-ps", default=os.environ.get("CLOCK_PS") or None,
                   help="target period for ABC (default: $CLOCK_PS)")
    p.add_argument("--publish", action="store_true",
                   help="write synthesis reports under the committed reports/qor/ "
                   "(default build/reports/qor/)")
    add_run_args(p)
    a = p.parse_args(argv)

    def jobs():
        grid = _parse_grid(a.grid)
        if a.design:
            return synth_jobs(a.design, grid, a.liberty, clock_from_env(a.clock_ps), a.publish)
        return call_jobs(a.call, grid)

    return run_from_cli("python -m flows sweep", jobs, a, "rerun to continue")


def run_from_cli(prog: str, make_jobs, a: argparse.Namespace, resume_hint: str) -> int:
    """Build the jobs with ``make_jobs()`` and run them with the options of :func:`add_run_args`.

    Prints the summary and the wall time; returns the exit status: 0 if every job succeeded, 1 if
    some failed, 2 for a bad request (the message names it), 130 when interrupted (finished jobs
    stay cached; ``resume_hint`` says how to go on).
    """
    try:
        jobs = make_jobs()
        t0 = time.monotonic()
        outs = run(jobs, a.executor, a.jobs, a.retries, a.force, not a.no_progress)
    except (SweepError, ValueError, RuntimeError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; finished jobs are cached ({resume_hint})", file=sys.stderr)
        return 130
    print(summary(outs))
    print(f"{prog}: wall time {time.monotonic() - t0:.1f} s; logs under {_rel(SWEEP_DIR)}/<job>/log")
    return 0 if all(o.ok for o in outs) else 1


if __name__ == "__main__":
    sys.exit(main())


def clock_from_env(text):
    """``--clock-ps`` / ``$CLOCK_PS`` checked (a positive number) before any job starts."""
    from ..synth.flow import check_clock

    return check_clock(text)


def _rel(p) -> str:
    try:
        return str(p.relative_to(REPO))
    except ValueError:
        return str(p)
