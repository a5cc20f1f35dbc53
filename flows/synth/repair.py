"""Drive repair of a mapped netlist: real buffer trees on nets loaded beyond their driver's limit.

Yosys and ABC map logic without buffering, so one net can carry far more capacitance than its
driver may drive (an enable reaching every flop of a block). :func:`repair` inserts real buffer
cells of the library into such nets, so the netlist that is timed (:class:`flows.synth.sta.Sta`)
is the one whose area is reported (:func:`flows.synth.hier.own_area` of the repaired module).

Limits (:meth:`flows.synth.liberty.Library.drive_limit`)
    A library cell's output pin may drive up to its liberty ``max_capacitance``; with a
    ``max_transition`` the load is also capped where the pin's output transition (at the default
    input slew) reaches it. A pin the liberty gives neither limit may drive up to the top of its
    load tables. The flow's ``tables`` drive limit (:data:`DRIVE_LIMITS`, ``within_tables``) caps
    every pin at the top of its load tables too, so no delay is extrapolated past them. A block's
    output bit (hierarchical flow) may drive the limit of the cell driving it inside the block
    (:attr:`flows.synth.blockmodel.BlockTiming.out_drive`); a primary input, or a block output not
    driven by a library cell, is treated as driven by one repair buffer. Clock
    nets are not repaired (the clock is ideal: clock tree synthesis is out of scope) and neither
    are nets without a driver.

Trees
    The repair buffer is the library's single-input, positive-unate cell with the least delay per
    e-fold of fanout at its *target load*: the smaller of its limit and the top of its load table,
    so that every buffer stays inside its characterized range. A net over its driver's limit gets
    leaf buffers, each taking consecutive sinks (in netlist order) up to the target load; their
    inputs become the sinks of the next level, and levels are added until the load left on the
    original net is within the driver's limit. Primary outputs stay on the original net.

The repair is deterministic (same netlist, same result) and leaves the logic function unchanged.
"""

import copy
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from .liberty import load_top
from .sta import Sta

__all__ = ["repair", "repair_buffer", "write_repaired", "RepairReport", "REPAIR_PREFIX", "DRIVE_LIMITS",
           "DEFAULT_DRIVE_LIMIT", "check_drive_limit", "within_tables"]

#: Instance-name prefix of the inserted buffers.
REPAIR_PREFIX = "repair_buf_"

#: The flow's drive limits (``DRIVE_LIMIT=``, ``--drive-limit``), the default first, and which nets
#: each buffers.
DRIVE_LIMITS = {
    "liberty": "nets over their driver's liberty max_capacitance",
    "tables": "nets over their driver's liberty max_capacitance or beyond the top of its load "
              "tables (no delay extrapolated past the characterized loads)",
}
#: The flow's default drive limit.
DEFAULT_DRIVE_LIMIT = next(iter(DRIVE_LIMITS))


def within_tables(limit: str) -> bool:
    """Whether drive limit ``limit`` (:data:`DRIVE_LIMITS`) also caps loads at the tables' top."""
    return limit == "tables"


def check_drive_limit(limit) -> str:
    """``limit`` (None: the default, ``liberty``), or a clear ``ValueError`` naming the choices.

    Raises
    ------
    ValueError
        ``limit`` is not one of :data:`DRIVE_LIMITS`.
    """
    if limit is None or limit == "":
        return DEFAULT_DRIVE_LIMIT
    if limit not in DRIVE_LIMITS:
        raise ValueError(f"drive limit must be one of {', '.join(DRIVE_LIMITS)}, not {limit!r} "
                         "(DRIVE_LIMIT=tables, --drive-limit tables)")
    return limit


@dataclass
class RepairReport:
    """What :func:`repair` inserted.

    Attributes
    ----------
    nets : int
        Nets that were over their driver's limit.
    buffers : int
        Buffer cells inserted.
    area : float
        Their area (library units).
    cell : str
        The buffer cell used ("" when none was needed).
    max_levels : int
        Deepest tree (buffer levels between a driver and a sink).
    """

    nets: int = 0
    buffers: int = 0
    area: float = 0.0
    cell: str = ""
    max_levels: int = 0

    def line(self) -> str:
        """One line for the reports."""
        if not self.nets:
            return "drive repair: no net over its driver's limit"
        return (f"drive repair: {self.nets} net(s) over their driver's limit buffered with "
                f"{self.buffers} {self.cell} ({self.area:.1f} area units, counted; up to "
                f"{self.max_levels} buffer level(s) per tree)")


def repair_buffer(lib):
    """``(cell, target load)`` of the repair buffer, or None (generic library, or no buffer cell)."""
    if lib.generic:
        return None
    slew = lib.default_input_slew()
    best = None
    for c in sorted(lib.cells.values(), key=lambda c: c.name):
        if c.is_seq or len(c.inputs) != 1 or len(c.outputs) != 1:
            continue
        arcs = c.arcs_to(c.outputs[0])
        if len(arcs) != 1 or arcs[0].sense != "positive_unate" or "cell_rise" not in arcs[0].tables:
            continue
        target = min(lib.drive_limit(c.name, c.outputs[0]), load_top(c, c.outputs[0]))
        cin = next(iter(c.inputs.values()))
        if not (math.isfinite(target) and cin > 0 and target > 2 * cin):
            continue
        delay = max(arcs[0].tables[t].lookup(target, slew) for t in ("cell_rise", "cell_fall")
                    if t in arcs[0].tables)
        cost = delay / math.log(target / cin)
        if best is None or cost < best[0]:
            best = (cost, c, target)
    return None if best is None else best[1:]


