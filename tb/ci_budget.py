"""The CI budget: cold Verilator build times of the quick set's unit builds, and a cold-run estimate.

``make test`` on a fresh checkout (cold) builds every simulator the quick set uses; a second run
(warm) finds them built and pays only Verilator's front end and a no-op make per build. This tool

* ``builds``: builds each matrix-unit configuration the quick set uses (the quick parameters of
  ``tb/mu/test_matrix_unit.py``, which the real-tile runs share, plus the real-tile runs' own
  ``-tiles`` builds) in a fresh folder ``build/sim/cold-<variant>``, then once more (warm), and
  prints and writes the seconds of each (after the ``HW_BUILD_LOCK`` lock is held);
* ``estimate``: reads a warm ``make test`` JUnit file (wall time) and those build times and
  estimates the cold wall time as ``warm wall + sum(cold - warm build) / workers`` (the builds
  share the machine's cores with the other worker's tests).

Every build a test run makes is also logged by ``tb/sim.py`` (``build/sim/build_times.jsonl``).

Usage::

    python -m tb.ci_budget builds [--only w32-e5m2-r16 ...] [--full] [--out build/ci_builds.json]
    python -m tb.ci_budget estimate --junit build/junit.xml --builds build/ci_builds.json
"""

import argparse
import json
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tb import sim

__all__ = ["quick_units", "measure", "estimate"]


def quick_units(include_full: bool = False) -> list:
    """``(name, params)`` of every matrix-unit build the quick set makes (test ids as names; the
    real-tile runs' own builds as ``tiles-...``);
    ``include_full`` adds the ``full`` builds of ``tb/mu/test_matrix_unit.py``."""
    from hw.mu.numerics import default_acc
    from tb.mu import test_matrix_unit as tmu
    from tb.tiles import corpus, rtl

    units = []
    for p in tmu.ALL_BUILDS:
        if not include_full and any(m.name == "full" for m in p.marks):
            continue
        width, fmt, rows, _, acc, guard_bits, tree = p.values
        units.append((p.id, {"width": width, "fmt": fmt, "rows": rows, "acc": acc,
                             "guard_bits": guard_bits, "tree": tree}))
    for p in tmu.LOOP_BUILDS:           # the fp32 accumulate loop over two cycles
        if not include_full and any(m.name == "full" for m in p.marks):
            continue
        width, fmt, rows, _ = p.values
        units.append((p.id, {"width": width, "fmt": fmt, "rows": rows, "acc": None,
                             "guard_bits": None, "tree": None, "loop": 2}))
    own = {(s.width, s.fmt) for s in corpus.rtl_quick() + corpus.smoke()
           if rtl.unit_for(s.width, s.fmt)[1] == "-tiles"}
    for width, fmt in sorted(own):
        rows, _, tree = rtl.unit_for(width, fmt)
        units.append((f"tiles-w{width}-{fmt}", {"width": width, "fmt": fmt, "rows": rows,
                                                "acc": default_acc(fmt), "guard_bits": None,
                                                "tree": tree}))
    return units


def measure(name: str, params: dict, keep: bool = False) -> dict:
    """Cold and warm build seconds of one unit (its own fresh folder, removed unless ``keep``)."""
    from tb.mu.harness import SIM_BUILD_ARGS, SIM_HIER_BLOCKS, emit_unit

    verilog, _, variant, _ = emit_unit(params["width"], params["fmt"], params["rows"],
                                       tree=params["tree"], acc=params["acc"],
                                       guard_bits=params["guard_bits"], loop=params.get("loop"))
    folder = f"cold-{variant}"
    kw = {"hier_blocks": SIM_HIER_BLOCKS, "build_args": SIM_BUILD_ARGS}
    cold = sim.build(folder, verilog, "mu", fresh=True, **kw)
    warm = sim.build(folder, verilog, "mu", **kw)
    if not keep:
        shutil.rmtree(sim.BUILD / folder, ignore_errors=True)
    return {"name": name, "variant": variant, "cold_s": round(cold, 1), "warm_s": round(warm, 1)}


def estimate(junit: Path, builds: list, workers: int = 2) -> dict:
    """Cold wall-time estimate from a warm JUnit file and :func:`measure` results (seconds)."""
    root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else next(root.iter("testsuite"))
    warm = float(suite.get("time"))
    extra = sum(b["cold_s"] - b["warm_s"] for b in builds)
    return {"warm_wall_s": warm, "build_extra_s": round(extra, 1), "workers": workers,
            "cold_wall_s": round(warm + extra / workers, 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("builds", help="measure the quick set's unit builds, cold and warm")
    b.add_argument("--only", nargs="+", default=(),
                   help="measure only these builds (names as printed, e.g. w128-e4m3-r16-twords)")
    b.add_argument("--full", action="store_true",
                   help="also offer the full set's unit builds to --only")
    b.add_argument("--out", type=Path, default=sim.BUILD.parent / "ci_builds.json")
    b.add_argument("--keep", action="store_true", help="keep the build folders")
    e = sub.add_parser("estimate", help="cold wall time from a warm JUnit file and build times")
    e.add_argument("--junit", type=Path, required=True)
    e.add_argument("--builds", type=Path, required=True)
    e.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    if args.cmd == "estimate":
        print(json.dumps(estimate(args.junit, json.loads(args.builds.read_text()), args.workers)))
        return 0
    offered = dict(quick_units(args.full))
    unknown = [n for n in args.only if n not in offered]
    if unknown:
        print(f"no {'' if args.full else 'quick-set '}unit build named {', '.join(unknown)}; "
              f"builds: {', '.join(offered)}", file=sys.stderr)
        return 2
    units = [(n, offered[n]) for n in (args.only or offered)]   # in --only's order
    done = json.loads(args.out.read_text()) if args.out.exists() else []
    for name, params in units:
        r = measure(name, params, args.keep)
        print(f"{r['name']:32s} {r['variant']:36s} cold {r['cold_s']:7.1f} s  warm {r['warm_s']:6.1f} s",
              flush=True)
        done = [d for d in done if d["name"] != name] + [r]
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(done, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
