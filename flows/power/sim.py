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

    Clock gating: a flop's clock pin may be driven through gates from the clock port (a clock
    gate: inverter, latch on the enable, AND). Those gates (the *clock network*) are evaluated at
    :meth:`clock` with the clock low and high; a flop takes its data input only when its clock pin
    rises, and each clock-network net counts two toggles in a cycle where it pulses. A latch is
    transparent in the settled state (its output follows its data input): a clock gate's latch is
    transparent while the clock is low, so at the edge it holds the enable of the cycle before.

    Parameters
    ----------
    flat : Flat
    plib : flows.power.libpower.PowerLibrary
        Functions and flop data of the cells.
    clock_port : str
        The clock input (when the netlist has one).

    Attributes
    ----------
    vals : ndarray of uint8
        Settled value of every net in the current cycle (clock-network nets at their value with the
        clock low).
    toggles : ndarray of uint32
        Changes of the settled value per net since :meth:`start_counting`, plus two per pulse of
        a clock-network net.
    clock_nets : ndarray of int
        The clock network's nets (the clock port's and every gate output in it).
    """

    def __init__(self, flat: Flat, plib, clock_port: str = "clk"):
        self.flat = flat
        self.vals = np.zeros(flat.n_nets, dtype=np.uint8)
        self.vals[1] = 1
        self.toggles = np.zeros(flat.n_nets, dtype=np.uint32)
        self.cycles = 0
        self._prev = None
        self._pulses = None      # clock-network nets that pulsed at the last edge
        d_nets, q_nets, ck_nets, en_nets, latch_q, ins, outs, luts = [], [], [], [], [], [], [], []
        tables = []
        copy = np.array([0, 1] * 8, dtype=np.uint8)   # output = first input
        for t, g in flat.groups.items():
            if t == COPY:
                tables.append(copy)
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
                    ck_nets.append(g["pins"][clk])
                continue
            if cell.latch:          # transparent in the settled state: Q = D
                enable, data, qs = cell.latch
                en_nets.append(g["pins"][enable])
                for q in qs:
                    tables.append(copy)
                    d = g["pins"][data]
                    ins.append(np.stack([d] + [np.zeros_like(d)] * 3, 1))
                    outs.append(g["pins"][q])
                    latch_q.append(g["pins"][q])
                    luts.append(np.full(len(d), len(tables) - 1))
                continue
            in_pins = sorted(p for p in g["pins"] if p not in cell.functions)
            for out, fexpr in cell.functions.items():
                tables.append(truth_table(fexpr, in_pins))
                cols = [g["pins"][p] for p in in_pins]
                cols += [np.zeros_like(cols[0])] * (4 - len(cols))
                ins.append(np.stack(cols, 1))
                outs.append(g["pins"][out])
                luts.append(np.full(len(cols[0]), len(tables) - 1))
        def cat(arrays):
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)

        self._d, self._q, self._ck = cat(d_nets), cat(q_nets), cat(ck_nets)
        self._lut = np.concatenate(tables) if tables else np.zeros(16, dtype=np.uint8)
        if not ins:
            ins, outs, luts = [np.zeros((0, 4), dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
        ins, outs = np.concatenate(ins), np.concatenate(outs)
        base = np.concatenate(luts).astype(np.int64) * 16
        drivers = np.bincount(np.concatenate([outs, self._q]), minlength=flat.n_nets)
        if drivers.max(initial=0) > 1:
            raise NetlistError(f"{int((drivers > 1).sum())} nets have several drivers")
        clock = flat.ports[clock_port][1] if clock_port in flat.ports else np.zeros(0, dtype=np.int64)
        in_net = self._clock_network(ins, outs, clock, cat(en_nets), cat(latch_q))
        self._clk = clock
        self.clock_nets = np.unique(np.concatenate([clock, outs[in_net]]))
        self._levels = self._levelize(ins[~in_net], outs[~in_net], base[~in_net])
        self._clock_levels = self._levelize(ins[in_net], outs[in_net], base[in_net])
        self.depth = self._levels[-1]
        self._evaluate(self._clock_levels)        # the clock network with the clock low

    def _clock_network(self, ins, outs, clock, enables, latch_q):
        """Boolean mask of the combinational cells between the clock port and the flops' clock
        pins and latches' enables (stopping at flop and latch outputs)."""
        n = self.flat.n_nets
        drv = np.full(n, -1, dtype=np.int64)
        drv[outs] = np.arange(len(outs))
        held = np.zeros(n, dtype=bool)      # a latch's output: a clock gate's enable
        held[latch_q] = True
        flop_q = np.zeros(n, dtype=bool)
        flop_q[self._q] = True
        in_net = np.zeros(len(outs), dtype=bool)
        todo = set(int(b) for b in np.concatenate([self._ck, enables]))
        seen = set()
        clock_set = set(int(b) for b in clock)
        while todo:
            b = todo.pop()
            if b in seen or b in clock_set or b < 2:
                continue
            seen.add(b)
            c = drv[b]
            if c < 0:
                raise NetlistError(f"net {b} reaches a clock pin but is neither driven by a gate nor "
                                   f"the clock port")
            in_net[c] = True
            clock_ins = {int(i) for i in ins[c] if i >= 2 and not held[i]}
            if len(clock_ins) != 1 or flop_q[list(clock_ins)].any():
                raise NetlistError(f"net {b} reaches a clock pin or a latch enable through a gate "
                                   "that is not a clock gate (one input from the clock, the others "
                                   "from latches holding enables); only clock-gate latches are "
                                   "supported")
            todo.update(clock_ins)
        return in_net

    def _levelize(self, ins, outs, base):
        """Order cells by logic level: (input columns, outputs, table bases, level bounds, depth)."""
        n = self.flat.n_nets
        level = np.zeros(n, dtype=np.int64)
        cl = np.zeros(len(outs), dtype=np.int64)
        for _ in range(100000):
            cl = level[ins].max(axis=1) + 1 if len(outs) else cl
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
        return ([np.ascontiguousarray(ins[order][:, i]) for i in range(4)], outs[order], base[order],
                np.searchsorted(cl, np.arange(1, cl.max(initial=0) + 2)), int(cl.max(initial=0)))

    def set_bits(self, nets, value: int):
        """Drive ``nets`` (least significant first) with the bits of ``value``."""
        width = len(nets)
        raw = np.frombuffer(int(value).to_bytes((width + 7) // 8, "little"), dtype=np.uint8)
        self.vals[nets] = np.unpackbits(raw, bitorder="little")[:width]

    def get_bits(self, nets) -> int:
        bits = self.vals[nets]
        return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")

    def _evaluate(self, levels):
        v = self.vals
        lut = self._lut
        (i0, i1, i2, i3), outs, base, b, _ = levels
        for lv in range(len(b) - 1):
            lo, hi = b[lv], b[lv + 1]
            if lo == hi:
                continue
            idx = (base[lo:hi] + v[i0[lo:hi]] + (v[i1[lo:hi]] << 1) + (v[i2[lo:hi]] << 2)
                   + (v[i3[lo:hi]] << 3))
            v[outs[lo:hi]] = lut[idx]

    def settle(self):
        """Evaluate the combinational logic (levels in order) and count toggles when counting
        (with the clock pulses of the edge that began this cycle: a counted cycle is one edge and
        the settling after it)."""
        self._evaluate(self._levels)
        v = self.vals
        if self._prev is not None:
            np.add(self.toggles, v ^ self._prev, out=self.toggles)
            if self._pulses is not None:
                self.toggles[self.clock_nets] += 2 * self._pulses
            self.cycles += 1
            self._prev[:] = v

    def clock(self):
        """The clock edge: every flop whose clock pin rises takes its data input (all of them
        without clock gates); clock-network nets that pulse count two toggles."""
        v = self.vals
        nets = self.clock_nets
        v[self._clk] = 1
        self._evaluate(self._clock_levels)
        high = v[nets].copy()
        rising = v[self._ck].copy()
        v[self._clk] = 0
        self._evaluate(self._clock_levels)
        rising &= 1 ^ v[self._ck]
        self._pulses = high ^ v[nets]
        if self._prev is not None:     # pulses are counted above, not as changes of the settled value
            self._prev[nets] = v[nets]
        take = rising.astype(bool)
        v[self._q[take]] = v[self._d[take]]

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