def _set_pin(conns, pin, bit):
    """Point a cell pin (``A`` or a macro bus bit ``a[3]``) at ``bit``."""
    m = re.fullmatch(r"(.+)\[(\d+)\]", pin)
    if m and m.group(1) in conns:
        conns[m.group(1)][int(m.group(2))] = bit
    else:
        conns[pin] = [bit]


def _all_bits(module):
    """Every net bit a Yosys JSON module mentions (ports, cell connections, net names)."""
    for group, key in (("ports", None), ("cells", "connections"), ("netnames", None)):
        for d in module.get(group, {}).values():
            lists = d[key].values() if key else [d.get("bits", ())]
            for bits in lists:
                yield from (b for b in bits if isinstance(b, int))


def repair(lib, module, models=None, output_load=None, wire_cap_per_fanout=0.0, within_tables=False):
    """A copy of ``module`` with buffer trees on every net loaded beyond its driver's limit.

    Parameters
    ----------
    lib : flows.synth.liberty.Library
    module : dict
        ``json["modules"][name]`` from Yosys ``write_json``, mapped to ``lib``.
    models : dict[str, flows.synth.blockmodel.BlockTiming] or None
        Timing models of child blocks (their input capacitances are sink loads).
    output_load : float or None
        Load of each primary output (default: the STA's default).
    wire_cap_per_fanout : float
        The STA's optional wire capacitance per sink (library units).
    within_tables : bool
        Also buffer nets beyond the top of their driver's load tables (no extrapolation at all):
        the flow's ``tables`` drive limit (:data:`DRIVE_LIMITS`; its default keeps the liberty's
        limits).

    Returns
    -------
    (dict, RepairReport)
        The repaired module (the input is not modified) and what was inserted.
    """
    rep = RepairReport()
    buf = repair_buffer(lib)
    if buf is None:
        return module, rep
    bcell, target = buf
    bin_pin, bout_pin = next(iter(bcell.inputs)), bcell.outputs[0]
    bcin = bcell.inputs[bin_pin]
    sta = Sta(lib, module, models=models, output_load=output_load,
              wire_cap_per_fanout=wire_cap_per_fanout)
    out = copy.deepcopy(module)
    cells = out["cells"]
    next_bit = 1 + max(_all_bits(module), default=1)
    for b in sorted(sta.sinks):
        if b in sta.clock_bits or b not in sta.driver:
            continue
        inst, pin = sta.driver[b]
        kind = sta.cells[inst][2] if inst else "port"
        if kind in ("comb", "seq"):
            limit = lib.drive_limit(sta.cells[inst][0], pin, within_tables)
        elif kind == "macro":
            limit = sta.models[sta.cells[inst][0]].out_drive.get(pin, [0.0, target])[1]
        else:
            limit = target
        fixed = sta.output_load * len(sta.out_bits.get(b, ()))
        level = [(i, p, sta.pin_cap(i, p) + sta.wire) for i, p in sta.sinks[b]]
        if fixed + sum(c for _, _, c in level) <= limit:
            continue
        rep.nets += 1
        depth = 0
        while fixed + sum(c for _, _, c in level) > limit:
            groups, cur, cap = [], [], 0.0
            for s in level:
                if cur and cap + s[2] > target:
                    groups.append(cur)
                    cur, cap = [], 0.0
                cur.append(s)
                cap += s[2]
            groups.append(cur)
            if len(groups) >= len(level) and len(level) * (bcin + sta.wire) >= sum(c for _, _, c in level):
                break       # buffering cannot reduce this load any further
            nxt = []
            for g in groups:
                name = f"{REPAIR_PREFIX}{rep.buffers}"
                rep.buffers += 1
                for i, p, _ in g:
                    _set_pin(cells[i]["connections"], p, next_bit)
                cells[name] = {"type": bcell.name, "port_directions": {bin_pin: "input",
                                                                        bout_pin: "output"},
                               "connections": {bin_pin: [b], bout_pin: [next_bit]}}
                out.setdefault("netnames", {})[f"{REPAIR_PREFIX}net_{next_bit}"] = {
                    "hide_name": 1, "bits": [next_bit], "attributes": {}}
                next_bit += 1
                nxt.append((name, bin_pin, bcin + sta.wire))
            level = nxt
            depth += 1
        rep.max_levels = max(rep.max_levels, depth)
    rep.area = rep.buffers * bcell.area
    rep.cell = bcell.name if rep.buffers else ""
    return out, rep


def write_repaired(workdir, top, module) -> Path:
    """Write a repaired module as ``repaired.json`` (Yosys ``write_json`` layout) in ``workdir``."""
    path = Path(workdir) / "repaired.json"
    path.write_text(json.dumps({"modules": {top: module}}))
    return path
