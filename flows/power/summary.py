"""``reports/power/summary.md`` and its plot from the committed energy runs (``reports/power/*/``).

``python -m flows.power.summary [--hbm-pj-per-byte 40] [--batch 1]`` reads every
``reports/power/<variant>/energy-<workload>[-sample<k>][-runs<n>].json`` and writes:

* energy per useful and per issued MAC, power at fmax and the split by block, per width, format
  and workload (real tiles, random, zeros), with performance per watt next to performance per mm^2;
* the composition check: sampled columns against every column, where both were run;
* the energy of a decode step per token on the model shapes of :mod:`perf.shapes`: the unit's
  measured energy per cycle times the contract's cycles, plus the feed's energy per HBM byte (a
  stated parameter) on the fetched bytes, padding included;
* tokens per joule of the recommended unit (``exact``, clock gates on) and the widths compared at
  equal power (:mod:`flows.report.tokens`);
* the block-scaled units (OCP MX, NVFP4) against the plain unit of their element format;
* the clock-gated units against the same units without gates;
* the units with operand isolation against the same units without it;
* a comparison with the ISSCC 2014 45 nm energies scaled to this node.

Reads only committed JSON (no simulation): reports never call the flow.
"""

import argparse
import json
import sys
from pathlib import Path

from hw.designs import get_design
from hw.formats import BLOCK_FORMATS, get_block_format, get_format
from perf.shapes import MODELS, catalog, cost

from ..paths import REPO
from ..report.tokens import tokens_section
from .cli import category

__all__ = ["load_runs", "write_summary", "ISSCC14_45NM_PJ", "SCALE_45_TO_180", "ABS_MODEL"]

ROOT = REPO / "reports" / "power"
#: Horowitz, "Computing's energy problem", ISSCC 2014, 45 nm, 0.9 V (pJ per operation).
ISSCC14_45NM_PJ = {"8-bit int multiply": 0.2, "32-bit float add": 0.9, "32-bit float multiply": 3.7}
#: Energy ~ C V^2: capacitance with feature size (180 / 45 = 4x), supply 1.8 V / 0.9 V (4x in V^2).
SCALE_45_TO_180 = (180 / 45) * (1.8 / 0.9) ** 2
#: The model whose decode step the per-token table shows in absolute energy.
ABS_MODEL = "Llama-3.1-8B"
_ORDER = {"tiles": 0, "random": 1, "zeros": 2}
_CATS = ("multipliers", "tree", "accumulate", "weight buffers", "control", "clock net")


def load_runs(root: Path = ROOT) -> list:
    """Every committed energy JSON, sorted by width, format, workload, sampling."""
    runs = [json.loads(p.read_text()) for p in sorted(Path(root).glob("*/energy-*.json"))]
    return sorted(runs, key=lambda s: (s["columns"], s["variant"], _ORDER.get(s["workload"], 9),
                                       s["columns_simulated"] != s["columns"]))


def _main_table(runs):
    out = ["| D | variant | workload | columns simulated | cycles | pJ / useful MAC | pJ / issued MAC "
           "| mW at fmax (MHz) | GMAC/s/W (useful) | GMAC/s/mm^2 (useful) | "
           + " | ".join(_CATS) + " |", "|" + "---|" * (10 + len(_CATS))]
    for s in runs:
        tot = s["energy_pj"]["total"]
        shares = _shares(s)
        t_s = s["cycles"] / (s["fmax_mhz"] * 1e6)
        gmacs = s["useful_macs"] / t_s / 1e9
        watts = tot * 1e-12 / t_s
        out.append(f"| {s['columns']} | {s['variant']} | {s['workload']} | {s['columns_simulated']} | "
                   f"{s['cycles']} | {s['pj_per_useful_mac']:.1f} | {s['pj_per_issued_mac']:.1f} | "
                   f"{s['mw_at_fmax']:.1f} ({s['fmax_mhz']}) | {gmacs / watts:.2f} | "
                   f"{gmacs / (s['area_um2'] * 1e-6):.4f} | "
                   + " | ".join(f"{100 * shares[c]:.0f}%" for c in _CATS) + " |")
    return out


def _shares(s):
    cats = {c: 0.0 for c in _CATS}
    for b, d in s["by_block_pj"].items():
        cats[category(b) if category(b) in cats else "control"] += sum(d.values())
    return {c: v / s["energy_pj"]["total"] for c, v in cats.items()}


