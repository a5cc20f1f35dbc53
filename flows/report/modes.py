"""The accumulate modes side by side: per point the stages, area, critical path, levels, fmax and where
the path is, the ``exact`` mode's goals, and fmax against width per mode.

Reads only measured points (the grids of :func:`flows.report.common.mu_grid`, one per mode) and the
goals of :mod:`flows.qor_plan`; a missing point reads ``not measured yet``.
"""

import re

from hw.formats import BLOCK_FORMATS

from ..metric_keys import AREA, CP_LV, CP_PS, FMAX
from ..qor_plan import EXACT_AREA_GOAL, EXACT_BLOCK_FORMATS, EXACT_GOAL_PS, QOR_ACC_MODES, qor_stages
from .common import NOT_MEASURED, WIDTHS, Point, measured_formats, sig
from .common import fmt_value as fv

__all__ = ["modes_section", "path_location", "int_section", "INT_PAIRS", "block_exact_section"]

#: (float format, integer format) pairs of the integer comparison: the same operand width.
INT_PAIRS = (("fp8_e4m3", "int8"), ("fp4_e2m1", "int4"))

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


def int_section(grids: dict, acc: str = "exact") -> list[str]:
    """Markdown lines: each float format against the integer format of its width (:data:`INT_PAIRS`)
    in mode ``acc``, per D: area per MAC, the float / integer area ratio, critical paths."""
    g = grids.get(acc, {})
    pairs = [(fl, it) for fl, it in INT_PAIRS if any((d, it) in g for d in WIDTHS)]
    if not pairs:  # no integer point measured: the section is left out (the tables name it)
        return []
    L = [f"## Floats against integers of the same width (`{acc}` mode)", "",
         "The unit built on INT8 and INT4 (two's complement, the same lanes, tree and exact "
         "accumulator; the lane is a signed multiplier) beside FP8 E4M3 and FP4 E2M1 at the same D, "
         "mode and flow: one row of D x D MACs per cycle in every format, so area per MAC compares "
         "equal throughput at equal clock. INT8 is what Gemmini, the TPU v1 and NVDLA compute.", "",
         "| D | float | integer | float area / MAC (um^2) | integer area / MAC (um^2) | "
         "float / integer area | float path (ps) | integer path (ps) | float / integer path |",
         "|---|---|---|---|---|---|---|---|---|"]
    for fl, it in pairs:
        for d in WIDTHS:
            pf, pi = g.get((d, fl)), g.get((d, it))
            af = pf.get(AREA) / (d * d) if pf is not None and pf.get(AREA) else None
            ai = pi.get(AREA) / (d * d) if pi is not None and pi.get(AREA) else None
            tf = pf.get(CP_PS) if pf is not None else None
            ti = pi.get(CP_PS) if pi is not None else None
            L.append(f"| {d} | {fl} | {it} | {fv(af, 1)} | {fv(ai, 1)} | "
                     f"{f'{af / ai:.3f}' if af and ai else NOT_MEASURED} | {fv(tf)} | {fv(ti)} | "
                     f"{f'{tf / ti:.3f}' if tf and ti else NOT_MEASURED} |")
    return L + [""]


def block_exact_section(full: dict) -> list[str]:
    """Markdown lines: the block-scaled formats measured in the ``exact`` mode against their element
    format in the ``exact`` mode and themselves in ``fp32``, per D (``full``: every format's grid
    per mode, :func:`flows.report.common.mu_grid`)."""
    ex, fp = full.get("exact", {}), full.get("fp32", {})
    fmts = [f for f in EXACT_BLOCK_FORMATS if any((d, f) in ex for d in WIDTHS)]
    if not fmts:
        return []
    L = ["## Block-scaled formats in the `exact` mode", "",
         "NVFP4: each block term (the block's exact sum times its two scales' significands) is shifted "
         "by its scale exponent into one fixed-point grid and the beat's terms are summed exactly into "
         "the exact accumulator of the plain formats (docs/numerics.md section 7.5). OCP MX: the terms "
         "are summed exactly in a window that slides up with the largest term, rounded once (section "
         "7.7). Neither has a per-beat FP32 add. "
         "Goals: critical path at most 1.10x, area at most 1.30x the plain element format's `exact` "
         "unit at the same D.", "",
         "| D | format | stages | area / MAC (um^2) | element `exact` area / MAC | area ratio | "
         "critical path (ps) | element `exact` path | path ratio | fmax (MHz) | `fp32` fmax (MHz) | "
         "where |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in fmts:
        el = BLOCK_FORMATS[f].element
        for d in WIDTHS:
            p, b, q = ex.get((d, f)), ex.get((d, el)), fp.get((d, f))
            if p is None:
                L.append(f"| {d} | {f} | {qor_stages('exact', f, d)} | " + " | ".join([NOT_MEASURED] * 9)
                         + " |")
                continue
            a = p.get(AREA) / (d * d) if p.get(AREA) else None
            ab = b.get(AREA) / (d * d) if b is not None and b.get(AREA) else None
            t, tb = p.get(CP_PS), (b.get(CP_PS) if b is not None else None)
            L.append(f"| {d} | {f} | {qor_stages('exact', f, d)} | {fv(a, 1)} | {fv(ab, 1)} | "
                     f"{f'{a / ab:.3f}' if a and ab else NOT_MEASURED} | {fv(t)} | {fv(tb)} | "
                     f"{f'{t / tb:.3f}' if t and tb else NOT_MEASURED} | {sig(p.get(FMAX))} | "
                     f"{sig(q.get(FMAX)) if q is not None else NOT_MEASURED} | {path_location(p)} |")
    return L + [""]
