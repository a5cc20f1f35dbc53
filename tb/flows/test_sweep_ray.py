"""The sweep's Ray backend on a local single-CPU Ray instance (same driver code path as the pool)."""

import os
import subprocess
import sys
import time

import pytest

from flows.sweep import runner as sweep
from flows.sweep.runner import Job

ray = pytest.importorskip("ray", reason="ray is a main dependency: reinstall with 'make venv'")

F = "tb.flows.sweep_jobs"


@pytest.mark.quick
def test_ray_small_sweep(tmp_path):
    cd = tmp_path / "calls"
    t0 = time.monotonic()
    ctx = ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        jobs = [Job(f"sq{x}", f"{F}:square", {"x": x, "calls_dir": str(cd)}) for x in (3, 4)]
        jobs.append(Job("flaky", f"{F}:flaky", {"x": 9, "calls_dir": str(cd), "fail_times": 1}))
        outs = sweep.run(jobs, executor="ray", retries=1, root=tmp_path, sweep_dir=tmp_path / "sw",
                         progress=False)
        assert [o.status for o in outs] == ["ok"] * 3
        assert [o.result["square"] for o in outs[:2]] == [9, 16]
        assert outs[2].attempts == 2 and outs[2].result == 9
        assert "child process 4" in (tmp_path / "sw" / "sq4" / "log").read_text()
        again = sweep.run(jobs, executor="ray", root=tmp_path, sweep_dir=tmp_path / "sw", progress=False)
        assert [o.status for o in again] == ["cached"] * 3
        assert ray.is_initialized()  # the sweep leaves a cluster it did not start alone
        # The command line connects to a running cluster through RAY_ADDRESS.
        env = dict(os.environ, RAY_ADDRESS=ctx.address_info["address"], SWEEP_DIR=str(tmp_path / "cli"))
        r = subprocess.run([sys.executable, "-m", "flows", "sweep", "--call", f"{F}:square",
                            "--grid", "x=5,6", "--grid", f"calls_dir={cd}", "--executor", "ray",
                            "--no-progress"],
                           env=env, capture_output=True, text=True, timeout=50)
        assert r.returncode == 0, r.stderr
        assert "2 jobs: 2 ran, 0 cached, 0 failed" in r.stdout
        assert "Connecting to existing Ray cluster" in r.stderr
        assert "child process 6" in (tmp_path / "cli" / "square-x=6" / "log").read_text()
    finally:
        ray.shutdown()
    assert time.monotonic() - t0 < 60
