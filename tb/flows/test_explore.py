"""The design-space search (``python -m flows explore``): space, objectives, front, hypervolume, and
the loop itself: resume, random search, Ray, and a broken candidate that never reaches the front.
The Ray test and the broken-candidate test (the real regression: a Verilator build and a search,
about two minutes) are in the full set (the sweep's own Ray test is quick).

The loop tests run on the BF16 multiplier (synthesis takes seconds) with the ``fake`` gate of
:mod:`tb.flows.explore_verify` (a verdict without simulation); the gate test runs the real
bit-exact regression (smoke effort) on a deliberately broken behavioral multiplier.
"""

import json
import math
import subprocess
import sys
from fractions import Fraction

import optuna
import pytest

from flows.explore import front as fr
from flows.explore import objectives as obj
from flows.explore.cli import main as explore
from flows.explore.space import SpaceError, load_space
from flows.explore.study import counted_trials

from . import needs_osu

quick = pytest.mark.quick
S = optuna.trial.TrialState


# ---------------------------------------------------------------- space, objectives, front (no tools)

@quick
def test_default_space_reads_the_registry():
    mu = load_space("mu")
    dims = {d.name: d for d in mu.dims}
    assert mu.fixed == {"width": 32, "fmt": "fp8_e4m3", "guard_bits": 16}
    assert set(dims) == {"rows", "stages", "tree", "acc", "loop", "gate", "isolate"}
    assert set(dims["gate"].choices({})) == {True, False}   # clock gates: a dimension of the search
    assert set(dims["isolate"].choices({})) == {True, False}   # and operand isolation
    assert dims["loop"].parents == ("acc",)       # loop = 2 exists in the fp32 mode only
    assert dims["loop"].choices({"acc": "fp32"}) == (1, 2) and dims["loop"].choices({"acc": "exact"}) == (1,)
    assert dims["acc"].values == ("fp32", "exact") and dims["tree"].values == ("dadda", "words")
    assert (dims["stages"].lo, dims["stages"].hi) == (0, 6)
    assert mu.baseline() == {"width": 32, "fmt": "fp8_e4m3", "rows": 1, "stages": 2, "tree": "dadda",
                             "acc": "exact", "guard_bits": 16, "loop": 1, "gate": False,
                             "isolate": False}
    bf = load_space("bf16_mul")
    assert [d.name for d in bf.dims] == ["arch", "stages", "cuts"]
    assert bf.dims[2].parents == ("arch", "stages")
    # placements of s registers: a set of distinct positions (6 for booth4 besides out, 2 for
    # behavioral: in, raw) with out for the rest, plus "auto"; s = 0: "auto" only
    def n(pos, s):
        return 1 + sum(math.comb(pos, k) for k in range(s + 1)) if s else 1
    assert bf.size() == sum(n(6, s) + n(2, s) for s in range(5)) == 153


@quick
def test_conditional_placement_is_valid_for_the_chosen_stages():
    from hw.fp.bf16_mul import Bf16Multiplier, placements

    space = load_space("bf16_mul")
    st = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3), directions=["minimize"] * 2)
    seen = set()
    for _ in range(40):
        t = st.ask()
        cfg = space.suggest(t)
        assert cfg["cuts"] in placements(cfg["arch"], cfg["stages"])
        key = f"cuts[arch={cfg['arch']},stages={cfg['stages']}]"
        assert t.params[key] == cfg["cuts"]
        Bf16Multiplier(**cfg)._MustUse__silence = True   # builds: the placement fits the stages
        seen.add(cfg["cuts"] != "auto")
        st.tell(t, [1.0, 1.0])
    assert seen == {True, False}
    assert space.dims[2].choices({"arch": "behavioral", "stages": 1}) == ("auto", "out", "in", "raw")


