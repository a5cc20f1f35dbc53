"""The starvation knee: MACs per cycle of a slice against its HBM feed rate, measured in RTL simulation.

One sweep for every weight format: a slice of real matrix units (beats of twice the contract's knee,
so the port can carry twice what the units consume) runs the real MiniLM layer-0 FFN up projection
(384 x 1536, M = 1; OCP MX quantized on a block-scaled format) with the testbench's HBM model limited
to ``rate`` times the contract's knee ``units * D * (b + 8/B) / 8`` bytes per cycle
(:func:`perf.contract.knee_feed`; ``D * b / 8`` per unit on a per-tensor format, no scales). Every
run is checked bit-exact against the numerics model (``tb/slice/slice_cocotb.py``).

The format picks the sweep (:data:`SWEEPS`): its CSV, its columns and its default slice. The units
run in the registry's accumulate mode for the format (:func:`hw.mu.numerics.default_acc`:
``exact``; OCP MX's is the window) at its recommended column stages
(:func:`hw.mu.numerics.default_stages`); each row names its mode (``acc``).

- ``fp8_e4m3`` (the default): one unit at D = 32, 64, 128, rates from 0.25x to 2x; rows in
  ``reports/knee.csv`` (each with the revision and date of its run) and the plot
  ``reports/plots/knee.png``. The unit is built with the word-level column tree by default
  (``--tree words``: the same function as the Dadda tree synthesis maps, proved in
  ``docs/verification.md``, and the same latency and stream timing; it builds and simulates far
  faster at D = 64 and 128); the CSV's ``unit`` column names the build, ``matrix_unit(words)``.
- ``mxfp8_e4m3``, ``mxfp4_e2m1``, ``nvfp4``: two units at D = 32 (``--widths 32 64`` adds D = 64),
  rates 0.9x and 1.1x, at the recommended column stages of a block format
  (:func:`hw.mu.numerics.default_stages`: 4) and with the word-level tree by default, as above;
  rows in ``reports/knee_mx.csv`` with the contract's knee,
  the slice's knee (:func:`perf.contract.slice_knee_feed`), the plain model that ignores the scales
  (:meth:`perf.contract.Product.macs_per_cycle` at ``b`` bits), the accumulate mode, the build, and
  the revision and date of the run.

The model column is the slice's steady state (:func:`perf.contract.slice_macs_per_cycle`: useful
MACs over the schedule's cycles, each tile holding the unit for as long as the feed needs to bring
it and the slice for at least its ``D`` element rows). On a per-tensor format at batch 1 (every weight
used once) that is the feed-bound line ``min(rate * 8 / b, units * D) * useful_fraction``
(``useful_fraction`` = useful weight elements / elements streamed; 1 for this shape at every D).
The measured value is useful MACs (M*K*N) over the command's cycles (acceptance to last write), so it
includes the fill and drain time the model leaves out.

Usage: ``python -m tb.slice.knee [--fmts fp8_e4m3 mxfp8_e4m3 ...] [--widths 32 64 128]
[--rates 0.25 0.5 ...] [--tree dadda]`` (``--widths 8 --rates 0.5 1`` is the smallest run). Rows of
(format, width) pairs not run are kept from the existing CSV, so they can be run separately;
``--replot`` only redraws the plot.
"""

import argparse
import csv
import io
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from flows.synth.metrics import git_revision
from hw.formats import BLOCK_FORMATS, get_block_format, get_format
from hw.mu.numerics import DEFAULT_STAGES, default_acc, default_stages
from hw.mu.tree import TREE_ARCHS
from perf.contract import Product, knee_feed, slice_knee_feed, slice_macs_per_cycle
from tb import sim
from tb.slice.harness import run_cases

REPO = Path(__file__).resolve().parents[2]
PLOT = REPO / "reports" / "plots" / "knee.png"
#: The swept product: MiniLM layer-0 FFN up projection, one token (M x K x N).
SHAPE = (1, 384, 1536)
#: The format of the per-tensor sweep (``reports/knee.csv`` has no format column).
PLAIN_FMT = "fp8_e4m3"


@dataclass(frozen=True)
class Sweep:
    """One CSV of knee rows: the formats it holds, its columns and the slice it runs by default."""

    csv: Path
    columns: tuple
    fmts: tuple
    widths: tuple
    units: int
    rates: tuple    # multiples of the contract's knee
    seed: int
    tree: str | None  # None: the unit's default tree
    acc: str | None   # the units' accumulate mode; None: the registry's default for the format


