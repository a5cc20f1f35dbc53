"""The QoR sweep's job list and the synthesis job wrapper (the flow itself is stubbed here)."""

import json

import pytest

from flows import qor, sweep
from flows import synth as flow_synth


def test_qor_jobs_cover_the_grid_cheapest_first():
    jobs = qor.qor_jobs()
    names = [j.name for j in jobs]
    assert names[:3] == ["bf16_mul-behavioral-s0", "bf16_mul-booth4-s0", "bf16_mul-behavioral-s0-ysbooth"]
    mu = names[3:]
    assert mu == [f"mu-w{d}-{f}" for d in (32, 64, 128) for f in ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1")]
    j = jobs[3]
    assert j.func == "flows.sweep:synth_job"
    assert j.inputs[0] == "hw/mu" and "hw/hier.py" in j.inputs and j.inputs[-1] == "flows"
    assert "hw/fp" not in j.inputs and jobs[0].inputs[0] == "hw/fp"
    assert j.kwargs == {"design": "mu", "params": {"width": 32, "fmt": "fp8_e4m3"}, "liberty": None,
                        "clock_ps": None}
    assert jobs[2].kwargs["booth"] is True
    assert [j.name for j in qor.qor_jobs((64,), ("fp4_e2m1",), bf16=False)] == ["mu-w64-fp4_e2m1"]
    with pytest.raises(ValueError, match="power of two"):
        qor.qor_jobs((48,), ("fp8_e4m3",), bf16=False)
    with pytest.raises(ValueError, match="invalid value 'fp6'"):
        qor.qor_jobs((32,), ("fp6",), bf16=False)


def test_synth_cache_key_follows_the_generator_not_the_report(tmp_path):
    for rel in ("hw/mu/a.py", "flows/synth.py", "flows/report_qor.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    j = sweep.Job("mu-w32", "flows.sweep:synth_job", {"design": "mu"}, inputs=sweep.SYNTH_INPUTS,
                  exclude=sweep.SYNTH_INPUTS_EXCLUDE)
    k0 = sweep.job_key(j, tmp_path)
    (tmp_path / "flows/report_qor.py").write_text("x = 2\n")
    assert sweep.job_key(j, tmp_path) == k0
    (tmp_path / "hw/mu/a.py").write_text("x = 2\n")
    k1 = sweep.job_key(j, tmp_path)
    assert k1 != k0
    (tmp_path / "flows/synth.py").write_text("x = 2\n")
    assert sweep.job_key(j, tmp_path) != k1


def test_synth_job_returns_metrics_and_report_files(monkeypatch):
    out = sweep.REPO / "build" / "test_sweep_qor" / "mu-w8-test"
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text('{"a": 1}')
    (out / "timing.txt").write_text("path")
    seen = {}

    def fake(design, params, *, liberty=None, clock_ps=None, booth=False):
        seen.update(design=design, params=params, liberty=liberty, clock_ps=clock_ps, booth=booth)
        return {"a": 1}, out

    monkeypatch.setattr(flow_synth, "synthesize", fake)
    r = sweep.synth_job("mu", {"width": 8}, liberty="x.lib", clock_ps=1000.0)
    assert seen == {"design": "mu", "params": {"width": 8}, "liberty": "x.lib", "clock_ps": 1000.0,
                    "booth": False}
    assert r["metrics"] == {"a": 1} and r["variant"] == "mu-w8-test"
    assert r["_files"] == {"build/test_sweep_qor/mu-w8-test/metrics.json": '{"a": 1}',
                           "build/test_sweep_qor/mu-w8-test/timing.txt": "path"}
    json.dumps(r)


def test_liberty_from_the_environment_enters_the_cache_key(tmp_path, monkeypatch):
    lib = tmp_path / "my.lib"
    lib.write_text("library (a) {}")
    monkeypatch.setenv("LIBERTY", str(lib))
    j = qor.qor_jobs((32,), ("fp8_e4m3",), bf16=False)[0]
    assert j.kwargs["liberty"] == str(lib) and j.inputs[-1] == str(lib.resolve())
    k0 = sweep.job_key(j)
    lib.write_text("library (b) {}")
    assert sweep.job_key(j) != k0