@quick
def test_conditional_choices_fall_back_to_the_first_valid_value(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[choices]\nloop = [2]\nacc = ["fp32", "exact"]\n')
    (loop,) = [d for d in load_space("mu", f).dims if d.name == "loop"]
    assert loop.choices({"acc": "fp32"}) == (2,)
    assert loop.choices({"acc": "exact"}) == (1,)    # loop = 2 does not exist there: the default
    f.write_text('[choices]\nstages = [1]\ncuts = ["pp"]\n')
    (cuts,) = [d for d in load_space("bf16_mul", f).dims if d.name == "cuts"]
    assert cuts.choices({"arch": "booth4", "stages": 1}) == ("pp",)
    assert cuts.choices({"arch": "behavioral", "stages": 1}) == ("auto",)


@quick
def test_space_file_narrows_and_rejects_mistakes(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('fixed = {stages = 2}\n[choices]\nsubnormals = ["on", "off"]\n'
                 '[constraints]\nmax_area_um2 = 30000\n')
    s = load_space("bf16_mul", f)
    assert s.fixed == {"stages": 2}
    assert {d.name: d.values for d in s.dims} == {"arch": ("behavioral", "booth4"),
                                                  "subnormals": (True, False), "cuts": ()}
    assert s.constraints == {"max_area_um2": 30000}
    for text, match in [('[choices]\nwidth = [8]\n', "no option 'width'"),
                        ('[choices]\nstages = ["x"]\n', "stages"),
                        ('[constraints]\nmax_power = 3\n', "unknown constraint"),
                        ('fixed = {arch = "booth4", stages = 0}\n', "no dimension left"),
                        ('[choices]\ncuts = ["pp+"]\n', "unknown position"),
                        ('bogus = 1\n', "unknown keys")]:
        f.write_text(text)
        with pytest.raises(SpaceError, match=match):
            load_space("bf16_mul", f)


@quick
def test_objectives_from_metrics_by_hand():
    m = {"synth__design__instance__area__stdcell": 2048000.0,
         "synth__timing__critical_path__delay_ps": 5000.0}
    v = obj.objective_values(["area_per_mac", "delay"], "mu", {"width": 32}, m)
    assert v == {"area_um2": 2048000.0, "area_per_mac": 2000.0, "delay": 5000.0}  # 2048000 / 32^2
    assert obj.area_delay(v) == 2000.0 * 5.0
    with pytest.raises(obj.ObjectiveError, match="drives mu only, not bf16_mul"):
        obj.check_objectives(["area_per_mac", "delay", "energy_per_mac"], "bf16_mul")
    names = obj.check_objectives(["area_per_mac", "delay", "energy_per_mac"], "mu")
    v = obj.objective_values(names, "mu", {"width": 32}, m, {"pj_per_useful_mac": 1.5})
    assert v["energy_per_mac"] == 1.5
    with pytest.raises(obj.ObjectiveError, match="unknown objective"):
        obj.check_objectives(["area", "delay"])


@quick
def test_front_and_hypervolume_by_hand():
    pts = [(1, 3), (2, 2), (3, 1), (2, 3), (3, 3), (1, 3)]
    assert fr.pareto_front(pts) == [0, 1, 2]
    # ref (4, 4): the staircase under (1,3), (2,2), (3,1) covers 3*1 + 2*1 + 1*1 = 6
    assert fr.hypervolume_2d([(1, 3), (2, 2), (3, 1)], ref=(4, 4)) == 6
    assert fr.hypervolume_2d([(5, 1)], ref=(4, 4)) == 0
    base = (10.0, 100.0)   # normalized: (0.5, 0.5) -> (2-0.5)^2; then (1.5, 0.25) adds 0.5 * 0.25
    curve = fr.hypervolume_curve([None, (5.0, 50.0), None, (15.0, 25.0)], base)
    want = [0, Fraction(9, 4), Fraction(9, 4), Fraction(9, 4) + Fraction(1, 8)]
    assert all(math.isclose(c, float(w)) for c, w in zip(curve, want, strict=True))


# ---------------------------------------------------------------- the loop (fake gate, real synthesis)

FAKE = "tb.flows.explore_verify fake"
BROKEN = "tb.flows.explore_verify broken"


def _space_file(tmp_path, stages=(0, 1, 2)):
    f = tmp_path / "space.json"   # the default placement only: the loop tests' space stays small
    f.write_text(json.dumps({"fixed": {"cuts": "auto"}, "choices": {"stages": list(stages)}}))
    return str(f)


def _args(tmp_path, *extra, trials=5, module=FAKE):
    return ["--design", "bf16_mul", "--trials", str(trials), "--space", _space_file(tmp_path),
            "--storage", f"sqlite:///{tmp_path / 'db.sqlite'}", "--sweep-dir", str(tmp_path / "sweep"),
            "--report-dir", str(tmp_path / "rep"), "--verify-module", module, "--no-progress",
            "--study", "t", *extra]


def _load(tmp_path, name):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path / 'db.sqlite'}")


@quick
@needs_osu
def test_failed_verdicts_are_failed_trials_and_random_is_the_baseline(tmp_path):
    assert explore(_args(tmp_path, "--sampler", "nsga2")) == 0
    for name in ("t-nsga2-seed1", "t-random-seed1"):
        trials = counted_trials(_load(tmp_path, name))
        assert len(trials) == 5
        for t in trials:   # the fake gate fails stages=1: no values, a reason, never on the front
            if t.params["stages"] == 1:
                assert t.state == S.FAIL and "fake mismatch" in t.user_attrs["fail_reason"]
            else:
                assert t.state == S.COMPLETE and t.user_attrs["verification"]["passed"]
                assert t.values[0] == t.user_attrs["values"]["area_per_mac"] > 0
    # random search at the same budget draws what an independent RandomSampler with the seed draws
    ref = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1), directions=["minimize"] * 2)
    space = load_space("bf16_mul", _space_file(tmp_path))
    want = [space.suggest(ref.ask()) for _ in range(5)]
    got = [t.user_attrs["config"] for t in counted_trials(_load(tmp_path, "t-random-seed1"))]
    assert [(w["arch"], w["stages"]) for w in want] == [(g["arch"], g["stages"]) for g in got]
    text = (tmp_path / "rep" / "t.md").read_text()
    assert "| t-random-seed1 | random |" in text and "| t-nsga2-seed1 | nsga2 |" in text
    front = text.split("## Pareto front")[1].split("##")[0]
    assert "stages=1" not in front and "stages=0" in front
    assert (tmp_path / "rep" / "t-pareto.png").stat().st_size > 0


