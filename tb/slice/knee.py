"""The starvation knee: MACs per cycle of a slice against its HBM feed rate, measured in RTL simulation.

For each width D, one slice of one real matrix unit (fp8_e4m3, beats of ``2*D`` bytes so the port
can carry twice what the unit consumes) runs the real MiniLM layer-0 FFN up projection
(384 x 1536, M = 1) with the testbench's HBM model limited to ``rate`` bytes per cycle, for rates
from 0.25x to 2x of the unit's consumption ``D * b / 8``. Every run is checked bit-exact against the
numerics model (``tb/slice/slice_cocotb.py``). The unit is built with the word-level column tree by
default (``--tree words``: the same function as the Dadda tree synthesis maps, proved in
``docs/verification.md``, and the same latency and stream timing; it builds and simulates far
faster at D = 64 and 128); the CSV's ``unit`` column names the build, ``matrix_unit(words)``.

The model column is the throughput contract's steady state (:meth:`perf.contract.Product.
macs_per_cycle`: useful MACs over the schedule's cycles, each tile holding the unit for as long as
the feed needs to bring the next one). At batch 1 (every weight used once) that is the feed-bound
line ``min(rate * 8 / b, units * D) * useful_fraction`` (``useful_fraction`` = useful weight
elements / elements streamed; 1 for this shape at every D). The measured value is useful MACs
(M*K*N) over the command's cycles (acceptance to last write), so it includes the fill and drain time
the model leaves out.

Usage: ``python -m tb.slice.knee [--widths 32 64 128] [--rates 0.25 0.5 ...] [--tree dadda]``
(``--widths 8 --rates 0.5 1`` is the smallest run); writes
``reports/knee.csv`` (each row with the revision and date of its run) and
``reports/plots/knee.png`` (rows of widths not run are kept from the existing CSV, so widths can be
run separately; ``--replot`` only redraws the plot).
"""

import argparse
import csv
import json
import math
import time
from pathlib import Path

from flows.synth.metrics import git_revision
from hw.mu.tree import TREE_ARCHS
from perf.contract import Product
from tb import sim
from tb.slice.harness import run_cases

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "reports" / "knee.csv"
PLOT = REPO / "reports" / "plots" / "knee.png"
RATES = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)
COLUMNS = ("width", "feed_bytes_per_cycle", "measured_macs_per_cycle", "model_macs_per_cycle", "unit",
           "revision", "date")
#: The swept product: MiniLM layer-0 FFN up projection, one token (M x K x N).
SHAPE = (1, 384, 1536)


def model_macs(rate: float, width: int, units: int = 1, bits: int = 8) -> float:
    """The contract's MACs per cycle of :data:`SHAPE` at ``rate`` bytes per cycle (module docstring)."""
    return Product(*SHAPE, width, units=units).macs_per_cycle(bits, feed=rate)


def measure(width: int, rates, latency: int = 20, tree: str = "words", reuse: bool = False) -> list:
    """Run the sweep for one width; return CSV rows (dicts).

    ``tree`` is the unit's column tree (``words`` or ``dadda``); the ``unit`` column records it.
    ``reuse`` reads the measurements of an earlier run of the same width and tree from its build
    folder instead of simulating.
    """
    consume = width  # bytes per cycle one fp8 unit takes
    cases = [{"minilm": "ffn_up", "layer": 0, "token": 1, "rate": r * consume, "latency": latency,
              "seed": 11, "garbage": False} for r in rates]
    t0 = time.time()
    name = f"slice-knee-{tree}-u1w{width}"
    if reuse and (sim.BUILD / name / "results.json").exists():
        res = json.loads((sim.BUILD / name / "results.json").read_text())
        cases = [r["case"] for r in res]
    else:
        res, _ = run_cases(name, cases, numerics="mu", tree=tree, units=1, width=width,
                           feed_bytes=2 * width, spad_bytes=max(16384, 4 * width * 64))
    print(f"D={width}: {len(cases)} rates in {time.time() - t0:.0f} s (build and simulation, "
          f"bit-exact)")
    rows = []
    for r, case in zip(res, cases, strict=True):
        assert r["macs"][0] == math.prod(SHAPE), "the case is not the modelled shape"
        measured = r["macs"][0] / r["cmd_cycles"][0]
        rows.append({"width": width, "feed_bytes_per_cycle": case["rate"],
                     "measured_macs_per_cycle": round(measured, 4),
                     "model_macs_per_cycle": round(model_macs(case["rate"], width), 4),
                     "unit": f"matrix_unit({tree})", "revision": git_revision(),
                     "date": time.strftime("%Y-%m-%d", time.gmtime())})
    return rows


def plot(rows, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for w, marker in zip(sorted({int(r["width"]) for r in rows}), "os^vD<>" * 4, strict=False):
        pts = sorted((float(r["feed_bytes_per_cycle"]), float(r["measured_macs_per_cycle"]),
                      float(r["model_macs_per_cycle"])) for r in rows if int(r["width"]) == w)
        x = [p[0] / w for p in pts]
        kind = {r["unit"] for r in rows if int(r["width"]) == w}
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
    p.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128])
    p.add_argument("--rates", type=float, nargs="+", default=list(RATES),
                   help="feed rates as multiples of the unit's consumption")
    p.add_argument("--tree", choices=TREE_ARCHS, default="words",
                   help="the unit's column tree: words (fast build, same function) or dadda")
    p.add_argument("--reuse", action="store_true",
                   help="take the measurements of earlier runs from build/sim instead of simulating")
    p.add_argument("--replot", action="store_true", help="only redraw the plot from the CSV")
    args = p.parse_args(argv)
    if args.replot:
        with open(CSV) as fh:
            plot(list(csv.DictReader(fh)), PLOT)
        print(f"wrote {PLOT}")
        return 0
    old = []
    if CSV.exists():
        with open(CSV) as fh:
            old = [r for r in csv.DictReader(fh) if int(r["width"]) not in args.widths]
    rows = list(old)
    for w in args.widths:
        rows += measure(w, args.rates, tree=args.tree, reuse=args.reuse)
    rows.sort(key=lambda r: (int(r["width"]), float(r["feed_bytes_per_cycle"])))
    CSV.parent.mkdir(parents=True, exist_ok=True)
    with open(CSV, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=COLUMNS)
        wr.writeheader()
        wr.writerows(rows)
    plot(rows, PLOT)
    worst = max(abs(float(r["measured_macs_per_cycle"]) / float(r["model_macs_per_cycle"]) - 1)
                for r in rows)
    print(f"wrote {CSV} ({len(rows)} rows) and {PLOT}; worst deviation from the model {worst:.2%}")
    return 0 if worst <= 0.02 else 1


if __name__ == "__main__":
    raise SystemExit(main())
