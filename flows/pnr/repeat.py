"""Buffering of the top's nets by position: local leaf buffers and repeater chains along the row.

The drive repair (:mod:`flows.synth.repair`) buffers a net by load before anything is placed: each
of its buffers takes consecutive sinks in netlist order, so on the matrix unit's top one buffer of
an activation bit may feed columns at both ends of the row, and each of a bit's buffers then runs
the row's whole length (at D = 16, E2M1: 201 buffers on 46 nets, each such net a row-long trunk
where one would do). Once the top's cells are placed, :func:`rebuffer` rebuilds those nets from
where their pins are:

1. **Which nets.** Those the repair buffered, and those whose load (pins and the wire across
   them at ``wire_pf_um``) is over their driver's limit (the repair counts no wire); not the nets
   driven by a port or a block, clock nets (a sink on a clock pin), nor those in ``keep``. A net
   its driver drives, wire and all, is left alone however long. Rebuilding the repair's trees
   alone left an AOI21X1 driving 0.62 pF of wire (1.5 ns slew) on the E2M1 D = 8 unit's critical
   path: 4,357 ps post-route against 3,349 ps with the wire-overloaded nets rebuilt too.
2. **Collapse.** The repair's buffers are removed; their sinks join the net of the tree's root.
   **Direct** if its pins now lie within one segment (``seg_um`` of x) and its load is within
   the driver's limit.
3. **Leaves** otherwise: the sinks in x order are cut into clusters of at most one segment and at
   most the buffer's load limit (their pin capacitance and the wire across them); each cluster
   gets a buffer, whose net stays local.
4. **Trunk**: the leaf buffers' inputs are driven by the driver directly if they (and the driver)
   lie within one segment and their load is within its limit; otherwise by a chain of repeaters
   each way along the row from the driver, nearest first, each driving the leaf buffers of at most
   one segment (and the buffer's load, the next repeater's input included) and the next repeater.
   A sink then sees the driver through its leaf buffer and as many repeaters as segments lie
   between them.

The segment is the spacing at which a chain of the buffer is fastest per micron of wire
(:func:`flows.pnr.wires.repeater_spacing`). Sinks whose position is not known (the top's output
ports, placed after the cells) stay on the driver's net. The result is deterministic (nets in name
order, sinks by position then name).
"""

from dataclasses import dataclass

__all__ = ["Sink", "Rebuffered", "rebuffer"]


@dataclass(frozen=True)
class Sink:
    """A load on a net: ``(instance, pin)`` at ``x`` um presenting ``cap_pf``."""

    ref: tuple
    x: float
    cap_pf: float


@dataclass
class Rebuffered:
    """:func:`rebuffer`'s result: ``cells`` (repair buffers removed, pins reconnected, repeaters
    appended), ``removed`` repair buffers, ``added`` repeaters, ``nets`` rebuilt."""

    cells: list
    removed: int
    added: int
    nets: int


