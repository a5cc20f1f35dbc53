"""The mapped netlist with physical names: BLIF for placement, Verilog for OpenSTA and LVS.

Yosys's mapped netlist (``write_json`` layout) names its cells ``$abc$...`` and its nets by number,
and bus ports carry brackets. Every tool after placement (graywolf's ``.cel``, the DEF, qrouter's
SPEF, magic's extraction, netgen, OpenSTA) escapes such names in its own way, and a name one tool
escapes differently from the next is a net OpenSTA cannot annotate. :func:`physical` therefore renames
everything to plain identifiers before placement: cells ``u<i>``, internal nets ``n<bit>``, bus
port bits ``<port>_<i>_`` (single-bit ports keep their name). The same names then appear unchanged
in the BLIF, the DEF, the SPEF and the Verilog.

Primary outputs driven by an input, by another output or by a constant need a cell of their own
between the two pins (a DEF net has one name); inputs and outputs are given a ``BUFX2``, and a
constant output is refused (the OSU library has no tie cell).
"""

import re
from dataclasses import dataclass, field

__all__ = ["Physical", "physical", "PnrNetlistError", "port_bit_name"]


class PnrNetlistError(ValueError):
    """The netlist cannot be laid out as it is; the message says why and what to do."""


_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def port_bit_name(port: str, i: int, width: int) -> str:
    """The physical name of bit ``i`` of a ``width``-bit port: ``<port>_<i>_`` (``<port>`` when
    ``width`` is 1), characters other than letters, digits and ``_`` made ``_``."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", port)
    return base if width == 1 else f"{base}_{i}_"


@dataclass
class Physical:
    """A flat netlist of library cells with tool-safe names.

    Attributes
    ----------
    top : str
    inputs, outputs : list[str]
        Port bit names, in port order.
    cells : list[tuple[str, str, dict]]
        ``(instance, cell type, {pin: net})``.
    port_bits : dict
        ``{(port, index): name}``: how the original bus bits were renamed.
    buffers : int
        Buffers added between feed-through or shared output pins.
    constant_outputs : dict
        ``{output bit: "0" | "1"}`` left out of the layout (``drop_constants``).
    sources : dict
        ``{instance: cell name in the mapped module}``.
    """

    top: str
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    cells: list = field(default_factory=list)
    port_bits: dict = field(default_factory=dict)
    buffers: int = 0
    constant_outputs: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)

    def clock_inputs(self, pin="CLK") -> list:
        """Input ports wired to a flip-flop clock pin (``pin``), sorted."""
        return sorted({pins[pin] for _, _, pins in self.cells if pin in pins} & set(self.inputs))

    def blif(self) -> str:
        """The netlist as BLIF (``.gate`` per cell), the input of qflow's ``blif2cel.tcl``."""
        out = [f".model {self.top}", ".inputs " + " ".join(self.inputs),
               ".outputs " + " ".join(self.outputs)]
        for _, typ, pins in self.cells:
            out.append(f".gate {typ} " + " ".join(f"{p}={n}" for p, n in pins.items()))
        out.append(".end")
        return "\n".join(out) + "\n"

    def verilog(self) -> str:
        """The netlist as structural Verilog (scalar ports, the cells as module instances)."""
        ports = self.inputs + self.outputs
        nets = sorted({n for _, _, pins in self.cells for n in pins.values()} - set(ports))
        out = [f"module {self.top} ({', '.join(ports)});"]
        out += [f"  input {p};" for p in self.inputs] + [f"  output {p};" for p in self.outputs]
        out += [f"  wire {n};" for n in nets]
        for inst, typ, pins in self.cells:
            out.append(f"  {typ} {inst} (" + ", ".join(f".{p}({n})" for p, n in pins.items()) + ");")
        out.append("endmodule")
        return "\n".join(out) + "\n"


def physical(module: dict, top: str, buffer=("BUFX2", "A", "Y"), macros=None,
             drop_constants=False) -> Physical:
    """Rename a mapped module (``json["modules"][top]``) to tool-safe names (see module docstring).

    ``macros``: ``{cell type: {(port, bit): pin}}`` of the blocks the module instantiates (each
    block's own :attr:`Physical.port_bits`), whose bus ports are split into the blocks' pin names.
    ``drop_constants``: leave constant output bits out of the layout (listed in
    :attr:`Physical.constant_outputs`) instead of refusing them.

    Raises
    ------
    PnrNetlistError
        A constant primary output, or a top name that is not a plain identifier.
    """
    if not _ID.match(top):
        raise PnrNetlistError(f"top module {top!r} is not a plain identifier; rename it for layout")
    ph = Physical(top)
    names = {}          # net bit -> name
    used = set()

    def port_name(p, i, width):
        name = port_bit_name(p, i, width)
        if name in used:
            raise PnrNetlistError(f"port bit {p}[{i}] renames to {name}, which another port already "
                                  "uses; rename the port")
        used.add(name)
        ph.port_bits[(p, i)] = name
        return name

    out_bits = []
    for p, d in module["ports"].items():
        for i, b in enumerate(d["bits"]):
            name = port_name(p, i, len(d["bits"]))
            if d["direction"] == "input":
                ph.inputs.append(name)
                names[b] = name
            elif d["direction"] == "output":
                ph.outputs.append(name)
                out_bits.append((name, b))
            else:
                raise PnrNetlistError(f"port {p} is {d['direction']}: only inputs and outputs can be "
                                      "laid out")
    bufcell, bin_, bout = buffer
    feeds = []
    for name, b in out_bits:
        if isinstance(b, str) and drop_constants:
            ph.outputs.remove(name)
            ph.constant_outputs[name] = b
            continue
        if isinstance(b, str):
            raise PnrNetlistError(f"output {name} is the constant {b}: the library has no tie cell, so a "
                                  "constant output cannot be laid out; drive it from logic or remove it")
        if b in names:   # already an input or an earlier output: buffer from that net
            feeds.append((names[b], name))
        else:
            names[b] = name

    def net(b):
        if isinstance(b, str):
            raise PnrNetlistError(f"a cell input is tied to constant {b}; the library has no tie cell")
        return names.setdefault(b, f"n{b}")

    for k, (cname, c) in enumerate(sorted(module["cells"].items())):
        ph.sources[f"u{k}"] = cname
        if c["type"].startswith("$"):
            raise PnrNetlistError(f"cell type {c['type']} is not a library cell: map the netlist first")
        pins = {}
        if macros and c["type"] in macros:
            names_of = macros[c["type"]]
            for p, bits in c["connections"].items():
                for i, b in enumerate(bits):
                    if (p, i) not in names_of:
                        raise PnrNetlistError(f"block {c['type']} has no pin {p}[{i}]")
                    pins[names_of[(p, i)]] = net(b)
            ph.cells.append((f"u{k}", c["type"], pins))
            continue
        for p, bits in c["connections"].items():
            if len(bits) != 1:
                raise PnrNetlistError(f"cell {c['type']} pin {p} has {len(bits)} bits; expected 1")
            pins[p] = net(bits[0])
        ph.cells.append((f"u{k}", c["type"], pins))
    for k, (src, dst) in enumerate(feeds):
        ph.cells.append((f"ufeed{k}", bufcell, {bin_: src, bout: dst}))
        ph.buffers += 1
    return ph
