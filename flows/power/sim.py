"""Zero-delay, cycle-based gate-level simulation of a flattened netlist, with toggle counts per net.

Cell behaviour comes from the liberty: each combinational output's ``function`` attribute becomes
a 16-entry truth table over up to four inputs; edge-triggered flops (``ff`` with one data and one
clock pin) take their data input at the clock edge. Combinational cells are levelized once; a
cycle evaluates the levels in order, one truth-table lookup per level for all cells at that level.

Zero delay: each net settles once per cycle, so a toggle is a change of its settled value between
consecutive cycles; glitches (transient pulses of unequal path delays) are not counted, and the
energy figures are therefore a lower bound on the dynamic energy of the same activity.
"""

import re

import numpy as np

from .netlist import COPY, Flat, NetlistError

__all__ = ["GateSim", "truth_table", "compile_function"]

_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_\[\]]*|[()!'+|&*^]|[01])")


def compile_function(expr: str):
    """Parse a liberty ``function`` (``!``/``'`` not, ``&``/``*``/space and, ``^`` xor, ``+``/``|``
    or) into ``(evaluator, input names)``: the evaluator maps a list of 0/1 ints, one per name in
    order, to the function's 0/1 value."""
    toks = [t for t in _TOKEN.findall(expr)]
    if "".join(toks) != re.sub(r"\s+", "", expr):
        raise NetlistError(f"cannot parse liberty function {expr!r}")
    pos = [0]
    names = []

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take():
        pos[0] += 1
        return toks[pos[0] - 1]

    def invert(f):
        return lambda v: 1 ^ f(v)

    def primary():
        t = take()
        if t == "!":
            return invert(primary())
        if t == "(":
            out = orexpr()
            if take() != ")":
                raise NetlistError(f"unbalanced parentheses in liberty function {expr!r}")
        elif t in ("0", "1"):
            out = (lambda c: lambda v: c)(int(t))
        elif t and (t[0].isalpha() or t[0] == "_"):
            if t not in names:
                names.append(t)
            out = (lambda i: lambda v: v[i])(names.index(t))
        else:
            raise NetlistError(f"unexpected {t!r} in liberty function {expr!r}")
        while peek() == "'":
            take()
            out = invert(out)
        return out

    def binary(operand, ops, combine):
        def parse():
            e = operand()
            while peek() in ops:
                take()
                e = (lambda a, b: lambda v: combine(a(v), b(v)))(e, operand())
            return e
        return parse

    def andexpr():
        e = primary()
        while peek() not in (None, ")", "+", "|", "^"):
            if peek() in ("&", "*"):
                take()
            e = (lambda a, b: lambda v: a(v) & b(v))(e, primary())
        return e

    xorexpr = binary(andexpr, ("^",), lambda a, b: a ^ b)
    orexpr = binary(xorexpr, ("+", "|"), lambda a, b: a | b)
    fn = orexpr()
    if pos[0] != len(toks):
        raise NetlistError(f"trailing tokens in liberty function {expr!r}")
    return fn, names


def truth_table(expr: str, pins: list) -> np.ndarray:
    """16-entry table of ``expr`` with ``pins[i]`` as bit ``i`` of the index (at most four pins)."""
    fn, names = compile_function(expr)
    missing = [n for n in names if n not in pins]
    if missing or len(pins) > 4:
        raise NetlistError(f"function {expr!r}: inputs {missing or pins} do not fit the cell's pins "
                           "(at most four inputs are supported)")
    out = np.zeros(16, dtype=np.uint8)
    for i in range(16):
        bits = [(i >> pins.index(n)) & 1 for n in names]
        out[i] = fn(bits) & 1
    return out


class GateSim:
    """Simulate a :class:`flows.power.netlist.Flat` netlist cycle by cycle.

    Parameters
    ----------
    flat : Flat
    plib : flows.power.libpower.PowerLibrary
        Functions and flop data of the cells.

    Attributes
    ----------
    vals : ndarray of uint8
        Settled value of every net in the current cycle.
    toggles : ndarray of uint32
        Changes of the settled value per net since :meth:`start_counting`.
    """

    def __init__(self, flat: Flat, plib):
        self.flat = flat
        self.vals = np.zeros(flat.n_nets, dtype=np.uint8)
        self.vals[1] = 1
        self.toggles = np.zeros(flat.n_nets, dtype=np.uint32)
        self.cycles = 0
        self._prev = None
        d_nets, q_nets, ins, outs, luts = [], [], [], [], []
        tables = []
        for t, g in flat.groups.items():
            if t == COPY:
                tables.append(np.array([0, 1] * 8, dtype=np.uint8))
                ins.append(np.stack([g["pins"]["A"]] + [np.zeros_like(g["pins"]["A"])] * 3, 1))
                outs.append(g["pins"]["Y"])
                luts.append(np.full(len(g["pins"]["Y"]), len(tables) - 1))
                continue
            cell = plib.cells.get(t)
            if cell is None or t in plib.unsupported:
                why = plib.unsupported.get(t, "not in the liberty")
                raise NetlistError(f"cell {t} cannot be simulated: {why}")
            if cell.flop:
                clk, edge, data, qs = cell.flop
                if edge != "rise":
                    raise NetlistError(f"cell {t}: falling-edge flops are not supported")
                for q in qs:
                    if cell.functions.get(q, "").lstrip("(").startswith("!"):
                        raise NetlistError(f"cell {t}: inverted flop output {q} is not supported")
                    d_nets.append(g["pins"][data])
                    q_nets.append(g["pins"][q])
                continue
            in_pins = sorted(p for p in g["pins"] if p not in cell.functions)
            for out, fexpr in cell.functions.items():
                tables.append(truth_table(fexpr, in_pins))
                cols = [g["pins"][p] for p in in_pins]
                cols += [np.zeros_like(cols[0])] * (4 - len(cols))
                ins.append(np.stack(cols, 1))
                outs.append(g["pins"][out])
                luts.append(np.full(len(cols[0]), len(tables) - 1))
        self._d = np.concatenate(d_nets) if d_nets else np.zeros(0, dtype=np.int64)
        self._q = np.concatenate(q_nets) if q_nets else np.zeros(0, dtype=np.int64)
        self._lut = np.concatenate(tables) if tables else np.zeros(16, dtype=np.uint8)
        if not ins:
            ins, outs, luts = [np.zeros((0, 4), dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        self._levelize(np.concatenate(ins), np.concatenate(outs), np.concatenate(luts).astype(np.int64) * 16)

    def _levelize(self, ins, outs, base):
        n = self.flat.n_nets
        drivers = np.bincount(np.concatenate([outs, self._q]), minlength=n)
        if drivers.max(initial=0) > 1:
            raise NetlistError(f"{int((drivers > 1).sum())} nets have several drivers")
        level = np.zeros(n, dtype=np.int64)
        for _ in range(100000):
            cl = level[ins].max(axis=1) + 1
            new = level.copy()
            new[outs] = cl
            new[self._q] = 0
            if np.array_equal(new, level):
                break
            level = new
        else:
            raise NetlistError("the netlist has a combinational loop")
        order = np.argsort(cl, kind="stable")
        cl = cl[order]
        self._ins = [np.ascontiguousarray(ins[order][:, i]) for i in range(4)]
        self._outs = outs[order]
        self._base = base[order]
        self._bounds = np.searchsorted(cl, np.arange(1, cl.max(initial=0) + 2))
        self.depth = int(cl.max(initial=0))

    def set_bits(self, nets, value: int):
        """Drive ``nets`` (least significant first) with the bits of ``value``."""
        width = len(nets)
        raw = np.frombuffer(int(value).to_bytes((width + 7) // 8, "little"), dtype=np.uint8)
        self.vals[nets] = np.unpackbits(raw, bitorder="little")[:width]

    def get_bits(self, nets) -> int:
        bits = self.vals[nets]
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def settle(self):
        """Evaluate the combinational logic (levels in order) and count toggles when counting."""
        v = self.vals
        lut = self._lut
        i0, i1, i2, i3 = self._ins
        b = self._bounds
        for lv in range(len(b) - 1):
            lo, hi = b[lv], b[lv + 1]
            if lo == hi:
                continue
            idx = (self._base[lo:hi] + v[i0[lo:hi]] + (v[i1[lo:hi]] << 1) + (v[i2[lo:hi]] << 2)
                   + (v[i3[lo:hi]] << 3))
            v[self._outs[lo:hi]] = lut[idx]
        if self._prev is not None:
            np.add(self.toggles, v ^ self._prev, out=self.toggles)
            self.cycles += 1
            self._prev[:] = v

    def clock(self):
        """The clock edge: every flop takes its data input."""
        self.vals[self._q] = self.vals[self._d]

    def start_counting(self):
        """Count toggles from now on (relative to the current settled values)."""
        self._prev = self.vals.copy()
        self._initial = self.vals.copy()
        self.toggles[:] = 0
        self.cycles = 0

    def rises_falls(self):
        """(rises, falls) per net since :meth:`start_counting`: transitions alternate, so they
        follow from the toggle count and the first and last values."""
        t = self.toggles.astype(np.int64)
        delta = self.vals.astype(np.int64) - self._initial.astype(np.int64)
        return (t + delta) // 2, (t - delta) // 2
