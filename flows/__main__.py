"""``python -m flows``: the synthesis/QoR command line (what the Makefile's targets call).

Commands
--------
``synth --design D [--set k=v ...] [--liberty F] [--clock-ps P] [--flow auto|flat|hier] [--yosys-booth]
[--drive-limit liberty|tables]``
    Synthesize one registered design variant (``make synth``).
``synth --verilog FILE [--verilog FILE ...] --top NAME [...]``
    Synthesize user Verilog with the same library, STA and metrics (``make synth VERILOG=... TOP=...``).
    Reports go to ``build/reports/qor/<variant>/``; ``--publish`` writes the committed
    ``reports/qor/<variant>/``, ``--reports-dir DIR`` writes ``DIR/<variant>/``; the folder name
    adds ``-flat`` / ``-hier`` (a flow other than the design's default), ``-clk<ps>`` (a clock
    target) and ``-tables`` (the drive repair also buffering nets past their driver's load tables,
    :data:`flows.synth.repair.DRIVE_LIMITS`), so runs that can differ never share a folder.
``pnr --design D [--set k=v ...] [--util U] [--no-checks]`` or ``pnr --verilog FILE --top NAME``
    Synthesize (flat), place, route, check (DRC, LVS) and time one design with OpenSTA and the
    routed parasitics (``make pnr``); reports in ``build/reports/pnr/<variant>-u<percent>/``.
``check [--update] [--variant NAME ...]``
    The QoR regression gate against ``reports/qor/rules-base.json`` (``make qor-check/qor-update``).
``bf16-compare``
    Generate ``reports/qor/bf16_mul_comparison.md`` (all BF16 multiplier variants side by side).
``prove``
    Formal equivalence of two architectures (:mod:`flows.prove`, ``make prove``).
``qor``
    The width x format sweep and the cross-width report (:mod:`flows.sweep.qor`, ``make qor``).
``sweep``
    Any grid of synthesis or function jobs (:mod:`flows.sweep.cli`).
``report-qor``
    Only the cross-width report (:mod:`flows.report.qor`).
``power``
    Energy per MAC of the matrix unit on a workload (:mod:`flows.power.cli`, ``make power``).
``explore``
    Verified design-space search (:mod:`flows.explore.cli`, ``make explore``).
``pnr-study [--run FMT:D ...]``
    Routed ``exact`` matrix-unit columns against their pre-route numbers, ``reports/physical.md``
    (:mod:`flows.pnr_study`, ``make pnr-study``).
"""

import argparse
import os
import sys

from .paths import PUBLISHED_QOR

#: Commands with their own argument parser: name -> (module, one-line help).
_DELEGATED = {
    "prove": ("flows.prove", "formal equivalence of two architectures"),
    "qor": ("flows.sweep.qor", "width x format synthesis sweep, then the cross-width report"),
    "sweep": ("flows.sweep.cli", "run a grid of synthesis or function jobs"),
    "report-qor": ("flows.report.qor", "regenerate reports/qor_comparison.md from the metrics"),
    "power": ("flows.power.cli", "energy per MAC from a gate-level simulation of the mapped netlist"),
    "explore": ("flows.explore.cli", "verified design-space search (Optuna; verify, synthesize, Pareto)"),
    "pnr-study": ("flows.pnr_study", "routed matrix-unit columns: reports/physical.md (--run FMT:D to run)"),
}


#: Commands that take the drive limit (synth) or run no drive repair (they read metrics, or prove).
_NO_REPAIR = ("synth", "report-qor", "bf16-compare", "prove")


def _parse_sets(items):
    given = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise SystemExit(f"python -m flows synth: --set {it!r}: expected key=value "
                             "(e.g. --set arch=booth4)")
        given[k.strip()] = v.strip()
    return given


