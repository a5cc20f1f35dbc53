"""Functional coverage of the regression: named cover points, hit counts per process, merged reports.

Testbenches call :func:`hit` (samplers in :mod:`tb.coverage_sample` do it from the programs, the
model's exact values and what a run observed). Each process (a pytest-xdist worker, a cocotb
simulation) keeps its counts in memory and :func:`flush` writes them to
``<session folder>/<pid>.json`` (the whole process's counts, overwritten: flushing again never counts
twice). A pytest session (``tb/conftest.py``) makes a fresh folder ``build/coverage/<session>/``,
passes it to its workers and simulations in ``TB_COVERAGE_DIR`` and records it in
``build/coverage/LATEST``; :func:`merge` sums every file of a folder (by default the latest
session's), and the session prints :func:`summary` at its end. Concurrent sessions do not mix.

Every point is declared in :data:`POINTS` with the group it belongs to, what it means and, when the
design cannot produce it, why; a hit on an undeclared name is an error (a typo would otherwise be a
point that can never be hit).

    python -m tb.coverage                               # summary of build/coverage/
    python -m tb.coverage --write reports/coverage.md   # the report (make test-full writes it)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from hw.formats import BLOCK_FORMATS, CLASSES, MATRIX_FORMATS, get_format
from tb.mu.rounding import WINDOW_FRAC_BITS

__all__ = ["POINTS", "hit", "flush", "merge", "clear", "new_session", "latest", "summary", "report_md",
           "COVERAGE_DIR"]

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "build" / "coverage"
#: Where this process writes its counts (``TB_COVERAGE_DIR``, set by the pytest session).
COVERAGE_DIR = Path(os.environ.get("TB_COVERAGE_DIR", BASE / "default"))


def _points() -> dict:
    """name -> (group, meaning, reason it cannot occur or None)."""
    p = {}
    for fmt in MATRIX_FORMATS:
        f = get_format(fmt)
        for pos in ("x", "w"):
            for cls in CLASSES:
                why = None
                if cls == "nan" and not f.has_nan:
                    why = f"{fmt} has no NaN code"
                if cls == "inf" and not f.has_inf:
                    why = f"{fmt} has no Inf code"
                if cls == "subnormal" and not f.has_subnormals:
                    why = f"{fmt} has no subnormals"
                p[f"operand.{fmt}.{pos}.{cls}"] = ("operands", f"a {cls} {pos} operand reaches a lane", why)
        special = None if f.has_inf else f"{fmt} has no Inf code"
        p[f"special.{fmt}.inf_times_zero"] = ("specials", "Inf x 0 in a product (NaN)", special)
        p[f"special.{fmt}.inf_minus_inf"] = ("specials", "+Inf and -Inf products in one beat (NaN)",
                                             special)
        p[f"special.{fmt}.acc_inf_then_opposite"] = (
            "specials", "an accumulator at Inf meets the opposite Inf (NaN)", special)
        p[f"special.{fmt}.acc_nan_sticky"] = (
            "specials", "an accumulator at NaN takes another beat (stays NaN)",
            None if f.has_nan else f"{fmt} has no NaN code")
    for fmt in BLOCK_FORMATS:
        p[f"block.{fmt}.nan_scale"] = ("block scales", "a NaN scale code (x or w) makes its block NaN",
                                       None)
        p[f"block.{fmt}.scale_spread"] = (
            "block scales", f"the scale exponents of one beat and column span more than "
                            f"{WINDOW_FRAC_BITS} binades (blocks can fall below the window)",
            None if fmt != "nvfp4" else
            f"UE4M3 scale exponents lie in -9 .. 5, so a block's x + w exponent spans at most 28 < "
            f"{WINDOW_FRAC_BITS} binades (docs/numerics.md section 7)")
    for acc in ("fp32", "exact"):
        p[f"round.{acc}.inexact"] = ("rounding", "the FP32 rounding discards nonzero bits", None)
        p[f"round.{acc}.tie_even"] = ("rounding", "an exact tie at the FP32 rounding point, kept even",
                                      None)
        p[f"round.{acc}.tie_odd"] = ("rounding", "an exact tie at the FP32 rounding point, rounded "
                                                 "up to even", None)
        p[f"round.{acc}.carry_binade"] = ("rounding", "the rounding increment carries into a new "
                                                      "binade", None)
        p[f"cancel.{acc}.massive"] = ("rounding", "the exact sum loses >= 24 leading bits against "
                                                  "its largest term", None)
        p[f"cancel.{acc}.exact_zero"] = ("rounding", "nonzero terms cancel to exactly 0", None)
        p[f"overflow.{acc}.inf"] = (
            "rounding", "a finite accumulation rounds to +-Inf",
            "unreachable: the largest product (E5M2, 2**31.8) times D = 128 is below 2**39 per "
            "beat, so reaching 2**128 needs more than 2**88 beats")
    p["round.fp32.binade_up"] = ("rounding", "acc + S lands in a higher binade than acc", None)
    p["overflow.exact.guard_bits"] = ("rounding", "an exact accumulation longer than 2**guard_bits "
                                                  "beats (NaN, counted)", None)
    for name, meaning in (
            ("stall_w", "the w source pauses with beats left"),
            ("stall_x", "the x source pauses with beats left"),
            ("stall_tile", "x is valid but its tile is not loaded yet"),
            ("stall_y", "y is valid and the sink is not ready"),
            ("w_backpressure", "w is valid and the unit is not ready (both weight buffers full)"),
            ("back_to_back_swaps", "two consecutive x beats each swap in a new tile"),
            ("single_beat_tile", "a tile serves exactly one x beat"),
            ("row_change", "consecutive x beats use different accumulator rows"),
            ("row_interleave", "an accumulation is interrupted by another row's beats"),
            ("reset_mid_stream", "reset while beats are in flight, then a clean run")):
        p[f"protocol.{name}"] = ("protocol", meaning, None)
    for name, meaning in (
            ("ragged_k", "K is not a multiple of D (padded weight rows)"),
            ("ragged_n", "N is not a multiple of D (padded weight columns)"),
            ("single_element", "M = K = N = 1"),
            ("acc_overwrite", "acc = 0: y is overwritten"),
            ("acc_host_y", "acc = 1: y accumulates onto values the host wrote"),
            ("acc_chain", "acc = 2: y accumulates onto the previous command's result"),
            ("host_reads_during_run", "host scratchpad reads while commands run"),
            ("feed_starvation", "a unit waits for the HBM feed (unit_starved > 0)"),
            ("unit_backpressure", "a unit's y stream is backpressured (unit_backpressured > 0)"),
            ("done_backpressure", "the done stream is not ready while valid")):
        p[f"slice.{name}"] = ("slice", meaning, None)
    return p


POINTS = _points()
_counts: Counter = Counter()


def hit(name: str, n: int = 1) -> None:
    """Count ``n`` hits of a declared point (``n`` may be 0: the point was sampled, not hit)."""
    if name not in POINTS:
        raise KeyError(f"undeclared cover point {name!r}; declare it in tb.coverage.POINTS")
    if n:
        _counts[name] += int(n)


def flush() -> Path | None:
    """Write this process's counts to ``COVERAGE_DIR/<pid>.json`` (nothing if none)."""
    if not _counts:
        return None
    COVERAGE_DIR.mkdir(parents=True, exist_ok=True)
    out = COVERAGE_DIR / f"{os.getpid()}.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(dict(_counts), sort_keys=True))
    tmp.replace(out)
    return out