def _findings(runs):
    """One line per real-tile run: the two largest blocks and the data-dependent share."""
    out = []
    zeros = {(s["variant"], s["columns_simulated"]): s for s in runs if s["workload"] == "zeros"}
    for s in runs:
        if s["workload"] != "tiles":
            continue
        sh = sorted(_shares(s).items(), key=lambda kv: -kv[1])
        line = (f"- {s['variant']} ({s['columns_simulated']} of {s['columns']} columns): "
                f"{sh[0][0]} {100 * sh[0][1]:.0f}%, {sh[1][0]} {100 * sh[1][1]:.0f}%")
        z = zeros.get((s["variant"], s["columns_simulated"]))
        if z:
            ratio = z["energy_pj"]["total"] / s["energy_pj"]["total"]
            line += (f"; all-zero data costs {100 * ratio:.0f}% of the real tiles' energy (close to "
                     "the data-independent floor: clock, flop clock pins, control, leakage)")
        out.append(line + ".")
    return out


def _mode(s) -> tuple:
    """(accumulate mode, clock gates, operand isolation) of a run, from its variant name's tags (the
    registry's)."""
    opts = {o.name: o for o in get_design("mu").options}
    tags = s["variant"].split("-")
    return (("exact" if opts["acc"].tag("exact") in tags else "fp32"), opts["gate"].tag(True) in tags,
            opts["isolate"].tag(True) in tags)


def _block_vs_plain(runs):
    """One sentence per block-scaled real-tile run: its energy per useful MAC against the plain
    unit of its element format (same width, rows, workload, accumulate mode, clock gating and operand
    isolation;
    all-column runs preferred), and the block category whose energy per useful MAC grew the most."""
    plain = {}
    for s in runs:
        if s["workload"] == "tiles" and s["fmt"] not in BLOCK_FORMATS:
            key = (s["fmt"], s["width"], s["rows"], _mode(s))
            if key not in plain or s["columns_simulated"] == s["columns"]:
                plain[key] = s
    out = []
    for s in runs:
        if s["workload"] != "tiles" or s["fmt"] not in BLOCK_FORMATS:
            continue
        bf = get_block_format(s["fmt"])
        p = plain.get((bf.element, s["width"], s["rows"], _mode(s)))
        if p is None:
            continue
        acc, gated, isolated = _mode(s)
        a, b = _shares(s), _shares(p)
        ea, eb = s["pj_per_useful_mac"], p["pj_per_useful_mac"]
        grow = {c: a[c] * ea - b[c] * eb for c in _CATS}
        top = max(grow, key=grow.get)
        out.append(f"{s['fmt']} (D = {s['width']}, {bf.element} elements, one {bf.scale.upper()} scale "
                   f"per {bf.block}; `{acc}` mode{', clock gates' if gated else ''}"
                   f"{', operand isolation' if isolated else ''}) costs {ea:.1f} "
                   f"pJ per useful MAC against {eb:.1f} for plain "
                   f"{p['fmt']} ({100 * (ea / eb - 1):+.0f}%); the most added is in {top} "
                   f"({grow[top]:+.1f} pJ/MAC).")
    return out


def _twins(runs, tag: str):
    """``(base, run)`` for every run whose variant holds ``tag`` (``-cg-``, ``-oi-``) and whose twin
    without it (same variant otherwise, workload and columns simulated) is published too."""
    same = {(s["variant"], s["workload"], s["columns_simulated"]): s for s in runs}
    for s in runs:
        base = same.get((s["variant"].replace(tag, "-"), s["workload"], s["columns_simulated"]))
        if tag in s["variant"] and base is not None:
            yield base, s


def _twin_cells(base, s) -> tuple:
    """(D, unit, workload, pJ/MAC without / with, ratio) and (area, fmax) cells of a twin row."""
    unit = base["variant"].removeprefix("mu-").removesuffix("-osu018")
    e0, e1 = base["pj_per_useful_mac"], s["pj_per_useful_mac"]
    return (f"| {s['columns']} | {unit} | {s['workload']} | {e0:.1f} / {e1:.1f} | {e1 / e0:.2f}x | ",
            f"{base['area_um2'] / 1e6:.2f} / {s['area_um2'] / 1e6:.2f} | "
            f"{base['fmax_mhz']} / {s['fmax_mhz']} |")


def _gating(runs):
    """The clock-gated runs (variant ``...-cg-...``) against the same unit without gates."""
    out = ["| D | unit | workload | pJ / useful MAC without / with gates | ratio | zeros / real tiles "
           "without / with | area mm^2 without / with | fmax MHz without / with |",
           "|---|---|---|---|---|---|---|---|"]
    zeros = {(s["variant"], s["columns_simulated"]): s for s in runs if s["workload"] == "zeros"}
    rows = 0
    for base, s in _twins(runs, "-cg-"):
        zr = []
        for r in (base, s):
            z = zeros.get((r["variant"], r["columns_simulated"])) if s["workload"] == "tiles" else None
            zr.append(f"{z['energy_pj']['total'] / r['energy_pj']['total']:.2f}" if z else "-")
        head, tail = _twin_cells(base, s)
        out.append(f"{head}{zr[0]} / {zr[1]} | {tail}")
        rows += 1
    return out if rows else ["No clock-gated run is published with its ungated twin."]


