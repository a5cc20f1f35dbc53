"""The energy section of the cross-width report, read from the published energy runs.

``make power ... PUBLISH=1`` (:mod:`flows.power`) writes ``reports/power/<variant>/energy-<workload>*.json``;
this module only reads those files (reports never run the flow) and puts energy per MAC, power at
fmax and performance per watt next to performance per mm^2 for each width and format measured.
"""

from __future__ import annotations

import json
from pathlib import Path

from .common import fmt_value as fv

__all__ = ["energy_section"]


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
