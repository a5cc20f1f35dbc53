"""Benchmark: time to generate the matrix unit's Verilog (the <= 60 s budget at D = 128).

Measures ``hw.designs.get_design("mu").emit(...)`` (elaboration + one Verilog conversion per
distinct block, exactly what ``python -m hw gen mu`` does) in a fresh subprocess per variant, so
import and cache effects do not leak between runs, and prints one line per variant. It is a script
that measures and prints, not a test.

Usage::

    python -m flows.bench_mu                       # the study widths x every matrix format
    python -m flows.bench_mu --width 128 --fmt fp8_e5m2
"""

import argparse
import json
import subprocess
import sys
import time

from hw.designs import STUDY_WIDTHS
from hw.formats import MATRIX_FORMATS

BUDGET_S = 60.0

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from hw.designs import get_design
net = get_design("mu").emit({"width": int(sys.argv[1]), "fmt": sys.argv[2]})
text = net.verilog
dt = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": dt, "bytes": len(text), "modules": len(net.modules), "rss_mb": rss}))
"""


def measure(width: int, fmt: str) -> dict:
    """Generate ``mu`` at (width, fmt) in a subprocess; return seconds, Verilog size, peak RSS."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(width), fmt], check=True,
                         capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["wall_s"] = time.perf_counter() - t0  # including interpreter start and imports
    return res


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m flows.bench_mu", description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, action="append",
                   help=f"D (repeatable; default {' '.join(map(str, STUDY_WIDTHS))})")
    p.add_argument("--fmt", action="append", choices=MATRIX_FORMATS,
                   help="format (repeatable; default all)")
    args = p.parse_args(argv)
    widths = args.width or list(STUDY_WIDTHS)
    fmts = args.fmt or list(MATRIX_FORMATS)
    print(f"{'variant':<24} {'gen s':>7} {'wall s':>7} {'Verilog MB':>10} {'modules':>7} "
          f"{'peak MB':>8}  budget {BUDGET_S:.0f} s")
    worst = 0.0
    for w in widths:
        for f in fmts:
            r = measure(w, f)
            worst = max(worst, r["wall_s"])
            print(f"{f'mu-w{w}-{f}':<24} {r['seconds']:7.1f} {r['wall_s']:7.1f} "
                  f"{r['bytes'] / 1e6:10.2f} {r['modules']:7d} {r['rss_mb']:8.0f}", flush=True)
    print(f"worst wall time {worst:.1f} s: {'within' if worst <= BUDGET_S else 'OVER'} the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
