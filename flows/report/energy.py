"""The energy section of the cross-width report, read from the published energy runs.

``make power ... PUBLISH=1`` (:mod:`flows.power`) writes ``reports/power/<variant>/energy-<workload>*.json``;
this module only reads those files (reports never run the flow) and puts energy per MAC, power at
fmax and performance per watt next to performance per mm^2 for each width and format measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from .common import NOT_MEASURED
from .common import fmt_value as fv
from .tokens import equal_power, equal_power_lines, recommended_units, width_verdict

__all__ = ["energy_section", "equal_power_section"]


def _runs(power_dir: Path) -> list:
    runs = []
    for f in sorted(power_dir.glob("*/energy-*.json")):
        try:
            runs.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{f}: not a readable energy run ({e}); re-run `make power` for it") from None
    return runs


def _row(r) -> str:
    area_mm2 = r["area_um2"] / 1e6
    rate = r["useful_macs"] / r["cycles"] * r["fmax_mhz"] * 1e6          # useful MAC/s at fmax
    per_w = rate / (r["mw_at_fmax"] * 1e-3) / 1e9
    per_mm2 = rate / area_mm2 / 1e9
    n, of = r["columns_simulated"], r["columns"]
    sample = "all" if n == of else f"{n} of {of}"
    return (f"| {r['width']} | {r['fmt']} | {r['variant']} | {r['workload']} | {sample} | "
            f"{fv(r['pj_per_useful_mac'], 1)} | {fv(r['pj_per_issued_mac'], 1)} | {fv(r['mw_at_fmax'], 1)} "
            f"({fv(r['fmax_mhz'], 1)}) | {fv(per_w, 2)} | {fv(per_mm2, 3)} | "
            f"{r['provenance'].get('git_revision', '?')[:7]} |")


def energy_section(power_dir: Path, rel) -> list:
    """Report lines: one row per published energy run (none: a line saying how to make them)."""
    L = ["## Energy per MAC (gate-level, real tiles)", ""]
    runs = _runs(power_dir) if power_dir.is_dir() else []
    if not runs:
        return L + ["No energy run is published yet: "
                    "`make power WIDTH=32 FMT=fp8_e4m3 WORKLOAD=all PUBLISH=1`.", ""]
    summary = rel(power_dir / "summary.md")
    L += [f"From `make power` ([{summary}]({summary}) has the method, the block split, the "
          "composition check, energy per token and the comparison with published figures). Zero-delay "
          "simulation of the mapped netlist: glitches, wires and a clock tree are not counted, so these are "
          "floors. Performance per watt and per mm^2 use the run's useful MAC rate at the netlist's fmax "
          "(R = 1 decode runs use each weight tile for one beat: the unit runs at 1/D of its peak rate; "
          "`-r16` variants replay prefill tiles).", "",
          "| D | format | variant | workload | columns simulated | pJ / useful MAC | pJ / issued MAC "
          "| mW at fmax (MHz) | GMAC/s/W | GMAC/s/mm^2 | revision |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    runs.sort(key=lambda r: (r["width"], r["fmt"], r["variant"], r["workload"], r["columns_simulated"]))
    L += [_row(r) for r in runs] + [""]
    return L


def equal_power_section(power_dir: Path, hbm_pj: float = 40.0) -> tuple:
    """``(lines, verdict rows)``: useful GMAC/s per W of the recommended unit (``exact``, clock gates
    on) per width, next to the equal-silicon table, and the verdict on "64 beats 128" per joule."""
    runs = _runs(power_dir) if power_dir.is_dir() else []
    units = recommended_units(runs)
    claim = "At equal power 64 beats 128"
    L = ["### Performance at equal power", ""]
    if not units:
        return (L + [f"{NOT_MEASURED}: no real-tile energy run of the `exact` unit with clock gates "
                     "(`make power ACC=exact GATE=on PUBLISH=1`).", ""],
                [(claim, NOT_MEASURED, "can't tell", "needs energy runs at D = 64 and 128")])
    L += ["Useful GMAC/s per W (useful MACs per nJ) of the unit in one decode step (batch 1, 8) and one "
          "prefill of 512 tokens, geometric mean over the models of `perf/shapes.py`: the contract's "
          "cycles and beats priced by each unit's activity model (pJ per cycle plus pJ per beat, from its "
          "gate-level energy runs on real tiles; `reports/power/summary.md`, \"Tokens per joule\"). "
          "These are the `exact` units with clock gates (`-xacc-cg-`), the recommended configuration; "
          "HBM energy is left out here (the summary gives tokens per joule with it).", ""]
    table = equal_power(units)
    L += equal_power_lines(table) + [""]
    with_hbm = equal_power(units, hbm_pj=hbm_pj)
    rows = []
    for regime in ("decode", "prefill"):
        part = {k: v for k, v in table.items() if k[1] == regime}
        ns = "/".join(str(n) for n in dict.fromkeys(k[2] for k in part))
        label = f"{claim} ({regime} {ns}, acc = exact, clock gates on)"
        v = width_verdict(part, 64, 128)
        if v is None:
            rows.append((label, NOT_MEASURED, "can't tell",
                         "needs energy runs of one format at D = 64 and 128"))
            continue
        vh = width_verdict({k: v for k, v in with_hbm.items() if k[1] == regime}, 64, 128)
        txt = (f"D=64 ahead in {v['won']} of {v['cases']} model x {regime} x format cases; geometric mean "
               f"64/128 = {v['gmean']:.2f}, range {v['lo']:.2f}-{v['hi']:.2f}; with HBM at {hbm_pj:g} pJ/B "
               f"ahead in {vh['won']} of {vh['cases']}, geometric mean {vh['gmean']:.2f}")
        ok = v["won"] == v["cases"]
        rows.append((label, txt, "agree" if ok else "disagree",
                     "every case favours 64 (unit alone)" if ok else
                     f"{v['cases'] - v['won']} cases favour 128 (unit alone)"))
    return L, rows
