"""PNG plots of the cross-width QoR report (matplotlib, Agg backend); only measured points are drawn."""

import math
from pathlib import Path

from ..metric_keys import AREA, CP_LV, CP_PS, FMAX, MEMORY, YOSYS_TIME
from .common import CATEGORIES, CONTROL, FORMATS, WIDTHS, breakdown, measured_formats
from .verdict import perf_table

__all__ = ["make_plots"]

#: One marker per format, in the registry's order (cycled if there are more formats).
_MARKER_CYCLE = "os^vDP*Xh<>p"
MARKERS = {f: _MARKER_CYCLE[i % len(_MARKER_CYCLE)] for i, f in enumerate(FORMATS)}


def _series(grid, key, fmt, f=lambda d, v: v):
    pts = [(d, grid[(d, fmt)].get(key)) for d in WIDTHS if (d, fmt) in grid]
    return [(d, f(d, v)) for d, v in pts if v is not None]


def _save(fig, path: Path, made: list):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    made.append(path)


def _plot_area(grid, plt, ticks, plots_dir, made) -> None:
    """Area and area per MAC."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for fmt in measured_formats(grid):
        s = _series(grid, AREA, fmt)
        if s:  # area is > 0 whenever measured
            a1.plot([math.log2(d) for d, _ in s], [v / 1e6 for _, v in s], marker=MARKERS[fmt], label=fmt)
            a2.plot([math.log2(d) for d, _ in s], [v / (d * d) for d, v in s], marker=MARKERS[fmt], label=fmt)
    a1.set(title="Area", xlabel="D", ylabel="mm^2", yscale="log", **ticks)
    a2.set(title="Area per MAC (D x D MACs per beat)", xlabel="D", ylabel="um^2 per MAC", **ticks)
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend()
    _save(fig, plots_dir / "qor_area.png", made)
    plt.close(fig)


def _plot_critical_path(grid, slopes, plt, ticks, plots_dir, made) -> None:
    """Critical path against log2 D, with the fitted slope."""
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for fmt in measured_formats(grid):
        for ax, key in ((a1, CP_LV), (a2, CP_PS)):
            s = _series(grid, key, fmt)
            if not s:
                continue
            xs = [math.log2(d) for d, _ in s]
            slope = slopes.get(fmt, {}).get(key)
            lab = fmt + (f" ({slope:.2f}/doubling)" if slope is not None else "")
            line, = ax.plot(xs, [v for _, v in s], marker=MARKERS[fmt], linestyle="none", label=lab)
            if slope is not None:
                mx, my = sum(xs) / len(xs), sum(v for _, v in s) / len(s)
                ax.plot(xs, [my + slope * (x - mx) for x in xs], color=line.get_color(), alpha=0.6)
    a1.set(title="Critical path: logic levels", xlabel="D", ylabel="levels", **ticks)
    a2.set(title="Critical path: delay", xlabel="D", ylabel="ps", **ticks)
    for a in (a1, a2):
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    _save(fig, plots_dir / "qor_critical_path.png", made)
    plt.close(fig)


def _plot_fmax_runtime(grid, plt, ticks, plots_dir, made) -> None:
    """fmax, flow runtime and memory."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, key, title, unit in ((axes[0], FMAX, "fmax", "MHz"), (axes[1], YOSYS_TIME, "Yosys runtime", "s"),
                                 (axes[2], MEMORY, "Flow peak memory", "MB")):
        for fmt in measured_formats(grid):
            s = _series(grid, key, fmt)
            if s:
                ax.plot([math.log2(d) for d, _ in s], [v for _, v in s], marker=MARKERS[fmt], label=fmt)
        ax.set(title=title, xlabel="D", ylabel=unit, **ticks)
        ax.grid(alpha=0.3)
        if ax.has_data():
            ax.legend(fontsize=8)
    _save(fig, plots_dir / "qor_fmax_runtime.png", made)
    plt.close(fig)


def _plot_breakdown(grid, plt, plots_dir, made) -> None:
    """Per-block breakdown (stacked bars) where measured."""
    bars = [(f"{d}\n{fmt}", breakdown(grid[(d, fmt)]))
            for fmt in measured_formats(grid) for d in WIDTHS if (d, fmt) in grid]
    bars = [(lab, b) for lab, b in bars if b is not None]
    if bars:
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(bars)), 4))
        cats = [c for _, c in CATEGORIES] + [CONTROL]
        bottom = [0.0] * len(bars)
        for c in cats:
            vals = [b[c] / sum(b.values()) * 100 for _, b in bars]
            ax.bar(range(len(bars)), vals, bottom=bottom, label=c)
            bottom = [x + y for x, y in zip(bottom, vals, strict=True)]
        ax.set_xticks(range(len(bars)), [lab for lab, _ in bars], fontsize=8)
        ax.set(title="Area by block", ylabel="% of area")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
        _save(fig, plots_dir / "qor_breakdown.png", made)
        plt.close(fig)


def _plot_equal_silicon(grid, plt, ticks, plots_dir, made) -> None:
    """Equal silicon: useful MACs per second per mm^2, per model."""
    table = perf_table(grid)
    if table and any(v is not None for r in table.values() for v in r.values()):
        models = sorted({m for _, m, _ in table})
        cols = min(3, len(models))
        rows_ = math.ceil(len(models) / cols)
        fig, axes = plt.subplots(rows_, cols, figsize=(4.2 * cols, 3.6 * rows_), squeeze=False)
        for ax in axes.flat[len(models):]:
            ax.set_visible(False)
        for ax, m in zip(axes.flat, models, strict=False):
            for (fmt, mm, b), row in table.items():
                # Log axis: a zero (fmax rounded to 0 MHz) cannot be drawn; the table still shows it.
                pts = [(math.log2(d), v / 1e9) for d, v in row.items() if v is not None and v > 0 and mm == m]
                if pts:
                    ax.plot(*zip(*pts, strict=True), marker=MARKERS[fmt], linestyle="-" if b == 1 else "--",
                            label=f"{fmt} b{b}")
            ax.set(title=f"{m}: useful MACs at equal silicon", xlabel="D", ylabel="GMAC/s/mm^2", **ticks)
            if ax.has_data():
                ax.set_yscale("log")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        _save(fig, plots_dir / "qor_equal_silicon.png", made)
        plt.close(fig)


def make_plots(grid, slopes, plots_dir: Path) -> list[Path]:
    """Write the plots that have data; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots_dir.mkdir(parents=True, exist_ok=True)
    made = []
    if not grid:
        return made
    ticks = dict(xticks=[math.log2(d) for d in WIDTHS], xticklabels=[str(d) for d in WIDTHS])
    _plot_area(grid, plt, ticks, plots_dir, made)
    _plot_critical_path(grid, slopes, plt, ticks, plots_dir, made)
    _plot_fmax_runtime(grid, plt, ticks, plots_dir, made)
    _plot_breakdown(grid, plt, plots_dir, made)
    _plot_equal_silicon(grid, plt, ticks, plots_dir, made)
    return made
