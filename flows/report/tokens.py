"""Energy per token and tokens per joule, from the published energy runs and the models' tile schedule.

Reads committed energy runs (``reports/power/<variant>/energy-tiles*.json``, written by
:mod:`flows.power`); runs no simulation. Used by ``reports/power/summary.md`` and the QoR report.

**Activity model.** A unit's energy over a product is ``cycles * F + beats * B``:

* ``F`` (pJ per cycle) is what the unit spends whether or not an activation beat issues: loading the
  weight rows, the clock network, the control, leakage;
* ``B`` (pJ per beat) is what one ``x`` beat of ``D x D`` MACs adds: multipliers, compressor tree,
  accumulation.

Both come from measured runs of the unit on real tiles:

* with a decode run alone (R = 1, one beat per ``D``-cycle tile), the run's own block split: ``B`` is
  the energy of the multipliers, the tree and the accumulator per issued beat, ``F`` the rest per
  cycle. The arithmetic blocks' idle energy is then charged to the beats, so ``B`` is an upper
  bound: extrapolated to dense beats it over-predicts (the report states by how much where a dense
  run exists);
* with a prefill run of the same unit (the ``-r16`` variant: 16 activation rows per weight tile, about
  one beat every other cycle at D = 32), the straight line through the two runs' energy per cycle
  against beats per cycle.

Cycles and beats come from the unit's throughput contract over the models' products
(:func:`perf.shapes.cost`: ``max(D, M)`` cycles and ``M`` beats per weight tile). HBM energy is the
fetched bytes (zero padding and, for block-scaled formats, the scale codes included:
:func:`perf.contract.tile_bytes`) at a stated pJ per byte. Energy per token is the step's energy over
the tokens it produces (``batch`` in decode, the prompt's length in prefill); tokens per joule is its
inverse. The energy per token does not depend on how many units share the work (each product's
cycles and beats are divided among them), as long as no unit idles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hw.formats import BLOCK_FORMATS
from perf import shapes
from perf.contract import tile_bytes

__all__ = ["ActivityModel", "activity_model", "arithmetic_pj", "beats_per_cycle", "step_energy",
           "tokens_per_joule", "recommended_units", "TOKEN_MODELS", "TOKEN_REGIMES", "ARITHMETIC"]

#: Categories of a run's ``by_category_pj`` whose energy an activation beat drives.
ARITHMETIC = ("multipliers", "tree", "accumulate")
#: The models of the tokens-per-joule table.
TOKEN_MODELS = ("Llama-3.1-8B", "gpt-oss-120b")
#: (regime, n): decode steps at batch 1 and 8, a prefill of 512 tokens.
TOKEN_REGIMES = (("decode", 1), ("decode", 8), ("prefill", 512))


@dataclass(frozen=True)
class ActivityModel:
    """``F`` pJ per cycle plus ``B`` pJ per activation beat, and where they come from."""

    floor_pj: float
    beat_pj: float
    source: str

    def pj_per_cycle(self, beats_per_cycle: float) -> float:
        return self.floor_pj + beats_per_cycle * self.beat_pj


def beats_per_cycle(run: dict) -> float:
    """Issued ``x`` beats per cycle of a run (``issued_macs / D^2 / cycles``)."""
    d = run["columns"]
    return run["issued_macs"] / (d * d) / run["cycles"]


def arithmetic_pj(run: dict) -> float:
    """Energy of the run's multipliers, tree and accumulators (pJ, all columns)."""
    return sum(run["by_category_pj"].get(c, 0.0) for c in ARITHMETIC)


def activity_model(decode: dict, prefill: dict | None = None) -> ActivityModel:
    """The activity model of a unit from its decode run (and its prefill run, if one is published).

    Raises
    ------
    ValueError
        If the decode run issues no beat, or the two runs do not differ in beats per cycle.
    """
    r1 = beats_per_cycle(decode)
    if not r1 > 0:
        raise ValueError(f"{decode['variant']}: the run issued no beat; re-run `make power` on tiles")
    if prefill is None:
        beats = r1 * decode["cycles"]
        b = arithmetic_pj(decode) / beats
        f = (decode["energy_pj"]["total"] - arithmetic_pj(decode)) / decode["cycles"]
        return ActivityModel(f, b, "decode run's block split")
    r2 = beats_per_cycle(prefill)
    if not r2 > 1.5 * r1:
        raise ValueError(f"{prefill['variant']}: {r2:.3f} beats per cycle against {r1:.3f} in "
                         f"{decode['variant']}: too close to fit a line")
    b = (prefill["pj_per_cycle"] - decode["pj_per_cycle"]) / (r2 - r1)
    return ActivityModel(decode["pj_per_cycle"] - r1 * b, b,
                         f"decode and R = {prefill['rows']} prefill runs")


_COSTS: dict = {}


