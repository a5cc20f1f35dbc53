"""The feed knee of MX slices, measured in RTL: MACs per cycle at feed rates around the knee.

A slice of two MX units of D = 32 (``mxfp8_e4m3`` and ``mxfp4_e2m1``, beats of twice the units'
consumption) runs the real MiniLM layer-0 FFN up projection (384 x 1536, M = 1, OCP MX quantized,
bit-exact against the block model) with the testbench's HBM model limited to ``rate`` times the
contract's knee ``units * D * (b + 8/B) / 8`` bytes per cycle (:func:`perf.contract.knee_feed`).
Each row gives the measured useful MACs per command cycle, the block feed model
(:func:`perf.contract.slice_macs_per_cycle`, scale bytes counted, rows one per cycle) and the
plain model that ignores the scales (:meth:`perf.contract.Product.macs_per_cycle` at ``b`` bits).

Usage: ``python -m tb.slice.knee_mx [--fmts mxfp8_e4m3 mxfp4_e2m1] [--rates 0.9 1.1]``; writes
``reports/knee_mx.csv`` (rows of formats not run are kept; another tool owns ``reports/knee.csv``).
"""

import argparse
import csv
import math
import time
from pathlib import Path

from hw.formats import get_block_format, get_format
from perf.contract import Product, knee_feed, slice_knee_feed, slice_macs_per_cycle
from tb import sim
from tb.slice.harness import run_cases
from tb.slice.knee import SHAPE  # the same MiniLM FFN up tile as the plain knee

REPO = Path(__file__).resolve().parents[2]
CSV = REPO / "reports" / "knee_mx.csv"
RATES = (0.9, 1.1)
FMTS = ("mxfp8_e4m3", "mxfp4_e2m1")
UNITS, WIDTH = 2, 32
COLUMNS = ("fmt", "width", "units", "feed_bytes_per_cycle", "rate_over_knee", "knee_feed",
           "slice_knee_feed", "measured_macs_per_cycle", "model_macs_per_cycle",
           "model_without_scales")


def mx_slice(fmt: str) -> dict:
    """Slice parameters of the MX runs (also the full tests'): two units of D = 32, beats of twice
    the contract's knee."""
    return {"units": UNITS, "width": WIDTH, "fmt": fmt, "spad_bytes": 16384,
            "feed_bytes": int(2 * knee_feed(WIDTH, fmt, units=UNITS))}


def measure(fmt: str, rates, latency: int = 20) -> list:
    """Run the MiniLM tile at ``rates`` (multiples of the knee); return CSV rows (dicts)."""
    knee = knee_feed(WIDTH, fmt, units=UNITS)
    cases = [{"minilm": "ffn_up", "layer": 0, "token": 1, "rate": r * knee, "latency": latency,
              "seed": 31, "garbage": False} for r in rates]
    name = f"slice-mu-u{UNITS}w{WIDTH}-{fmt}"
    t0 = time.time()
    res, _ = run_cases(name, cases, numerics="mu", out=str(sim.BUILD / name / "knee.json"),
                       **mx_slice(fmt))
    print(f"{fmt}: {len(cases)} rates in {time.time() - t0:.0f} s")
    bits = get_format(get_block_format(fmt).element).bits
    prod = Product(*SHAPE, WIDTH, units=UNITS)
    rows = []
    for r, rate, case in zip(res, rates, cases, strict=True):
        assert r["macs"][0] == math.prod(SHAPE), "the case is not the modelled shape"
        rows.append({"fmt": fmt, "width": WIDTH, "units": UNITS,
                     "feed_bytes_per_cycle": round(case["rate"], 4), "rate_over_knee": rate,
                     "knee_feed": knee, "slice_knee_feed": round(slice_knee_feed(WIDTH, fmt, UNITS), 4),
                     "measured_macs_per_cycle": round(r["macs"][0] / r["cmd_cycles"][0], 4),
                     "model_macs_per_cycle": round(slice_macs_per_cycle(prod, fmt, case["rate"]), 4),
                     "model_without_scales": round(prod.macs_per_cycle(bits, case["rate"]), 4)})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fmts", nargs="+", default=list(FMTS), choices=FMTS)
    p.add_argument("--rates", type=float, nargs="+", default=list(RATES),
                   help="feed rates as multiples of the contract's knee")
    args = p.parse_args(argv)
    rows = []
    if CSV.exists():   # rows of formats not run now are kept, so formats can run separately
        with open(CSV) as fh:
            rows = [{k: (v if k == "fmt" else int(v) if k in ("width", "units") else float(v))
                     for k, v in r.items()}
                    for r in csv.DictReader(fh) if r["fmt"] not in args.fmts]
    rows += [row for f in args.fmts for row in measure(f, args.rates)]
    rows.sort(key=lambda r: (r["fmt"], r["feed_bytes_per_cycle"]))
    CSV.parent.mkdir(parents=True, exist_ok=True)
    with open(CSV, "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=COLUMNS)
        wr.writeheader()
        wr.writerows(rows)
    for r in rows:
        print(r)
    worst = max(abs(r["measured_macs_per_cycle"] / r["model_macs_per_cycle"] - 1) for r in rows)
    print(f"wrote {CSV} ({len(rows)} rows); worst deviation from the block feed model {worst:.2%}")
    return 0 if worst <= 0.02 else 1


if __name__ == "__main__":
    raise SystemExit(main())