@quick
@needs_osu
def test_resume_after_an_interruption(tmp_path):
    assert explore(_args(tmp_path, "--no-random", trials=3)) == 0
    st = _load(tmp_path, "t-tpe-seed1")
    assert len(counted_trials(st)) == 3
    # a run killed while verifying leaves a RUNNING trial with its configuration behind
    st.enqueue_trial({"arch": "behavioral", "stages": 2})
    killed = st.ask()
    load_space("bf16_mul", _space_file(tmp_path)).suggest(killed)
    assert killed.params == {"arch": "behavioral", "stages": 2}
    assert explore(_args(tmp_path, "--no-random", trials=5)) == 0
    st = _load(tmp_path, "t-tpe-seed1")
    trials = st.get_trials()
    assert trials[killed.number].state == S.FAIL
    assert st.user_attrs["interrupted_trials"] == [killed.number]
    counted = counted_trials(st)
    assert len(counted) == 5 and killed.number not in [t.number for t in counted]
    assert counted[3].params == {"arch": "behavioral", "stages": 2}   # asked again first
    # the same study with another space is refused, not silently mixed
    other = _args(tmp_path, "--no-random", trials=5)
    other[other.index("--space") + 1] = _space_file(tmp_path, stages=(0, 3))
    assert explore(other) == 2


@pytest.mark.full
@needs_osu
def test_ray_executor_on_a_local_instance(tmp_path):
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        assert explore(_args(tmp_path, "--no-random", "--executor", "ray", trials=3)) == 0
        assert ray.is_initialized()   # a cluster the search did not start is left running
    finally:
        ray.shutdown()
    assert len(counted_trials(_load(tmp_path, "t-tpe-seed1"))) == 3


# ---------------------------------------------------------------- the real gate on a broken candidate

@pytest.mark.full
@needs_osu
def test_broken_candidate_never_reaches_the_front(tmp_path):
    """The behavioral multiplier's Verilog is broken (one product bit flipped); the bit-exact
    regression rejects it, so its trials fail with the mismatch and only booth4 is on the front."""
    r = subprocess.run([sys.executable, "-m", "tb.flows.explore_verify", "broken", "--design", "bf16_mul",
                        "--set", "arch=behavioral", "--effort", "smoke"], capture_output=True, text=True,
                       timeout=3600)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("VERIFY ")]
    assert r.returncode == 1 and len(lines) == 1, r.stderr[-3000:]   # a verdict, not a crash (2)
    rec = json.loads(lines[0][len("VERIFY "):])
    assert rec["passed"] is False and rec["reason"]
    args = _args(tmp_path, "--no-random", "--sampler", "random", "--effort", "smoke", trials=4, module=BROKEN)
    args[args.index("--space") + 1] = _space_file(tmp_path, stages=(0,))
    assert explore(args) == 0
    trials = counted_trials(_load(tmp_path, "t-random-seed1"))
    assert {t.params["arch"] for t in trials} == {"behavioral", "booth4"}
    for t in trials:
        if t.params["arch"] == "behavioral":
            assert t.state == S.FAIL and t.user_attrs["fail_reason"].startswith("verification failed")
            assert t.user_attrs["verification"]["passed"] is False
        else:
            assert t.state == S.COMPLETE
    front = (tmp_path / "rep" / "t.md").read_text().split("## Pareto front")[1].split("##")[0]
    assert "booth4" in front and "behavioral" not in front


