"""Benchmark of the matrix unit's verification harness (a script, not a test).

Prints, per width: Verilog generation seconds, Verilator build seconds (a fresh build folder
``build/sim/<variant>-bench``, timed after the build lock is taken), and the cocotb simulation rate in
x-beats/s on a long full-rate run (model and stimulus generation excluded), in both testbench modes.

    HW_BUILD_LOCK=/tmp/heavy.lock python -m tb.mu.bench --widths 64 128 --beats 20000

Budgets (issue 4): Verilator build of D = 128 <= 10 min; cocotb >= 20k x-beats/s at D = 64.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from tb import sim

from .harness import SIM_BUILD_ARGS, SIM_HIER_BLOCKS, emit_unit


def build_seconds(width: int, fmt: str, rows: int, fresh: bool = True) -> tuple[float, str]:
    """Time one Verilator build of the unit; return (seconds, build folder name)."""
    verilog, _, variant, _ = emit_unit(width, fmt, rows)
    name = f"{variant}-bench"
    return sim.build(name, verilog, "mu", hier_blocks=SIM_HIER_BLOCKS, build_args=SIM_BUILD_ARGS,
                     fresh=fresh), name


def sim_rate(width: int, fmt: str, rows: int, beats: int, exact: bool) -> dict:
    """Run the ``bench`` cocotb test; return its JSON (x_beats_per_s, cycles_per_s, ...)."""
    verilog, latency, variant, _ = emit_unit(width, fmt, rows)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        sim.run(f"{variant}-bench", verilog, "mu", "tb.mu.mu_cocotb", testcase="bench",
                env={"MU_WIDTH": width, "MU_FMT": fmt, "MU_ROWS": rows, "MU_LATENCY": latency,
                     "MU_BENCH": beats, "MU_BENCH_OUT": out, "MU_BENCH_EXACT": int(exact)},
                hier_blocks=SIM_HIER_BLOCKS, build_args=SIM_BUILD_ARGS)
        return json.loads(out.read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--fmt", default="fp8_e4m3")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--beats", type=int, default=20000, help="x beats of the rate run")
    ap.add_argument("--no-rate", action="store_true", help="only build times")
    ap.add_argument("--reuse", action="store_true", help="keep an existing bench build")
    args = ap.parse_args(argv)
    for w in args.widths:
        t0 = time.perf_counter()
        emit_unit(w, args.fmt, args.rows)
        gen = time.perf_counter() - t0
        secs, _ = build_seconds(w, args.fmt, args.rows, fresh=not args.reuse)
        print(f"D={w} {args.fmt} R={args.rows}: verilog {gen:.1f} s, verilator build {secs:.1f} s",
              flush=True)
        if not args.no_rate:
            for exact in (False, True):
                r = sim_rate(w, args.fmt, args.rows, args.beats, exact)
                mode = "exact (2 triggers/cycle)" if exact else "fast (1 trigger/cycle)"
                print(f"D={w} cocotb {mode}: {r['x_beats_per_s']:.0f} x-beats/s "
                      f"({r['x_beats']} beats, {r['cycles']} cycles, {r['wall_s']:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