def _model_costs(regime: str, n: int, width: int, fmt: str) -> dict:
    """``{model: (cycles, beats, useful MACs, HBM bytes)}`` of one decode step (``n`` = batch) or
    one prefill of ``n`` tokens on a unit of width ``width``, summed over the catalog."""
    key = (regime, n, width, fmt)
    if key not in _COSTS:
        cat = shapes.catalog(n) if regime == "decode" else shapes.prefill_catalog(n)
        per_tile = tile_bytes(width, fmt)
        out: dict = {}
        for mm in cat:
            c = shapes.cost(mm, width)
            acc = out.setdefault(mm.model, [0.0, 0.0, 0.0, 0.0])
            acc[0] += c["cycles"]
            acc[1] += c["tiles"] * mm.m          # one beat per activation row per weight tile
            acc[2] += c["macs_useful"]
            acc[3] += c["tiles"] * per_tile
        _COSTS[key] = {m: tuple(v) for m, v in out.items()}
    return _COSTS[key]


def step_energy(model: ActivityModel, width: int, fmt: str, regime: str, n: int, hbm_pj: float) -> dict:
    """Energy of one decode step of ``n`` sequences or one prefill of ``n`` tokens, per model.

    Returns
    -------
    dict
        ``{model: dict(unit_pj, hbm_pj, tokens, macs, cycles, beats, bytes)}``.
    """
    if not hbm_pj >= 0 or math.isinf(hbm_pj):
        raise ValueError(f"HBM energy must be a finite non-negative pJ per byte, not {hbm_pj!r}")
    out = {}
    for m, (cyc, beats, macs, nbytes) in _model_costs(regime, n, width, fmt).items():
        out[m] = {"unit_pj": cyc * model.floor_pj + beats * model.beat_pj, "hbm_pj": nbytes * hbm_pj,
                  "tokens": n, "macs": macs, "cycles": cyc, "beats": beats, "bytes": nbytes}
    return out


def tokens_per_joule(e: dict, with_hbm: bool = True) -> float:
    """Tokens per joule of one :func:`step_energy` entry (unit alone, or unit and HBM)."""
    pj = e["unit_pj"] + (e["hbm_pj"] if with_hbm else 0.0)
    return e["tokens"] / (pj * 1e-12)


def recommended_units(runs: list, tag: str = "-xacc-cg-") -> dict:
    """``{(width, fmt): (decode run, prefill run or None)}``: the real-tile runs of the recommended
    unit (variant names containing ``tag``: the ``exact`` mode with clock gates), all-column runs
    preferred over sampled ones; the prefill run is the ``-r16`` variant of the same unit. Runs
    with operand isolation (``-oi-``, off by default: it pays only in the FP4 formats) are left out."""
    dec, pre = {}, {}
    for s in runs:
        if s["workload"] != "tiles" or tag not in s["variant"] or "-oi-" in s["variant"]:
            continue
        target = dec if s["rows"] == 1 else pre
        key = (s["width"], s["fmt"])
        if key not in target or s["columns_simulated"] == s["columns"]:
            target[key] = s
    return {k: (v, pre.get(k)) for k, v in sorted(dec.items(), key=lambda kv: (
        kv[0][0], kv[0][1] in BLOCK_FORMATS, kv[0][1]))}


def _gmean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def equal_power(units: dict, regimes=TOKEN_REGIMES, hbm_pj: float = 0.0) -> dict:
    """``{(fmt, regime, n, model): {D: useful MACs per joule}}`` of the units of
    :func:`recommended_units` over every model of :data:`perf.shapes.MODELS` (the unit's energy, and
    with ``hbm_pj`` > 0 the feed's too). Useful MACs per joule = useful GMAC/s per W."""
    out: dict = {}
    for (d, fmt), (dec, pre) in units.items():
        model = activity_model(dec, pre)
        for r, n in regimes:
            for m, e in step_energy(model, d, fmt, r, n, hbm_pj).items():
                out.setdefault((fmt, r, n, m), {})[d] = e["macs"] / ((e["unit_pj"] + e["hbm_pj"]) * 1e-12)
    return out


def width_verdict(table: dict, a: int, b: int) -> dict | None:
    """How often D = ``a`` does more useful MACs per joule than D = ``b`` in an :func:`equal_power`
    table: ``dict(won, cases, gmean, lo, hi)`` of the ratios a/b, or None without both widths."""
    ratios = [row[a] / row[b] for row in table.values() if row.get(a) and row.get(b)]
    if not ratios:
        return None
    return {"won": sum(x > 1 for x in ratios), "cases": len(ratios), "gmean": _gmean(ratios),
            "lo": min(ratios), "hi": max(ratios)}


def _mac_j(x):
    return f"{x / 1e9:.3g}" if x else "-"


