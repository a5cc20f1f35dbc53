"""The block-scaled formats in the cross-width report: their area, timing and area per MAC next to the
plain element formats, the cost of the scaling, and the published relative costs.

Reads only measured points (the ``fp32``-mode grid of :func:`flows.report.common.mu_grid`, which
holds the block-scaled points of :data:`flows.qor_plan.QOR_BLOCK_FORMATS` beside the plain ones);
a missing point reads ``not measured yet``. The published relative costs it compares with: an FP4
block format at about half the area of MXFP8 at equal throughput (arXiv 2510.25602's gate model,
FinFET, FP32 accumulate: NVFP4 0.54x), and MX4 about 4x lower area x memory than an FP8 dot product
(ISCA 2023, shared microexponents).
"""

from hw.formats import BLOCK_FORMATS, get_block_format, get_format

from ..metric_keys import AREA, CP_LV, CP_PS, FMAX
from ..qor_plan import QOR_BLOCK_FORMATS
from .common import CATEGORIES, CONTROL, NOT_MEASURED, WIDTHS, breakdown, sig
from .common import fmt_value as fv

__all__ = ["block_section", "bits_per_element", "OVERHEAD_GOAL"]

REV = "flow__git_revision"
#: Goal for the area of MXFP8 E4M3 over plain E4M3 at D = 64.
OVERHEAD_GOAL = 0.10


def bits_per_element(fmt: str) -> float:
    """Operand memory per element: b, plus the block's 8-bit scale shared by B elements."""
    if fmt in BLOCK_FORMATS:
        bf = get_block_format(fmt)
        return bf.bits + bf.scale_bits / bf.block
    return float(get_format(fmt).bits)


def _ratio(a, b) -> str:
    return f"{a / b:.3f}x" if a is not None and b else NOT_MEASURED


def _pct(a, b) -> str:
    return f"{a / b - 1:+.1%}" if a is not None and b else NOT_MEASURED


def _table(grid) -> list:
    L = ["| D | format | area (um^2) | area/MAC (um^2) | vs element format | critical path (ps) | "
         "vs element format | levels | fmax (MHz) |", "|---|---|---|---|---|---|---|---|---|"]
    for d in WIDTHS:
        for fmt in QOR_BLOCK_FORMATS:
            p, base = grid.get((d, fmt)), grid.get((d, get_block_format(fmt).element))
            a, t = (p.get(AREA), p.get(CP_PS)) if p else (None, None)
            ba, bt = (base.get(AREA), base.get(CP_PS)) if base else (None, None)
            L.append(f"| {d} | {fmt} | {fv(a)} | {fv(a / (d * d) if a else None, 1)} | "
                     f"{_pct(a, ba)} ({get_block_format(fmt).element}) | {fv(t)} | {_pct(t, bt)} | "
                     f"{fv(p.get(CP_LV) if p else None)} | {sig(p.get(FMAX) if p else None)} |")
    mixed = [f"D = {d} {f}" for d in WIDTHS for f in QOR_BLOCK_FORMATS
             if (p := grid.get((d, f))) and (b := grid.get((d, get_block_format(f).element)))
             and p.metrics.get(REV) != b.metrics.get(REV)]
    if mixed:
        L += ["", "Measured at a different revision from their element format's point (the ratios mix "
              "generator versions until `make qor` reruns both): " + ", ".join(mixed) + "."]
    return L + [""]


def _overhead(grid) -> list:
    """MXFP8 E4M3 over plain E4M3 per width, and which blocks the difference sits in."""
    cats = [c for _, c in CATEGORIES] + [CONTROL]
    L = ["### The cost of the scaling: MXFP8 E4M3 over plain E4M3", "",
         f"Goal: at most {OVERHEAD_GOAL:.0%} more area at D = 64. Per block: the area difference (um^2) "
         "and its share of the total difference (the scale buffers count as weight storage; the scale "
         "decode, exponent pipeline and block-sum window are column glue).", "",
         "| D | area overhead | goal | " + " | ".join(cats) + " |", "|---|---|---|" + "---|" * len(cats)]
    drivers = {}
    for d in WIDTHS:
        p, base = grid.get((d, "mxfp8_e4m3")), grid.get((d, "fp8_e4m3"))
        if not (p and base and p.get(AREA) and base.get(AREA)):
            L.append(f"| {d} | {NOT_MEASURED} | | " + " | ".join([""] * len(cats)) + " |")
            continue
        over = p.get(AREA) / base.get(AREA) - 1
        goal = ("met" if over <= OVERHEAD_GOAL else "missed") if d == 64 else "-"
        bp, bb = breakdown(p), breakdown(base)
        if bp is None or bb is None:
            L.append(f"| {d} | {over:+.1%} | {goal} | " + " | ".join([NOT_MEASURED] * len(cats)) + " |")
            continue
        diff = p.get(AREA) - base.get(AREA)
        delta = {c: bp[c] - bb[c] for c in cats}
        drivers[d] = max(delta, key=delta.get)
        L.append(f"| {d} | {over:+.1%} | {goal} | " + " | ".join(
            f"{delta[c]:+,.0f} ({delta[c] / diff:.0%})" for c in cats) + " |")
    L.append("")
    if drivers:
        L += ["Largest share of the overhead: " + ", ".join(f"D = {d}: {c}" for d, c in drivers.items())
              + ".", ""]
    if drivers and set(drivers.values()) <= {"accumulate", "column glue"}:
        L += ["The block-scaled unit's FP32 accumulator adds the window sum of the D/B scaled "
              "block terms (the largest block's sum plus the window's F fraction bits, docs/numerics.md "
              "section 7) where the plain unit adds one exact sum of D products, so its alignment and "
              "normalization are wider; the column glue is logic the plain unit does not have (scale "
              "decode, the scale exponents delayed beside the trees, the window's alignment of the "
              "block terms). A narrower window (smaller F: a contract change) or an accumulator that "
              "keeps the wide sum only for cancellation would cut the first.", ""]
    return L


