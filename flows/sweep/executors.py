"""Where sweep jobs run: a local process pool (default) or a Ray cluster.

Both executors run the same worker function, :func:`execute`, on a plain picklable payload and hand
back a plain dict (the *record*). The sweep driver (:mod:`flows.sweep`) owns caching, retries, the
progress bar and the logs; an executor only starts work and reports what finished.

The worker writes the job's stdout and stderr (including those of child processes such as Yosys) to
the log path it is given and also returns the log text, so that a job run on a remote Ray node still
leaves its log on the machine that drives the sweep.
"""

import concurrent.futures as cf
import contextlib
import importlib
import json
import multiprocessing
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from ..paths import exclusive

__all__ = ["execute", "resolve", "LocalExecutor", "RayExecutor", "make_executor", "EXECUTORS"]

# A log larger than this is cut in the returned record (the worker's own file keeps all of it).
LOG_RETURN_LIMIT = 2_000_000


def resolve(func: str):
    """Import ``"package.module:function"`` and return the function.

    Raises
    ------
    ValueError
        If ``func`` is not of the form ``module:function`` or does not name a callable.
    """
    mod, sep, name = func.partition(":")
    if not sep or not mod or not name:
        raise ValueError(f"job function must be 'package.module:function', not {func!r}")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"job function {func!r} is not callable")
    return obj


@contextlib.contextmanager
def _redirect_fds(path: Path):
    """Send file descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr``) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    old = sys.stdout, sys.stderr
    with open(path, "a", buffering=1) as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        sys.stdout = sys.stderr = f
        try:
            yield f
        finally:
            f.flush()
            sys.stdout, sys.stderr = old
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


@contextlib.contextmanager
def _locked(path, log):
    if not path:
        yield
        return
    t0 = time.monotonic()
    with exclusive(path):
        print(f"=== took lock {path} after {time.monotonic() - t0:.1f} s (unix time {time.time():.3f})",
              file=log)
        yield


def execute(payload: dict) -> dict:
    """Run one job attempt; never raises.

    Parameters
    ----------
    payload : dict
        ``func`` (import path), ``kwargs`` (dict), ``name``, ``attempt`` (1-based), ``log`` (path),
        ``lock`` (optional path: hold an exclusive ``flock`` on it while the job runs, so that sweeps
        on a shared machine take turns with other heavy work).

    Returns
    -------
    dict
        ``ok``, ``result`` (JSON-serializable, when ok), ``error`` (one line, when not ok),
        ``traceback``, ``runtime_s``, ``host``, ``log`` (the log text).
    """
    log = Path(payload["log"])
    rec = {"ok": False, "result": None, "error": None, "traceback": None, "runtime_s": 0.0,
           "host": socket.gethostname()}
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:  # a remote node may not have the driver's directory layout
        log = Path("/tmp") / "sweep-logs" / log.parent.name / log.name
        log.parent.mkdir(parents=True, exist_ok=True)
        rec["log_note"] = f"could not write {payload['log']} ({e}); logged to {log}"
    t0 = time.monotonic()
    with _redirect_fds(log) as f:
        print(f"=== {payload['name']} attempt {payload['attempt']} on {rec['host']} "
              f"pid {os.getpid()} at {time.strftime('%Y-%m-%d %H:%M:%S')}", file=f)
        print(f"=== {payload['func']}({json.dumps(payload['kwargs'], sort_keys=True)})", file=f)
        try:
            with _locked(payload.get("lock"), f):
                result = resolve(payload["func"])(**payload["kwargs"])
            json.dumps(result)  # the cache stores JSON: fail here, clearly, rather than later
            rec.update(ok=True, result=result)
        except BaseException as e:  # noqa: B036 - a job must never take the worker down
            if isinstance(e, TypeError) and "JSON serializable" in str(e):
                e = TypeError(f"job result is not JSON-serializable: {e}")
            rec["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:500]
            rec["traceback"] = traceback.format_exc()
            print(rec["traceback"], file=f)
        rec["runtime_s"] = round(time.monotonic() - t0, 3)
        print(f"=== {'ok' if rec['ok'] else 'FAILED'} after {rec['runtime_s']} s", file=f)
    text = log.read_text(errors="replace")
    rec["log"] = text if len(text) <= LOG_RETURN_LIMIT else "[...cut...]\n" + text[-LOG_RETURN_LIMIT:]
    return rec


def _descendants(pid: int) -> list[int]:
    """Process ids below ``pid`` (children first level first), read from /proc (Linux)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
        out += kids
        todo += kids
    return out