def _parser():
    from .synth.repair import DEFAULT_DRIVE_LIMIT, DRIVE_LIMITS

    p = argparse.ArgumentParser(prog="python -m flows", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("synth", help="synthesize a design variant or user Verilog, report area and timing")
    s.add_argument("--design", default=os.environ.get("DESIGN") or "mu")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="generator option (repeatable), e.g. --set arch=booth4 --set stages=0")
    s.add_argument("--verilog", action="append", default=[], metavar="FILE",
                   help="synthesize this Verilog instead of a registered design (repeatable; needs --top)")
    s.add_argument("--top", default=None, help="top module of --verilog")
    s.add_argument("--liberty", default=None, help="liberty file (default: $LIBERTY, $PDK_ROOT, OSU 0.18um)")
    s.add_argument("--clock-ps", default=None, help="target period for ABC in ps (default: $CLOCK_PS)")
    s.add_argument("--flow", choices=("auto", "flat", "hier"), default=os.environ.get("FLOW") or "auto",
                   help="flat, by blocks (hier) or auto: by blocks when the design has marked blocks")
    s.add_argument("--yosys-booth", action="store_true", help="map multipliers with Yosys's synth -booth")
    s.add_argument("--drive-limit", choices=tuple(DRIVE_LIMITS),
                   default=os.environ.get("DRIVE_LIMIT") or None,
                   help="nets the drive repair buffers ($DRIVE_LIMIT): "
                        + "; ".join(f"{k}: {v}" for k, v in DRIVE_LIMITS.items())
                        + f" (default {DEFAULT_DRIVE_LIMIT})")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--publish", action="store_true",
                       help="write the committed reports/qor/<variant>/ "
                       "(default build/reports/qor/<variant>/)")
    where.add_argument("--reports-dir", default=None, help="write DIR/<variant>/")
    where.add_argument("--outdir", default=None, help="write exactly this report directory")
    r = sub.add_parser("pnr", help="synthesize, place, route, check and time a design (qflow, OpenSTA)")
    r.add_argument("--design", default=os.environ.get("DESIGN") or "mu")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="generator option")
    r.add_argument("--verilog", action="append", default=[], metavar="FILE", help="user (System)Verilog")
    r.add_argument("--top", default=None, help="top module of --verilog")
    r.add_argument("--liberty", default=None, help="liberty file (must be the OSU 0.18 um one)")
    r.add_argument("--clock-ps", default=None, help="target period for ABC in ps")
    r.add_argument("--yosys-booth", action="store_true", help="map multipliers with Yosys's synth -booth")
    r.add_argument("--util", default=os.environ.get("UTIL") or None,
                   help="target utilization setting the die size (default 0.6)")
    r.add_argument("--block", default=os.environ.get("BLOCK") or None,
                   help="place and route one module of the hierarchy (name or unique prefix, e.g. mu_col)")
    r.add_argument("--hier", action="store_true", default=bool(os.environ.get("HIER")),
                   help="hierarchical: the top's one block type laid out once as a macro, the top placed "
                   "and routed around its copies (e.g. bf16_bank, mu)")
    r.add_argument("--top-util", default=os.environ.get("TOP_UTIL") or None,
                   help="with --hier: target utilization of the top's cell rows (default 0.5)")
    r.add_argument("--gap", default=os.environ.get("GAP") or None,
                   help="with --hier: space between neighbouring macros in um (default 0: abutted)")
    r.add_argument("--place-fast", type=int, default=int(os.environ.get("PLACE_FAST") or 0) or None,
                   help="graywolf effort divisor TWSC*fast (large blocks; default: its full effort)")
    r.add_argument("--no-graywolf-groute", action="store_true",
                   help="skip graywolf's own global routing (qrouter routes everything; large blocks)")
    r.add_argument("--no-route-cleanup", action="store_true",
                   help="bounded qrouter run for large blocks: stage 1, two stage-2 passes, no cleanup; "
                   "nets left unrouted are counted and timed without wires")
    r.add_argument("--no-route-clock", action="store_true",
                   help="leave the clock nets unrouted (timing uses an ideal clock either way; large blocks; "
                   "with --hier: the block's, and its LVS is skipped; the top's clock is never routed)")
    r.add_argument("--no-rebuffer", action="store_true",
                   help="with --hier: keep the drive repair's buffer trees in the top as synthesized "
                   "(default: rebuilt by position once placed, repeater chains along the macro row)")
    r.add_argument("--reuse-layout", action="store_true",
                   help="re-read the layout an earlier run with the same settings routed (redo SPEF, timing)")
    r.add_argument("--no-checks", action="store_true", help="skip magic DRC and netgen LVS")
    r.add_argument("--step-timeout", default=os.environ.get("STEP_TIMEOUT") or None, metavar="SECONDS",
                   help="wall-clock limit of each qflow step (default 3600); a step past it is stopped "
                   "and its progress recorded")
    r.add_argument("--outdir", default=None, help="write exactly this report directory")
    c = sub.add_parser("check", help="QoR regression gate against reports/qor/rules-base.json")
    c.add_argument("--update", action="store_true", help="refresh the golden limits instead")
    c.add_argument("--variant", action="append", default=None, metavar="NAME",
                   help="check only this gated variant (repeatable)")
    sub.add_parser("bf16-compare", help="write reports/qor/bf16_mul_comparison.md")
    for name, (_, text) in _DELEGATED.items():
        sub.add_parser(name, add_help=False, help=text)
    return p


