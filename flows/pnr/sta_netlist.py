"""A mapped netlist, flat or by blocks, as one structural Verilog file for OpenSTA.

The flow keeps each synthesized module as a Yosys ``write_json`` module after drive repair
(``repaired.json``: the flat design, or one per block of a hierarchical run, child blocks as
instances). :func:`sta_verilog` writes every module of such a set into one Verilog text that
OpenSTA reads and links as a hierarchy, so it times the composed design, paths through and between
blocks included, instead of the block models our STA composes.

Black-box macros
    A module named in ``macros`` (an empty placeholder whose area is modelled, e.g. the slice's
    SRAM) is not written: its instances are cells of the liberty model
    :func:`flows.pnr.macro_lib.macro_liberty` writes, each with that model's clock pin
    (:data:`MACRO_CLOCK_PIN`) connected to the clock input of the module holding it.

Names
    Ports keep their names (non-identifier characters become ``_``) and their widths (``[w-1:0]``,
    a single bit a scalar); internal nets are ``n<bit>``. An output bit that is an input bit, another
    output's bit or a constant is written as an ``assign`` (OpenSTA reads it as a wire). Constant
    cell inputs become ``1'b0`` / ``1'b1`` (``x`` and ``z`` bits as ``1'b0``).
"""

import json
import re
from pathlib import Path

__all__ = ["sta_verilog", "read_repaired", "clock_ports", "input_ports", "StaNetlistError", "MACRO_CLOCK_PIN",
           "ident"]

#: The clock pin of a black-box macro's timing model (the placeholder module has no clock port).
MACRO_CLOCK_PIN = "CLK"


class StaNetlistError(ValueError):
    """The netlist cannot be written for OpenSTA; the message says why and what to do."""


def ident(name: str) -> str:
    """``name`` as a Verilog identifier (non-identifier characters become ``_``)."""
    s = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return s if re.match(r"[A-Za-z_]", s) else "_" + s


def read_repaired(paths) -> dict:
    """Merge the modules of ``repaired.json`` files (``paths``) into one ``{name: module}``.

    Raises
    ------
    StaNetlistError
        A file is missing, or two files hold different modules of one name.
    """
    modules = {}
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise StaNetlistError(f"no repaired netlist {p}: synthesize the point again (the flow "
                                  "writes repaired.json beside each mapped.json)")
        for name, m in json.loads(p.read_text())["modules"].items():
            if name in modules and modules[name] != m:
                raise StaNetlistError(f"module {name} differs between two repaired netlists ({p})")
            modules[name] = m
    return modules


def _port_names(module) -> dict:
    """``{port: identifier}``, refusing two ports that map to one identifier."""
    names = {}
    for p in module["ports"]:
        n = ident(p)
        if n in names.values():
            raise StaNetlistError(f"ports {p!r} and another both become {n!r}; rename one")
        names[p] = n
    return names


def _module_text(name: str, module: dict, modules: dict, macros=frozenset(), clock_bit=None) -> str:
    """One module's Verilog (library cells and child-module instances); an instance of a module in
    ``macros`` gets the macro model's clock pin on bit ``clock_bit``."""
    pnames = _port_names(module)
    bitname = {}                            # bit -> expression naming it
    decl, assigns = [], []
    for p, d in module["ports"].items():
        if d["direction"] not in ("input", "output"):
            raise StaNetlistError(f"{name}: port {p} is {d['direction']}; only inputs and outputs "
                                  "can be timed")
        w = len(d["bits"])
        decl.append(f"  {d['direction']} {f'[{w - 1}:0] ' if w > 1 else ''}{pnames[p]};")
    for p, d in module["ports"].items():    # inputs first name their bits
        if d["direction"] == "input":
            for i, b in enumerate(d["bits"]):
                if isinstance(b, int):
                    bitname.setdefault(b, pnames[p] + (f"[{i}]" if len(d["bits"]) > 1 else ""))
    for p, d in module["ports"].items():
        if d["direction"] != "output":
            continue
        for i, b in enumerate(d["bits"]):
            ref = pnames[p] + (f"[{i}]" if len(d["bits"]) > 1 else "")
            if isinstance(b, str):
                assigns.append(f"  assign {ref} = 1'b{1 if b == '1' else 0};")
            elif b in bitname:
                assigns.append(f"  assign {ref} = {bitname[b]};")
            else:
                bitname[b] = ref

    wires = []

    def net(b):
        if b not in bitname:
            bitname[b] = f"n{b}"
            wires.append(b)
        return bitname[b]

    def expr(bits):
        names = [f"1'b{1 if b == '1' else 0}" if isinstance(b, str) else net(b) for b in bits]
        return names[0] if len(names) == 1 else "{" + ", ".join(reversed(names)) + "}"

    body = []
    for k, (_, c) in enumerate(sorted(module["cells"].items())):
        typ = c["type"]
        if typ.startswith("$"):
            raise StaNetlistError(f"{name}: cell type {typ} is not a library cell; map the netlist first")
        kid = modules.get(typ)
        conns = []
        for pin, bits in c["connections"].items():
            if kid is not None:
                if pin not in kid["ports"]:
                    raise StaNetlistError(f"{name}: instance of {typ} connects {pin}, not a port of it")
                pin = _port_names(kid)[pin]
            elif len(bits) != 1:
                raise StaNetlistError(f"{name}: cell {typ} pin {pin} has {len(bits)} bits; expected 1")
            conns.append(f".{pin}({expr(bits)})")
        if typ in macros:
            conns.insert(0, f".{MACRO_CLOCK_PIN}({expr([clock_bit])})")
        body.append(f"  {ident(typ)} u{k} ({', '.join(conns)});")
    return "\n".join([f"module {ident(name)} ({', '.join(pnames.values())});", *decl,
                      *(f"  wire n{b};" for b in sorted(wires)), *body, *assigns, "endmodule"]) + "\n"