SWEEPS = {
    "plain": Sweep(REPO / "reports" / "knee.csv",
                   ("width", "feed_bytes_per_cycle", "measured_macs_per_cycle", "model_macs_per_cycle",
                    "acc", "unit", "revision", "date"),
                   fmts=(PLAIN_FMT,), widths=(32, 64, 128), units=1,
                   rates=(0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0), seed=11, tree="words",
                   acc=None),
    "block": Sweep(REPO / "reports" / "knee_mx.csv",
                   ("fmt", "width", "units", "feed_bytes_per_cycle", "rate_over_knee", "knee_feed",
                    "slice_knee_feed", "measured_macs_per_cycle", "model_macs_per_cycle",
                    "model_without_scales", "acc", "unit", "revision", "date"),
                   fmts=("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4"), widths=(32,), units=2,
                   rates=(0.9, 1.1), seed=31, tree="words", acc=None),
}
FMTS = tuple(f for s in SWEEPS.values() for f in s.fmts)


def sweep_of(fmt: str) -> Sweep:
    """The sweep (CSV, columns, default slice) that holds ``fmt``."""
    for s in SWEEPS.values():
        if fmt in s.fmts:
            return s
    raise ValueError(f"the knee sweeps formats {', '.join(FMTS)}, not {fmt!r}; add it to a sweep in "
                     "tb.slice.knee.SWEEPS (a per-tensor format other than fp8_e4m3 needs a fmt "
                     "column in reports/knee.csv)")


def slice_params(fmt: str, width: int, units: int) -> dict:
    """Slice parameters of the knee runs (also the full tests'): beats of twice the contract's knee,
    the units in the sweep's accumulate mode (None: the registry's default for ``fmt``,
    :func:`hw.mu.numerics.default_acc`) at that mode's recommended column stages
    (:func:`hw.mu.numerics.default_stages`)."""
    acc = sweep_of(fmt).acc or default_acc(fmt)
    return {"units": units, "width": width, "fmt": fmt, "spad_bytes": max(16384, 4 * width * 64),
            "feed_bytes": int(2 * knee_feed(width, fmt, units=units)), "acc": acc,
            "stages": default_stages(width, fmt, acc)}


def model_macs(rate: float, width: int, units: int = 1, fmt: str = PLAIN_FMT) -> float:
    """The slice contract's MACs per cycle of :data:`SHAPE` at ``rate`` bytes per cycle (module
    docstring)."""
    return slice_macs_per_cycle(Product(*SHAPE, width, units=units), fmt, rate)


def measure(fmt: str, width: int, rates, units: int | None = None, latency: int = 20,
            tree: str | None = None, reuse: bool = False) -> list:
    """Run the sweep for one format and width at ``rates`` (multiples of the contract's knee).

    Returns one row (dict) per rate holding every column of every sweep's CSV; the writer keeps
    the columns of the format's sweep. ``units`` and ``tree`` (``words`` or ``dadda``) default to
    the sweep's; ``reuse`` reads the measurements of an earlier run of the same slice from its build
    folder instead of simulating.
    """
    sw = sweep_of(fmt)
    units = sw.units if units is None else units
    tree = sw.tree if tree is None else tree
    knee = knee_feed(width, fmt, units=units)
    cases = [{"minilm": "ffn_up", "layer": 0, "token": 1, "rate": r * knee, "latency": latency,
              "seed": sw.seed, "garbage": False} for r in rates]
    params = slice_params(fmt, width, units)
    name = (f"slice-{f'knee-{tree}' if tree else 'mu'}-u{units}w{width}"
            + ("" if fmt == PLAIN_FMT else f"-{fmt}")
            + ("" if params["stages"] == DEFAULT_STAGES else f"-s{params['stages']}")
            + ("-xacc" if params["acc"] == "exact" else ""))
    out = sim.BUILD / name / "knee.json"
    t0 = time.time()
    if reuse and out.exists():
        res = json.loads(out.read_text())
        cases = [r["case"] for r in res]
        rates = [c["rate"] / knee for c in cases]
    else:
        res, _ = run_cases(name, cases, numerics="mu", out=str(out), tree=tree, **params)
    print(f"{fmt} D={width} x{units}: {len(cases)} rates in {time.time() - t0:.0f} s (build and "
          f"simulation, bit-exact)")
    bits = get_format(get_block_format(fmt).element if fmt in BLOCK_FORMATS else fmt).bits
    prod = Product(*SHAPE, width, units=units)
    rows = []
    for r, rate, case in zip(res, rates, cases, strict=True):
        assert r["macs"][0] == math.prod(SHAPE), "the case is not the modelled shape"
        rows.append({"fmt": fmt, "width": width, "units": units,
                     "feed_bytes_per_cycle": round(case["rate"], 4), "rate_over_knee": rate,
                     "knee_feed": knee, "slice_knee_feed": round(slice_knee_feed(width, fmt, units), 4),
                     "measured_macs_per_cycle": round(r["macs"][0] / r["cmd_cycles"][0], 4),
                     "model_macs_per_cycle": round(model_macs(case["rate"], width, units, fmt), 4),
                     "model_without_scales": round(prod.macs_per_cycle(bits, case["rate"]), 4),
                     "acc": params["acc"], "unit": f"matrix_unit({tree or 'dadda'})",
                     "revision": git_revision(),
                     "date": time.strftime("%Y-%m-%d", time.gmtime())})
    return rows