def equal_power_lines(table: dict, widths=(32, 64, 128)) -> list:
    """Per format and regime: geometric mean over the models of useful GMAC/s per W at each width,
    the width ratios and in how many models the narrower unit is ahead."""
    pairs = list(zip(widths, widths[1:], strict=False))
    L = ["| format | regime | " + " | ".join(f"D={d}" for d in widths) + " | "
         + " | ".join(f"{a}/{b}" for a, b in pairs) + " | " + " | ".join(f"{a}>{b}" for a, b in pairs) + " |",
         "|---|---|" + "---|" * (len(widths) + 2 * len(pairs))]
    keys = dict.fromkeys((f, r, n) for (f, r, n, _) in table)
    for f, r, n in keys:
        rows = [v for (ff, rr, nn, _), v in table.items() if (ff, rr, nn) == (f, r, n)]
        g = [_gmean([row.get(d) for row in rows]) for d in widths]
        ratios = [[row[a] / row[b] for row in rows if row.get(a) and row.get(b)] for a, b in pairs]
        L.append(f"| {f} | {r} {n} | " + " | ".join(_mac_j(x) for x in g) + " | "
                 + " | ".join(f"{_gmean(x):.2f}" if x else "-" for x in ratios) + " | "
                 + " | ".join(f"{sum(v > 1 for v in x)}/{len(x)}" if x else "-" for x in ratios) + " |")
    return L


def tokens_section(runs: list, hbm_pj: float) -> list:
    """The tokens-per-joule section of ``reports/power/summary.md``: the activity models, tokens per
    joule of :data:`TOKEN_MODELS` in :data:`TOKEN_REGIMES`, and the equal-power comparison of the
    widths."""
    units = recommended_units(runs)
    if not units:
        return ["No real-tile run of the recommended unit (`exact` accumulation, clock gates on) is "
                "published: `make power WIDTH=64 ACC=exact GATE=on PUBLISH=1`."]
    L = ["Activity model of each unit (`flows/report/tokens.py`): F pJ per cycle whatever issues, plus "
         "B pJ per activation beat (D x D MACs).", "",
         "| D | format | F (pJ / cycle) | B (pJ / beat) | B / D^2 (pJ / MAC) | from | check against a "
         "denser run |", "|---|---|---|---|---|---|---|"]
    models = {}
    for (d, fmt), (dec, pre) in units.items():
        m = models[(d, fmt)] = activity_model(dec, pre)
        check = "-"
        if pre is not None:
            alone = activity_model(dec).pj_per_cycle(beats_per_cycle(pre))
            check = (f"the decode split alone predicts {alone:.0f} pJ / cycle for the R = {pre['rows']} run "
                     f"({beats_per_cycle(pre):.2f} beats / cycle), measured {pre['pj_per_cycle']:.0f} "
                     f"({100 * (alone / pre['pj_per_cycle'] - 1):+.0f}%)")
        L.append(f"| {d} | {fmt} | {m.floor_pj:.0f} | {m.beat_pj:.0f} | {m.beat_pj / d / d:.2f} | "
                 f"{m.source} | {check} |")
    L += ["", f"Tokens per joule, unit and HBM ({hbm_pj:g} pJ/B) together, and in brackets the unit "
          "alone; decode: one step of the batch, a token per sequence; prefill: one prompt.", "",
          "| D | format | model | " + " | ".join(f"{r} {n}" for r, n in TOKEN_REGIMES) + " | "
          + " | ".join(f"mJ / token {r} {n}: unit + HBM" for r, n in TOKEN_REGIMES) + " |",
          "|---|---|---|" + "---|" * (2 * len(TOKEN_REGIMES))]
    for (d, fmt), m in models.items():
        cells = {mod: ([], []) for mod in TOKEN_MODELS}
        for r, n in TOKEN_REGIMES:
            step = step_energy(m, d, fmt, r, n, hbm_pj)
            for mod in TOKEN_MODELS:
                e = step[mod]
                cells[mod][0].append(f"{tokens_per_joule(e):.3g} ({tokens_per_joule(e, False):.3g})")
                cells[mod][1].append(f"{e['unit_pj'] / n / 1e9:.3g} + {e['hbm_pj'] / n / 1e9:.3g}")
        for mod in TOKEN_MODELS:
            L.append(f"| {d} | {fmt} | {mod} | " + " | ".join(cells[mod][0]) + " | "
                     + " | ".join(cells[mod][1]) + " |")
    table = equal_power(units)
    L += ["", "**Equal power.** Useful GMAC/s per W of the unit (useful MACs per nJ), geometric mean over "
          f"the {len(shapes.MODELS)} models of `perf/shapes.py`; `a>b` counts the models in which D = a "
          "does more useful MACs per joule than D = b.", ""]
    L += equal_power_lines(table)
    v = width_verdict(table, 64, 128)
    if v:
        L += ["", f"64 against 128 per joule (unit alone): D = 64 ahead in {v['won']} of {v['cases']} "
              f"model x regime x format cases, geometric mean 64/128 = {v['gmean']:.2f} "
              f"(range {v['lo']:.2f}-{v['hi']:.2f})."]
        vh = width_verdict(equal_power(units, hbm_pj=hbm_pj), 64, 128)
        L[-1] += (f" With the HBM feed at {hbm_pj:g} pJ/B: ahead in {vh['won']} of {vh['cases']}, "
                  f"geometric mean {vh['gmean']:.2f}.")
    return L
