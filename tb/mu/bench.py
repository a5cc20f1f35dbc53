"""Benchmark of the matrix unit's verification harness (a script, not a test).

Prints, per width: Verilog generation seconds, Verilator build seconds (a fresh build folder
``build/sim/<variant>-bench``, timed after the build lock is taken), and the cocotb simulation rate in
x-beats/s on a long full-rate run (model and stimulus generation excluded), in both testbench modes
(exact: handshakes sampled once settled, two triggers per cycle; fast: transfers read from the
unit's counters, one trigger per cycle; :mod:`tb.lib.clocked`), and the simulator's own rate with no
Python code per cycle (a bound on any testbench of that build).

    HW_BUILD_LOCK=/tmp/heavy.lock python -m tb.mu.bench --widths 64 128 --beats 20000
    HW_SIM_FLAT=1 python -m tb.mu.bench --widths 64 --tree words --beats 8000   # fastest variant

Measured build times and rates, with their dates, are in ``reports/sim_speed.md``; how the builds
are made is in ``docs/mu_interface.md`` ("Simulation and lint at large D").
"""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from hw.formats import MATRIX_FORMATS
from hw.mu.tree import TREE_ARCHS
from tb import sim

from .harness import SIM_BUILD_ARGS, SIM_HIER_BLOCKS, emit_unit


def _build_args(threads: int) -> tuple:
    if threads < 1:
        raise ValueError(f"threads must be >= 1, not {threads}")
    return SIM_BUILD_ARGS + (("--threads", str(threads)) if threads > 1 else ())


def _folder(variant: str, threads: int) -> str:
    """One build folder per configuration (threads, ``HW_SIM_FLAT``), so none overwrites another."""
    flat = os.environ.get("HW_SIM_FLAT", "0") not in ("", "0")
    return f"{variant}-bench" + (f"-t{threads}" if threads > 1 else "") + ("-flat" if flat else "")


def build_seconds(width: int, fmt: str, rows: int, fresh: bool = True,
                  tree: str | None = None, threads: int = 1) -> tuple[float, str]:
    """Time one Verilator build of the unit.

    Parameters
    ----------
    width, fmt, rows :
        Unit parameters.
    fresh : bool
        Delete the build folder first (a full build; else an incremental one).
    tree : str or None
        Column tree architecture (:data:`hw.mu.tree.TREE_ARCHS`; None: the design's default).
    threads : int
        Verilator model threads (``--threads``).

    Returns
    -------
    tuple of (float, str)
        Build seconds and the build folder's name.
    """
    verilog, _, variant, _ = emit_unit(width, fmt, rows, tree=tree)
    name = _folder(variant, threads)
    return sim.build(name, verilog, "mu", hier_blocks=SIM_HIER_BLOCKS,
                     build_args=_build_args(threads), fresh=fresh), name


def sim_rate(width: int, fmt: str, rows: int, beats: int, exact: bool,
             tree: str | None = None, threads: int = 1) -> dict:
    """Run the ``bench`` cocotb test on the build of :func:`build_seconds`.

    Parameters
    ----------
    beats : int
        x beats of the full-rate run.
    exact : bool
        The testbench's exact mode (two triggers per cycle) instead of the fast one.
    width, fmt, rows, tree, threads :
        As :func:`build_seconds`.

    Returns
    -------
    dict
        ``x_beats``, ``cycles``, ``wall_s``, ``x_beats_per_s``, ``cycles_per_s``,
        ``x_beats_per_cpu_s`` (per CPU second of the simulation process: Verilator and cocotb,
        less sensitive to other jobs on the machine) and
        ``simulator_cycles_per_s`` (the simulator alone, no Python per cycle).
    """
    verilog, latency, variant, _ = emit_unit(width, fmt, rows, tree=tree)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        sim.run(_folder(variant, threads), verilog, "mu", "tb.mu.mu_cocotb", testcase="bench",
                env={"MU_WIDTH": width, "MU_FMT": fmt, "MU_ROWS": rows, "MU_LATENCY": latency,
                     "MU_BENCH": beats, "MU_BENCH_OUT": out, "MU_BENCH_EXACT": int(exact)},
                hier_blocks=SIM_HIER_BLOCKS, build_args=_build_args(threads))
        return json.loads(out.read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--fmt", default="fp8_e4m3", choices=MATRIX_FORMATS, help="element format")
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--tree", choices=TREE_ARCHS, default=None,
                    help="column tree architecture (default: the design's, dadda)")
    ap.add_argument("--threads", type=int, default=1, help="Verilator model threads")
    ap.add_argument("--beats", type=int, default=20000, help="x beats of the rate run")
    ap.add_argument("--no-rate", action="store_true", help="only build times")
    ap.add_argument("--reuse", action="store_true", help="keep an existing bench build")
    args = ap.parse_args(argv)
    for w in args.widths:
        t0 = time.perf_counter()
        emit_unit(w, args.fmt, args.rows, tree=args.tree)
        gen = time.perf_counter() - t0
        secs, _ = build_seconds(w, args.fmt, args.rows, fresh=not args.reuse, tree=args.tree,
                                threads=args.threads)
        print(f"D={w} {args.fmt} R={args.rows}: verilog {gen:.1f} s, verilator build {secs:.1f} s",
              flush=True)
        if not args.no_rate:
            for exact in (False, True):
                r = sim_rate(w, args.fmt, args.rows, args.beats, exact, tree=args.tree,
                             threads=args.threads)
                mode = "exact (2 triggers/cycle)" if exact else "fast (1 trigger/cycle)"
                print(f"D={w} cocotb {mode}: {r['x_beats_per_s']:.0f} x-beats/s, "
                      f"{r['x_beats_per_cpu_s']:.0f} per CPU second "
                      f"({r['x_beats']} beats, {r['cycles']} cycles, {r['wall_s']:.1f} s); "
                      f"simulator alone {r['simulator_cycles_per_s']:.0f} cycles/s", flush=True)


if __name__ == "__main__":
    main()