def _isolation(runs):
    """The runs with operand isolation (variant ``...-oi-...``) against the same unit without it:
    energy per useful MAC, the tree's and the multipliers' share of it, area and fmax."""
    out = ["| D | unit | workload | pJ / useful MAC without / with | ratio | tree + multipliers pJ/MAC "
           "without / with | area mm^2 without / with | fmax MHz without / with |",
           "|---|---|---|---|---|---|---|---|"]
    rows = 0
    for base, s in _twins(runs, "-oi-"):
        arith = [r["pj_per_useful_mac"] * (_shares(r)["tree"] + _shares(r)["multipliers"]) for r in (base, s)]
        head, tail = _twin_cells(base, s)
        out.append(f"{head}{arith[0]:.1f} / {arith[1]:.1f} | {tail}")
        rows += 1
    return out if rows else ["No run with operand isolation is published with its twin without it."]


def _composition(runs):
    full = {(s["variant"], s["workload"]): s for s in runs if s["columns_simulated"] == s["columns"]}
    out = ["| variant | workload | sampled columns | all columns (uJ) | sampled (uJ) | difference | "
           "seconds all / sampled |", "|---|---|---|---|---|---|---|"]
    for s in runs:
        f = full.get((s["variant"], s["workload"]))
        if s["columns_simulated"] == s["columns"] or f is None:
            continue
        a, b = f["energy_pj"]["total"], s["energy_pj"]["total"]
        out.append(f"| {s['variant']} | {s['workload']} | {s['columns_simulated']} of {s['columns']} | "
                   f"{a / 1e6:.4g} | {b / 1e6:.4g} | {100 * (b / a - 1):+.2f}% | "
                   f"{f['seconds']['total']} / {s['seconds']['total']} |")
    return out


def _budgets(runs):
    """Wall time by step and peak memory of each run, against the issue's budgets."""
    out = ["| variant | workload | columns simulated | cycles | synth + stimulus (s) | flatten + build (s) | "
           "simulate (s) | total (s) | budget | peak memory (MB) |", "|" + "---|" * 10]
    for s in runs:
        t = s["seconds"]
        budget = "15 min" if s["columns"] <= 32 else "30 min"
        out.append(f"| {s['variant']} | {s['workload']} | {s['columns_simulated']} of {s['columns']} | "
                   f"{s['cycles']} | {t['synth'] + t['stimulus']:.0f} | {t['build']:.0f} | {t['sim']:.0f} | "
                   f"{t['total']:.0f} | {budget} | {s.get('peak_mb', 0):.0f} |")
    return out


def _per_token(runs, hbm_pj, batch):
    """Per unit (real-tile runs, all columns preferred): the :data:`ABS_MODEL` decode step's unit and
    HBM energy per token, and the HBM / unit ratio for every model of :data:`perf.shapes.MODELS`."""
    units = {}
    for s in runs:     # the decode (weight-feed-bound) regime; perf.shapes prices per-tensor formats
        if s["workload"] == "tiles" and s["rows"] == 1 and s["fmt"] not in BLOCK_FORMATS:
            units.setdefault(s["variant"], s)
    shapes = catalog(batch)
    totals = {}
    out = [f"| unit | pJ / cycle | {ABS_MODEL}: unit (mJ/token) | {ABS_MODEL}: HBM (mJ/token) | "
           + " | ".join(f"HBM / unit, {m}" for m in MODELS) + " |", "|" + "---|" * (4 + len(MODELS))]
    for variant, s in units.items():
        bits = get_format(s["fmt"]).bits
        cells = []
        llama = None
        for model in MODELS:
            key = (model, s["width"], bits)
            if key not in totals:   # the contract's cycle count is slow on the big models
                cs = [cost(mm, s["width"], bits) for mm in shapes if mm.model == model]
                totals[key] = (sum(c["cycles"] for c in cs), sum(c["bytes_fetched"] for c in cs))
            e_unit = totals[key][0] * s["pj_per_cycle"] / batch
            e_hbm = totals[key][1] * hbm_pj / batch
            cells.append(f"{e_hbm / e_unit:.2f}")
            if model == ABS_MODEL:
                llama = (e_unit, e_hbm)
        out.append(f"| {variant} | {s['pj_per_cycle']:.0f} | {llama[0] / 1e9:.4g} | {llama[1] / 1e9:.4g} | "
                   + " | ".join(cells) + " |")
    return out


