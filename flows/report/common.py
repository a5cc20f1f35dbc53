"""What the reports share: measured points read from ``metrics.json``, the grid of matrix units,
and the formatting of numbers (``not measured yet`` for a missing one).

The widths and formats come from the registry (``hw.designs.STUDY_WIDTHS``,
``hw.formats.MATRIX_FORMATS``): a format added there appears in every table, and one with no
measured point is left out of the tables (:func:`measured_formats`).
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from hw.designs import STUDY_WIDTHS
from hw.formats import MATRIX_FORMATS

from ..metric_keys import AREA, BLOCK_AREA
from ..qor_plan import qor_stages

__all__ = ["Point", "load_points", "read_metrics", "fit_slope", "fmt_value", "sig", "lib_short",
           "main_library", "mu_grid", "breakdown", "measured_formats", "NOT_MEASURED", "WIDTHS", "FORMATS",
           "BATCHES", "CATEGORIES", "CONTROL"]

NOT_MEASURED = "not measured yet"
#: Matrix-unit widths the report compares.
WIDTHS = STUDY_WIDTHS
#: Element formats, in the registry's order.
FORMATS = MATRIX_FORMATS
#: Batch sizes of the equal-silicon comparison.
BATCHES = (1, 8)
# Block (module name prefix, or a tuple of them) -> category of the per-block breakdown
# (docs/mu_interface.md); ``mu_xacc`` is the exact mode's accumulator.
CATEGORIES = (("mu_lane", "multipliers"), ("mu_tree", "compressor tree"),
              (("mu_acc", "mu_xacc"), "accumulate"),
              ("mu_wbuf", "weight storage"), ("mu_col", "column glue"))
CONTROL = "control (top, outside the columns)"


@dataclass
class Point:
    """One synthesized variant: its metrics and the parameters read from them (or its name)."""

    variant: str
    design: str
    params: dict
    metrics: dict
    path: Path
    extra: dict = field(default_factory=dict)

    def get(self, key):
        v = self.metrics.get(key)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def read_metrics(folder: Path, fix: str):
    """``(path, metrics)`` of every ``<folder>/*/metrics.json`` in name order; a file that is not JSON
    is an error naming it and ``fix`` (how to regenerate it)."""
    for f in sorted(Path(folder).glob("*/metrics.json")):
        try:
            yield f, json.loads(f.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{f}: not valid JSON ({e}); {fix}") from None


def load_points(qor_dir: Path) -> list[Point]:
    """Every ``<qor_dir>/*/metrics.json``; unreadable or foreign files are an error naming the file."""
    points = []
    for f, m in read_metrics(qor_dir, "rerun 'make qor' to regenerate it"):
        design = m.get("design")
        if not isinstance(design, str):
            raise ValueError(f"{f}: no 'design' entry; it was not written by the flow "
                             "(rerun 'make qor' to regenerate it)")
        given = m.get("design__params")
        params = dict(given) if isinstance(given, dict) else {}
        if design == "mu":
            params.setdefault("rows", 1)
        points.append(Point(f.parent.name, design, params, m, f))
    return points


def fit_slope(xs, ys):
    """Least-squares slope of ys over xs; None with fewer than two distinct xs."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if len({x for x, _ in pts}) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def fmt_value(v, digits=0, unit=""):
    """``v`` with thousands separators and ``digits`` decimals; ``not measured yet`` for None."""
    if v is None:
        return NOT_MEASURED
    if isinstance(v, float) and digits == 0 and abs(v) >= 100:
        return f"{v:,.0f}{unit}"
    return f"{v:,.{digits}f}{unit}"


def lib_short(p: Point):
    """Short name of the liberty a point was measured with."""
    lib = p.metrics.get("flow__liberty")
    return lib.get("short") if isinstance(lib, dict) else lib


def main_library(points):
    """The library the report compares on: OSU 0.18 um when present, else the most used one."""
    libs = [lib_short(p) for p in points if p.design == "mu"]
    if not libs:
        return None
    return "osu018" if "osu018" in libs else max(set(libs), key=libs.count)


def sig(v, n=3):
    """``v`` to ``n`` significant digits without exponent notation (``not measured yet`` for None)."""
    if v is None:
        return NOT_MEASURED
    if v == 0 or abs(v) >= 10 ** (n - 1):
        return f"{v:,.0f}"
    return f"{v:.{max(0, n - 1 - math.floor(math.log10(abs(v))))}f}"


def mu_grid(points, acc: str = "fp32") -> dict:
    """(D, fmt) -> Point for the study's matrix units of accumulate mode ``acc`` on the main library:
    rows = 1 and the stages :func:`flows.qor_plan.qor_stages` gives the point. A run with a
    non-default flow option (its ``flow__run`` folder name is not its ``variant``: ``-flat``,
    ``-clk<ps>``, ``-tables``) is not the study's point and never stands in for it."""
    lib = main_library(points)
    grid = {}
    for p in points:
        q = p.params
        run, variant = p.metrics.get("flow__run"), p.metrics.get("variant")
        if run is not None and variant is not None and run != variant:
            continue
        if (p.design == "mu" and lib_short(p) == lib and q.get("rows", 1) == 1 and "width" in q
                and "fmt" in q and q.get("acc", "fp32") == acc
                and q.get("stages", 2) == qor_stages(acc, q["fmt"], q["width"])):
            grid[(q["width"], q["fmt"])] = p
    return grid


def breakdown(p: Point) -> dict | None:
    """Category -> area (um^2) from the per-block metrics; control = total - the blocks."""
    total = p.get(AREA)
    blocks = {k[len(BLOCK_AREA):]: v for k, v in p.metrics.items()
              if k.startswith(BLOCK_AREA) and isinstance(v, (int, float))}
    if total is None or not blocks:
        return None
    out = {c: 0.0 for _, c in CATEGORIES}
    for name, area in blocks.items():
        for prefix, cat in CATEGORIES:
            if name.startswith(prefix):
                out[cat] += area
    if not any(out.values()):
        return None
    out[CONTROL] = total - sum(out.values())
    return out


def measured_formats(grid) -> list:
    """The formats (registry order) with at least one measured point in ``grid``."""
    return [f for f in FORMATS if any((d, f) in grid for d in WIDTHS)]
