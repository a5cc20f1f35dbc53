"""Sweeps: many independent jobs (synthesis of design variants, simulations), cached by content.

A :class:`Job` is a plain picklable description: a name, a function given by import path and its
keyword arguments, plus the input files whose contents the result depends on. :func:`run` executes
a list of jobs on a local process pool (default, ``jobs`` = CPU count) or on a Ray cluster
(``executor="ray"``; ``RAY_ADDRESS`` selects the cluster, otherwise a local instance is started),
with a progress bar, one log per job, retries of failed jobs, and a cache keyed by a hash of the job
description and its input files, so that a rerun of an unchanged job costs nothing.

Layout under ``build/sweep/``::

    <job>/log            the job's stdout/stderr (all attempts), written on the driver's machine
    <job>/result.json    the last record of the job (status, runtime, host, result)
    cache/<key>.json     results by content hash (only successful ones)

A job result may carry files (``{"_files": {relpath: text}}``): the driver writes them under the
repository (only below ``reports/`` or ``build/``), so outputs of jobs run on remote Ray nodes land
here too, and cached results restore deleted outputs.

Synthesis jobs are built by :mod:`flows.sweep.synth_jobs`; the command line
(``python -m flows sweep``) is :mod:`flows.sweep.cli`.
"""

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import BUILD, REPO
from .executors import EXECUTORS, make_executor

__all__ = ["Job", "Outcome", "run", "job_key", "summary", "SWEEP_DIR", "SweepError"]

#: Logs, records and the cache (``SWEEP_DIR`` in the environment overrides it).
SWEEP_DIR = Path(os.environ.get("SWEEP_DIR") or BUILD / "sweep")
# Bump when the meaning of a cached record changes.
CACHE_VERSION = 1

_NAME_RE = re.compile(r"^[A-Za-z0-9_.+=-]+$")


class SweepError(ValueError):
    """A sweep was described wrongly; the message says what and how to fix it."""


@dataclass(frozen=True)
class Job:
    """One independent unit of work.

    Parameters
    ----------
    name : str
        Unique, file-name safe (letters, digits, ``_ . + = -``), e.g. ``mu-w32-fp8_e4m3``.
    func : str
        ``"package.module:function"`` called as ``function(**kwargs)`` in a worker; it returns a
        JSON-serializable result.
    kwargs : dict
        Keyword arguments (JSON-serializable).
    inputs : tuple of str
        Files or directories (relative to the repository) whose contents enter the cache key;
        directories contribute their ``*.py`` files.
    exclude : tuple of str
        Files to leave out of ``inputs`` (relative paths).
    """

    name: str
    func: str
    kwargs: dict = field(default_factory=dict, hash=False)
    inputs: tuple = ()
    exclude: tuple = ()

    def __post_init__(self):
        if not _NAME_RE.match(self.name):
            raise SweepError(f"job name {self.name!r} must use only letters, digits and _ . + = -")
        if ":" not in self.func:
            raise SweepError(f"job {self.name}: func must be 'package.module:function', not {self.func!r}")
        try:
            json.dumps(self.kwargs, sort_keys=True)
        except TypeError as e:
            raise SweepError(f"job {self.name}: kwargs must be JSON-serializable ({e})") from None


@dataclass
class Outcome:
    """What became of a job: ``status`` is ``ok``, ``cached`` or ``failed``."""

    job: Job
    status: str
    result: object = None
    error: str | None = None
    attempts: int = 0
    runtime_s: float = 0.0
    log: Path | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "cached")


def _input_files(job: Job, root: Path) -> list[Path]:
    files = []
    for rel in job.inputs:
        p = root / rel
        if p.is_dir():
            files += sorted(q for q in p.rglob("*.py") if "__pycache__" not in q.parts)
        elif p.exists():
            files.append(p)
        else:
            raise SweepError(f"job {job.name}: input {rel!r} does not exist under {root}")
    skip = {root / e for e in job.exclude}
    return [f for f in files if f not in skip]


