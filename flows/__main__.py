"""``python -m flows``: the synthesis/QoR command line (what the Makefile's targets call).

Commands
--------
``synth --design D [--set k=v ...] [--liberty F] [--clock-ps P] [--flow auto|flat|hier] [--yosys-booth]``
    Synthesize one design variant and write ``reports/qor/<variant>/`` (``make synth``).
``check [--update]``
    The QoR regression gate against ``reports/qor/rules-base.json`` (``make qor-check/qor-update``).
``bf16-compare``
    Generate ``reports/qor/bf16_mul_comparison.md`` (all BF16 multiplier variants side by side).
``prove``, ``qor``, ``sweep``, ``report-qor``
    Provided by other modules (``flows/prove.py``, the sweep and cross-width report); dispatched
    lazily, with a message naming what is missing when they are not there.
"""

import argparse
import importlib
import os
import sys

#: command -> (module, issue that implements it)
_LAZY = {
    "prove": ("flows.prove", "issue 2 (BF16 multiplier: formal equivalence)"),
    "qor": ("flows.qor", "issue 7 (QoR comparison across widths)"),
    "sweep": ("flows.sweep", "issue 7 (sweeps)"),
    "report-qor": ("flows.report_qor", "issue 7 (cross-width report)"),
}


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
    p = argparse.ArgumentParser(prog="python -m flows", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("synth", help="synthesize one design variant, report area and timing")
    s.add_argument("--design", default=os.environ.get("DESIGN") or "mu")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="generator option (repeatable), e.g. --set arch=booth4 --set stages=0")
    s.add_argument("--liberty", default=None, help="liberty file (default: $LIBERTY, $PDK_ROOT, OSU 0.18um)")
    s.add_argument("--clock-ps", type=float, default=None, help="target period for ABC (default: $CLOCK_PS)")
    s.add_argument("--flow", choices=("auto", "flat", "hier"), default=os.environ.get("FLOW") or "auto",
                   help="flat, by blocks (hier) or auto: by blocks when the design has marked blocks")
    s.add_argument("--yosys-booth", action="store_true", help="map multipliers with Yosys's synth -booth")
    s.add_argument("--outdir", default=None, help="report directory (default reports/qor/<variant>)")
    c = sub.add_parser("check", help="QoR regression gate against reports/qor/rules-base.json")
    c.add_argument("--update", action="store_true", help="refresh the golden values instead")
    sub.add_parser("bf16-compare", help="write reports/qor/bf16_mul_comparison.md")
    for name, (_, issue) in _LAZY.items():
        sub.add_parser(name, add_help=False, help=f"(from {issue})")
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _LAZY:
        mod_name, issue = _LAZY[argv[0]]
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as e:
            if e.name != mod_name:
                raise
            print(f"python -m flows {argv[0]}: not available yet: {mod_name.replace('.', '/')}.py is "
                  f"implemented by {issue}.", file=sys.stderr)
            return 2
        return mod.main(argv[1:])
    args = _parser().parse_args(argv)
    from hw.designs import OptionError

    from .liberty import LibertyError
    from .sta import StaError
    from .synth import SynthError

    try:
        if args.cmd == "synth":
            from .flow import run

            clock = args.clock_ps if args.clock_ps is not None else (
                float(os.environ["CLOCK_PS"]) if os.environ.get("CLOCK_PS") else None)
            run(args.design, _parse_sets(args.set), liberty=args.liberty, clock_ps=clock, flow=args.flow,
                booth=args.yosys_booth, outdir=args.outdir)
            return 0
        if args.cmd == "check":
            from .gate import check

            return check(update=args.update)
        if args.cmd == "bf16-compare":
            from .compare import main as compare_main

            return compare_main()
    except (OptionError, LibertyError, SynthError, StaError) as e:
        print(f"python -m flows {args.cmd}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a gate/rules problem or a generator refusing its parameters
        from .gate import GateError

        if isinstance(e, (GateError, ValueError, TypeError)) and not os.environ.get("FLOWS_DEBUG"):
            print(f"python -m flows {args.cmd}: error: {e} (FLOWS_DEBUG=1 shows the traceback)",
                  file=sys.stderr)
            return 2
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
