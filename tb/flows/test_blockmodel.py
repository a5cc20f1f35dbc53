"""Per-bit block timing models against the flat analysis of the same netlist.

A hand-made block ``blk`` has a two-bit input bus ``x``: bit 0 has a short path to a register and
to output ``y``, bit 1 a long one. Its parent makes bit 0 arrive late (a buffer chain) and bit 1
early. The composed analysis (``blk`` as a model) must equal the analysis of the same netlist
flattened here by hand, and the per-bus pairing (late arrival + long path) must exceed it.

The library is the OSU liberty with every table made independent of the input transition and its
falling tables replaced by its rising ones: the two approximations a model makes by design (inputs
at the default slew, one figure for both edges) then vanish, so the comparison is exact.
"""

import copy

import pytest

from flows.synth import liberty as L
from flows.synth.blockmodel import BlockTiming, extract_model, trace_input
from flows.synth.sta import Sta
from tb.flows import OSU, needs_osu

pytestmark = [pytest.mark.quick, needs_osu]

LATE_BUFS, LONG_INVS = 6, 8       # parent's buffer chain before x[0]; inverters after x[1]


def _flatten_table(t):
    """The table's values at its first input transition, for every transition."""
    t = copy.deepcopy(t)
    if t.index_1 and t.index_2:
        if t.load_first:
            t.values = [[row[0]] * len(row) for row in t.values]
        else:
            t.values = [list(t.values[0]) for _ in t.values]
    return t


@pytest.fixture(scope="module")
def lib():
    lib = copy.deepcopy(L.load(OSU))
    for cell in lib.cells.values():
        for a in cell.arcs:
            tabs = {k: _flatten_table(v) for k, v in a.tables.items()}
            for r, f in (("cell_rise", "cell_fall"), ("rise_transition", "fall_transition"),
                         ("rise_constraint", "fall_constraint")):
                if r in tabs:
                    tabs[f] = tabs[r]
            a.tables = tabs
    return lib


def _inv(cells, name, a, y):
    cells[name] = {"type": "INVX1", "connections": {"A": [a], "Y": [y]}}


def _block_cells(net, clk, prefix=""):
    """The block's cells; ``net(k)`` maps the block's local net numbers to netlist bits.

    Local nets: 0, 1 = x[0], x[1]; 2 = y; 10.. = x[1]'s inverter chain; 30, 31 = flop outputs."""
    cells = {}
    _inv(cells, prefix + "s0", net(0), net(40))                 # x[0]: one inverter ...
    prev = net(1)
    for k in range(LONG_INVS):                                  # x[1]: a chain
        _inv(cells, f"{prefix}l{k}", prev, net(10 + k))
        prev = net(10 + k)
    for k, d in enumerate((net(40), prev)):                     # ... each to its own register
        cells[f"{prefix}f{k}"] = {"type": "DFFPOSX1",
                                  "connections": {"CLK": [clk], "D": [d], "Q": [net(30 + k)]}}
    cells[prefix + "o"] = {"type": "NAND2X1", "connections": {"A": [net(40)], "B": [prev], "Y": [net(2)]}}
    return cells


def _block():
    return {"ports": {"clk": {"direction": "input", "bits": [99]},
                      "x": {"direction": "input", "bits": [100, 101]},
                      "y": {"direction": "output", "bits": [102]}},
            "cells": _block_cells(lambda k: 100 + k, 99), "netnames": {}}


def _parent_cells(cells):
    """a -> LATE_BUFS buffers -> net 20 (x[0]); b = net 3 (x[1])."""
    prev = 2
    for k in range(LATE_BUFS):
        cells[f"p{k}"] = {"type": "BUFX2", "connections": {"A": [prev], "Y": [10 + k]}}
        prev = 10 + k
    return prev


def _ports():
    return {"clk": {"direction": "input", "bits": [1]}, "a": {"direction": "input", "bits": [2]},
            "b": {"direction": "input", "bits": [3]}, "z": {"direction": "output", "bits": [4]}}


def _parent():
    cells = {}
    late = _parent_cells(cells)
    cells["u0"] = {"type": "blk", "connections": {"clk": [1], "x": [late, 3], "y": [4]}}
    return {"ports": _ports(), "cells": cells, "netnames": {}}


def _flat():
    cells = {}
    late = _parent_cells(cells)
    local = {0: late, 1: 3, 2: 4}
    cells.update(_block_cells(lambda k: local.get(k, 1000 + k), 1, prefix="u0."))
    return {"ports": _ports(), "cells": cells, "netnames": {}}


def _time(lib, mod, models=None, **kw):
    sta = Sta(lib, mod, models=models)
    return sta, sta.run(**kw)


def test_per_bit_model_equals_the_flat_analysis(lib):
    model, _ = extract_model(Sta(lib, _block()), "blk")
    assert set(model.in2reg) == {"x[0]", "x[1]"} and set(model.in2out) == {"x[0]", "x[1]"}
    assert model.in2reg["x[1]"][0] > model.in2reg["x[0]"][0]
    assert model.in2reg["x[1]"][1] == LONG_INVS
    models = {"blk": BlockTiming.from_json(model.to_json())}
    for kw, kind in (({"regs": False}, "in->reg"), ({}, "in->reg")):
        flat_sta, flat = _time(lib, _flat(), **kw)
        hier_sta, hier = _time(lib, _parent(), models, **kw)
        assert flat.kind == hier.kind == kind
        assert hier.delay_ps == pytest.approx(flat.delay_ps, rel=1e-9)
        assert hier.levels == flat.levels
        # the output z ends a path through the block's NAND: the same arrival both ways
        assert hier_sta.end_by_output["z"][0] == pytest.approx(flat_sta.end_by_output["z"][0], rel=1e-9)
    # x[0] arrives late through the buffers: the worst path is the late bit's own short path
    assert "in2reg x[0]" in hier.end and flat.end == "u0.f0/D"

    # the per-bus model pairs x[0]'s late arrival with x[1]'s long path: larger on both ends
    bus = BlockTiming.from_json(dict(model.to_json(),
                                     in2reg={"x": max(model.in2reg.values())},
                                     in2out={"x": {"y": max(v["y"] for v in model.in2out.values())}}))
    bus_sta, by_bus = _time(lib, _parent(), {"blk": bus})
    arr_late = max(hier_sta.arr[(10 + LATE_BUFS - 1, rf)][0] for rf in (0, 1))
    assert by_bus.delay_ps == pytest.approx(arr_late + model.in2reg["x[1]"][0], rel=1e-9)
    assert by_bus.delay_ps > hier.delay_ps * 1.05
    assert bus_sta.end_by_output["z"][0] > hier_sta.end_by_output["z"][0]


def test_trace_input_adds_up_to_the_model_entry(lib):
    """The path the whole-path report expands a per-bit entry into is the entry's own."""
    sta = Sta(lib, _block())
    model, _ = extract_model(sta, "blk")
    for bit in ("x[0]", "x[1]"):
        steps, point, setup = trace_input(sta, bit, "reg")
        assert steps[0].point == f"input {bit}" and point.endswith("/D")
        assert sum(s.incr_ps for s in steps) + setup == pytest.approx(model.in2reg[bit][0], rel=1e-12)
        steps, point, _ = trace_input(sta, bit, "y")
        assert point == "output y"
        assert sum(s.incr_ps for s in steps) == pytest.approx(model.in2out[bit]["y"][0], rel=1e-12)
    assert len(trace_input(sta, "x[1]", "reg")[0]) == 1 + LONG_INVS
