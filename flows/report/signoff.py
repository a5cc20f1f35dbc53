"""The signoff section of the QoR report: OpenSTA beside our STA on every published point.

Reads the cross-check's metrics (:data:`flows.metric_keys.CP_PS_OPENSTA`,
:data:`flows.metric_keys.CP_DIFF_OPENSTA`) that ``make qor`` or ``python -m flows qor
--opensta-only`` (:mod:`flows.sweep.opensta`) wrote into each point's ``metrics.json``; a point
without them reads *not cross-checked yet*, or why it could not be
(:data:`flows.metric_keys.OPENSTA_SKIPPED`).
"""

from ..metric_keys import (
    CP_DIFF_OPENSTA,
    CP_PS,
    CP_PS_OPENSTA,
    MACRO_AREA,
    OPENSTA_MACROS,
    OPENSTA_SKIPPED,
    OPENSTA_TIME,
    OPENSTA_VERSION,
)
from ..pnr.crosscheck import TOLERANCE

__all__ = ["opensta_section", "NOT_CHECKED"]

#: What a point without a cross-check reads.
NOT_CHECKED = "not cross-checked yet"


def opensta_section(points) -> list[str]:
    """Markdown lines: one row per point (our STA, OpenSTA, difference, OpenSTA's time) and a
    verdict line counting the points checked and those beyond :data:`TOLERANCE`."""
    tol = 100 * TOLERANCE
    L = ["## Signoff cross-check: OpenSTA on the same netlists", "",
         "OpenSTA times the netlist our STA timed (after drive repair; the hierarchical points as one "
         "composed netlist, which OpenSTA times through the blocks where ours composes block timing "
         "models) under our STA's assumptions: no wires, ideal clock with the default input slew, "
         "inputs at 0 with the default input slew, outputs loaded with the default load. Difference = "
         f"(OpenSTA - ours) / ours; beyond {tol:.0f}% a point fails. Pre-route only: placement and "
         "routing are not in these numbers.", "",
         "| point | our STA (ps) | OpenSTA (ps) | difference | OpenSTA time (s) |",
         "|---|---:|---:|---:|---:|"]
    checked, beyond, versions, macro, unmodelled, too_large = 0, [], set(), [], [], []
    for p in sorted(points, key=lambda p: p.variant):
        ours, theirs, diff = p.get(CP_PS), p.get(CP_PS_OPENSTA), p.get(CP_DIFF_OPENSTA)
        if ours is None:
            continue
        if theirs is None or diff is None:
            why = p.metrics.get(OPENSTA_SKIPPED)
            if why:
                too_large.append(p.variant)
            L.append(f"| {p.variant} | {ours:,.1f} | "
                     f"{f'not cross-checked: {why}' if why else NOT_CHECKED} | | |")
            continue
        checked += 1
        versions.add(str(p.metrics.get(OPENSTA_VERSION, "unknown")))
        flag = ""
        if abs(diff) > tol:
            beyond.append(p.variant)
            flag = " **beyond**"
        if (p.get(MACRO_AREA) or 0) > 0:
            if p.metrics.get(OPENSTA_MACROS):
                macro.append(p.variant)
                flag += " (macro)"
            else:
                unmodelled.append(p.variant)
                flag += " (macro, no model)"
        t = p.get(OPENSTA_TIME)
        L.append(f"| {p.variant} | {ours:,.1f} | {theirs:,.1f} | {diff:+.2f}%{flag} | "
                 f"{'' if t is None else f'{t:.1f}'} |")
    total = sum(1 for p in points if p.get(CP_PS) is not None)
    if not checked:
        verdict = "none cross-checked yet (`python -m flows qor --opensta-only`)."
    elif beyond:
        verdict = f"{len(beyond)} beyond {tol:.0f}%: {', '.join(beyond)}."
    else:
        verdict = f"all checked points within {tol:.0f}%."
    if too_large:
        verdict += (f" Not checkable on the machine that ran the check: {', '.join(too_large)} "
                    "(its row says why).")
    L += ["", f"{checked} of {total} timed point(s) cross-checked"
          + (f" (OpenSTA {', '.join(sorted(versions))})" if versions else "") + "; " + verdict, ""]
    ideal = ("Our STA times its pins as ideal registers (inputs end paths with setup 0, outputs start "
             "them at clock-to-output 0 with the default input slew, no pin load)")
    if macro:
        L += [f"(macro): {', '.join(macro)} hold a black-box macro (the modelled SRAM). {ideal}; "
              "OpenSTA times it through a liberty cell stating the same (`flows/pnr/macro_lib.py`: "
              "setup 0 on the inputs, a clock-to-output arc of 0 on the outputs, its clock pin on the "
              "holding module's clock), so both time the same paths into and out of it. Neither "
              "includes the SRAM's own access or setup time (no datasheet).", ""]
    if unmodelled:
        L += [f"(macro, no model): {', '.join(unmodelled)} hold a black-box macro (the modelled "
              f"SRAM) and were cross-checked without its timing model. {ideal}; OpenSTA, given no "
              "model, times neither the paths into it nor those out of it and reports the worst of "
              "the rest: the two numbers are of different path sets (re-run `python -m flows qor "
              "--opensta-only` to time them through `flows/pnr/macro_lib.py`).", ""]
    return L