def _key(row) -> tuple:
    return row.get("fmt", PLAIN_FMT), int(row["width"])


def ordered(rows) -> list:
    """``rows`` (measured dicts or strings read back from a CSV) by format, width and feed rate."""
    return sorted(rows, key=lambda r: (*_key(r), float(r["feed_bytes_per_cycle"])))


def csv_text(rows, columns) -> str:
    """The CSV text of ``rows`` (in the given order) with ``columns``; other keys are left out."""
    buf = io.StringIO(newline="")
    wr = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    wr.writeheader()
    wr.writerows(rows)
    return buf.getvalue()


def read_rows(sw: Sweep) -> list:
    """The rows of ``sw``'s CSV as strings (none if it does not exist)."""
    if not sw.csv.exists():
        return []
    with open(sw.csv, newline="") as fh:
        return list(csv.DictReader(fh))


def plot(rows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for w, marker in zip(sorted({int(r["width"]) for r in rows}), "os^vD<>" * 4, strict=False):
        pts = sorted((float(r["feed_bytes_per_cycle"]), float(r["measured_macs_per_cycle"]),
                      float(r["model_macs_per_cycle"])) for r in rows if int(r["width"]) == w)
        x = [p[0] / w for p in pts]
        kind = {f"{r['unit']} {r.get('acc') or 'fp32'}" for r in rows if int(r["width"]) == w}
        line, = ax.plot(x, [p[1] / w for p in pts], marker, ls="none", mfc="none", ms=7,
                        label=f"D={w} measured (RTL, {'/'.join(sorted(kind))})")
        ax.plot(x, [p[2] / w for p in pts], "-", color=line.get_color(), alpha=0.5,
                label=f"D={w} feed-bound model")
    ax.set_xlabel("feed rate / unit consumption (bytes per cycle / D)")
    ax.set_ylabel("MACs per cycle / D (fraction of peak)")
    ax.set_title("Slice starvation knee: MiniLM FFN up 384x1536, M=1, fp8_e4m3, 1 unit", fontsize=10)
    runs = sorted({(r.get("revision") or "?", r.get("date") or "?") for r in rows})
    fig.text(0.01, 0.01, "python -m tb.slice.knee; runs at " + ", ".join(f"{v} ({d})" for v, d in runs),
             fontsize=6, color="0.4")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fmts", nargs="+", default=[PLAIN_FMT], choices=FMTS,
                   help="weight formats; each writes its sweep's CSV (module docstring)")
    p.add_argument("--widths", type=int, nargs="+", help="unit widths D (default: the sweep's)")
    p.add_argument("--rates", type=float, nargs="+",
                   help="feed rates as multiples of the contract's knee (default: the sweep's)")
    p.add_argument("--tree", choices=TREE_ARCHS,
                   help="the unit's column tree: words (fast build, same function) or dadda "
                        "(default: the sweep's)")
    p.add_argument("--reuse", action="store_true",
                   help="take the measurements of earlier runs from build/sim instead of simulating")
    p.add_argument("--replot", action="store_true", help="only redraw the plot from the CSV")
    args = p.parse_args(argv)
    if args.replot:
        plot(read_rows(SWEEPS["plain"]), PLOT)
        print(f"wrote {PLOT}")
        return 0
    status = 0
    for sw in SWEEPS.values():
        fmts = [f for f in args.fmts if f in sw.fmts]
        if not fmts:
            continue
        widths = args.widths or sw.widths
        ran = {(f, w) for f in fmts for w in widths}
        rows = [r for r in read_rows(sw) if _key(r) not in ran]
        for f in fmts:
            for w in widths:
                rows += measure(f, w, args.rates or sw.rates, tree=args.tree, reuse=args.reuse)
        rows = ordered(rows)
        sw.csv.parent.mkdir(parents=True, exist_ok=True)
        with open(sw.csv, "w", newline="") as fh:
            fh.write(csv_text(rows, sw.columns))
        wrote = f"{sw.csv}"
        if sw is SWEEPS["plain"]:
            plot(rows, PLOT)
            wrote += f" and {PLOT}"
        worst = max(abs(float(r["measured_macs_per_cycle"]) / float(r["model_macs_per_cycle"]) - 1)
                    for r in rows)
        print(f"wrote {wrote} ({len(rows)} rows); worst deviation from the model {worst:.2%}")
        status |= worst > 0.02
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
