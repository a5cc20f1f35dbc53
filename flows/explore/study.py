"""The search loop: an Optuna study in a database, asking for candidates and telling their metrics.

Each trial runs the gate, then synthesis (:mod:`.jobs`), as cached sweep jobs on the local pool or
Ray, ``jobs`` trials at a time (ask/tell). A trial whose candidate fails verification, or whose
gate or synthesis could not run, is told ``FAIL`` with the reason in its ``fail_reason`` attribute,
so it has no objective values and can never be on the front. A passing trial carries its full
configuration, the verification evidence and the metrics as user attributes.

The study lives in an RDB storage (SQLite under ``build/explore/`` by default): an interrupted
search resumes where it stopped. Trials left ``RUNNING`` by a killed process are closed as failed
(``interrupted``), not counted against the budget, and their configurations are asked again first.
"""

import hashlib
import json
import sys

import optuna

from ..paths import BUILD
from ..sweep.runner import run as run_jobs
from . import objectives as obj
from .jobs import energy_job_for, synth_job_for, verify_job_for
from .space import CONSTRAINTS

__all__ = ["DEFAULT_STORAGE", "SAMPLERS", "open_study", "run_study", "evaluate", "counted_trials",
           "StudyError", "progress_bar"]

#: Where studies live unless ``--storage`` says otherwise.
DEFAULT_STORAGE = f"sqlite:///{BUILD / 'explore' / 'studies.db'}"
SAMPLERS = ("tpe", "nsga2", "random")
#: Random candidates before TPE models the results, and the NSGA-II population (both small: the
#: budgets are tens of trials).
STARTUP = 8


class StudyError(ValueError):
    """A study cannot be created or resumed as asked; the message says why and what to do."""


def make_sampler(kind: str, seed: int):
    """An Optuna sampler: ``tpe`` (multivariate TPE), ``nsga2`` or ``random``, seeded."""
    if kind == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP, multivariate=True)
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=STARTUP)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise StudyError(f"unknown sampler {kind!r}; choose one of: {', '.join(SAMPLERS)}")


def _storage(url: str | None):
    url = url or DEFAULT_STORAGE
    if url == DEFAULT_STORAGE:
        (BUILD / "explore").mkdir(parents=True, exist_ok=True)
    return optuna.storages.RDBStorage(url)


