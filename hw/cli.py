"""``python -m hw``: generate Verilog for any registered design.

Examples
--------
``python -m hw gen bf16_mul --arch booth4 --stages 0 -o bf16_mul.v``
``python -m hw gen mu --width 64 --fmt fp8_e4m3 -o mu.v --manifest mu.json``
``python -m hw options --make-vars`` (the Makefile's option variables: every option, upper case)
``python -m hw options --choices fmt`` (the allowed values of an option, e.g. the element formats)
"""

import argparse
import json
import sys
from pathlib import Path

from .designs import DESIGNS, OptionError, get_design


def _parser():
    p = argparse.ArgumentParser(prog="python -m hw", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    gen = sub.add_parser("gen", help="write Verilog for a design",
                         description="Write Verilog for a design. Designs: " +
                         "; ".join(f"{d.name}: {d.help}" for d in DESIGNS.values()))
    dsub = gen.add_subparsers(dest="design", required=True, metavar="DESIGN")
    for d in DESIGNS.values():
        dp = dsub.add_parser(d.name, help=d.help, description=d.help)
        for o in d.options:
            dp.add_argument(f"--{o.name.replace('_', '-')}", dest=o.name, default=None, metavar="V",
                            help=f"{o.help}{_allowed(o)}; default {o.default}")
        dp.add_argument("-o", "--output", required=True, help="Verilog file to write")
        dp.add_argument("--top", default=None, help=f"top module name (default {d.top_name})")
        dp.add_argument("--manifest", default=None,
                        help="also write the block manifest (modules and instance counts) as JSON")
    sub.add_parser("list", help="list designs and their options")
    opts = sub.add_parser("options", help="print the option names of every design")
    opts.add_argument("--make-vars", action="store_true",
                      help="as make variables: upper case, space separated (WIDTH FMT ...)")
    opts.add_argument("--choices", metavar="OPTION", default=None,
                      help="instead, the allowed values of OPTION (space separated)")
    return p


def _allowed(o) -> str:
    return f" (allowed: {', '.join(map(str, o.choices))})" if o.choices else ""


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.cmd == "list":
        for d in DESIGNS.values():
            print(f"{d.name}: {d.help}")
            for o in d.options:
                print(f"  --{o.name}  default {o.default}  {o.help}{_allowed(o)}")
        return 0
    if args.cmd == "options":
        if args.choices is not None:
            found = [o for d in DESIGNS.values() for o in d.options if o.name == args.choices]
            if not found:
                names = ", ".join(dict.fromkeys(o.name for d in DESIGNS.values() for o in d.options))
                print(f"python -m hw options: error: no option {args.choices!r}; options: {names}",
                      file=sys.stderr)
                return 2
            values = dict.fromkeys(str(c) for o in found for c in (o.choices or ()))
            print(" ".join(values) if values else f"{args.choices}: no fixed list (python -m hw list)")
            return 0
        names = dict.fromkeys(o.name for d in DESIGNS.values() for o in d.options)
        print(" ".join(n.upper() for n in names) if args.make_vars else "\n".join(names))
        return 0
    design = get_design(args.design)
    given = {o.name: getattr(args, o.name) for o in design.options if getattr(args, o.name) is not None}
    try:
        netlist = design.emit(given, top=args.top)
    except OptionError as e:
        print(f"python -m hw gen {design.name}: error: {e}", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as e:
        print(f"python -m hw gen {design.name}: error: {e}", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(netlist.verilog)
    if args.manifest:
        Path(args.manifest).write_text(json.dumps(netlist.manifest(), indent=2) + "\n")
    print(f"wrote {out} (top {netlist.top}, {len(netlist.modules)} modules)")
    return 0
