"""Extracted timing models of synthesized blocks, per input bit.

:func:`extract_model` turns a block's own netlist (its :class:`flows.synth.sta.Sta`, children again
as models) into a :class:`BlockTiming`, which the parent's :class:`~flows.synth.sta.Sta` applies as
a macro cell.

Input side, per bit
    One forward pass launches every input bit and every register at once and records each timed
    arc with its delay (:attr:`flows.synth.sta.Sta.arcs_into`); one backward pass over those arcs
    (:func:`required`) then gives, for every net, the longest remaining path to a register (setup
    included) and to each output bit, with the arc it leaves by. An input bit's entries are the
    values at its net: ``in2reg["x[3]"]`` is the longest path from bit ``x[3]`` to any register,
    ``in2out["x[3]"]["y[0]"]`` the longest to output bit ``y[0]``. A parent adding its own arrival
    at ``x[3]`` gets exactly the flat analysis's path through that bit (up to the slews below), so a
    late bit is never paired with another bit's long internal path.

Slews
    Each arc's delay is taken at the worst (largest) transition its input net has in that forward
    pass, over all launching inputs and registers, the input pins at the default input slew: the
    transition a flat analysis (ours or OpenSTA's) propagates through the block when its inputs arrive
    at that slew. A delay never shrinks with a larger input slew in these tables, so the per-bit
    figures are no smaller than a run launching only that bit. What the model leaves out is the
    parent's real slew at the block's input pins (it uses the default input slew), and the
    edge: entries are the worst over the input bit's rising and falling edges, and a block output is
    offered at the same time on both edges.

Register side
    ``reg2out``, ``reg2reg`` come from a run with only registers launching, as before.

A model may also key an input entry by a whole bus (``"x"``: the same figure for every bit); the
parent reads both forms, so a model written with bus keys (an older ``block_models.json``) still
applies, conservatively.
"""

from collections import defaultdict
from dataclasses import dataclass, field

from .sta import FALL, RISE, Step, port_bits

__all__ = ["BlockTiming", "extract_model", "required", "trace_input"]


@dataclass
class BlockTiming:
    """Extracted timing model of a synthesized block, as seen from its parent.

    Delays are in ps, paired with logic levels. Input-side entries are keyed by input bit
    (``"a[3]"``, or ``"a"`` for a one-bit port); a key naming a whole bus applies to each of its
    bits (conservative when its bits differ).

    Attributes
    ----------
    in_cap : dict[str, float]
        Input bit (``"a[3]"``) -> capacitance it presents (library units).
    in2reg : dict[str, list]
        Input bit -> [ps, levels] of its longest path to an internal register (setup included).
    reg2out : dict[str, list]
        Output bit -> [ps, levels] from the clock edge.
    in2out : dict[str, dict[str, list]]
        Input bit -> {output bit: [ps, levels]} of its longest combinational paths.
    reg2reg : list
        [ps, levels] worst internal register-to-register path.
    clock_ports : list[str]
        Ports that are clocks (no data timing).
    out_drive : dict[str, list]
        Output bit -> [ps per library load unit, load limit] of the library cell driving it inside
        the block (its delay's slope at the load it was timed with, and its liberty limit). A bit
        driven by no library cell (a feed-through, a constant) is absent.
    out_load : float
        The load each output bit was timed with inside the block (library units). A parent driving
        a heavier load ``L`` from a bit adds ``slope * (L - out_load)`` to its arrival.
    """

    name: str
    in_cap: dict = field(default_factory=dict)
    in2reg: dict = field(default_factory=dict)
    reg2out: dict = field(default_factory=dict)
    in2out: dict = field(default_factory=dict)
    reg2reg: list = field(default_factory=lambda: [0.0, 0])
    clock_ports: list = field(default_factory=list)
    out_drive: dict = field(default_factory=dict)
    out_load: float = 0.0

    def to_json(self):
        return self.__dict__.copy()

    @classmethod
    def from_json(cls, d):
        return cls(**d)


