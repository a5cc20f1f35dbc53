"""Compact static timing analysis of a Yosys-mapped netlist with the liberty's NLDM tables.

Yosys (``write_json``) gives the mapped cells and their connections; :class:`Sta` propagates
arrival times and transitions (slews) through them, separately for rising and falling edges:

* **Net load** = sum of the input capacitances of the pins on the net, plus ``output_load`` for
  each primary output on it, plus an optional fanout-based wire estimate ``wire_cap_per_fanout``
  per sink (default 0: Yosys places nothing, so there is no wire to measure).
* **Cell delay and output slew** come from ``cell_rise``/``cell_fall`` and ``rise_transition``/
  ``fall_transition`` at (load, input slew) with the liberty's bilinear interpolation and linear
  extrapolation (:class:`flows.synth.liberty.Table`). ``timing_sense`` picks which input edge drives which
  output edge (negative_unate: input fall -> output rise); non_unate arcs take both. Where several
  arcs reach a net the latest arrival wins and the output slew is the largest (as OpenSTA does).
* **Start points**: primary inputs arrive at 0 ps with slew ``input_slew``; flop outputs at the
  clock-to-Q delay of their ``rising_edge``/``falling_edge`` arc (ideal clock: arrival 0, slew
  ``input_slew``). Clock nets (those reaching a flop clock pin) carry no data.
* **End points**: flop data pins add their ``setup_rising``/``setup_falling`` constraint
  (``rise_constraint`` or ``fall_constraint`` at clock slew, data slew); primary outputs end at
  their arrival.
* **Clock gates**: a flop clock pin may be driven through gates (a clock gate: inverter, latch on
  the enable, AND) from a clock input; the pin's inversion swaps its cell's rising and falling arcs
  (a latch clocked by the inverted clock captures at the rising edge) and the gates' delay is the
  pin's clock latency: it delays the paths the pin launches and is subtracted from the setup of
  the paths it captures (the clock arrives later there too); the gate's latch launches no data
  path. Hold is not checked: a path into a gated flop must outlast the gate's delay.
* **Clock edges**: primary inputs, outputs and blocks' pins are timed against the rising edge. A
  flop clocked on the falling edge launches half a period late and captures half a period early,
  so a path between flops of opposite edges must fit in half a period. When a netlist has such
  flops, paths launched by each edge are propagated separately and every path is reported as the
  *period it needs*: its arrival (setup included) times 2 between opposite edges, times 1 between
  equal edges; ``delay_ps`` and fmax then refer to that period.
* **Loads beyond the tables** are extrapolated linearly with the tables' last segment, so delay
  grows monotonically with load. Nets loaded beyond their driver's liberty limit
  (:meth:`flows.synth.liberty.Library.drive_limit`) are buffered with real cells before timing
  (:mod:`flows.synth.repair`); the STA counts any that are left (``Result.overloaded_nets``).
* **Defaults**: ``input_slew`` is the FO4 output transition of the library's GE NAND2 and
  ``output_load`` four NAND2 input capacitances (see :meth:`Library.default_input_slew`).

Hierarchical blocks appear as *macro* cells described by a
:class:`flows.synth.blockmodel.BlockTiming` (an extracted timing model computed by
:func:`flows.synth.blockmodel.extract_model` on the block's own netlist): their input pins are end
points that add the ``in2reg`` delay of their bit, their outputs start at ``reg2out`` and follow
``in2out`` from each input bit (an entry keyed by a whole bus applies to each of its bits).

The result (:class:`Result`) holds the worst path over all start/end kinds, cell by cell.
"""

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from .clocks import EDGE_TABLES, StaError, swap_edge, trace_clocks

__all__ = ["Sta", "StaError", "Result", "Step", "port_bits"]

RISE, FALL = 0, 1
_EDGE = "rf"


