"""Cheap job functions for the sweep tests (imported by pool and Ray workers by path).

Each call leaves a file in ``calls_dir`` so that tests can count how often a job really ran.
"""

import os
import subprocess
import uuid
from pathlib import Path


def _mark(calls_dir, tag):
    d = Path(calls_dir)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{tag}-{uuid.uuid4().hex}").write_text(str(os.getpid()))


def square(x, calls_dir):
    """Return ``x * x``; print to stdout from Python, from the fd and from a child process."""
    _mark(calls_dir, f"square{x}")
    print(f"python print {x}")
    os.write(2, f"raw fd2 {x}\n".encode())
    subprocess.run(["echo", f"child process {x}"], check=True)
    return {"x": x, "square": x * x}


def flaky(x, calls_dir, fail_times):
    """Fail the first ``fail_times`` calls for this ``x`` (counted across processes), then succeed."""
    seen = len(list(Path(calls_dir).glob(f"flaky{x}-*"))) if Path(calls_dir).exists() else 0
    _mark(calls_dir, f"flaky{x}")
    if seen < fail_times:
        raise RuntimeError(f"planned failure {seen + 1} of {fail_times} for x={x}")
    return x


def boom(calls_dir):
    """Always fail."""
    _mark(calls_dir, "boom")
    raise ValueError("this job always fails")


def unserializable(calls_dir):
    """Return something JSON cannot hold."""
    return {"s": {1, 2}}


def writes_file(rel, text, calls_dir):
    """Return a result asking the driver to write ``text`` to ``rel``."""
    _mark(calls_dir, "writes")
    return {"_files": {rel: text}}


def sleepy(seconds, calls_dir):
    """Sleep in a child process (a long job to interrupt); its pid goes to ``calls_dir/child.pid``."""
    _mark(calls_dir, "sleepy")
    child = subprocess.Popen(["sleep", str(seconds)])
    (Path(calls_dir) / "child.pid").write_text(str(child.pid))
    child.wait()
    return seconds
