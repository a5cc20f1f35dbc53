"""The worst path of a hierarchical run as one list, from launch flop to capture flop.

The top's worst path (:class:`flows.synth.hier.HierReport`) crosses blocks as model arcs: a
block's output launched inside it (``reg2out``), a path through it (``in2out``), an input ending on
one of its registers (``in2reg``) or a path wholly inside it (``internal``). :func:`whole_path`
replaces each such arc by the block's own worst path for it, traced in the block's netlist (children
again as models, expanded the same way), so every row is a library cell. Each row names the block
instance path (``col0/lane3``), the cell and arc, the net and the delay.

A block's arc delay in the parent follows the parent's load (the model's output drive); the traced
path inside the block was timed with the block's own output load, so the two can differ by a few
ps: the difference is one row ``(load of the parent)``. A path from a block's input is the one its
per-bit model entry was measured on (:func:`flows.synth.blockmodel.trace_input`), so its rows add
up to the parent's figure; an entry keyed by a whole bus is traced as that bus's worst path.
"""

import re
from dataclasses import dataclass

from .blockmodel import trace_input

__all__ = ["Row", "whole_path", "format_rows"]

_MACRO = re.compile(r"^(?P<inst>\S+) \((?P<type>[^)]+)\) (?P<arc>reg2out|in2out|in2reg|internal)"
                    r"(?: (?P<rest>.*))?$")


@dataclass
class Row:
    """One cell of the whole path."""

    block: str      # instance path of the block holding the cell ("" for the top)
    point: str      # "inst (CELL) A->Y", "input a", "setup of ..."
    net: str
    incr_ps: float


def _join(prefix, inst):
    return f"{prefix}/{inst}" if prefix else inst


def _inside(h, btype, prefix, inst, arc, rest, depth):
    """Rows of the path inside instance ``inst`` of block ``btype`` that the model arc stands for."""
    b = h.blocks.get(btype)
    if b is None or b.sta is None or depth > 8:
        return None
    sta, where = b.sta, _join(prefix, inst)
    key, end = rest.split("->", 1) if arc == "in2out" else (rest, "reg" if arc == "in2reg" else rest)
    try:
        if arc in ("in2out", "in2reg") and key in b.model.in_cap:    # a per-bit entry
            steps, point, setup = trace_input(sta, key, end)
        else:       # a register-side entry, or one keyed by a whole bus
            sta.run(inputs={key} if arc in ("in2out", "in2reg") else set(),
                    regs=arc in ("internal", "reg2out"))
            steps, point, setup = sta.trace_to(end or "reg")
    except (KeyError, StopIteration, TypeError):
        return None
    rows = _expand(h, steps, where, depth + 1)
    if arc in ("in2out", "in2reg") and rows and rows[0].point.startswith("input "):
        rows = rows[1:]   # the parent's row already reached this input
    return rows + _end_rows(h, point, setup, where, depth + 1)


def _end_rows(h, point, setup, where, depth):
    """Rows of a path's end: a register's setup, or the path inside the child block it ends in
    (``in2reg``: the ``setup`` figure is the model's; ``internal``: the whole path is the child's)."""
    m = _MACRO.match(point)
    if m and m["arc"] in ("in2reg", "internal"):
        inner = _inside(h, m["type"], where, m["inst"], m["arc"], m["rest"], depth)
        if inner is not None:
            extra = setup - sum(r.incr_ps for r in inner) if m["arc"] == "in2reg" else 0.0
            if abs(extra) >= 0.05:
                inner.append(Row(_join(where, m["inst"]), "(load of the parent)", "", extra))
            return inner
    return [Row(where, f"setup of {point}", "", setup)] if setup else []


def _expand(h, steps, prefix, depth):
    rows = []
    for s in steps:
        m = _MACRO.match(s.point)
        inner = m and m["arc"] in ("reg2out", "in2out") and \
            _inside(h, m["type"], prefix, m["inst"], m["arc"], m["rest"], depth)
        if inner:
            rows += inner
            extra = s.incr_ps - sum(r.incr_ps for r in inner)
            if abs(extra) >= 0.05:
                rows.append(Row(_join(prefix, m["inst"]), "(load of the parent)", s.net, extra))
            rows[-1 if abs(extra) < 0.05 else -2].net = s.net
        else:
            rows.append(Row(prefix, s.point, s.net, s.incr_ps))
    return rows


def whole_path(h) -> list:
    """The top's worst path with every block arc replaced by the cells inside (list of :class:`Row`)."""
    worst = h.worst
    rows = _expand(h, worst.steps, "", 0)
    m = _MACRO.match(worst.end)
    if m and m["arc"] == "internal":
        inner = _inside(h, m["type"], "", m["inst"], "internal", None, 0)
        return inner if inner is not None else [Row("", worst.end, "", worst.delay_ps)]
    return rows + _end_rows(h, worst.end, worst.setup_ps, "", 0)


def format_rows(rows, unit="ps") -> list:
    """Text lines: block, cell and arc, net, delay, arrival."""
    out = [f"  {'incr':>9} {'arrival':>9}  {'block':<20} cell / arc -> net"]
    t = 0.0
    for r in rows:
        t += r.incr_ps
        out.append(f"  {r.incr_ps:9.1f} {t:9.1f}  {r.block or '(top)':<20} {r.point}"
                   + (f" -> {r.net}" if r.net else ""))
    return out