def _published(grid) -> list:
    L = ["### Against published relative costs", "",
         "- FP4 block formats at about half the area of MXFP8 at equal throughput (arXiv 2510.25602, "
         "gate model, FinFET, FP32 accumulate: NVFP4 0.54x area of MXFP8). Ours, same D (one row of "
         "D x D MACs per cycle in every format, so equal throughput at equal clock):", "",
         "| D | MXFP4 / MXFP8 area | NVFP4 / MXFP8 area | MXFP4 / MXFP8 fmax | NVFP4 / MXFP8 fmax |",
         "|---|---|---|---|---|"]
    for d in WIDTHS:
        g = {f: grid.get((d, f)) for f in ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4")}
        a = {f: p.get(AREA) if p else None for f, p in g.items()}
        fm = {f: p.get(FMAX) if p else None for f, p in g.items()}
        ref, ref_f = a["mxfp8_e4m3"], fm["mxfp8_e4m3"]
        L.append(f"| {d} | {_ratio(a['mxfp4_e2m1'], ref)} | {_ratio(a['nvfp4'], ref)} | "
                 f"{_ratio(fm['mxfp4_e2m1'], ref_f)} | {_ratio(fm['nvfp4'], ref_f)} |")
    L += ["", "- MX4 about 4x cheaper than an FP8 dot product in area x memory (ISCA 2023, shared "
          "microexponents). Ours: area x operand bits per element (scales included: "
          f"MXFP4 {bits_per_element('mxfp4_e2m1'):.3g}, NVFP4 {bits_per_element('nvfp4'):.3g}, "
          f"FP8 {bits_per_element('fp8_e4m3'):.3g}, MXFP8 {bits_per_element('mxfp8_e4m3'):.3g} bits) "
          "against plain FP8 E4M3 at the same D; *x cheaper* is the inverse of the product ratio:", "",
          "| D | MXFP4 vs FP8 E4M3 | NVFP4 vs FP8 E4M3 | MXFP4 vs MXFP8 |", "|---|---|---|---|"]

    def cheaper(f, ref, d):
        p, q = grid.get((d, f)), grid.get((d, ref))
        if not (p and q and p.get(AREA) and q.get(AREA)):
            return NOT_MEASURED
        r = p.get(AREA) * bits_per_element(f) / (q.get(AREA) * bits_per_element(ref))
        return f"{r:.3f} ({1 / r:.1f}x cheaper)"

    for d in WIDTHS:
        L.append(f"| {d} | {cheaper('mxfp4_e2m1', 'fp8_e4m3', d)} | {cheaper('nvfp4', 'fp8_e4m3', d)} | "
                 f"{cheaper('mxfp4_e2m1', 'mxfp8_e4m3', d)} |")
    return L + [""]


def block_section(grid) -> list:
    """The block-scaled section from the ``fp32``-mode grid (plain and block points)."""
    L = ["## Block-scaled formats (OCP MX, NVFP4)", "",
         "The block-scaled units (`fp32` accumulation, rows = 1, default stages) next to the unit of "
         "their element format at the same D. Area per MAC = area / (D x D); the scales add no MACs.", ""]
    if not any((d, f) in grid for d in WIDTHS for f in QOR_BLOCK_FORMATS):
        return L + [f"{NOT_MEASURED}: no block-scaled point under the QoR folder "
                    "(`python -m flows qor --formats mxfp8_e4m3,mxfp4_e2m1,nvfp4 --acc fp32`).", ""]
    return L + _table(grid) + _overhead(grid) + _published(grid)
