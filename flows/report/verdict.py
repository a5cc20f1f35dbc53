"""Equal-silicon performance and the verdict on each claim of the seed study (for :mod:`flows.report.qor`)."""

import csv
from pathlib import Path

from perf import shapes

from ..metric_keys import CP_LV, DEPTH, FMAX
from . import silicon
from .common import BATCHES, FORMATS, NOT_MEASURED, WIDTHS, measured_formats, sig
from .common import fmt_value as fv
from .silicon import equal_silicon_rows

__all__ = ["perf_table", "perf_section", "verdict_section", "knee_from_csv"]


def perf_table(grid):
    """{(fmt, model, batch): {D: MACs/s/mm^2 or None}} in decode for the formats measured in ``grid``
    (:func:`flows.report.silicon.regime_perf` at the decode batches)."""
    perf = silicon.regime_perf(grid, tuple(("decode", b) for b in BATCHES))
    models = dict.fromkeys(m for (_, _, _, m) in perf)
    return {(fmt, m, b): perf[("decode", b, fmt, m)]
            for fmt in measured_formats(grid) for m in models for b in BATCHES}


def _ratio(a, b):
    return a / b if a is not None and b is not None and b > 0 else None


def perf_section(grid) -> list[str]:
    L = ["## Performance at equal silicon", "",
         "Useful MACs per second per mm^2 = useful MACs / cycles x fmax / area, summed over each model's "
         "matmuls in one decode step (shapes and cycles from the tile catalog `perf/shapes.py`: the "
         "unit's throughput contract, zero padding included, fill latency left out, enough accumulator "
         "rows assumed); area and fmax measured on rows = 1 units. Unit: GMAC/s/mm^2.", ""]
    table = perf_table(grid)
    pairs = list(zip(WIDTHS, WIDTHS[1:], strict=False))
    L += ["| format | model | batch | " + " | ".join(f"D={d}" for d in WIDTHS) + " | "
          + " | ".join(f"{a}/{b}" for a, b in pairs) + " |",
          "|---|---|---|" + "---|" * (len(WIDTHS) + len(pairs))]
    for (fmt, m, b), row in table.items():
        if all(v is None for v in row.values()):
            continue
        L.append(f"| {fmt} | {m} | {b} | " + " | ".join(
            sig(row[d] / 1e9 if row[d] is not None else None) for d in WIDTHS) + " | "
            + " | ".join(fv(_ratio(row[a], row[c]), 2) for a, c in pairs) + " |")
    if not any(any(v is not None for v in r.values()) for r in table.values()):
        L.append(f"{NOT_MEASURED}: no matrix unit has both area and fmax measured.")
    return L + [""]