@dataclass
class Step:
    """One line of a reported path."""

    point: str      # "inst (CELL) A->Y" or "input a[3]" or "block u0 (mod) in2out"
    net: str
    edge: str       # "r" or "f"
    incr_ps: float
    arrival_ps: float
    slew_ps: float
    load: float


@dataclass
class Result:
    """Worst path of one analysis."""

    delay_ps: float
    levels: int
    kind: str           # "reg->reg", "in->reg", "reg->out", "in->out", or "none"
    start: str
    end: str
    steps: list
    setup_ps: float = 0.0
    endpoints: int = 0
    unit: str = "ps"
    overloaded_nets: int = 0
    edges: str = ""     # "rise->fall" etc. when the netlist has falling-edge flops
    factor: int = 1     # period needed / path arrival: 2 between opposite clock edges

    def format(self) -> str:
        """The path cell by cell with incremental and cumulative arrival times."""
        u = self.unit
        lines = [f"worst path: {self.kind}  {self.start} -> {self.end}",
                 f"  delay {self.delay_ps:.1f} {u}  levels {self.levels}  "
                 f"(endpoints timed: {self.endpoints})",
                 "",
                 f"  {'incr':>9} {'arrival':>9} {'slew':>8} {'load':>8}  edge  point -> net"]
        for s in self.steps:
            lines.append(f"  {s.incr_ps:9.1f} {s.arrival_ps:9.1f} {s.slew_ps:8.1f} {s.load:8.4f}  "
                         f"{s.edge:^4}  {s.point} -> {s.net}")
        if self.overloaded_nets:
            lines.insert(2, f"  {self.overloaded_nets} net(s) loaded beyond their driver's liberty limit "
                            "(not repaired; their delay is extrapolated from the tables)")
        if self.edges and self.factor != 1:
            lines.insert(2, f"  clock edges {self.edges}: the path has half a period, so the period it "
                            f"needs is {self.factor} x its arrival ({self.delay_ps / self.factor:.1f} {u})")
        if self.setup_ps:
            lines.append(f"  {self.setup_ps:9.1f} {self.delay_ps:9.1f} {'':8} {'':8}        "
                         f"setup of {self.end}")
        return "\n".join(lines)


def port_bits(name, bits):
    """Names of a port's bits: ``a`` for width 1, else ``a[0]``, ``a[1]`` ..."""
    return [name] if len(bits) == 1 else [f"{name}[{i}]" for i in range(len(bits))]


_SEQ_KINDS = ("rising_edge", "falling_edge")
_TABLES = EDGE_TABLES
_COMB_KINDS = ("combinational", "combinational_rise", "combinational_fall", "three_state_enable",
               "three_state_disable")