# Register end points captured on the edge the inputs launch on ("reg") and on the other edge
# ("reg2": a path of half a period, so it needs twice its length; kept apart because the factor
# applies to the whole path, the parent's part included).
_REG, _REG2 = "reg", "reg2"


def _ends(sta):
    """{(bit, rf): {key: (ps, levels, ("end", point, setup ps))}}: the end points of the block's
    input paths (flop data pins, children's in2reg pins, output bits) after a forward pass."""
    req = defaultdict(dict)

    def put(b, rf, key, ps, lv, point):
        cur = req[(b, rf)].get(key)
        if cur is None or ps > cur[0]:
            req[(b, rf)][key] = (ps, lv, ("end", point, ps))

    for inst, (ctype, conns, kind) in sta.cells.items():
        if kind == "seq":
            for a in sta.lib.cells[ctype].arcs:
                if not a.kind.startswith("setup"):
                    continue
                key = _REG2 if sta.seq_kind(inst, a.kind) == "setup_falling" else _REG
                b = sta._conn_bit(conns, a.pin)
                for rf, tn in ((RISE, "rise_constraint"), (FALL, "fall_constraint")):
                    src = sta.arr.get((b, rf))
                    if src is not None:
                        setup = sta.capture_setup(inst, a.tables.get(tn), src[1])
                        put(b, rf, key, setup, 0, f"{inst}/{a.pin}")
        elif kind == "macro":
            for key, (ps, lv) in sta.models[ctype].in2reg.items():
                for b in sta._model_bits(conns, key):
                    if isinstance(b, int):
                        for rf in (RISE, FALL):
                            put(b, rf, _REG, ps, lv, f"{inst} ({ctype}) in2reg {key}")
    for b, bnames in sta.out_bits.items():
        for rf in (RISE, FALL):
            for bn in bnames:
                put(b, rf, bn, 0.0, 0, f"output {bn}")
    return req


def required(sta) -> dict:
    """Longest paths from every net reached by an input to the block's end points.

    Runs one forward pass with every input bit and register launching (recording the arcs and
    their delays at that pass's slews), then walks the arcs backward in reverse topological order.

    Returns
    -------
    dict
        ``(bit, rf) -> {key: (ps, levels, successor)}``; ``key`` is ``"reg"``, ``"reg2"`` (a
        register captured on the falling edge) or an output bit name; ``successor`` is
        ``(net, rf, incr ps, point)`` of the arc the path leaves by, or ``("end", point, setup ps)``.
        Also kept as ``sta.required`` for :func:`trace_input`.
    """
    sta.arcs_into = defaultdict(list)
    try:
        sta._arrivals(None, True, None)
    finally:
        arcs_into, sta.arcs_into = sta.arcs_into, None
    reach = {b for bits in sta.inputs.values() for b in bits if isinstance(b, int)}
    for ob in sta.order:
        if any(ib in reach for _, ib, *_ in arcs_into.get(ob, ())):
            reach.add(ob)
    req = _ends(sta)
    for ob in reversed(sta.order):
        if ob not in reach:
            continue
        for orf, ib, irf, d, lv, point in arcs_into.get(ob, ()):
            src = req.get((ob, orf))
            if not src or ib not in reach:
                continue
            tgt = req[(ib, irf)]
            for key, (ps, l, _) in src.items():
                cur = tgt.get(key)
                if cur is None or ps + d > cur[0]:
                    tgt[key] = (ps + d, l + lv, (ob, orf, d, point))
    sta.required = req
    sta.required_slew = {k: v[1] for k, v in sta.arr.items()}
    return req


def _best(req, b, key):
    """(ps, levels, rf, key) of the longest path from bit ``b`` to ``key`` over both edges (``"reg"``
    also covers falling-edge registers, at twice their path), or None."""
    best = None
    for rf in (RISE, FALL):
        for k, f in ((key, 1), (_REG2, 2)) if key == _REG else ((key, 1),):
            v = req.get((b, rf), {}).get(k)
            if v is not None and (best is None or v[0] * f > best[0]):
                best = (v[0] * f, v[1], rf, k)
    return best


