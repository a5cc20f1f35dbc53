"""The sweep's Ray backend on a local single-CPU Ray instance (same driver code path as the pool)."""

import time

import pytest

from flows import sweep
from flows.sweep import Job

ray = pytest.importorskip("ray", reason="ray is a main dependency: reinstall with 'make venv'")

F = "tb.flows.sweep_jobs"


@pytest.mark.quick
def test_ray_small_sweep(tmp_path):
    cd = tmp_path / "calls"
    t0 = time.monotonic()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
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
    finally:
        ray.shutdown()
    assert time.monotonic() - t0 < 60