def _isscc(runs):
    out = ["| operation | 45 nm (pJ) | scaled to 180 nm, 1.8 V (pJ) |", "|---|---|---|"]
    for op, pj in ISSCC14_45NM_PJ.items():
        out.append(f"| {op} | {pj} | {pj * SCALE_45_TO_180:.1f} |")
    out += ["", "| variant | workload | multipliers + tree per issued MAC (pJ) | vs scaled 8-bit multiply | "
            "whole unit per useful MAC (pJ) |", "|---|---|---|---|---|"]
    ref = ISSCC14_45NM_PJ["8-bit int multiply"] * SCALE_45_TO_180
    ratios, whole = [], []
    for s in runs:
        if s["workload"] != "tiles":
            continue
        arith = sum(sum(d.values()) for b, d in s["by_block_pj"].items()
                    if category(b) in ("multipliers", "tree"))
        per = arith / s["issued_macs"]
        ratios.append(per / ref)
        whole.append(s["pj_per_useful_mac"] / ref)
        out.append(f"| {s['variant']} ({s['columns_simulated']} cols) | tiles | {per:.2f} | "
                   f"{per / ref:.1f}x | {s['pj_per_useful_mac']:.1f} |")
    if ratios:
        out += ["", f"How far off: the multipliers and compressor tree spend {min(ratios):.1f}x to "
                f"{max(ratios):.1f}x the scaled 8-bit multiply per issued MAC, and the whole unit "
                f"{min(whole):.0f}x to {max(whole):.0f}x per useful MAC. An FP8 lane is more than an "
                "8-bit multiply: it decodes both operands, multiplies the significands and shifts the "
                "product into a wide two's-complement fixed-point word (36 bits for E4M3, 64 for E5M2), "
                "and the tree adds D such words exactly; the rest of the unit's energy is the R = 1 "
                "regime's weight loading and clocking (one beat per D-cycle tile), not arithmetic."]
    return out


def _plot(runs, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    ax.set_prop_cycle(color=plt.cm.tab20.colors)    # more series than the default 10 colours
    series = {}
    for s in runs:     # an all-column run wins over a sampled one of the same unit
        key = (s["fmt"], s["workload"], s["rows"])
        pts = series.setdefault(key, {})
        if s["columns_simulated"] == s["columns"] or s["columns"] not in pts:
            pts[s["columns"]] = s["pj_per_useful_mac"]
    for (fmt, wl, rows), pts in sorted(series.items()):
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", linestyle={"tiles": "-", "random": "--"}.get(wl, ":"),
                label=f"{fmt} {wl} R={rows}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width D")
    ax.set_ylabel("pJ per useful MAC")
    ax.set_title("Matrix unit energy per useful MAC (OSU 0.18 um, gate-level)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))   # off the data
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_summary(root: Path = ROOT, hbm_pj: float = 40.0, batch: int = 1) -> Path:
    """Write ``summary.md`` and ``energy_per_mac.png`` under ``root``; returns the markdown path."""
    runs = load_runs(root)
    if not runs:
        raise ValueError(f"no energy runs under {root}; run `make power PUBLISH=1` first")
    _plot(runs, root / "energy_per_mac.png")
    text = (Path(__file__).with_name("summary_text.md").read_text()
            .replace("{MAIN}", "\n".join(_main_table(runs)))
            .replace("{COMPOSITION}", "\n".join(_composition(runs)))
            .replace("{GATING}", "\n".join(_gating(runs)))
            .replace("{ISOLATION}", "\n".join(_isolation(runs)))
            .replace("{TOKEN}", "\n".join(_per_token(runs, hbm_pj, batch)))
            .replace("{TPJ}", "\n".join(tokens_section(runs, hbm_pj)))
            .replace("{ISSCC}", "\n".join(_isscc(runs)))
            .replace("{BUDGETS}", "\n".join(_budgets(runs)))
            .replace("{FINDINGS}", "\n".join(_findings(runs)))
            .replace("{BLOCK}", " ".join(_block_vs_plain(runs)) or "No block-scaled run is published.")
            .replace("{HBM}", f"{hbm_pj:g}").replace("{BATCH}", str(batch))
            .replace("{SCALE}", f"{SCALE_45_TO_180:g}"))
    out = root / "summary.md"
    out.write_text(text)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m flows.power.summary", description=__doc__.splitlines()[0])
    p.add_argument("--hbm-pj-per-byte", type=float, default=40.0)
    p.add_argument("--batch", type=int, default=1)
    a = p.parse_args(argv)
    print(write_summary(hbm_pj=a.hbm_pj_per_byte, batch=a.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