def job_key(job: Job, root: Path = REPO) -> str:
    """Content hash of a job: function, arguments and the bytes of its input files."""
    h = hashlib.sha256()
    h.update(json.dumps({"v": CACHE_VERSION, "func": job.func, "kwargs": job.kwargs},
                        sort_keys=True).encode())
    for f in _input_files(job, root):
        h.update(str(f.relative_to(root) if f.is_relative_to(root) else f).encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _write_files(result, root: Path, overwrite: bool = True) -> None:
    """Materialize ``result["_files"]`` below ``root`` (only under reports/ or build/).

    ``overwrite=False`` (results from the cache) only restores missing files: a newer run written
    there since (``make synth`` of the same variant) is left alone.
    """
    if not isinstance(result, dict) or not isinstance(result.get("_files"), dict):
        return
    for rel, text in result["_files"].items():
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts or p.parts[0] not in ("reports", "build"):
            raise SweepError(f"job result wants to write {rel!r}: only paths under reports/ or build/ "
                             "are allowed")
        dst = root / p
        if dst.exists() and not overwrite:
            continue
        if not dst.exists() or dst.read_text(errors="replace") != text:
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text)


def _progress(total: int, enabled: bool):
    try:
        from tqdm import tqdm
    except ImportError:  # progress is a nicety; the summary line still says everything
        enabled = False
        tqdm = None
    if not enabled or tqdm is None:
        class _Null:
            def update(self, n=1):
                pass

            def set_postfix_str(self, s):
                pass

            def close(self):
                pass

            @staticmethod
            def write(s):
                print(s, file=sys.stderr)

        return _Null()
    return tqdm(total=total, unit="job", desc="sweep", dynamic_ncols=True, file=sys.stderr)


