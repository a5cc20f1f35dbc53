"""The cross-width QoR report: ``reports/qor_comparison.md`` and its plots, from our own metrics only.

Reads every ``reports/qor/<variant>/metrics.json`` written by the QoR flow (names in
:mod:`flows.metric_keys`), groups matrix-unit variants by width D and element format and BF16
multiplier variants by architecture, and writes tables, PNG plots under ``reports/plots/`` and a
verdict on each claim of the seed study. Widths and formats come from the registry; a format with no
measured point is left out of the tables and named in a note, and a missing cell reads
``not measured yet``: the report never fills a gap with an estimate. Equal-silicon performance
combines measured fmax and area with cycle counts from the unit's throughput contract
(``docs/mu_interface.md``) for the real model shapes of :mod:`perf.shapes`.

Run it with ``python -m flows report-qor`` (``make qor`` runs it after the sweep).
"""

import argparse
import datetime
import math
import re
import subprocess
import sys
from pathlib import Path

from ..metric_keys import AREA, CACHE_HIT, CELLS, CP_LV, CP_PS, DEPTH, FMAX, GE, MEMORY, RUNTIME, YOSYS_TIME
from ..paths import PUBLISHED_QOR, REPO
from ..qor_plan import QOR_ACC_MODES
from . import plots as rp
from . import verdict as rv
from .common import (
    CATEGORIES,
    CONTROL,
    FORMATS,
    NOT_MEASURED,
    WIDTHS,
    Point,
    breakdown,
    fit_slope,
    load_points,
    measured_formats,
    mu_grid,
    sig,
)
from .common import fmt_value as fv
from .energy import energy_section, equal_power_section
from .modes import block_exact_section, int_section, modes_section
from .scaling import block_section
from .signoff import opensta_section
from .silicon import regimes_section

__all__ = ["generate", "block_paths", "timing_suspects", "provenance", "main"]

YOSYS_CAVEAT = ("All numbers come from Yosys (yowasp) synthesis with ABC technology mapping and our own "
                "static timing analysis over the liberty's tables: no placement, no routing, no wire load "
                "(unless stated), no clock tree. A published Yosys-vs-commercial comparison on IHP 130 nm "
                "found Yosys about 53% larger (arXiv 2512.06122): read areas as relative between widths, "
                "not as absolute silicon.")


_BLOCK_RE = re.compile(r"^---- block (\S+) .*\nworst path: (\S+) .*\n\s+delay ([0-9.]+) \S+\s+levels (\d+)",
                       re.MULTILINE)
# Block module name prefix -> column of the block timing table.
BLOCK_TIMING = (("mu_lane", "lane"), ("mu_tree", "tree"), (("mu_acc", "mu_xacc"), "accumulate"),
                ("mu_wbuf", "weight buffer"), ("mu_col", "column"))


def block_paths(p: Point) -> dict:
    """Worst internal path of each block, ``{column: (ps, levels, kind)}``, read from the flow's
    ``timing.txt`` (each block timed standalone, so top-level nets are not in these paths)."""
    f = p.path.parent / "timing.txt"
    if not f.exists():
        return {}
    out = {}
    for name, kind, ps, lv in _BLOCK_RE.findall(f.read_text(errors="replace")):
        for prefix, col in BLOCK_TIMING:
            if name.startswith(prefix):
                out[col] = (float(ps), int(lv), kind)
    return out


def _mode(acc: str) -> str:
    """Heading suffix naming the accumulate mode (none for the default ``fp32``)."""
    return "" if acc == QOR_ACC_MODES[0] else f" (`acc = {acc}`)"


