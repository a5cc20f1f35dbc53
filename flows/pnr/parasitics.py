"""qrouter's RC trees (``<top>.rc``) as SPEF that OpenSTA annotates completely.

qrouter writes one line per routed net: ``net 1 driver N ( R C <subtree> ... )``, where each
parenthesized node is a wire segment ending in a node, with the segment's resistance ``R`` (ohm)
and the node's wire capacitance ``C`` (pF, the liberty's unit), followed by the sink pins at that
node (``inst/pin``, ports as ``PIN/name``) and its child segments, separated by commas.

qflow converts this file to SPEF with ``rc2dly``, whose output OpenSTA cannot use as it stands: the
header declares ``*C_UNIT 1 FF`` while the values are in pF (every wire reads 1000x too small) and
the internal nodes are written as ``1_3`` instead of ``*1:3``, so OpenSTA reports the nodes'
"pin ... not found" and leaves those nets' wires out. :func:`write_spef` writes the same trees
itself: units as in the file (pF, ohm), pins as ``inst:pin``, ports by name, internal nodes
``net:k``, and every sink is a node of its tree.
"""

import re
from dataclasses import dataclass, field

__all__ = ["RcNet", "read_rc", "write_spef", "spef_caps", "ParasiticsError"]


class ParasiticsError(ValueError):
    """The RC file cannot be read; the message names the line."""


@dataclass
class RcNet:
    """One routed net's RC tree.

    Attributes
    ----------
    name : str
    driver : str
        ``inst/pin`` or ``PIN/port``.
    nodes : list[float]
        Wire capacitance of internal node ``k`` (pF); node 0 is the driver pin.
    edges : list[tuple[int, int, float]]
        ``(parent, child, R ohm)``.
    sinks : list[tuple[str, int]]
        ``(inst/pin or PIN/port, node)``.
    unnamed : int
        Branch ends qrouter wrote as ``ERROR`` (a pin it could not name): their wire stays in the
        tree as internal nodes; the pin itself is not connected in the SPEF.
    """

    name: str
    driver: str
    nodes: list = field(default_factory=lambda: [0.0])
    edges: list = field(default_factory=list)
    sinks: list = field(default_factory=list)
    unnamed: int = 0

    @property
    def wire_cap(self) -> float:
        return sum(self.nodes)


def _parse_line(line: str, lineno: int) -> RcNet:
    tok = line.split()
    if len(tok) < 4:
        raise ParasiticsError(f"RC line {lineno}: expected 'net 1 driver count ...', got {line[:80]!r}")
    net = RcNet(tok[0], tok[2])
    # a branch "( R C ...)" opens a node under the innermost open one; an explicit stack, since a
    # long net's tree nests deeper than Python's recursion limit
    stack, i = [0], 4
    while i < len(tok):
        t = tok[i]
        if t == "(":
            try:
                r, c = float(tok[i + 1]), float(tok[i + 2])
            except (IndexError, ValueError):
                raise ParasiticsError(f"RC line {lineno} (net {net.name}): expected R C at token "
                                      f"{i + 1}") from None
            k = len(net.nodes)
            net.nodes.append(c)
            net.edges.append((stack[-1], k, r))
            stack.append(k)
            i += 3
        elif t == ",":
            i += 1
        elif t == ")":
            if len(stack) == 1:
                raise ParasiticsError(f"RC line {lineno} (net {net.name}): unbalanced parentheses")
            stack.pop()
            i += 1
        elif t == "ERROR" and len(stack) > 1:   # a branch end qrouter could not name: an internal node
            net.unnamed += 1
            i += 1
        else:
            net.sinks.append((t, stack[-1]))
            i += 1
    if len(stack) != 1:
        raise ParasiticsError(f"RC line {lineno} (net {net.name}): unbalanced parentheses")
    return net


def read_rc(text: str) -> list:
    """The nets of a qrouter ``.rc`` file (:class:`RcNet` each)."""
    return [_parse_line(ln, n) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]


def _pin(ref: str, driver: bool) -> tuple:
    """SPEF name and ``*CONN`` line of ``inst/pin`` or ``PIN/port`` (an input port drives its net,
    an output port is a sink)."""
    a, _, b = ref.partition("/")
    if a == "PIN":
        return b, f"*P {b} {'I' if driver else 'O'}"
    return f"{a}:{b}", f"*I {a}:{b} {'O' if driver else 'I'}"


def write_spef(nets: list, top: str) -> str:
    """SPEF text of ``nets`` (see module docstring)."""
    out = ['*SPEF "IEEE 1481-1998"', f'*DESIGN "{top}"', '*DATE ""', '*VENDOR "qrouter"',
           '*PROGRAM "flows.pnr"', '*VERSION "1"', '*DESIGN_FLOW ""', "*DIVIDER /", "*DELIMITER :",
           "*BUS_DELIMITER [ ]", "*T_UNIT 1 NS", "*C_UNIT 1 PF", "*R_UNIT 1 OHM", "*L_UNIT 1 HENRY", ""]
    for net in nets:
        names = {0: _pin(net.driver, True)[0]}
        extra = []   # (node name, sink name): sinks sharing a node with another sink
        for ref, k in net.sinks:
            name = _pin(ref, False)[0]
            if k in names:
                extra.append((names[k], name))
            else:
                names[k] = name
        for k in range(1, len(net.nodes)):
            names.setdefault(k, f"{net.name}:{k}")
        out.append(f"*D_NET {net.name} {net.wire_cap:.6g}")
        out.append("*CONN")
        out += [_pin(net.driver, True)[1]] + [_pin(s, False)[1] for s, _ in net.sinks]
        out.append("*CAP")
        n = 0
        for k, c in enumerate(net.nodes):
            if c:
                n += 1
                out.append(f"{n} {names[k]} {c:.6g}")
        out.append("*RES")
        n = 0
        for a, b, r in net.edges:
            n += 1
            out.append(f"{n} {names[a]} {names[b]} {r:.6g}")
        for a, b in extra:
            n += 1
            out.append(f"{n} {a} {b} 0")
        out.append("*END")
        out.append("")
    return "\n".join(out) + "\n"


def spef_caps(text: str, source: str = "SPEF") -> dict:
    """``{net: total capacitance}`` of every ``*D_NET`` of a SPEF, in its ``*C_UNIT`` converted to pF.

    Raises
    ------
    ParasiticsError
        No ``*C_UNIT`` line, or a unit other than PF or FF.
    """
    unit = re.search(r"^\*C_UNIT\s+(\S+)\s+(\S+)", text, re.M)
    if not unit:
        raise ParasiticsError(f"{source}: no *C_UNIT line")
    scale = {"PF": 1.0, "FF": 1e-3}.get(unit.group(2).upper())
    if scale is None:
        raise ParasiticsError(f"{source}: capacitance unit {unit.group(2)!r} is neither PF nor FF")
    scale *= float(unit.group(1))
    return {n: float(c) * scale for n, c in re.findall(r"^\*D_NET\s+(\S+)\s+(\S+)", text, re.M)}

