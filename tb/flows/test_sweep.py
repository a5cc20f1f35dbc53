"""Sweep driver on the local process pool: results, logs, retries, cache, bad input."""

import json
import os
from pathlib import Path

import pytest

from flows.sweep import cli
from flows.sweep import runner as sweep
from flows.sweep.runner import Job, SweepError

F = "tb.flows.sweep_jobs"


def calls(d: Path, tag: str) -> int:
    return len(list(d.glob(f"{tag}-*"))) if d.exists() else 0


@pytest.fixture
def env(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("A = 1\n")
    return root, tmp_path / "sweep", tmp_path / "calls"


def test_runs_caches_and_logs(env):
    root, sd, cd = env
    jobs = [Job(f"sq{x}", f"{F}:square", {"x": x, "calls_dir": str(cd)}, inputs=("src",)) for x in (2, 3, 5)]
    outs = sweep.run(jobs, n_jobs=2, root=root, sweep_dir=sd, progress=False)
    assert [o.status for o in outs] == ["ok"] * 3
    assert [o.result["square"] for o in outs] == [4, 9, 25]
    log = (sd / "sq3" / "log").read_text()
    # Python prints, raw writes to fd 2 and a child process's output all land in the job's log.
    for text in ("python print 3", "raw fd2 3", "child process 3", "=== ok"):
        assert text in log
    assert "python print 2" not in log
    assert json.loads((sd / "sq5" / "result.json").read_text())["result"]["square"] == 25

    again = sweep.run(jobs, n_jobs=2, root=root, sweep_dir=sd, progress=False)
    assert [o.status for o in again] == ["cached"] * 3
    assert [o.result["square"] for o in again] == [4, 9, 25]
    assert calls(cd, "square2") == 1  # the rerun was free

    (root / "src" / "a.py").write_text("A = 2\n")  # an input changed: the cache must miss
    third = sweep.run(jobs[:1], n_jobs=1, root=root, sweep_dir=sd, progress=False)
    assert third[0].status == "ok" and calls(cd, "square2") == 2

    forced = sweep.run(jobs[1:2], n_jobs=1, root=root, sweep_dir=sd, progress=False, force=True)
    assert forced[0].status == "ok" and calls(cd, "square3") == 2


def test_retry_then_success_and_clear_failure(env, capsys):
    root, sd, cd = env
    jobs = [Job("flaky", f"{F}:flaky", {"x": 1, "calls_dir": str(cd), "fail_times": 1}),
            Job("boom", f"{F}:boom", {"calls_dir": str(cd)})]
    outs = sweep.run(jobs, n_jobs=2, retries=2, root=root, sweep_dir=sd, progress=False)
    flaky, boom = outs
    assert flaky.status == "ok" and flaky.attempts == 2 and flaky.result == 1
    assert boom.status == "failed" and boom.attempts == 3 and calls(cd, "boom") == 3
    assert "this job always fails" in boom.error
    err = capsys.readouterr().err
    assert "flaky failed (attempt 1/3)" in err and "retrying" in err
    assert "boom FAILED after 3 attempt(s)" in err and "boom/log" in err
    log = (sd / "boom" / "log").read_text()
    assert log.count("=== boom attempt") == 3 and "Traceback" in log
    text = sweep.summary(outs, root)
    assert "1 ran, 0 cached, 1 failed" in text and "FAILED boom (3 attempts)" in text
    # Failures are not cached: the next run tries again.
    again = sweep.run(jobs[1:], n_jobs=1, retries=0, root=root, sweep_dir=sd, progress=False)
    assert again[0].status == "failed" and calls(cd, "boom") == 4


def test_result_files_are_materialized_and_restored(env):
    root, sd, cd = env
    job = Job("wf", f"{F}:writes_file", {"rel": "reports/x/out.txt", "text": "hello", "calls_dir": str(cd)})
    assert sweep.run([job], n_jobs=1, root=root, sweep_dir=sd, progress=False)[0].ok
    out = root / "reports" / "x" / "out.txt"
    assert out.read_text() == "hello"
    out.unlink()
    assert sweep.run([job], n_jobs=1, root=root, sweep_dir=sd, progress=False)[0].status == "cached"
    assert out.read_text() == "hello" and calls(cd, "writes") == 1
    out.write_text("newer run")  # a cached result restores missing files, never overwrites newer ones
    assert sweep.run([job], n_jobs=1, root=root, sweep_dir=sd, progress=False)[0].status == "cached"
    assert out.read_text() == "newer run"


def test_bad_input_is_reported(env):
    root, sd, cd = env
    with pytest.raises(SweepError, match="letters, digits"):
        Job("bad name/", f"{F}:boom")
    with pytest.raises(SweepError, match="package.module:function"):
        Job("x", "no_colon")
    with pytest.raises(SweepError, match="JSON-serializable"):
        Job("x", f"{F}:boom", {"a": object()})
    j = Job("a", f"{F}:boom", {"calls_dir": str(cd)})
    with pytest.raises(SweepError, match="duplicate job names: a"):
        sweep.run([j, j], root=root, sweep_dir=sd, progress=False)
    with pytest.raises(SweepError, match="unknown executor 'slurm'"):
        sweep.run([j], executor="slurm", root=root, sweep_dir=sd, progress=False)
    with pytest.raises(SweepError, match="input 'missing' does not exist"):
        sweep.run([Job("m", f"{F}:boom", inputs=("missing",))], root=root, sweep_dir=sd, progress=False)
    out = sweep.run([Job("u", f"{F}:unserializable", {"calls_dir": str(cd)})], retries=0,
                    root=root, sweep_dir=sd, progress=False)
    assert out[0].status == "failed" and "not JSON-serializable" in out[0].error
    out = sweep.run([Job("nf", "tb.flows.sweep_jobs:nope")], retries=0, root=root, sweep_dir=sd,
                    progress=False)
    assert out[0].status == "failed" and "nope" in out[0].error


def test_cli_grid_of_calls(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "SWEEP_DIR", tmp_path / "sweep")
    cd = tmp_path / "calls"
    real_run = sweep.run
    monkeypatch.setattr(cli, "run", lambda *a, **k: real_run(*a, sweep_dir=tmp_path / "sweep", **k))
    rc = cli.main(["--call", f"{F}:square", "--grid", "x=2,7", "--grid", f"calls_dir={cd}",
                     "--jobs", "2", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "2 jobs: 2 ran, 0 cached, 0 failed" in out
    assert calls(cd, "square7") == 1
    rc = cli.main(["--call", f"{F}:boom", "--grid", f"calls_dir={cd}", "--retries", "0", "--no-progress"])
    assert rc == 1 and "FAILED" in capsys.readouterr().out
    assert cli.main(["--design", "mu", "--grid", "width=48", "--no-progress"]) == 2
    assert "power of two" in capsys.readouterr().err


def test_sweep_lock_makes_jobs_wait(env, monkeypatch, tmp_path):
    import fcntl
    import re
    import threading
    import time

    root, sd, cd = env
    lock = tmp_path / "heavy.lock"
    monkeypatch.setenv("SWEEP_LOCK", str(lock))
    jobs = [Job(f"l{x}", f"{F}:square", {"x": x, "calls_dir": str(cd)}) for x in (1, 2)]
    held = open(lock, "a")
    fcntl.flock(held, fcntl.LOCK_EX)
    released = []

    def release():
        released.append(time.time())
        fcntl.flock(held, fcntl.LOCK_UN)
        held.close()

    timer = threading.Timer(1.0, release)
    timer.start()
    outs = sweep.run(jobs, n_jobs=2, root=root, sweep_dir=sd, progress=False)
    timer.join()
    assert all(o.ok for o in outs)
    for x in (1, 2):
        taken = float(re.search(r"took lock \S+ after \S+ s \(unix time ([0-9.]+)\)",
                                (sd / f"l{x}" / "log").read_text())[1])
        assert taken >= released[0] - 0.002  # no job ran while the lock was held here (ms rounding)


def test_interrupt_stops_running_jobs(env, monkeypatch):
    import time

    root, sd, cd = env
    from flows.sweep import executors

    real_wait = executors.LocalExecutor.wait

    def interrupted(self, handles):
        for _ in range(200):  # wait until the job has started its child process
            if (cd / "child.pid").exists():
                break
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(executors.LocalExecutor, "wait", interrupted)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        sweep.run([Job("slow", f"{F}:sleepy", {"seconds": 30, "calls_dir": str(cd)})], n_jobs=1,
                  root=root, sweep_dir=sd, progress=False)
    assert time.monotonic() - t0 < 15  # the 30 s job was stopped, not waited for
    monkeypatch.setattr(executors.LocalExecutor, "wait", real_wait)
    # ... and so was the process the job started.
    child = int((cd / "child.pid").read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the job's child process {child} still runs")