def knee_from_csv(f):
    """Knee per width from the slice's feed sweep (``reports/knee.csv`` of ``tb/slice/knee.py``).

    The CSV has rows ``width, feed_bytes_per_cycle, measured_macs_per_cycle, model_macs_per_cycle,
    unit``. For each width the knee is where the starved line meets the plateau: ``plateau / slope``
    with ``plateau`` the largest measured MACs/cycle and ``slope`` the median MACs per byte of the
    clearly starved points (feed <= 0.75 D). Returns ``{D: dict(knee, plateau, at_d, units, n)}``
    (``at_d``: measured MACs/cycle at feed = D, as a fraction of the plateau) or None.
    """
    if f is None or not Path(f).exists():
        return None
    try:
        with open(f, newline="") as fh:
            rows = [(int(r["width"]), float(r["feed_bytes_per_cycle"]), float(r["measured_macs_per_cycle"]),
                     r.get("unit", "")) for r in csv.DictReader(fh)]
    except (KeyError, ValueError):
        return None
    out = {}
    for d in sorted({r[0] for r in rows}):
        pts = sorted((feed, mac, unit) for w, feed, mac, unit in rows if w == d)
        low = sorted(mac / feed for feed, mac, _ in pts if 0 < feed <= 0.75 * d)
        if not low or not any(feed >= 1.25 * d for feed, _, _ in pts):
            continue
        plateau = max(mac for _, mac, _ in pts)
        slope = low[len(low) // 2]
        at_d = [mac for feed, mac, _ in pts if abs(feed - d) < 1e-9]
        out[d] = {"knee": plateau / slope, "plateau": plateau, "n": len(pts),
                  "at_d": at_d[0] / plateau if at_d else None, "units": sorted({u for *_, u in pts})}
    return out or None


def _knee_rows(knee_file) -> list:
    """The knee claim, from the slice's feed sweep."""
    rows = []
    knee = knee_from_csv(knee_file)
    knee_claim = "A unit of width D starves at exactly D bytes/cycle of feed."
    if knee:
        txt = "; ".join(f"D={d}: knee {k['knee']:.1f} bytes/cycle ({k['knee'] / d:.1%} of D; "
                        + (f"{k['at_d']:.1%} of the plateau at feed D; " if k["at_d"] is not None else "")
                        + f"{k['n']} feed rates, {'/'.join(k['units'])})" for d, k in knee.items())
        ok = all(abs(k["knee"] - d) <= 0.05 * d for d, k in knee.items())
        stub = [d for d, k in knee.items() if any("stub" in u for u in k["units"])]
        real = [d for d in knee if d not in stub]
        rows.append((knee_claim, txt, "agree" if ok else "disagree",
                     "RTL simulation of a slice (tb/slice/knee.py, MiniLM FFN up, M = 1, fp8_e4m3) against "
                     "its HBM feed rate (reports/knee.csv): the starved line meets the plateau "
                     + ("within 5% of" if ok else "more than 5% away from") + " D bytes/cycle"
                     + (f"; D={', '.join(map(str, real))} with the real matrix unit (results checked "
                        "bit-exact)" if real else "")
                     + (f"; D={', '.join(map(str, stub))} with the timing-only stub unit (same stream "
                        "and tile timing)" if stub else "") + "; widths not listed were not run"))
    else:
        rows.append((knee_claim, NOT_MEASURED, "can't tell",
                     "needs the slice's feed-rate sweep (reports/knee.csv); by our unit's throughput "
                     "contract the weight-feed bound is D*b/8 bytes/cycle (b = element bits), i.e. D for "
                     "FP8 and D/2 for FP4, which is a design property, not a measurement"))
    return rows


def _levels_rows(slopes, suspects, col_slopes, tree_slopes) -> list:
    """The levels-per-doubling claim."""
    rows = []
    lv_claim = "Each doubling of D added about four gate levels to the critical path."
    meas = {f: s[CP_LV] for f, s in slopes.items() if s[CP_LV] is not None}
    depth = {f: s[DEPTH] for f, s in slopes.items() if s[DEPTH] is not None}
    flagged = {f for (_, f) in suspects}
    clean = {f: v for f, v in meas.items() if f not in flagged}
    txt = "; ".join(f"{f}: {v:.2f} levels/doubling" + (" (timing flagged)" if f in flagged else "")
                    for f, v in meas.items())
    if depth:
        txt += ("; " if txt else "") + "generic depth (deepest block): " + "; ".join(
            f"{f} {v:.2f}/doubling" for f, v in depth.items())
    cols = {f: v for f, v in (col_slopes or {}).items() if v is not None}
    if cols:
        txt += "; worst path inside a column: " + "; ".join(
            f"{f} {v:.2f} levels/doubling" for f, v in cols.items())
    trees = {f: v for f, v in (tree_slopes or {}).items() if v is not None}
    if trees:
        txt += "; compressor tree (worst pipeline stage): " + "; ".join(
            f"{f} {v:.2f} levels/doubling" for f, v in trees.items())
    if clean:
        ok = all(3.0 <= v <= 5.0 for v in clean.values())
        tree_ok = bool(trees) and all(3.0 <= v <= 5.0 for v in trees.values())
        why = ("fitted slope of the mapped critical path's levels over log2 D "
               + ("is within 3..5" if ok else "falls outside 3..5")
               + (" (flagged formats left out)" if flagged & set(meas) else ""))
        if not ok and tree_ok:
            why += ("; our critical path is the single-cycle FP32 accumulate (one rounding per beat, "
                    "the numerics contract), which grows only with the width of the exact sum it "
                    "normalizes; the compressor tree, the part that deepens with D, does add 3..5 "
                    "levels per doubling as the study says")
        rows.append((lv_claim, txt, "agree" if ok else "disagree", why))
    elif meas:
        rows.append((lv_claim, txt, "can't tell",
                     "the critical paths involved are flagged (see the timing note): their levels do not "
                     "show the arithmetic depth; inside a column (top-level nets left out, pipelined at the "
                     "default stages) the worst path grows as shown, which says nothing yet about the "
                     "broadcast nets that grow with D"))
    else:
        rows.append((lv_claim, txt or NOT_MEASURED, "can't tell",
                     "needs the critical path of at least two widths of one format"))
    return rows


def _padding_rows() -> list:
    """The padding claim, from the shape catalog."""
    rows = []
    pad_claim = "Padding an 80-wide slice wastes 60% of bytes at D=64 and 128, 20% at D=32."
    w = {d: shapes.slice80(d) for d in (32, 64, 128)}
    txt = "; ".join(f"D={d}: padded to {v['padded']}, {v['waste_1d']:.1%} of fetched bytes = "
                    f"{v['overhead_1d']:.0%} of useful bytes" for d, v in w.items())
    want = {32: 0.20, 64: 0.60, 128: 0.60}
    ok = all(abs(w[d]["overhead_1d"] - want[d]) < 0.005 for d in want)
    rows.append((pad_claim, txt, "agree" if ok else "disagree",
                 "from the padding rule of the shape catalog (80 rounded up to whole D tiles); the "
                 "study's percentages are padding relative to the useful bytes (relative to the fetched "
                 "bytes they are 37.5% and 16.7%); an 80 x 80 block padded both ways wastes more "
                 f"({w[64]['overhead_2d']:.0%} at D=64); the replay regression's byte counters "
                 "(reports/regression.md) check the rule on RTL"))
    return rows


def _control_rows(shares) -> list:
    """The control-cost claim."""
    rows = []
    sh = {k: v for k, v in shares.items()}
    if sh:
        txt = "; ".join(f"D={d} {f}: {v:.1%}" for (d, f), v in sorted(sh.items()))
        rows.append(("The fixed control cost of small units is 3-6x smaller than modelled.",
                     f"control share of area: {txt}", "can't tell",
                     "the study does not publish its modelled control area, so the 3-6x ratio cannot be "
                     "checked; our measured share is what a model should use"))
    else:
        rows.append(("The fixed control cost of small units is 3-6x smaller than modelled.", NOT_MEASURED,
                     "can't tell", "needs per-block areas; the study's modelled value is also unpublished"))
    return rows


def _clock_rows(grid, suspects) -> list:
    """The clock-speed claim."""
    rows = []
    fm = {(d, f): p.get(FMAX) for (d, f), p in grid.items() if p.get(FMAX) is not None}
    fmts = [f for f in FORMATS if sum((d, f) in fm for d in WIDTHS) >= 2]
    if fmts:
        dec = all(fm[(d1, f)] > fm[(d2, f)] for f in fmts for d1, d2 in ((32, 64), (64, 128))
                  if (d1, f) in fm and (d2, f) in fm)
        txt = "; ".join(f"{f}: " + ", ".join(f"D={d} {sig(fm[(d, f)])} MHz" for d in WIDTHS if (d, f) in fm)
                        for f in fmts)
        bad = sorted(f"D={d} {f}" for (d, f) in suspects if f in fmts)
        if bad:
            rows.append(("Wider arrays cannot be clocked as fast.", txt, "can't tell",
                         f"fmax of {', '.join(bad)} comes from a flagged critical path "
                         "(see the timing note)"))
        else:
            rows.append(("Wider arrays cannot be clocked as fast.", txt, "agree" if dec else "disagree",
                         "fmax falls with every doubling" if dec else
                         "fmax does not fall with every doubling"))
    else:
        rows.append(("Wider arrays cannot be clocked as fast.", NOT_MEASURED, "can't tell",
                     "needs fmax at two widths of one format"))
    return rows


def verdict_section(grid, slopes, shares, knee_file=None, suspects=(), col_slopes=None,
                    tree_slopes=None, grids=None, power_rows=()) -> list[str]:
    """The verdict table; ``suspects``: (D, fmt) points whose timing is flagged (their fmax and levels
    are not used for a verdict); ``grids``: ``{acc mode: grid}`` for the equal-silicon claims (default:
    ``grid`` alone, as ``fp32``); ``power_rows``: the equal-power rows
    (:func:`flows.report.energy.equal_power_section`)."""
    suspects = set(suspects)
    rows = (_knee_rows(knee_file) + _levels_rows(slopes, suspects, col_slopes, tree_slopes)
            + _padding_rows() + equal_silicon_rows(grids or {"fp32": grid}, suspects) + list(power_rows)
            + _control_rows(shares)
            + _clock_rows(grid, suspects))
    L = ["## Verdict on the study's claims", "",
         "Claims from the seed study (shared context 002); measurements from this report only.", "",
         "| claim | our measurement | verdict | why |", "|---|---|---|---|"]
    L += [f"| {c} | {m} | {v} | {w} |" for c, m, v, w in rows]
    return L + [""]