def new_session(keep: int = 4) -> Path:
    """A fresh folder for one pytest session, made this process's and its children's (through
    ``TB_COVERAGE_DIR``) and recorded as the latest; older session folders beyond ``keep`` go."""
    global COVERAGE_DIR
    BASE.mkdir(parents=True, exist_ok=True)
    old = sorted(BASE.glob("session-*"), key=lambda p: p.stat().st_mtime)
    for d in old[:max(0, len(old) - keep)]:
        clear(d)
        d.rmdir()
    folder = BASE / f"session-{datetime.datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}"
    folder.mkdir()
    os.environ["TB_COVERAGE_DIR"] = str(folder)
    COVERAGE_DIR = folder
    (BASE / "LATEST").write_text(str(folder))
    return folder


def latest() -> Path:
    """The latest session's folder (``build/coverage/LATEST``), else this process's."""
    marker = BASE / "LATEST"
    return Path(marker.read_text().strip()) if marker.exists() else COVERAGE_DIR


def clear(folder: Path) -> None:
    """Delete the counts in ``folder``."""
    for f in Path(folder).glob("*.json"):
        f.unlink(missing_ok=True)


def merge(folder: Path | None = None) -> Counter:
    """Sum the counts of every process's file in ``folder`` (default: :func:`latest`); points no
    longer declared are dropped."""
    folder = latest() if folder is None else folder
    total = Counter()
    for f in sorted(Path(folder).glob("*.json")):
        try:
            total.update({k: v for k, v in json.loads(f.read_text()).items() if k in POINTS})
        except (OSError, ValueError):
            continue   # a file being replaced right now: its process flushes again
    return total


