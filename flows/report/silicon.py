"""Equal-silicon performance in decode and prefill, per accumulate mode (for :mod:`flows.report.qor`).

Useful MACs per second per mm^2 of one unit: useful MACs / cycles (the throughput contract through
:func:`perf.shapes.cost`) x the point's fmax / its cell area. Decode runs one step of ``batch``
sequences (:func:`perf.shapes.catalog`: every tile serves ``batch`` rows, so units of every width wait
for weights); prefill runs a prompt of ``tokens`` tokens (:func:`perf.shapes.prefill_catalog`: a tile
serves ``tokens >= D`` rows, so a wider unit reuses each tile as well as a narrow one and only
padding, fmax and area per MAC separate the widths).
"""

import math

from perf import shapes

from ..metric_keys import AREA, FMAX
from .common import BATCHES, NOT_MEASURED, WIDTHS, measured_formats, sig
from .common import fmt_value as fv

__all__ = ["REGIMES", "model_costs", "model_perf", "regime_perf", "regimes_section", "equal_silicon_rows"]

#: (regime, rows): decode at the report's batches (1 and 8), prefill of 512 and 4096 tokens.
REGIMES = tuple(("decode", b) for b in BATCHES) + (("prefill", 512), ("prefill", 4096))


def model_costs(regime: str, n: int, width: int) -> dict:
    """``{model: (useful MACs, cycles)}`` of one decode step at batch ``n`` (``regime`` ``decode``) or
    one prefill of ``n`` tokens (``prefill``) on a unit of width D: :func:`perf.shapes.cost` summed
    over the catalog's matmuls."""
    cat = shapes.catalog(n) if regime == "decode" else shapes.prefill_catalog(n)
    out = {}
    for mm in cat:
        c = shapes.cost(mm, width)
        macs, cyc = out.get(mm.model, (0.0, 0.0))
        out[mm.model] = (macs + c["macs_useful"], cyc + c["cycles"])
    return out


def model_perf(p, macs_cycles):
    """Useful MACs/s/mm^2 from ``(useful MACs, cycles)`` on point ``p``; None without the point, its
    fmax or its area."""
    fmax, area = (p.get(FMAX), p.get(AREA)) if p is not None else (None, None)
    if fmax is None or area is None or area <= 0 or macs_cycles is None:
        return None
    macs, cyc = macs_cycles
    return macs / cyc * fmax * 1e6 / (area * 1e-6)


def regime_perf(grid, regimes=REGIMES) -> dict:
    """``{(regime, n, fmt, model): {D: MACs/s/mm^2 or None}}`` for the formats measured in ``grid``
    (``regimes``: ``(regime, n)`` pairs, default :data:`REGIMES`)."""
    costs = {(r, n, d): model_costs(r, n, d) for r, n in regimes for d in WIDTHS}
    return {(r, n, fmt, model): {d: model_perf(grid.get((d, fmt)), costs[(r, n, d)][model])
                                 for d in WIDTHS}
            for fmt in measured_formats(grid) for r, n in regimes for model in costs[(r, n, WIDTHS[0])]}


def _ratios(rows, a, b) -> list:
    return [r[a] / r[b] for r in rows if r.get(a) and r.get(b)]


def _gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def regimes_section(grids: dict) -> list[str]:
    """Per accumulate mode, regime and format: the geometric mean over the models of MACs/s/mm^2 per
    width, the width ratios, and in how many models the narrower unit is ahead."""
    L = ["### Decode and prefill, per accumulate mode", "",
         "Geometric mean over the five models of useful GMAC/s/mm^2 (decode: one step at the batch; "
         "prefill: one prompt of the given tokens, a tile reused by every token, the LM head on the "
         "last token only; `perf/shapes.py`), each mode at its own measured fmax and area "
         "(rows = 1 units). `a>b` counts the models in which D = a is ahead of D = b.", "",
         "| acc | regime | format | D=32 | D=64 | D=128 | 32/64 | 64/128 | 32>64 | 64>128 |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for acc, grid in grids.items():
        perf = regime_perf(grid)
        for r, n in REGIMES:
            for fmt in measured_formats(grid):
                rows = [v for (rr, nn, f, _), v in perf.items() if (rr, nn, f) == (r, n, fmt)]
                g = {d: _gmean([row[d] for row in rows if row[d]]) for d in WIDTHS}
                cells = " | ".join(sig(g[d] / 1e9 if g[d] else None) for d in WIDTHS)
                r1, r2 = _ratios(rows, 32, 64), _ratios(rows, 64, 128)
                L.append(f"| {acc} | {r} {n} | {fmt} | {cells} | {fv(_gmean(r1), 2)} | "
                         f"{fv(_gmean(r2), 2)} | {sum(x > 1 for x in r1)}/{len(r1)} | "
                         f"{sum(x > 1 for x in r2)}/{len(r2)} |")
    return L + [""]


def equal_silicon_rows(grids: dict, suspects=()) -> list:
    """The two equal-silicon claims, judged separately for decode and prefill in every accumulate mode
    (``suspects``: (D, fmt) points of the default mode whose timing is flagged)."""
    claims = ((64, 128, "At equal silicon 64 beat 128 on everything, at every feed rate.", "all"),
              (32, 64, "At equal silicon 32 edged out 64.", "edge"))
    out = []
    for a, b, claim, want in claims:
        for acc, grid in grids.items():
            perf = regime_perf(grid)
            for regime in ("decode", "prefill"):
                ns = [n for r, n in REGIMES if r == regime]
                ratios = _ratios([v for (r, _, _, _), v in perf.items() if r == regime], a, b)
                label = f"{claim} ({regime} {'/'.join(map(str, ns))}, acc = {acc})"
                bad = sorted(f"D={d} {f}" for (d, f) in suspects if d in (a, b)) if acc == "fp32" else []
                if not ratios:
                    out.append((label, NOT_MEASURED, "can't tell",
                                f"needs area and fmax at D={a} and D={b} in this mode"))
                    continue
                won, gm = sum(x > 1 for x in ratios), _gmean(ratios)
                txt = (f"D={a} ahead in {won} of {len(ratios)} model x {regime} x format cases; "
                       f"geometric mean {a}/{b} = {gm:.2f}, range {min(ratios):.2f}-{max(ratios):.2f}")
                if bad:
                    out.append((label, txt, "can't tell", f"fmax of {', '.join(bad)} comes from a "
                                "flagged critical path (see the timing note)"))
                elif want == "all":
                    out.append((label, txt, "agree" if won == len(ratios) else "disagree",
                                (f"every case favours {a} (full feed)") if won == len(ratios) else
                                f"{len(ratios) - won} cases favour {b}"))
                else:
                    out.append((label, txt, "agree" if gm > 1 else "disagree",
                                f"geometric mean ratio {'above' if gm > 1 else 'at or below'} 1 (full feed)"))
    return out