# ---------------------------------------------------------------- energy per MAC (the power flow)

@pytest.mark.full
@needs_osu
def test_energy_objective_on_a_d8_unit(tmp_path):
    """energy_per_mac on D = 8 units: each verified trial carries the energy run's record, whose
    pJ per MAC is its total energy over the useful MACs of the workload, and the report shows it."""
    f = tmp_path / "space.toml"
    f.write_text('fixed = {width = 8}\n[choices]\nstages = [2, 3]\nrows = [1]\ntree = ["dadda"]\n'
                 'acc = ["fp32"]\n')
    args = ["--design", "mu", "--objectives", "area_per_mac,delay,energy_per_mac", "--trials", "1",
            "--space", str(f), "--storage", f"sqlite:///{tmp_path / 'db.sqlite'}",
            "--sweep-dir", str(tmp_path / "sweep"), "--report-dir", str(tmp_path / "rep"),
            "--verify-module", FAKE, "--no-progress", "--study", "e", "--no-random"]
    assert explore(args) == 0
    (t,) = counted_trials(_load(tmp_path, "e-tpe-seed1"))
    assert t.state == S.COMPLETE
    e = t.user_attrs["energy"]
    assert e["columns_simulated"] == 2 and e["workload"] == "random" and e["results_checked"] > 0
    # the objective is the energy over the useful MACs (at most the issued ones)
    assert t.values[2] == e["pj_per_useful_mac"] >= e["pj_per_issued_mac"] > 0
    text = (tmp_path / "rep" / "e.md").read_text()
    assert "energy pJ/MAC" in text and f"{t.values[2]:.2f}" in text


@quick
def test_gate_builds_the_configuration_it_is_asked_for(monkeypatch):
    """Every searched option reaches the simulated build: a ``loop = 2`` candidate is simulated as the
    ``loop = 2`` unit (its own variant, latency stages + 3, ``MU_LOOP`` for the testbench's model)."""
    from hw.designs import get_design
    from tb import sim, verify

    seen = {}
    monkeypatch.setattr(sim, "run", lambda variant, verilog, top, module, env, **kw:
                        seen.update(variant=variant, env=env, verilog=verilog))
    given = {"width": "8", "stages": "1", "loop": "2", "tree": "words"}
    res = verify.verify("mu", given, effort="smoke")
    want = get_design("mu").variant(get_design("mu").params(given))
    assert res["passed"] and seen["variant"] == want and want.endswith("-l2")
    assert seen["env"]["MU_LOOP"] == 2 and res["latency"] == seen["env"]["MU_LATENCY"] == 1 + 1 + 2
    assert "_l2" in seen["verilog"]


@quick
def test_energy_job_key_covers_the_liberty_file(tmp_path, monkeypatch):
    from flows.explore.jobs import energy_job_for

    lib = tmp_path / "cells.lib"
    lib.write_text("library (x) { }\n")
    settings = {"workload": "random", "runs": 1, "sample": 1}
    job = energy_job_for({"width": 8, "fmt": "fp8_e4m3"}, "e", settings, liberty=str(lib))
    assert str(lib.resolve()) in job.inputs and job.kwargs["liberty"] == str(lib)
    monkeypatch.setenv("LIBERTY", str(lib))              # the flow's fallback is part of the key too
    job = energy_job_for({"width": 8, "fmt": "fp8_e4m3"}, "e", settings)
    assert str(lib.resolve()) in job.inputs and job.kwargs["liberty"] == str(lib)
    monkeypatch.delenv("LIBERTY")
    assert not any(p.endswith(".lib") for p in energy_job_for({"width": 8}, "e", settings).inputs)