def block_timing_section(grid, acc: str = "fp32") -> list[str]:
    """Table of block-internal worst paths per width and format, with levels per doubling."""
    cols = [c for _, c in BLOCK_TIMING]
    L = [f"## Block-internal worst paths{_mode(acc)}", "",
         "Each marked block is timed on its own by the flow (`timing.txt`, children as timing models), so "
         "these paths leave out the nets of the top level. Cells: delay in ps / logic levels. Pipelined "
         "blocks (the tree and accumulator at the default stages) show their worst stage, not their "
         "whole depth.", "",
         "| D | format | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    paths = {k: block_paths(p) for k, p in grid.items()}
    for fmt in measured_formats(grid):
        for d in WIDTHS:
            b = paths.get((d, fmt), {})
            L.append(f"| {d} | {fmt} | " + " | ".join(
                f"{b[c][0]:,.0f} / {b[c][1]}" if c in b else NOT_MEASURED for c in cols) + " |")
    L += ["", "| format | " + " | ".join(f"{c} levels per doubling" for c in cols) + " |",
          "|---|" + "---|" * len(cols)]
    for fmt in measured_formats(grid):
        ds = [d for d in WIDTHS if paths.get((d, fmt))]
        cells = []
        for c in cols:
            pts = [(math.log2(d), paths[(d, fmt)][c][1]) for d in ds if c in paths[(d, fmt)]]
            cells.append(fv(fit_slope([x for x, _ in pts], [y for _, y in pts]), 2))
        L.append(f"| {fmt} | " + " | ".join(cells) + " |")
    return L + [""]


def timing_suspects(grid) -> dict:
    """Points whose critical path takes more than 2 ns per logic level (a sign of an unbuffered
    high-fanout net in a flow without buffering, or of a timing bug): ``{(D, fmt): note}``."""
    out = {}
    for (d, fmt), p in sorted(grid.items()):
        ps, lv = p.get(CP_PS), p.get(CP_LV)
        if ps is not None and lv and ps / lv > 2000:
            out[(d, fmt)] = (f"D={d} {fmt}: {ps:,.0f} ps over {lv} levels ({ps / lv:,.0f} ps per level); "
                             f"see `{p.path.parent.name}/timing.txt`")
    return out


def _git(*args) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance(points) -> list[str]:
    """Lines: repository revision, date, tool versions and liberties found in the metrics."""
    rev = _git("rev-parse", "--short", "HEAD")
    dirty = " (with uncommitted changes)" if _git("status", "--porcelain", "--", "hw", "flows") else ""
    tools, libs, revs, dates = set(), set(), set(), set()
    for p in points:
        m = p.metrics
        for k, v in (m.get("flow__tools") or {}).items():
            tools.add(f"{k} {v}")
        lib = m.get("flow__liberty")
        if isinstance(lib, dict):
            libs.add(f"{lib.get('name')} ({lib.get('path')}, sha256 {str(lib.get('sha256'))[:12]})")
        elif isinstance(lib, str):
            libs.add(lib)
        for k, v in m.items():
            if isinstance(v, str) and "version" in k:
                tools.add(f"{k} = {v}")
        if isinstance(m.get("flow__git_revision"), str):
            revs.add(m["flow__git_revision"])
        if isinstance(m.get("flow__date"), str):
            dates.add(m["flow__date"][:10])
    return [
        f"- Generated {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d %H:%M UTC')} at git revision "
        f"`{rev}`{dirty} by `python -m flows report-qor`.",
        f"- Metrics produced at revision(s): {', '.join(sorted(revs)) or NOT_MEASURED}"
        f"{' on ' + ', '.join(sorted(dates)) if dates else ''}.",
        f"- Tools: {'; '.join(sorted(tools)) or NOT_MEASURED}.",
        f"- Liberty: {', '.join(sorted(libs)) or NOT_MEASURED}.",
        f"- Caveat: {YOSYS_CAVEAT}",
    ]


def _mu_table(grid, acc: str = "fp32") -> tuple:
    """Area, timing and flow cost per width and format; ``(lines, timing suspects)``."""
    L = []
    L += [f"## Matrix unit: area, timing and flow cost{_mode(acc)}", "",
          "Area per MAC = area / (D x D) (the unit issues D x D MACs per activation beat). Rows = 1, "
          "pipeline stages as `flows/qor_plan.py` gives them. Yosys time: the synthesis runs of all "
          "blocks (kept from the first run when cached); flow wall time: generation, synthesis, STA "
          "and reports of the run that wrote the metrics.", "",
          "| D | format | area (um^2) | area (GE) | cells | area/MAC (um^2) | critical path (ps) | levels "
          "| generic depth | fmax (MHz) | Yosys time (s) | flow wall time (s) | peak memory (MB) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for fmt in measured_formats(grid):
        for d in WIDTHS:
            p = grid.get((d, fmt))
            keys = (AREA, GE, CELLS, CP_PS, CP_LV, DEPTH, FMAX, YOSYS_TIME, RUNTIME, MEMORY)
            g = {k: (p.get(k) if p else None) for k in keys}
            a = g[AREA]
            per_mac = a / (d * d) if a is not None else None
            cached = " (Yosys cached)" if p and p.metrics.get(CACHE_HIT) else ""
            L.append(f"| {d} | {fmt} | {fv(a)} | {fv(g[GE])} | {fv(g[CELLS])} | {fv(per_mac, 1)} | "
                     f"{fv(g[CP_PS])} | {fv(g[CP_LV])} | {fv(g[DEPTH])} | {sig(g[FMAX])} | "
                     f"{fv(g[YOSYS_TIME], 1)} | {fv(g[RUNTIME], 1)}{cached} | {fv(g[MEMORY])} |")
    L.append("")
    missing = [f for f in FORMATS if f not in measured_formats(grid)]
    if missing:
        L += [f"Formats {NOT_MEASURED} (no matrix-unit point, left out of the tables): "
              f"{', '.join(missing)}.", ""]
    sus = timing_suspects(grid)
    if sus:
        L += ["**Timing to read with care**: these critical paths spend more than 2 ns per logic level, "
              "far beyond a gate of the library; the usual cause is a net driving hundreds of pins timed "
              "with its full load and no buffer tree. The fmax and equal-silicon figures below inherit it:",
              ""]
        L += [f"- {x}" for x in sus.values()] + [""]
    return L, sus


def _depth_section(grid, acc: str = "fp32") -> tuple:
    """Critical path against log2 D and the block paths; ``(lines, slopes, column slopes, tree slopes)``."""
    L = []
    L += [f"## Critical path against log2 D{_mode(acc)}", "",
          "Least-squares slope over the measured widths; needs at least two widths of a format.", "",
          "| format | widths measured | levels per doubling | generic depth per doubling | ps per doubling |",
          "|---|---|---|---|---|"]
    slopes = {}
    for fmt in measured_formats(grid):
        pts = [(math.log2(d), grid[(d, fmt)]) for d in WIDTHS if (d, fmt) in grid]
        xs = [x for x, _ in pts]
        s = {k: fit_slope(xs, [p.get(k) for _, p in pts]) for k in (CP_LV, DEPTH, CP_PS)}
        slopes[fmt] = s
        L.append(f"| {fmt} | {', '.join(str(2 ** int(x)) for x in xs) or 'none'} | {fv(s[CP_LV], 2)} | "
                 f"{fv(s[DEPTH], 2)} | {fv(s[CP_PS], 0)} |")
    L.append("")
    L += block_timing_section(grid, acc)
    col_slopes, tree_slopes = {}, {}
    for slopes_of, block in ((col_slopes, "column"), (tree_slopes, "tree")):
        for fmt in measured_formats(grid):
            pts = [(math.log2(d), block_paths(grid[(d, fmt)]).get(block))
                   for d in WIDTHS if (d, fmt) in grid]
            pts = [(x, c[1]) for x, c in pts if c]
            slopes_of[fmt] = fit_slope([x for x, _ in pts], [y for _, y in pts])
    return L, slopes, col_slopes, tree_slopes


def _breakdown_section(grid, acc: str = "fp32") -> tuple:
    """Per-block area and control share; ``(lines, control share per point)``."""
    L = []
    L += [f"## Per-block area and control share{_mode(acc)}", "",
          "Blocks as marked by the generator (docs/mu_interface.md); control is the top level outside the "
          "columns (total minus the blocks).", ""]
    cats = [c for _, c in CATEGORIES] + [CONTROL]
    L += ["| D | format | " + " | ".join(f"{c} (um^2)" for c in cats) + " | control share |",
          "|---|---|" + "---|" * (len(cats) + 1)]
    shares = {}
    for fmt in measured_formats(grid):
        for d in WIDTHS:
            p = grid.get((d, fmt))
            b = breakdown(p) if p else None
            if b is None:
                L.append(f"| {d} | {fmt} | " + " | ".join([NOT_MEASURED] * (len(cats) + 1)) + " |")
                continue
            share = b[CONTROL] / p.get(AREA)
            shares[(d, fmt)] = share
            L.append(f"| {d} | {fmt} | " + " | ".join(fv(b[c]) for c in cats) + f" | {share:.2%} |")
    L.append("")
    return L, shares


def _bf16_section(points, qor_dir) -> list:
    """The BF16 multiplier table."""
    L = []
    bf = [p for p in points if p.design in ("bf16_mul", "bf16_bank")]
    L += ["## BF16 multiplier architectures", ""]
    if bf:
        L += ["| variant | area (um^2) | area (GE) | critical path (ps) | levels | area x delay (um^2 ns) |",
              "|---|---|---|---|---|---|"]
        for p in bf:
            a, t = p.get(AREA), p.get(CP_PS)
            L.append(f"| {p.variant} | {fv(a)} | {fv(p.get(GE))} | {fv(t)} | {fv(p.get(CP_LV))} | "
                     f"{fv(a * t / 1000 if a is not None and t is not None else None)} |")
    else:
        L.append(f"{NOT_MEASURED}: no BF16 multiplier metrics under `{qor_dir.name}/`.")
    L.append("")
    return L


def _plots_section(made, plots_dir, rel) -> list:
    """Links to the plots (and the knee plot of the slice's feed sweep when it exists)."""
    L = []
    L += ["## Plots", ""]
    knee_png = plots_dir / "knee.png"  # the slice's feed sweep (tb/slice/knee.py), when it has run
    if knee_png.exists():
        made = made + [knee_png]
    if made:
        L += [f"![{Path(f).stem}]({rel(f)})" for f in made]
    else:
        L.append(f"{NOT_MEASURED}: no matrix-unit metrics to plot.")
    L.append("")
    return L


def generate(qor_dir: Path, out_md: Path, plots_dir: Path, plots: bool = True,
             knee_file: Path | None = None) -> str:
    """Write the report (and plots); return its text.

    ``knee_file``: the slice's feed sweep (default ``reports/knee.csv`` next to ``qor_dir``).
    """
    points = load_points(qor_dir)
    full = {acc: mu_grid(points, acc) for acc in QOR_ACC_MODES}
    # the element formats' points; the block-scaled ones have their own section
    grids = {acc: {k: p for k, p in g.items() if k[1] in FORMATS} for acc, g in full.items()}
    grid = grids[QOR_ACC_MODES[0]]  # the default mode's points drive the verdicts and plots

    def rel(f):
        return Path(f).relative_to(out_md.parent) if Path(f).is_relative_to(out_md.parent) else f

    L = ["# QoR across matrix-unit widths", "",
         "Generated by `make qor` (`python -m flows qor`); do not edit by hand. Every number is from our own "
         f"runs under `{qor_dir.name}/`; a cell reads *{NOT_MEASURED}* where that run has not been done.", ""]
    L += ["## Provenance", ""] + provenance(points) + [""]
    revs = {p.metrics.get("flow__git_revision") for p in grid.values()}
    if len(revs) > 1:
        L += [f"**Mixed runs**: the matrix-unit points below come from {len(revs)} revisions of the "
              "generator and flow; comparisons across them (slopes, ratios) mix versions until `make qor` "
              "reruns them all:", ""]
        L += [f"- {p.variant}: revision {p.metrics.get('flow__git_revision')}, {p.metrics.get('flow__date')}"
              for _, p in sorted(grid.items())] + [""]
    table, sus = _mu_table(grid)
    depth, slopes, col_slopes, tree_slopes = _depth_section(grid)
    blocks, shares = _breakdown_section(grid)
    made = rp.make_plots(grid, slopes, plots_dir) if plots else []
    L += table + depth + blocks
    for acc in (a for a in QOR_ACC_MODES[1:] if grids[a]):  # the modes section names the gaps
        L += _mu_table(grids[acc], acc)[0] + _depth_section(grids[acc], acc)[0]
        L += _breakdown_section(grids[acc], acc)[0]
    L += modes_section(grids) + int_section(grids) + block_exact_section(full)
    L += block_section(full[QOR_ACC_MODES[0]])
    power_lines, power_rows = equal_power_section(Path(qor_dir).parent / "power")
    L += rv.perf_section(grid) + power_lines + regimes_section(grids) + _bf16_section(points, qor_dir)
    L += energy_section(Path(qor_dir).parent / "power", rel)
    L += opensta_section(points)
    L += _plots_section(made, plots_dir, rel)
    L += rv.verdict_section(grid, slopes, shares, knee_file or Path(qor_dir).parent / "knee.csv", sus,
                            col_slopes, tree_slopes, grids, power_rows)
    text = "\n".join(L) + "\n"
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(text)
    return text


def main(argv=None) -> int:
    """``python -m flows report-qor``."""
    p = argparse.ArgumentParser(prog="python -m flows report-qor", description=__doc__.split("\n\n")[0])
    p.add_argument("--qor-dir", type=Path, default=PUBLISHED_QOR)
    p.add_argument("--out", type=Path, default=REPO / "reports" / "qor_comparison.md")
    p.add_argument("--plots", type=Path, default=REPO / "reports" / "plots")
    a = p.parse_args(argv)
    try:
        generate(a.qor_dir, a.out, a.plots)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report-qor: wrote {a.out} and plots under {a.plots}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