def trace_input(sta, bit: str, end: str) -> tuple:
    """``(steps, end point, setup ps)`` of the path a model entry stands for: from input bit
    ``bit`` to ``end`` (``"reg"`` or an output bit name), as :meth:`flows.synth.sta.Sta.trace_to`
    returns them; the steps add up to the entry's delay (less the setup)."""
    req = getattr(sta, "required", None) or required(sta)
    b = next(b for pname, bits in sta.inputs.items() for bn, b in zip(port_bits(pname, bits), bits,
                                                                       strict=True) if bn == bit)
    _, _, rf, key = _best(req, b, end)
    slew = sta.required_slew
    steps = [Step(f"input {bit}", sta.name(b), "rf"[rf], 0.0, 0.0, slew.get((b, rf), 0.0) * sta.tps,
                  sta.load.get(b, 0.0))]
    t = 0.0
    while True:
        succ = req[(b, rf)][key][2]
        if succ[0] == "end":
            return steps, succ[1], succ[2]
        b, rf, d, point = succ
        t += d
        steps.append(Step(point, sta.name(b), "rf"[rf], d, t, slew.get((b, rf), 0.0) * sta.tps,
                          sta.load.get(b, 0.0)))


def extract_model(sta, name: str, within_tables: bool = False) -> tuple:
    """Timing model of a block from its own netlist, plus its worst internal path (``within_tables``:
    the drive repair's ``tables`` limit on the block's outputs, :mod:`flows.synth.repair`).

    Runs the analysis with only registers launching (reg->reg, reg->out), the per-bit input pass
    (:func:`required`) and once with only the inputs launching (the worst in->reg or in->out path).
    Returns ``(BlockTiming, Result)``, the result being the worst of the runs (what a standalone
    analysis of the block reports).
    """
    m = BlockTiming(name)
    m.clock_ports = sorted(p for p, bits in sta.inputs.items()
                           if bits and all(b in sta.clock_bits for b in bits if isinstance(b, int)))
    for pname, bits in sta.inputs.items():
        if pname in m.clock_ports:
            continue
        for bn, b in zip(port_bits(pname, bits), bits, strict=True):
            m.in_cap[bn] = sta.load.get(b, 0.0) if isinstance(b, int) else 0.0
    m.out_load = sta.output_load
    for pname, bits in sta.outputs.items():
        for bn, b in zip(port_bits(pname, bits), bits, strict=True):
            inst, pin = sta.driver.get(b, ("", "")) if isinstance(b, int) else ("", "")
            if inst and sta.cells[inst][2] != "macro" and not sta.lib.generic:
                m.out_drive[bn] = [sta.drive_slope(inst, pin),
                                   sta.lib.drive_limit(sta.cells[inst][0], pin, within_tables)]
    worst = sta.run(inputs=set(), regs=True)
    if sta.worst_reg_end:
        m.reg2reg = list(sta.worst_reg_end)
    m.reg2out = {k: list(v) for k, v in sta.end_by_output.items()}
    req = required(sta)
    outs = [bn for bnames in sta.out_bits.values() for bn in bnames]
    for pname, bits in sta.inputs.items():
        if pname in m.clock_ports:
            continue
        for bn, b in zip(port_bits(pname, bits), bits, strict=True):
            if not isinstance(b, int):
                continue
            r = _best(req, b, _REG)
            if r is not None:
                m.in2reg[bn] = [r[0], r[1]]
            keys = set(req.get((b, RISE), ())) | set(req.get((b, FALL), ()))
            to = {}
            for obn in outs:
                if obn in keys:
                    r = _best(req, b, obn)
                    to[obn] = [r[0], r[1]]
            if to:
                m.in2out[bn] = to
    if sta.inputs:
        r = sta.run(inputs=None, regs=False)
        if r.delay_ps > worst.delay_ps or worst.kind == "none":
            worst = r
    return m, worst
