"""Synthesis-only map of every configuration of the published BF16 search space (NOT verified).

Writes ``reports/explore/bf16_mul-synthmap.md``: area per MAC, delay and area x delay per MAC of
every configuration of ``bf16_mul-space.toml`` (:meth:`flows.explore.space.Space.configs`),
synthesized by the same cached jobs as the search's trials. It tells how far
the search's verified front is from the best point of the space; it is context, not a result: no
configuration here counts unless the search verified it.

Run: ``python -m flows.explore.synthmap``.
"""

import datetime

from ..paths import REPO
from ..sweep.runner import run
from ..synth.metrics import git_revision, tool_versions
from . import objectives as obj
from .front import hypervolume_curve, pareto_front
from .jobs import synth_job_for
from .space import load_space

EXPLORE = REPO / "reports" / "explore"
OUT = EXPLORE / "bf16_mul-synthmap.md"


def main():
    space = load_space("bf16_mul", EXPLORE / "bf16_mul-space.toml")
    cfgs = space.configs()
    base_cfg = space.baseline()
    jobs = [synth_job_for("bf16_mul", p) for p in cfgs]
    outs = {o.job.name: o for o in run(jobs, executor="local", n_jobs=1, retries=1, progress=False)}
    rows = []
    for p, j in zip(cfgs, jobs, strict=True):
        o = outs[j.name]
        m = o.result["metrics"] if o.ok else None
        v = obj.objective_values(["area_per_mac", "delay"], "bf16_mul", p, m) if m else None
        rows.append((p, v))
    (base_v,) = [v for p, v in rows if p == base_cfg]     # the registry default at the fixed options
    if base_v is None:
        raise SystemExit(f"the baseline {base_cfg} did not synthesize; see its log under build/")
    base = obj.area_delay(base_v)
    ok = [(p, v) for p, v in rows if v]
    pairs = [(v["area_per_mac"], v["delay"]) for _, v in ok]
    front = set(pareto_front(pairs))
    ceiling = hypervolume_curve(pairs, (base_v["area_per_mac"], base_v["delay"]))[-1]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# BF16 multiplier: synthesis-only map of the search space (not verified)", "",
             f"- git revision `{git_revision()}`; date {now}; tools "
             + ", ".join(f"{k} {v}" for k, v in sorted(tool_versions().items())),
             "- command: `python -m flows.explore.synthmap` (the search's own "
             "cached synthesis jobs, Yosys + ABC + our NLDM STA with repair on OSU 0.18 um; no "
             "placement, routing or wire load)",
             f"- {len(ok)} of {len(rows)} configurations synthesized; baseline stages="
             f"{base_cfg['stages']} ({base_cfg['arch']}, {base_cfg['cuts']}): "
             f"{base_v['area_per_mac']:.0f} um^2, {base_v['delay']:.1f} ps",
             "- hypervolume of the whole space's front, normalized as in `bf16_mul.md` (baseline 1, "
             f"reference 2 in each objective): {ceiling:.4f}, the most any search of this space "
             "can reach", "",
             "Context only: a configuration counts when the search has verified it (see "
             "`bf16_mul.md`). Sorted by area x delay per MAC; `front` marks the area/delay Pareto "
             "front of the whole space.", "",
             "| stages | cuts | area per MAC um^2 | delay ps | AxD/MAC vs baseline | front |",
             "|---:|---|---:|---:|---:|---|"]
    order = sorted(range(len(ok)), key=lambda i: obj.area_delay(ok[i][1]))
    for i in order:
        p, v = ok[i]
        lines.append(f"| {p['stages']} | {p['cuts']} | {v['area_per_mac']:.0f} | {v['delay']:.1f} | "
                     f"{obj.area_delay(v) / base:.3f} | {'front' if i in front else ''} |")
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()