def sta_verilog(modules: dict, top: str, macros=()) -> str:
    """Every module of ``modules`` reachable from ``top`` as one Verilog text (children first);
    the modules named in ``macros`` are left to their liberty model (module docstring).

    Raises
    ------
    StaNetlistError
        ``top`` missing, a cell that is neither a library cell nor a module, a port that is not an
        input or output, a macro held by a module without exactly one clock input.
    """
    macros = frozenset(macros)
    if top in macros:
        raise StaNetlistError(f"the top module {top} is a black-box macro: nothing to time")
    clocks = _clock_inputs(modules)
    if top not in modules:
        raise StaNetlistError(f"top module {top} is not among the netlists ({', '.join(modules)})")
    order, seen = [], set()

    def visit(n):
        if n in seen:
            return
        seen.add(n)
        for c in modules[n]["cells"].values():
            if c["type"] in modules:
                visit(c["type"])
        order.append(n)

    visit(top)
    text = []
    for n in order:
        if n in macros:
            continue
        clock_bit = None
        held = sorted({c["type"] for c in modules[n]["cells"].values()} & macros)
        if held:
            clk = sorted(clocks(n))
            if len(clk) != 1:
                raise StaNetlistError(f"module {n} holds the macro(s) {', '.join(held)} and has "
                                      f"{len(clk)} clock inputs ({', '.join(clk) or 'none'}): the "
                                      "macro model's clock needs exactly one")
            clock_bit = modules[n]["ports"][clk[0]]["bits"][0]
        text.append(_module_text(n, modules[n], modules, macros, clock_bit))
    return "".join(text)


def _clock_inputs(modules: dict, pin: str = "CLK"):
    """A function: module name -> its input ports (raw names) that reach a flip-flop or latch
    clock pin ``pin``, directly or through child modules."""
    memo = {}

    def clocks(n):
        if n not in memo:
            m = modules[n]
            bits = set()
            for c in m["cells"].values():
                kid = c["type"] if c["type"] in modules else None
                for p, bs in c["connections"].items():
                    if (kid is None and p == pin) or (kid is not None and p in clocks(kid)):
                        bits.update(b for b in bs if isinstance(b, int))
            memo[n] = {p for p, d in m["ports"].items()
                       if d["direction"] == "input" and bits & set(d["bits"])}
        return memo[n]

    return clocks


def clock_ports(modules: dict, top: str, pin: str = "CLK") -> list:
    """Input ports of ``top`` (as written by :func:`sta_verilog`) that reach a flip-flop or latch
    clock pin ``pin``, directly or through child modules, sorted."""
    names = _port_names(modules[top])
    return sorted(names[p] for p in _clock_inputs(modules, pin)(top))


def input_ports(module: dict) -> list:
    """The input ports of ``module`` as :func:`sta_verilog` names them, in port order."""
    names = _port_names(module)
    return [names[p] for p, d in module["ports"].items() if d["direction"] == "input"]
