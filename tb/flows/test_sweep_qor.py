"""The QoR sweep's job list and the synthesis job wrapper (the flow itself is stubbed here)."""

import json
from types import SimpleNamespace

import pytest

from flows.paths import REPO
from flows.sweep import qor, synth_jobs
from flows.sweep import runner as sweep
from flows.synth import flow as flow_synth
from hw.designs import STUDY_WIDTHS
from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS


def test_qor_jobs_cover_the_grid_cheapest_first():
    jobs = qor.qor_jobs()
    names = [j.name for j in jobs]
    assert names[:3] == ["bf16_mul-behavioral-s0", "bf16_mul-booth4-s0", "bf16_mul-behavioral-s0-ysbooth"]
    mu = names[3:]
    # block-scaled formats, in both modes: every one the generator builds
    block = tuple(BLOCK_FORMATS)
    assert set(block) == {"mxfp8_e4m3", "mxfp4_e2m1", "nvfp4", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3"}
    floats = tuple(f for f in MATRIX_FORMATS if not f.startswith("int"))  # integers: exact only
    # stages from flows.qor_plan: 3 for the exact mode at D = 128 E4M3, 4 for the block formats in
    # the exact mode, 2 everywhere else
    stages = {(128, "fp8_e4m3"): "-s3", **{(d, f): "-s4" for d in STUDY_WIDTHS for f in block}}
    assert mu == [f"mu-w{d}-{f}{stages.get((d, f), '') if tag else ''}{tag}"
                  for d in STUDY_WIDTHS for tag in ("", "-xacc")
                  for f in (MATRIX_FORMATS + block if tag else floats + block)]
    j = jobs[3]
    assert j.func == "flows.sweep.synth_jobs:synth_job"
    assert {"hw/mu/matrix_unit.py", "hw/hier.py", "flows/synth/flow.py", "hw/fp/add.py"} <= set(j.inputs)
    assert "hw/slice/slice.py" not in j.inputs and "hw/mu/matrix_unit.py" not in jobs[0].inputs
    assert j.kwargs == {"design": "mu", "params": {"width": 32, "fmt": "fp8_e4m3", "acc": "fp32"},
                        "liberty": None, "clock_ps": None, "publish": True, "opensta": True}
    assert jobs[2].kwargs["booth"] is True
    assert [j.name for j in qor.qor_jobs((64,), ("fp4_e2m1",), bf16=False)] == ["mu-w64-fp4_e2m1",
                                                                               "mu-w64-fp4_e2m1-xacc"]
    assert qor.qor_jobs((64,), ("fp4_e2m1",), bf16=False, modes=("exact",))[0].kwargs["params"] == {
        "width": 64, "fmt": "fp4_e2m1", "acc": "exact"}
    assert [j.kwargs["params"] for j in qor.qor_jobs((64,), ("nvfp4",), bf16=False)] == [
        {"width": 64, "fmt": "nvfp4", "acc": "fp32"},
        {"width": 64, "fmt": "nvfp4", "acc": "exact", "stages": 4}]
    with pytest.raises(ValueError, match="power of two"):
        qor.qor_jobs((48,), ("fp8_e4m3",), bf16=False)
    with pytest.raises(ValueError, match="invalid value 'fp6'"):
        qor.qor_jobs((32,), ("fp6",), bf16=False)


def test_the_registry_default_is_the_study_point():
    """``make synth`` without STAGES builds the study's point of its format, width and mode (the
    recommended unit); a given STAGES, a LOOP=2 (fp32) and the slice's units follow the same rule."""
    from flows.qor_plan import qor_points
    from hw.designs import get_design

    mu, sl = get_design("mu"), get_design("slice")
    points = qor_points()
    assert {s for *_, s in points} == {2, 3, 4}      # the rule is exercised, not only the default
    for acc, d, f, stages in points:
        assert mu.params({"width": d, "fmt": f, "acc": acc})["stages"] == stages, (acc, d, f)
        if acc == "exact":     # exact is the default mode: naming neither gives the same unit
            assert mu.params({"width": d, "fmt": f})["stages"] == stages, (d, f)
            assert sl.params({"width": d, "fmt": f})["stages"] == stages, (d, f)
    # the rule's values, by hand: block formats 4, E4M3 at D = 128 3, else 2 (exact); fp32 2
    assert [mu.params(g)["stages"] for g in (
        {"width": 64, "fmt": "mxfp8_e4m3"}, {"width": 32, "fmt": "nvfp4"}, {"width": 128},
        {"width": 64}, {"width": 128, "fmt": "fp4_e2m1"}, {"width": 128, "acc": "fp32"},
        {"width": 64, "fmt": "mxfp4_e2m1", "acc": "fp32"})] == [4, 4, 3, 2, 2, 2, 2]
    assert mu.params({"width": 64, "fmt": "mxfp8_e4m3", "stages": "2"})["stages"] == 2
    looped = mu.params({"width": 64, "fmt": "mxfp8_e4m3", "loop": "2"})   # fp32 then its stages
    assert (looped["acc"], looped["stages"]) == ("fp32", 2)
    # make synth's one line names the stages and whether they are the recommended unit's
    line = flow_synth._acc_line(mu.params({"width": 64, "fmt": "mxfp8_e4m3"}))
    assert line.startswith("accumulate exact, 4 column stages, the recommended unit") and "OCP MX" in line
    line = flow_synth._acc_line(mu.params({"width": 128, "fmt": "fp8_e4m3", "stages": "2"}))
    assert "2 column stages (the recommended unit has 3)" in line


def test_bad_clock_is_refused_before_any_job(capsys):
    assert qor.main(["--clock-ps", "-5", "--no-bf16", "--widths", "32", "--no-progress"]) == 2
    assert "CLOCK_PS must be a positive number" in capsys.readouterr().err


def test_synth_cache_key_follows_the_generator_not_the_report(tmp_path):
    for rel in ("hw/mu/a.py", "flows/synth/yosys.py", "flows/metric_keys.py", "flows/report/qor.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    j = sweep.Job("mu-w32", synth_jobs.SYNTH_FUNC, {"design": "mu"},
                  inputs=("hw/mu", "flows/synth", "flows/metric_keys.py"))
    k0 = sweep.job_key(j, tmp_path)
    (tmp_path / "flows/report/qor.py").write_text("x = 2\n")
    assert sweep.job_key(j, tmp_path) == k0
    (tmp_path / "hw/mu/a.py").write_text("x = 2\n")
    k1 = sweep.job_key(j, tmp_path)
    assert k1 != k0
    (tmp_path / "flows/synth/yosys.py").write_text("x = 2\n")
    k2 = sweep.job_key(j, tmp_path)
    assert k2 != k1
    (tmp_path / "flows/metric_keys.py").write_text("x = 2\n")
    assert sweep.job_key(j, tmp_path) != k2


def test_synth_job_returns_metrics_and_report_files(monkeypatch):
    out = REPO / "build" / "test_sweep_qor" / "mu-w8-test"
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text('{"a": 1}')
    (out / "timing.txt").write_text("path")
    seen = {}

    def fake(design, params, *, liberty=None, clock_ps=None, booth=False, reports_dir=None):
        seen.update(design=design, params=params, liberty=liberty, clock_ps=clock_ps, booth=booth,
                    reports_dir=reports_dir)
        return SimpleNamespace(metrics={"a": 1}, outdir=out)

    monkeypatch.setattr(flow_synth, "run", fake)
    r = synth_jobs.synth_job("mu", {"width": 8}, liberty="x.lib", clock_ps=1000.0)
    assert seen == {"design": "mu", "params": {"width": 8}, "liberty": "x.lib", "clock_ps": 1000.0,
                    "booth": False, "reports_dir": REPO / "build" / "reports" / "qor"}
    synth_jobs.synth_job("mu", {"width": 8}, publish=True)
    assert seen["reports_dir"] == REPO / "reports" / "qor"
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