class Sta:
    """Timing graph of one module of a Yosys JSON netlist.

    Parameters
    ----------
    lib : flows.synth.liberty.Library
    module : dict
        ``json["modules"][name]`` from Yosys ``write_json`` (cells mapped to ``lib``).
    models : dict[str, BlockTiming] or None
        Timing models of block modules instantiated as cells (hierarchical flow).
    input_slew, output_load : float or None
        Library units; defaults from the library (FO4 slew, four NAND2 loads).
    wire_cap_per_fanout : float
        Optional wire capacitance per sink pin (library units), default 0.
    """

    def __init__(self, lib, module, models=None, input_slew=None, output_load=None,
                 wire_cap_per_fanout=0.0):
        self.lib = lib
        self.models = models or {}
        self.input_slew = lib.default_input_slew() if input_slew is None else input_slew
        self.output_load = lib.default_output_load() if output_load is None else output_load
        self.wire = wire_cap_per_fanout
        self.tps = lib.time_ps
        self.arcs_into = None   # a defaultdict(list) here records every timed arc (blockmodel)
        self._build(module)

    # ----------------------------------------------------------------- graph construction
    def _build(self, module):
        names = {}
        for nname, nd in module.get("netnames", {}).items():
            hidden = nd.get("hide_name", 0) or nname.startswith("$")
            for i, b in enumerate(nd["bits"]):
                if isinstance(b, int) and (b not in names or (not hidden and names[b][1])):
                    names[b] = (nname if len(nd["bits"]) == 1 else f"{nname}[{i}]", hidden)
        self.netname = {b: n for b, (n, _) in names.items()}
        self.inputs = {}   # port -> bits
        self.outputs = {}
        for pname, pd in module.get("ports", {}).items():
            (self.inputs if pd["direction"] == "input" else self.outputs)[pname] = pd["bits"]
        self.driver = {}                      # bit -> (inst, pin) ; ("", port bit name) for inputs
        self.sinks = defaultdict(list)        # bit -> [(inst, pin)]
        self.cells = {}                       # inst -> (type, conns, kind) kind: comb/seq/macro
        clock_bits = set()
        for pname, bits in self.inputs.items():
            for bn, b in zip(port_bits(pname, bits), bits, strict=True):
                if isinstance(b, int):
                    self.driver[b] = ("", bn)
        for inst, cd in module.get("cells", {}).items():
            ctype = cd["type"]
            if ctype.startswith("$scopeinfo"):
                continue
            conns = cd["connections"]
            if ctype in self.models:
                model = self.models[ctype]
                kind = "macro"
                for pin, bits in conns.items():
                    pbits = port_bits(pin, bits)
                    if pin in model.clock_ports:
                        clock_bits.update(b for b in bits if isinstance(b, int))
                        continue
                    is_in = any(k in model.in_cap or k in model.in2reg for k in pbits) or pin in model.in2reg
                    for bn, b in zip(pbits, bits, strict=True):
                        if not isinstance(b, int):
                            continue
                        if is_in:
                            self.sinks[b].append((inst, bn))
                        else:
                            self.driver[b] = (inst, bn)
            else:
                if ctype not in self.lib.cells:
                    what = "a Yosys internal cell left unmapped" if ctype.startswith("$") else \
                        "not a cell of the liberty nor a synthesized block"
                    raise StaError(f"cell {inst} has type {ctype}: {what} ({self.lib.name})")
                cell = self.lib.cells[ctype]
                kind = "seq" if cell.is_seq else "comb"
                for pin, bits in conns.items():
                    b = bits[0] if bits else None
                    if not isinstance(b, int):
                        continue
                    if pin in cell.inputs:
                        self.sinks[b].append((inst, pin))
                        if pin in cell.clock_pins:
                            clock_bits.add(b)
                    elif pin in cell.outputs:
                        self.driver[b] = (inst, pin)
            self.cells[inst] = (ctype, conns, kind)
        self.clock_bits = clock_bits
        self.out_bits = defaultdict(list)
        for pname, bits in self.outputs.items():
            for bn, b in zip(port_bits(pname, bits), bits, strict=True):
                if isinstance(b, int):
                    self.out_bits[b].append(bn)
        self.load = {}
        for b in set(self.driver) | set(self.sinks) | set(self.out_bits):
            self.load[b] = self._net_load(b)
        self.clock_of, self.gate_latches = trace_clocks(self)

    def capture_setup(self, inst, table, data_slew) -> float:
        """Setup time (ps) of a sequential cell's data pin from its constraint ``table`` (None: 0),
        less its clock pin's latency (a gated clock captures late:
        :func:`flows.synth.clocks.trace_clocks`)."""
        setup = table.lookup(self.input_slew, data_slew) * self.tps if table else 0.0
        return setup - self.clock_of.get(inst, (0, 0.0))[1]

    def seq_kind(self, inst, kind: str) -> str:
        """A sequential arc's timing type as seen from the clock input: rising and falling swap
        for a cell whose clock pin is inverted (:func:`flows.synth.clocks.trace_clocks`)."""
        return swap_edge(kind) if self.clock_of.get(inst, (0, 0.0))[0] else kind

    def pin_cap(self, inst, pin):
        """Capacitance of a sink pin (a library cell pin or a block input bit)."""
        ctype, _, kind = self.cells[inst]
        if kind == "macro":
            return self.models[ctype].in_cap.get(pin, 0.0)
        return self.lib.cells[ctype].inputs.get(pin, 0.0)

    def _net_load(self, b):
        sinks = self.sinks.get(b, ())
        return (sum(self.pin_cap(i, p) for i, p in sinks) + self.output_load * len(self.out_bits.get(b, ()))
                + self.wire * len(sinks))

    def name(self, b):
        return self.netname.get(b, f"n{b}")

    # ----------------------------------------------------------------- propagation
    def _conn_bit(self, conns, pin):
        """Bit of a macro pin name ``a[3]`` or a lib pin ``A``."""
        m = re.fullmatch(r"(.+)\[(\d+)\]", pin)
        if m and m.group(1) in conns:
            return conns[m.group(1)][int(m.group(2))]
        bits = conns.get(pin)
        return bits[0] if bits else None

    def _model_bits(self, conns, key):
        """Bits a block model entry applies to: every bit of a bus (``"a"``), or one bit
        (``"a[3]"``)."""
        if key in conns:
            return conns[key]
        b = self._conn_bit(conns, key)
        return [] if b is None else [b]

    def run(self, inputs=None, regs=True):
        """Propagate arrivals and return the worst path.

        Parameters
        ----------
        inputs : set[str] or None
            Input ports (bus names) or input bits (``"a[3]"``) launching at time 0; None: all of
            them.
        regs : bool
            Whether flops (and blocks' internal registers) launch.

        Returns
        -------
        Result
        """
        falling = regs and any(self.seq_kind(inst, a.kind) == "falling_edge"
                               for inst, (ctype, _, kind) in self.cells.items()
                               if kind == "seq" and inst not in self.gate_latches
                               for a in self.lib.cells[ctype].arcs)
        self.end_by_output = {}       # output bit name -> (period ps, levels)
        self.worst_reg_end = None     # (period ps, levels) over register end points
        self.ends_at = {}             # "reg" and output bit names -> (end, bit, edge, setup) of the worst
        best, count = None, 0
        for phase in ((RISE, FALL) if falling else (None,)):
            self._arrivals(inputs, regs, phase)
            r, n = self._endpoints(regs, phase)
            count += n
            if r is not None and (best is None or r.delay_ps > best.delay_ps):
                best = r
        unit = "levels" if self.lib.generic else "ps"
        if best is None:
            return Result(0.0, 0, "none", "", "", [], endpoints=0, unit=unit)
        best.endpoints = count
        best.overloaded_nets = self.overloaded()
        return best

    def overloaded(self) -> int:
        """Nets driven by a library cell beyond its liberty limit (none after a drive repair)."""
        if self.lib.generic:
            return 0
        n = 0
        for b, (inst, pin) in self.driver.items():
            if inst and self.cells[inst][2] != "macro" and b not in self.clock_bits:
                n += self.load.get(b, 0.0) > self.lib.drive_limit(self.cells[inst][0], pin) * (1 + 1e-9)
        return n

    def _arrivals(self, inputs, regs, phase):
        """Arrivals from the start points launched by clock edge ``phase`` (None: every edge;
        primary inputs and blocks launch on the rising edge)."""
        self.arr = {}     # (bit, rf) -> (arrival ps, slew libunits, levels, pred, startkind)
        # pred: (point text, in_bit, in_rf, incr ps) or None for a start point
        slew0 = self.input_slew
        for pname, bits in self.inputs.items():
            if phase == FALL:
                continue
            for bn, b in zip(port_bits(pname, bits), bits, strict=True):
                if inputs is not None and pname not in inputs and bn not in inputs:
                    continue
                if isinstance(b, int) and b not in self.clock_bits:
                    for rf in (RISE, FALL):
                        self.arr[(b, rf)] = (0.0, slew0, 0, (f"input {bn}", None, None, 0.0), "in")
        deps = defaultdict(set)    # out bit -> in bits
        arcs_of = defaultdict(list)  # out bit -> [(inst, arc or macro entry, in bit)]
        for inst, (ctype, conns, kind) in self.cells.items():
            if kind == "seq":
                cell = self.lib.cells[ctype]
                if not regs or inst in self.gate_latches:
                    continue
                for a in cell.arcs:
                    k = self.seq_kind(inst, a.kind)
                    if k not in _SEQ_KINDS or (phase is not None and k != _SEQ_KINDS[phase]):
                        continue
                    ob = self._conn_bit(conns, a.pin)
                    if isinstance(ob, int):
                        self._launch(inst, ctype, a, ob)
            elif kind == "comb":
                cell = self.lib.cells[ctype]
                for a in cell.arcs:
                    if a.kind not in _COMB_KINDS:
                        continue
                    ob, ib = self._conn_bit(conns, a.pin), self._conn_bit(conns, a.related)
                    if isinstance(ob, int) and isinstance(ib, int):
                        deps[ob].add(ib)
                        arcs_of[ob].append((inst, a, ib))
            else:
                model = self.models[ctype]
                if regs and phase != FALL:
                    for obn, (ps, lv) in model.reg2out.items():
                        ob = self._conn_bit(conns, obn)
                        if isinstance(ob, int):
                            ps = ps + self._drive_adjust(model, obn, ob)
                            for rf in (RISE, FALL):
                                self._offer(ob, rf, ps, slew0, lv,
                                            (f"{inst} ({ctype}) reg2out {obn}", None, None, ps), "reg")
                for key, outs in model.in2out.items():
                    ibits = [b for b in self._model_bits(conns, key) if isinstance(b, int)]
                    for obn, (ps, lv) in outs.items():
                        ob = self._conn_bit(conns, obn)
                        if isinstance(ob, int):
                            ps = ps + self._drive_adjust(model, obn, ob)
                            for ib in ibits:
                                deps[ob].add(ib)
                                arcs_of[ob].append((inst, (key, obn, ps, lv), ib))
        self._propagate(deps, arcs_of)

    def _drive_adjust(self, model, obn, ob):
        """Delay (ps) a block output bit gains from driving this netlist's load instead of the load
        it was timed with (linear in the load, by :attr:`BlockTiming.out_drive`). Never negative:
        a lighter load keeps the block's own, conservative figure."""
        drive = model.out_drive.get(obn)
        if not drive:
            return 0.0
        return drive[0] * max(0.0, self.load.get(ob, 0.0) - model.out_load)

    def drive_slope(self, inst, pin):
        """ps per library load unit of cell ``inst``'s output ``pin`` at its current load (the
        largest over its arcs and edges, at the default input slew)."""
        ctype = self.cells[inst][0]
        ob = self._conn_bit(self.cells[inst][1], pin)
        load = self.load.get(ob, 0.0)
        step = max(load, 1e-3) * 0.25
        slope = 0.0
        for a in self.lib.cells[ctype].arcs_to(pin):
            for dn in ("cell_rise", "cell_fall"):
                if dn in a.tables:
                    t = a.tables[dn]
                    d = t.lookup(load + step, self.input_slew) - t.lookup(load, self.input_slew)
                    slope = max(slope, d / step * self.tps)
        return slope

    def _offer(self, b, rf, t, slew, lv, pred, start):
        cur = self.arr.get((b, rf))
        if cur is None or t > cur[0]:
            self.arr[(b, rf)] = (t, max(slew, cur[1]) if cur else slew, lv, pred, start)
        elif slew > cur[1]:
            self.arr[(b, rf)] = (cur[0], slew, cur[2], cur[3], cur[4])

    def _launch(self, inst, ctype, arc, ob):
        load = self.load.get(ob, 0.0)
        lat = self.clock_of.get(inst, (0, 0.0))[1]   # a gated clock arrives late: launch late
        for rf, (dn, sn) in enumerate(_TABLES):
            if dn not in arc.tables:
                continue
            d, s = self._drive(arc, dn, sn, load, self.input_slew)
            self._offer(ob, rf, lat + d, s, 0,
                        (f"{inst} ({ctype}) {arc.related}->{arc.pin}" + (f" (clock latency {lat:.1f} ps)"
                                                                          if lat else ""),
                         None, None, lat + d), "reg")

    def _drive(self, arc, dn, sn, load, s_in):
        """(delay ps, output slew) of ``arc`` driving ``load`` from input slew ``s_in``."""
        st = arc.tables.get(sn)
        return (arc.tables[dn].lookup(load, s_in) * self.tps,
                st.lookup(load, s_in) if st is not None else s_in)

    def _propagate(self, deps, arcs_of):
        users = defaultdict(list)
        indeg = {}
        for ob, ins in deps.items():
            indeg[ob] = sum(1 for ib in ins if ib in deps)
            for ib in ins:
                users[ib].append(ob)
        ready = [b for b, n in indeg.items() if n == 0]
        done = 0
        self.order = []       # nets in the order they were evaluated (topological)
        while ready:
            ob = ready.pop()
            done += 1
            self.order.append(ob)
            self._eval(ob, arcs_of[ob])
            for u in users.get(ob, ()):
                indeg[u] -= 1
                if indeg[u] == 0:
                    ready.append(u)
        if done != len(deps):
            stuck = [self.name(b) for b, n in indeg.items() if n > 0][:5]
            raise StaError(f"combinational loop through nets {', '.join(stuck)} ...; STA needs an "
                           "acyclic netlist (a latch or a feedback without a register?)")

    def _eval(self, ob, arcs):
        load = self.load.get(ob, 0.0)
        rec = None if self.arcs_into is None else self.arcs_into[ob]
        for inst, arc, ib in arcs:
            for irf in (RISE, FALL):
                src = self.arr.get((ib, irf))
                if src is None:
                    continue
                t_in, s_in, lv_in = src[0], src[1], src[2]
                if isinstance(arc, tuple):      # macro in2out entry
                    key, obn, ps, lv = arc
                    point = f"{inst} ({self.cells[inst][0]}) in2out {key}->{obn}"
                    for orf in (RISE, FALL):
                        self._offer(ob, orf, t_in + ps, self.input_slew, lv_in + lv,
                                    (point, ib, irf, ps), src[4])
                        if rec is not None:
                            rec.append((orf, ib, irf, ps, lv, point))
                    continue
                sense = arc.sense
                orfs = (irf,) if sense == "positive_unate" else (1 - irf,) if sense == "negative_unate" \
                    else (RISE, FALL)
                for orf in orfs:
                    dn, sn = _TABLES[orf]
                    if dn not in arc.tables:
                        continue
                    d, s = self._drive(arc, dn, sn, load, s_in)
                    point = f"{inst} ({self.cells[inst][0]}) {arc.related}->{arc.pin}"
                    self._offer(ob, orf, t_in + d, max(s, 0.0), lv_in + 1, (point, ib, irf, d), src[4])
                    if rec is not None:
                        rec.append((orf, ib, irf, d, 1, point))

    # ----------------------------------------------------------------- end points
    def _endpoints(self, regs, phase):
        """(worst Result or None, end points timed) of the arrivals launched by ``phase``.

        Every end point is scored by the period it needs: arrival (setup included) times 2 when its
        capture edge differs from the launch edge (rising for inputs, outputs and blocks)."""
        best = None   # (period, levels, kind, end, bit, rf, setup, factor, capture edge)
        count = 0
        launch = RISE if phase is None else phase

        def consider(delay, lv, kind, end, b, rf, setup, capture=RISE):
            nonlocal best, count
            count += 1
            f = 1 if capture == launch else 2
            if kind.endswith("reg"):
                self._reg_end(delay * f, lv, (end, b, rf, setup))
            if best is None or delay * f > best[0]:
                best = (delay * f, lv, kind, end, b, rf, setup, f, capture)
            return delay * f

        for inst, (ctype, conns, kind) in self.cells.items():
            if kind == "seq":
                cell = self.lib.cells[ctype]
                for a in cell.arcs:
                    if not a.kind.startswith("setup"):
                        continue
                    capture = FALL if self.seq_kind(inst, a.kind) == "setup_falling" else RISE
                    b = self._conn_bit(conns, a.pin)
                    for rf, tn in ((RISE, "rise_constraint"), (FALL, "fall_constraint")):
                        src = self.arr.get((b, rf))
                        if src is None:
                            continue
                        tab = a.tables.get(tn)
                        setup = self.capture_setup(inst, tab, src[1])
                        consider(src[0] + setup, src[2], f"{src[4]}->reg", f"{inst}/{a.pin}", b, rf,
                                 setup, capture)
            elif kind == "macro":
                model = self.models[ctype]
                if regs and phase != FALL:
                    ps, lv = model.reg2reg
                    if ps > 0:
                        consider(ps, lv, "reg->reg", f"{inst} ({ctype}) internal", None, None, 0.0)
                for key, (ps, lv) in model.in2reg.items():
                    for b in self._model_bits(conns, key):
                        if not isinstance(b, int):
                            continue
                        for rf in (RISE, FALL):
                            src = self.arr.get((b, rf))
                            if src is not None:
                                consider(src[0] + ps, src[2] + lv, f"{src[4]}->reg",
                                         f"{inst} ({ctype}) in2reg {key}", b, rf, ps)
        for b, bnames in self.out_bits.items():
            for rf in (RISE, FALL):
                src = self.arr.get((b, rf))
                if src is None:
                    continue
                for bn in bnames:
                    p = consider(src[0], src[2], f"{src[4]}->out", f"output {bn}", b, rf, 0.0)
                    cur = self.end_by_output.get(bn)
                    if cur is None or p > cur[0]:
                        self.end_by_output[bn] = (p, src[2])
                        self.ends_at[bn] = (f"output {bn}", b, rf, 0.0)
        if best is None:
            return None, count
        delay, lv, kind, end, b, rf, setup, f, capture = best
        steps = self._trace(b, rf) if b is not None else []
        start = steps[0].point if steps else end
        edges = f"{'rf'[launch]}->{'rf'[capture]}".replace("r", "rise").replace("f", "fall") \
            if phase is not None else ""
        return Result(delay, lv, kind, start, end, steps, setup, 0,
                      unit="levels" if self.lib.generic else "ps", edges=edges, factor=f), count

    def _reg_end(self, ps, lv, at=None):
        if self.worst_reg_end is None or ps > self.worst_reg_end[0]:
            self.worst_reg_end = (ps, lv)
            self.ends_at["reg"] = at

    def trace_to(self, end: str) -> tuple:
        """(steps, end point, setup ps) of the worst path to ``end`` of the last :meth:`run`: ``"reg"``
        (the worst register end point) or an output bit name; steps are empty when the end is a
        block's internal register path."""
        point, b, rf, setup = self.ends_at[end]
        return (self._trace(b, rf) if b is not None else []), point, setup

    def _trace(self, b, rf):
        steps = []
        while b is not None:
            t, s, lv, pred, _ = self.arr[(b, rf)]
            point, ib, irf, incr = pred
            steps.append(Step(point, self.name(b), _EDGE[rf], incr, t, s * self.tps,
                              self.load.get(b, 0.0)))
            b, rf = ib, irf
        return steps[::-1]


def fmax_mhz(delay_ps: float):
    """Maximum clock frequency for a path delay (None when there is no timed path)."""
    return None if delay_ps <= 0 or math.isnan(delay_ps) else 1e6 / delay_ps
