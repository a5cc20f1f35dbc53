"""The accumulate modes side by side: per point the stages, area, critical path, levels, fmax and where
the path is, the ``exact`` mode's goals, and fmax against width per mode.

Reads only measured points (the grids of :func:`flows.report.common.mu_grid`, one per mode) and the
goals of :mod:`flows.qor_plan`; a missing point reads ``not measured yet``.
"""

import re

from ..metric_keys import AREA, CP_LV, CP_PS, FMAX
from ..qor_plan import EXACT_AREA_GOAL, EXACT_GOAL_PS, QOR_ACC_MODES, qor_stages
from .common import NOT_MEASURED, WIDTHS, Point, measured_formats, sig
from .common import fmt_value as fv

__all__ = ["modes_section", "path_location"]

_WORST = re.compile(r"^worst path: (\S+)\s+(.*)$", re.MULTILINE)
_BLOCK = re.compile(r"\((mu_[a-z0-9_]+)\)")


def path_location(p: Point) -> str:
    """Where the point's critical path runs: its kind and the blocks it enters or leaves (``top``
    when it stays in the top level), from the first ``worst path`` line of ``timing.txt``."""
    f = p.path.parent / "timing.txt"
    m = _WORST.search(f.read_text(errors="replace")) if f.exists() else None
    if not m:
        return NOT_MEASURED
    blocks = list(dict.fromkeys(_BLOCK.findall(m.group(2))))
    return f"{m.group(1)} " + (" -> ".join(blocks) if blocks else "top")


def _goal_cell(fmt, p, base) -> str:
    goal = EXACT_GOAL_PS.get(fmt)
    ps, area = p.get(CP_PS), p.get(AREA)
    if goal is None or ps is None:
        return "no goal" if goal is None else NOT_MEASURED
    ok_t = ps <= goal
    ratio = area / base.get(AREA) if base is not None and base.get(AREA) and area else None
    ok_a = ratio is not None and ratio <= EXACT_AREA_GOAL
    return (f"{'met' if ok_t else 'missed'} ({goal:,} ps); area "
            f"{'met' if ok_a else 'missed' if ratio is not None else NOT_MEASURED}")


def modes_section(grids: dict) -> list[str]:
    """Markdown lines: the per-point table of every mode and fmax against width per mode."""
    base = grids.get(QOR_ACC_MODES[0], {})
    fmts = [f for f in measured_formats({k: v for g in grids.values() for k, v in g.items()})]
    L = ["## Accumulate modes: stages, clock and area", "",
         "`fp32` rounds the running sum to FP32 on every beat (its single-cycle accumulate loop is "
         "its clock); `exact` keeps the K-long sum exact in fixed point and rounds once "
         "(docs/numerics.md). Stages are the column pipeline stages each point is built with "
         "(`flows/qor_plan.py`); the `exact` goals are a critical path per format and at most "
         f"{EXACT_AREA_GOAL}x the `fp32` unit's area at the same point. Where: the path's kind and "
         "the blocks it leaves and enters (`top`: the top level's own logic).", "",
         "| D | format | mode | stages | area (um^2) | area / fp32 | critical path (ps) | levels | "
         "fmax (MHz) | where | exact goal |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for fmt in fmts:
        for d in WIDTHS:
            for acc in QOR_ACC_MODES:
                p, b = grids.get(acc, {}).get((d, fmt)), base.get((d, fmt))
                st = qor_stages(acc, fmt, d)
                if p is None:
                    L.append(f"| {d} | {fmt} | {acc} | {st} | " + " | ".join([NOT_MEASURED] * 7) + " |")
                    continue
                a, ba = p.get(AREA), (b.get(AREA) if b else None)
                ratio = f"{a / ba:.3f}" if a and ba else NOT_MEASURED
                goal = _goal_cell(fmt, p, b) if acc == "exact" else ""
                L.append(f"| {d} | {fmt} | {acc} | {st} | {fv(a)} | {ratio} | {fv(p.get(CP_PS))} | "
                         f"{fv(p.get(CP_LV))} | {sig(p.get(FMAX))} | {path_location(p)} | {goal} |")
    L += ["", "### fmax against width per mode", "",
          "| mode | format | " + " | ".join(f"D = {d} (MHz)" for d in WIDTHS) + " |",
          "|---|---|" + "---|" * len(WIDTHS)]
    for acc in QOR_ACC_MODES:
        for fmt in fmts:
            g = grids.get(acc, {})
            L.append(f"| {acc} | {fmt} | " + " | ".join(
                sig(g[(d, fmt)].get(FMAX)) if (d, fmt) in g else NOT_MEASURED for d in WIDTHS) + " |")
    return L + [""]