def open_study(name: str, storage: str | None, space, names, sampler: str, seed: int, settings: dict):
    """Create the study, or load it to resume; a stored study must describe the same search."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=_storage(storage), load_if_exists=True,
                                directions=["minimize"] * len(names), sampler=make_sampler(sampler, seed))
    want = {"design": space.design, "objectives": list(names), "space": space.describe(),
            "sampler": sampler, "seed": seed, **settings}
    have = {k: study.user_attrs[k] for k in want if k in study.user_attrs}
    if have and have != want:
        diff = sorted(k for k in want if have.get(k) != want[k])
        raise StudyError(f"study {name!r} exists with other settings ({', '.join(diff)}); "
                         "give another --study name, or the same settings to resume it")
    for k, v in want.items():
        study.set_user_attr(k, v)
    return study


def counted_trials(study) -> list:
    """Finished trials that count against the budget (not those closed as interrupted)."""
    S = optuna.trial.TrialState
    gone = set(study.user_attrs.get("interrupted_trials", []))
    return [t for t in study.get_trials(deepcopy=False) if t.state in (S.COMPLETE, S.FAIL)
            and t.number not in gone]


def _close_interrupted(study) -> int:
    """Fail the trials a killed run left ``RUNNING``, list them in the study's
    ``interrupted_trials`` attribute and ask their configurations again first."""
    running = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))
    if not running:
        return 0
    gone = list(study.user_attrs.get("interrupted_trials", []))
    for t in running:
        study.enqueue_trial(t.params, skip_if_exists=False)
        study.tell(t.number, state=optuna.trial.TrialState.FAIL)
        gone.append(t.number)
    study.set_user_attr("interrupted_trials", gone)
    return len(running)


def _config_name(space, params: dict) -> str:
    from hw.designs import get_design

    h = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{get_design(space.design).variant(params)}-{h}"


def evaluate(space, names, configs: list, run_opts: dict, gate: dict, energy: dict | None = None) -> list:
    """Verify, then synthesize (and with ``energy_per_mac`` among ``names``, run the energy flow on)
    each configuration; return one record per configuration.

    A record has ``params``, ``verification`` (the gate's record, or None if the gate did not run),
    and either ``values`` (objectives and ``area_um2``) and ``metrics`` (and ``energy``, the energy
    run's record), or ``fail_reason``. ``energy``: the energy run's settings (default
    :data:`flows.explore.objectives.ENERGY`).
    """
    run_opts = dict(run_opts)
    liberty = run_opts.pop("liberty", None)
    names_cfg = [_config_name(space, p) for p in configs]
    vjobs = {n: verify_job_for(space.design, p, n, gate["effort"], gate["seed"], gate["module"])
             for n, p in zip(names_cfg, configs, strict=True)}
    vout = {o.job.name: o for o in run_jobs(list(vjobs.values()), **run_opts)}
    recs = []
    for n, p in zip(names_cfg, configs, strict=True):
        o = vout[vjobs[n].name]
        rec = {"params": p, "config": n, "verification": o.result if o.ok else None}
        if not o.ok:
            rec["fail_reason"] = f"verification gate did not run: {o.error}"
        elif not o.result["passed"]:
            rec["fail_reason"] = f"verification failed: {o.result['reason']}"
        recs.append(rec)
    synth = _run_stage(recs, lambda r: synth_job_for(space.design, r["params"], liberty), run_opts,
                       "synthesis")
    if "energy_per_mac" in names:
        settings = dict(energy or obj.ENERGY)

        def energy_job(r):
            return energy_job_for(r["params"], r["config"], settings, liberty)

        for rec, res in _run_stage(recs, energy_job, run_opts, "energy run"):
            rec["energy"] = res
    for rec, res in synth:
        if "fail_reason" in rec:
            continue
        m = res["metrics"]
        rec["values"] = obj.objective_values(names, space.design, rec["params"], m, rec.get("energy"))
        rec["metrics"] = {"variant": res["variant"], "outdir": res["outdir"],
                          **{k: m.get(k) for k in ("synth__design__instance__area__stdcell",
                                                   "synth__timing__critical_path__delay_ps",
                                                   "synth__timing__critical_path__kind",
                                                   "synth__design__instance__count__stdcell",
                                                   "synth__design__instance__area__sequential",
                                                   "flow__git_revision")}}
    return recs


def _run_stage(recs: list, job_for, run_opts: dict, what: str) -> list:
    """Run ``job_for(record)`` (one job per configuration) for the records that have not failed yet;
    give those whose job failed a ``fail_reason`` naming ``what``, and return ``(record, result)``
    for the others."""
    jobs = {}
    for rec in recs:
        if "fail_reason" not in rec:
            jobs.setdefault(rec["config"], job_for(rec))
    out = {o.job.name: o for o in run_jobs(list(jobs.values()), **run_opts)} if jobs else {}
    done = []
    for rec in recs:
        if "fail_reason" in rec:
            continue
        o = out[jobs[rec["config"]].name]
        if o.ok:
            done.append((rec, o.result))
        else:
            rec["fail_reason"] = f"{what} failed: {o.error}"
    return done


def _tell(study, trial, rec, names, space) -> None:
    trial.set_user_attr("config", {k: _plain(v) for k, v in rec["params"].items()})
    if rec["verification"] is not None:
        ev = {k: rec["verification"].get(k) for k in ("passed", "reason", "tests", "effort", "seed",
                                                       "wall_s", "command", "latency")}
        trial.set_user_attr("verification", ev)
    if "fail_reason" in rec:
        trial.set_user_attr("fail_reason", rec["fail_reason"])
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
        return
    vals = rec["values"]
    cons = []
    for key, limit in sorted(space.constraints.items()):   # feasible when every value is <= 0
        value = vals[CONSTRAINTS[key]] - limit
        trial.set_constraint(key, value)    # the samplers steer away from infeasible regions
        cons.append(value)
    trial.set_user_attr("constraint", cons or [0.0])
    trial.set_user_attr("values", vals)
    trial.set_user_attr("metrics", rec["metrics"])
    if "energy" in rec:
        trial.set_user_attr("energy", rec["energy"])
    study.tell(trial, [vals[n] for n in names])


def _plain(v):
    return v if isinstance(v, (bool, int, float, str)) or v is None else str(v)


def progress_bar(total: int, done: int, enabled: bool = True):
    """A tqdm bar over trials (None when disabled or tqdm is missing)."""
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=done, unit="trial", desc="explore", dynamic_ncols=True,
                file=sys.stderr)


def run_study(study, space, names, trials: int, run_opts: dict, gate: dict, jobs: int = 1,
              baseline: dict | None = None, bar=None, energy: dict | None = None) -> dict:
    """Run the study until ``trials`` trials count (see :func:`counted_trials`).

    Parameters
    ----------
    run_opts : dict
        Options of :func:`flows.sweep.runner.run` (``executor``, ``n_jobs``, ``retries``, ...), plus
        ``liberty``.
    gate : dict
        ``effort``, ``seed`` and ``module`` of the verification command.
    jobs : int
        Trials asked at a time (run in parallel on the executor).
    baseline : dict, optional
        The baseline's objective values, to show the best ratio of area x delay per MAC so far.
    bar : tqdm, optional
        Progress bar to advance per trial (its postfix shows this study's best so far).
    energy : dict, optional
        Settings of the energy runs (see :func:`evaluate`).

    Returns
    -------
    dict
        ``ran`` (trials run now), ``interrupted`` (trials closed as interrupted), ``counted``.
    """
    interrupted = _close_interrupted(study)
    done = len(counted_trials(study))
    ran = 0
    while done < trials:
        batch = [study.ask() for _ in range(min(jobs, trials - done))]
        configs = [space.suggest(t) for t in batch]
        for t, rec in zip(batch, evaluate(space, names, configs, run_opts, gate, energy), strict=True):
            _tell(study, t, rec, names, space)
            ran += 1
            done += 1
            if bar is not None:
                bar.update()
                bar.set_postfix_str(f"{study.study_name}: {_best_text(study, baseline)}")
            if "fail_reason" in rec:
                msg = f"explore: {study.study_name} trial {t.number} {rec['config']}: {rec['fail_reason']}"
                (bar.write if bar is not None else print)(msg)
    return {"ran": ran, "interrupted": interrupted, "counted": done}


def _best_text(study, baseline) -> str:
    best = None
    for t in counted_trials(study):
        v = t.user_attrs.get("values")
        if v and "area_per_mac" in v and "delay" in v and all(c <= 0 for c in t.user_attrs["constraint"]):
            ad = obj.area_delay(v)
            best = ad if best is None else min(best, ad)
    if best is None:
        return "best: none verified yet"
    text = f"best AxD/MAC {best:.4g}"
    if baseline:
        text += f" ({best / obj.area_delay(baseline):.3f} x baseline)"
    return text