def _groups(counts: Counter) -> dict:
    groups: dict = {}
    for name, (group, _, why) in POINTS.items():
        g = groups.setdefault(group, {"hit": 0, "open": 0, "unreachable": 0, "missed": []})
        if why is not None:
            g["unreachable"] += 1
        elif counts.get(name):
            g["hit"] += 1
        else:
            g["open"] += 1
            g["missed"].append(name)
    return groups


def summary(counts: Counter, limit: int = 12) -> list[str]:
    """Lines: per group the reachable points hit, then the first unhit points."""
    groups = _groups(counts)
    lines = []
    for group, g in groups.items():
        reach = g["hit"] + g["open"]
        lines.append(f"{group:10s} {g['hit']:3d}/{reach:3d} reachable points hit"
                     + (f" ({g['unreachable']} cannot occur)" if g["unreachable"] else ""))
    missed = [m for g in groups.values() for m in g["missed"]]
    if missed:
        more = f" (+{len(missed) - limit} more)" if len(missed) > limit else ""
        lines.append("not hit: " + ", ".join(missed[:limit]) + more)
    return lines


def report_md(counts: Counter, command: str) -> str:
    """``reports/coverage.md``: provenance, per-group table, every point with its count."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip() or "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["# Functional coverage of the regression (generated)", "",
           f"Written by `python -m tb.coverage --write` after `{command}`, revision `{rev}`, {now}, "
           f"Python {sys.version.split()[0]}. Points are declared in `tb/coverage.py`, sampled by "
           "`tb/coverage_sample.py` (`docs/verification.md`).", "",
           "| group | reachable points hit | cannot occur |", "|---|---|---|"]
    groups = _groups(counts)
    for group, g in groups.items():
        out.append(f"| {group} | {g['hit']} / {g['hit'] + g['open']} | {g['unreachable']} |")
    missed = [m for g in groups.values() for m in g["missed"]]
    out += ["", "## Reachable points not hit", ""]
    out += [f"- `{m}`: {POINTS[m][1]}" for m in missed] or ["None."]
    out += ["", "## Every point", "", "| point | hits | meaning |", "|---|---|---|"]
    for name, (_, meaning, why) in POINTS.items():
        n = counts.get(name, 0)
        out.append(f"| `{name}` | {n if why is None else 'cannot occur'} | {meaning}"
                   + (f"; {why}" if why else "") + " |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None,
                    help="folder of per-process counts (default: the latest pytest session's)")
    ap.add_argument("--write", type=Path, help="write the Markdown report here")
    ap.add_argument("--command", default="make test-full", help="the run the counts come from")
    args = ap.parse_args(argv)
    counts = merge(args.dir)
    if not counts:
        print(f"no coverage counts under {args.dir or latest()}: run the regression first (make test)",
              file=sys.stderr)
        return 1
    for line in summary(counts):
        print(line)
    if args.write:
        args.write.write_text(report_md(counts, args.command))
        print(f"wrote {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