def rebuffer(cells, *, is_repair, outputs_of, clock_pins, position, cap_of, driver_limit, buffer,
             seg_um: float, wire_pf_um: float, keep=()) -> Rebuffered:
    """Rebuild the repair's buffer trees, and split long nets, by position (module docstring).

    Parameters
    ----------
    cells : list
        ``(instance, cell type, {pin: net})`` of the top: its own cells and the block macros.
    is_repair : callable
        ``instance -> bool``: a buffer the drive repair inserted (one input, one output).
    outputs_of : callable
        ``cell type -> set of output pins`` (library cells and the macros).
    clock_pins : callable
        ``cell type -> set of clock pins``.
    position : callable
        ``(instance, pin) -> x`` um, or None where unknown.
    cap_of : callable
        ``(cell type, pin) -> pF`` of an input pin.
    driver_limit : callable
        ``(cell type, pin) -> pF`` an output pin may drive, or None: its nets are left as they are.
    buffer : tuple
        ``(cell type, input pin, output pin, limit pF)`` of the repeater.
    seg_um : float
        Longest x extent of a cluster (um).
    wire_pf_um : float
        Wire capacitance per um counted in a cluster's load.
    keep : iterable of str
        Nets left untouched.

    Returns
    -------
    Rebuffered

    Raises
    ------
    ValueError
        A non-positive segment, or a sink heavier than the buffer may drive.
    """
    if seg_um <= 0:
        raise ValueError(f"repeater segment {seg_um} um: must be positive")
    btype, bin_, bout, blimit = buffer
    bcap = cap_of(btype, bin_)
    driver, sinks, fed = {}, {}, {}
    for inst, typ, pins in cells:
        outs = outputs_of(typ)
        for p, n in pins.items():
            if p in outs:
                driver[n] = (inst, typ, p)
            else:
                sinks.setdefault(n, []).append((inst, typ, p))
        if is_repair(inst):
            (y,) = [pins[p] for p in pins if p in outs]
            fed[inst] = y

    def ends_of(net, tree):
        out = []
        for inst, typ, p in sinks.get(net, ()):
            if inst in fed:
                tree.append(inst)
                out += ends_of(fed[inst], tree)
            else:
                out.append((inst, typ, p))
        return out

    pins_of = {inst: dict(pins) for inst, _, pins in cells}
    removed, added, touched = set(), 0, 0
    taken = set(driver) | set(sinks)
    for net in sorted(sinks):
        if net not in driver or net in keep or driver[net][0] in fed:
            continue
        dinst, dtyp, dpin = driver[net]
        limit = driver_limit(dtyp, dpin)
        if limit is None:
            continue
        tree = []
        ends = ends_of(net, tree)
        if any(p in clock_pins(typ) for _, typ, p in ends):
            continue
        xd = position((dinst, dpin))
        loads = [Sink((inst, p), x, cap_of(typ, p)) for inst, typ, p in ends
                 if (x := position((inst, p))) is not None]
        if xd is None or not loads:
            continue
        lo, hi = min([xd] + [s.x for s in loads]), max([xd] + [s.x for s in loads])
        total = sum(s.cap_pf for s in loads) + wire_pf_um * (hi - lo)
        if not tree and total <= limit:
            continue   # never buffered, and its driver drives it, wire and all
        for s in loads:
            if s.cap_pf > blimit:
                raise ValueError(f"pin {s.ref} on net {net} loads {s.cap_pf:.4f} pF, more than the "
                                 f"repeater {btype} may drive ({blimit:.4f} pF)")
        touched += 1
        removed.update(tree)
        for inst, _, p in ends:   # the unplaced ones stay here; the placed ones move on below
            pins_of[inst][p] = net
        if hi - lo <= seg_um and total <= limit:
            continue   # the repair's tree was not needed once placed: driven directly
        new = []

        def add_buffer(feed, nodes, new=new, net=net):
            """A repeater on net ``feed`` driving ``nodes``: (its input as a node, its output net)."""
            nonlocal added
            name = f"{net}_rep{added}"
            while name in taken:
                name += "_"
            taken.add(name)
            inst = f"urep{added}"
            pins_of[inst] = {bin_: feed, bout: name}
            new.append((inst, btype, pins_of[inst]))
            added += 1
            for node in nodes:
                pins_of[node.ref[0]][node.ref[1]] = name
            return Sink((inst, bin_), sum(n.x for n in nodes) / len(nodes), bcap), name

        # leaves: neighbouring sinks by load and extent; the trunk: their buffers' inputs
        groups = _clusters(sorted(loads, key=lambda s: (s.x, s.ref)), seg_um, wire_pf_um, blimit, 0.0)
        trunk = [add_buffer(net, c)[0] for c in groups]
        xs = [xd] + [n.x for n in trunk]
        if max(xs) - min(xs) > seg_um or len(trunk) * bcap + wire_pf_um * (max(xs) - min(xs)) > limit:
            for side in (sorted((n for n in trunk if n.x >= xd), key=lambda n: (n.x - xd, n.ref)),
                         sorted((n for n in trunk if n.x < xd), key=lambda n: (xd - n.x, n.ref))):
                feed = net   # a chain of repeaters each way along the row
                for cluster in _clusters(side, seg_um, wire_pf_um, blimit, bcap):
                    feed = add_buffer(feed, cluster)[1]
        cells = cells + new
    out = [(inst, typ, pins_of[inst]) for inst, typ, _ in cells if inst not in removed]
    return Rebuffered(out, len(removed), added, touched)


def _clusters(side, seg_um, wire_pf_um, limit, buffer_cap):
    """Consecutive nodes in clusters of at most ``seg_um`` of x and at most ``limit`` pF (their
    pins, the wire across them, and ``buffer_cap``: the next repeater of a chain)."""
    out, cur = [], []
    for s in side:
        if cur:
            span = abs(s.x - cur[0].x)
            load = sum(c.cap_pf for c in cur) + s.cap_pf + wire_pf_um * span + buffer_cap
            if span > seg_um or load > limit:
                out.append(cur)
                cur = []
        cur.append(s)
    if cur:
        out.append(cur)
    return out