def _terminate_tree(pid: int) -> None:
    """SIGTERM a worker and every process it started (a Yosys run, a simulator)."""
    for p in [pid] + _descendants(pid):
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass


class LocalExecutor:
    """A process pool on this machine (``spawn`` workers, one job per worker at a time).

    Parameters
    ----------
    jobs : int
        Worker processes (defaults to the CPU count).
    """

    name = "local"

    def __init__(self, jobs: int | None = None):
        self.jobs = jobs or os.cpu_count() or 1
        self._pool = cf.ProcessPoolExecutor(self.jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, payload: dict):
        return self._pool.submit(execute, payload)

    def wait(self, handles) -> list:
        """Block until at least one handle is done; return ``[(handle, record), ...]``."""
        done, _ = cf.wait(list(handles), return_when=cf.FIRST_COMPLETED)
        out = []
        for h in done:
            try:
                out.append((h, h.result()))
            except Exception as e:  # the worker process died (killed, out of memory)
                out.append((h, {"ok": False, "error": f"worker process lost: {type(e).__name__}: {e}",
                                "traceback": None, "runtime_s": 0.0, "log": "", "host": "?"}))
        return out

    def close(self, abort: bool = False, pending=()):
        """Wait for the workers to exit; with ``abort`` (an error or Ctrl-C), stop running jobs too."""
        if abort:
            for proc in list(getattr(self._pool, "_processes", {}).values()):
                _terminate_tree(proc.pid)
        self._pool.shutdown(wait=not abort, cancel_futures=True)


class RayExecutor:
    """A Ray cluster: the one at ``RAY_ADDRESS``, the one already initialized, or a local one.

    Parameters
    ----------
    jobs : int
        CPUs of the local instance when this executor starts one (ignored for a cluster, whose
        size sets the parallelism).
    num_cpus_per_job : float
        Ray resource request per job.

    Notes
    -----
    Cluster nodes need the same environment as the driver (``pip install -e .`` of this repository
    and its dependencies); jobs name their function by import path.
    """

    name = "ray"

    def __init__(self, jobs: int | None = None, num_cpus_per_job: float = 1):
        try:
            import ray
        except ImportError:
            raise RuntimeError("--executor ray needs the 'ray' package: pip install 'ray>=2.30' "
                               "(or 'pip install -e .[ray]')") from None
        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                ray.init(num_cpus=jobs or os.cpu_count() or 1, include_dashboard=False,
                         log_to_driver=False)
            self._owned = True
        self._remote = ray.remote(num_cpus=num_cpus_per_job, max_retries=0)(execute)

    def submit(self, payload: dict):
        return self._remote.remote(payload)

    def wait(self, handles) -> list:
        done, _ = self._ray.wait(list(handles), num_returns=1)
        out = []
        for h in done:
            try:
                out.append((h, self._ray.get(h)))
            except Exception as e:  # worker crash, node loss
                out.append((h, {"ok": False, "error": f"ray task lost: {type(e).__name__}: {e}",
                                "traceback": None, "runtime_s": 0.0, "log": "", "host": "?"}))
        return out

    def close(self, abort: bool = False, pending=()):
        """Shut down a Ray instance this executor started; with ``abort``, cancel ``pending`` tasks."""
        if abort:
            for h in pending:
                try:
                    self._ray.cancel(h, force=True)
                except Exception:  # already finished or lost: nothing to stop
                    pass
        if self._owned:
            self._ray.shutdown()


EXECUTORS = {"local": LocalExecutor, "ray": RayExecutor}


def make_executor(kind: str, jobs: int | None = None):
    """Build an executor by name (``local`` or ``ray``)."""
    try:
        cls = EXECUTORS[kind]
    except KeyError:
        raise ValueError(f"unknown executor {kind!r}; choose one of: {', '.join(EXECUTORS)}") from None
    return cls(jobs)