def _synth(args):
    from .synth.flow import run, run_verilog

    clock = args.clock_ps if args.clock_ps is not None else os.environ.get("CLOCK_PS") or None
    reports_dir = PUBLISHED_QOR if args.publish else args.reports_dir
    if args.verilog or args.top:
        if args.set:
            raise ValueError("--set applies to registered designs; with --verilog, give --top only")
        run_verilog(args.verilog, args.top, liberty=args.liberty, clock_ps=clock, booth=args.yosys_booth,
                    outdir=args.outdir, reports_dir=reports_dir, drive_limit=args.drive_limit)
        return 0
    run(args.design, _parse_sets(args.set), liberty=args.liberty, clock_ps=clock, flow=args.flow,
        booth=args.yosys_booth, outdir=args.outdir, reports_dir=reports_dir, drive_limit=args.drive_limit)
    return 0


def _number(value, option):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{option} must be a number, not {value!r}") from None


def _pnr(args):
    from .pnr.flow import DEFAULT_UTIL, run_pnr

    clock = args.clock_ps if args.clock_ps is not None else os.environ.get("CLOCK_PS") or None
    util = args.util if args.util is not None else DEFAULT_UTIL
    timeout = {"step_timeout_s": args.step_timeout} if args.step_timeout is not None else {}
    if args.no_rebuffer and not args.hier:
        raise ValueError("--no-rebuffer chooses how the top of a hierarchical run is buffered: add --hier "
                         "(HIER=1) or leave it out")
    if args.hier:
        from .pnr.hierflow import run_pnr_hier

        if args.verilog or args.top or args.block or args.liberty or clock:
            raise ValueError("--hier places and routes a registered design (--design, --set) with the OSU "
                             "cells; leave out --verilog, --top, --block, --liberty and --clock-ps")
        extra = {k: _number(v, name) for k, v, name in (("top_util", args.top_util, "--top-util"),
                                                        ("gap", args.gap, "--gap")) if v is not None}
        run_pnr_hier(args.design, _parse_sets(args.set), util=_number(util, "--util"), fast=args.place_fast,
                     groute=not args.no_graywolf_groute, route_clock=not args.no_route_clock,
                     rebuffer_top=not args.no_rebuffer, checks=not args.no_checks, outdir=args.outdir,
                     reuse=args.reuse_layout, **extra,
                     **timeout)
    elif args.verilog or args.top:
        if args.set:
            raise ValueError("--set applies to registered designs; with --verilog, give --top only")
        run_pnr(verilog=args.verilog, top=args.top, util=util, liberty=args.liberty, clock_ps=clock,
                booth=args.yosys_booth, outdir=args.outdir, checks=not args.no_checks,
                fast=args.place_fast, groute=not args.no_graywolf_groute,
                cleanup=not args.no_route_cleanup, route_clock=not args.no_route_clock,
                reuse=args.reuse_layout, **timeout)
    else:
        run_pnr(args.design, _parse_sets(args.set), block=args.block, util=util, liberty=args.liberty,
                clock_ps=clock, booth=args.yosys_booth, outdir=args.outdir, checks=not args.no_checks,
                fast=args.place_fast, groute=not args.no_graywolf_groute,
                cleanup=not args.no_route_cleanup, route_clock=not args.no_route_clock,
                reuse=args.reuse_layout, **timeout)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    from .synth.repair import DEFAULT_DRIVE_LIMIT

    limit = os.environ.get("DRIVE_LIMIT") or DEFAULT_DRIVE_LIMIT
    if (limit != DEFAULT_DRIVE_LIMIT and argv and argv[0] not in _NO_REPAIR
            and "--help" not in argv and "-h" not in argv):
        # the study, the gate, power and place and route repair with the default: never silently
        print(f"python -m flows {argv[0]}: error: DRIVE_LIMIT={limit} applies to synth (make synth) "
              "only; this command repairs with the default drive limit (unset DRIVE_LIMIT)",
              file=sys.stderr)
        return 2
    if argv and argv[0] in _DELEGATED:
        import importlib

        return importlib.import_module(_DELEGATED[argv[0]][0]).main(argv[1:])
    args = _parser().parse_args(argv)
    from hw.designs import OptionError

    from .gate import GateError
    from .pnr.netlist import PnrNetlistError
    from .pnr.parasitics import ParasiticsError
    from .pnr.tools import ToolError
    from .synth.liberty import LibertyError
    from .synth.sta import StaError
    from .synth.yosys import SynthError

    try:
        if args.cmd == "synth":
            return _synth(args)
        if args.cmd == "pnr":
            return _pnr(args)
        if args.cmd == "check":
            from .gate import check

            return check(update=args.update, names=args.variant)
        if args.cmd == "bf16-compare":
            from .bf16_compare import main as compare_main

            return compare_main()
    except (OptionError, LibertyError, SynthError, StaError, GateError, ToolError, PnrNetlistError,
            ParasiticsError) as e:
        print(f"python -m flows {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as e:  # a generator refusing its parameters, a bad CLOCK_PS
        if os.environ.get("FLOWS_DEBUG"):
            raise
        print(f"python -m flows {args.cmd}: error: {e} (FLOWS_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