def run(jobs: list[Job], executor: str = "local", n_jobs: int | None = None, retries: int = 1,
        force: bool = False, progress: bool = True, root: Path = REPO,
        sweep_dir: Path | None = None) -> list[Outcome]:
    """Run ``jobs``; return one :class:`Outcome` per job, in the order given.

    Parameters
    ----------
    jobs : list of Job
    executor : {"local", "ray"}
    n_jobs : int, optional
        Parallel jobs (local pool size, or CPUs of a Ray instance started here). Default: CPU count.
    retries : int
        Extra attempts for a failed job (each failure is reported with its log path).
    force : bool
        Ignore cached results (still writes the new ones).
    progress : bool
        Show a tqdm progress bar on stderr.
    root, sweep_dir : Path
        Repository root (for inputs and result files) and the sweep directory (logs, cache).

    Raises
    ------
    SweepError
        Duplicate job names, a bad executor name or a negative retry count.

    Notes
    -----
    ``SWEEP_LOCK=/path`` makes every job hold an exclusive ``flock`` on that file while it runs
    (jobs then take turns with other heavy work on a shared machine). Do not also wrap the sweep in
    ``flock`` on the same file: its jobs would wait for their own parent.
    """
    if executor not in EXECUTORS:
        raise SweepError(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    if retries < 0:
        raise SweepError(f"retries must be >= 0, not {retries}")
    names = [j.name for j in jobs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SweepError(f"duplicate job names: {', '.join(dup)}; give every job its own name")
    sweep_dir = Path(sweep_dir or SWEEP_DIR)
    lock = os.environ.get("SWEEP_LOCK") or None
    cache = sweep_dir / "cache"
    cache.mkdir(parents=True, exist_ok=True)

    outcomes: dict[str, Outcome] = {}
    todo = []
    bar = _progress(len(jobs), progress)
    for job in jobs:
        key = job_key(job, root)
        log = sweep_dir / job.name / "log"
        hit = cache / f"{key}.json"
        if hit.exists() and not force:
            rec = json.loads(hit.read_text())
            _write_files(rec["result"], root, overwrite=False)
            outcomes[job.name] = Outcome(job, "cached", rec["result"], attempts=0,
                                         runtime_s=rec.get("runtime_s", 0.0), log=log)
            bar.update()
        else:
            todo.append((job, key, log))

    if todo:
        _execute(todo, executor, n_jobs, retries, lock, cache, root, outcomes, bar)
    bar.close()
    return [outcomes[j.name] for j in jobs]


def _execute(todo, executor, n_jobs, retries, lock, cache: Path, root: Path, outcomes: dict, bar) -> None:
    """Run the ``(job, key, log)`` entries of ``todo`` on an executor, with retries; fill ``outcomes``
    and store successful results in ``cache``."""
    _sigterm_as_interrupt()
    ex = make_executor(executor, n_jobs)
    pending = {}
    counts = {"ok": 0, "failed": 0, "cached": len(outcomes)}

    def submit(job, key, log, attempt):
        payload = {"name": job.name, "func": job.func, "kwargs": job.kwargs,
                   "attempt": attempt, "log": str(log), "lock": lock}
        pending[ex.submit(payload)] = (job, key, log, attempt)

    try:
        for job, key, log in todo:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("")  # a fresh log per run; attempts append to it
            submit(job, key, log, 1)
        while pending:
            for handle, rec in ex.wait(pending.keys()):
                job, key, log, attempt = pending.pop(handle)
                if rec.get("log"):
                    log.write_text(rec["log"])
                info = {k: rec.get(k) for k in ("ok", "error", "runtime_s", "host")}
                info.update(name=job.name, key=key, attempt=attempt, func=job.func, kwargs=job.kwargs)
                if rec["ok"]:
                    _write_files(rec["result"], root)
                    (cache / f"{key}.json").write_text(json.dumps(
                        {"name": job.name, "key": key, "runtime_s": rec["runtime_s"],
                         "result": rec["result"]}, sort_keys=True))
                    outcomes[job.name] = Outcome(job, "ok", rec["result"], attempts=attempt,
                                                 runtime_s=rec["runtime_s"], log=log)
                    counts["ok"] += 1
                    bar.update()
                elif attempt <= retries:
                    bar.write(f"sweep: {job.name} failed (attempt {attempt}/{retries + 1}): "
                              f"{rec['error']}; retrying; log: {_rel(log, root)}")
                    submit(job, key, log, attempt + 1)
                else:
                    outcomes[job.name] = Outcome(job, "failed", error=rec["error"], attempts=attempt,
                                                 runtime_s=rec.get("runtime_s", 0.0), log=log)
                    counts["failed"] += 1
                    bar.write(f"sweep: {job.name} FAILED after {attempt} attempt(s): {rec['error']}; "
                              f"log: {_rel(log, root)}")
                    bar.update()
                (log.parent / "result.json").write_text(json.dumps(
                    dict(info, result=rec.get("result")), indent=1, sort_keys=True, default=str))
                bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in counts.items()))
    except BaseException:
        ex.close(abort=True, pending=list(pending))
        raise
    ex.close()


def _sigterm_as_interrupt() -> None:
    """Let SIGTERM (``timeout``, a CI cancel) stop the sweep like Ctrl-C: running jobs are stopped too."""
    import signal
    import threading

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, handler)


def _rel(p: Path, root: Path) -> str:
    try:
        return str(p.relative_to(root))
    except ValueError:
        return str(p)


def summary(outcomes: list[Outcome], root: Path = REPO) -> str:
    """One line per status plus a line per failed job with its log."""
    by = {s: [o for o in outcomes if o.status == s] for s in ("ok", "cached", "failed")}
    lines = [f"sweep: {len(outcomes)} jobs: {len(by['ok'])} ran, {len(by['cached'])} cached, "
             f"{len(by['failed'])} failed; run time {sum(o.runtime_s for o in by['ok']):.1f} s"]
    for o in by["failed"]:
        lines.append(f"  FAILED {o.job.name} ({o.attempts} attempts): {o.error}; log: {_rel(o.log, root)}")
    return "\n".join(lines)
