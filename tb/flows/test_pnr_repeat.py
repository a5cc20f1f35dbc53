"""Buffering of the top's nets by position (flows.pnr.repeat), against partitions worked out by hand."""

import pytest

from flows.pnr.repeat import rebuffer

OUTS = {"DRV": {"Y"}, "BUF": {"Y"}, "SNK": set(), "FF": {"Q"}, "M": {"o"}}
CLKS = {"FF": {"CLK"}}


def _run(cells, xs, *, seg=3000.0, cap=0.01, limit=1.0, wire=0.0, keep=()):
    return rebuffer(cells, is_repair=lambda i: i.startswith("r"), outputs_of=lambda t: OUTS[t],
                    clock_pins=lambda t: CLKS.get(t, set()), position=lambda ref: xs.get(ref[0]),
                    cap_of=lambda t, p: cap, driver_limit=lambda t, p: None if t == "M" else 0.05,
                    buffer=("BUF", "A", "Y", limit), seg_um=seg, wire_pf_um=wire, keep=keep)


def _row(n=12, step=1000.0):
    """A driver at 5 mm, two repair buffers taking alternate sinks (netlist order, not position)
    of ``n`` sinks at 0, 1, 2 ... mm."""
    cells = [("d", "DRV", {"Y": "root"}), ("r0", "BUF", {"A": "root", "Y": "b0"}),
             ("r1", "BUF", {"A": "root", "Y": "b1"})]
    cells += [(f"s{k}", "SNK", {"A": f"b{k % 2}"}) for k in range(n)]
    xs = {"d": 5000.0, **{f"s{k}": k * step for k in range(n)}}
    return cells, xs


def _trace(cells, sink):
    """The instances a sink's signal passes from its driver: [driver, buffers ..., sink]."""
    drv = {pins[p]: inst for inst, typ, pins in cells for p in pins if p in OUTS[typ]}
    inputs = {inst: pins["A"] for inst, typ, pins in cells if "A" in pins}
    path, inst = [sink], sink
    while inst in inputs:
        inst = drv[inputs[inst]]
        path.append(inst)
    return path[::-1]


def test_leaves_by_position_and_a_chain_each_way():
    cells, xs = _row()
    r = _run(cells, xs)
    assert (r.removed, r.added, r.nets) == (2, 6, 1)
    names = [c[0] for c in r.cells]
    assert "r0" not in names and "r1" not in names
    # by hand, 3 mm segments: leaves 0-3, 4-7, 8-11 mm (centres 1.5, 5.5, 9.5 mm); their inputs span
    # 1.5-9.5 mm with the driver at 5 mm, more than a segment: a chain each way, right [5.5] then
    # [9.5] (4 mm apart), left [1.5]
    leaf = {k: _trace(r.cells, f"s{k}")[-2] for k in range(12)}
    assert len({leaf[k] for k in range(4)}) == len({leaf[k] for k in range(4, 8)}) == 1
    assert len(set(leaf.values())) == 3
    paths = {k: _trace(r.cells, f"s{k}") for k in range(12)}
    assert all(len(paths[k]) == 4 for k in range(8)) and all(len(paths[k]) == 5 for k in range(8, 12))
    right1 = paths[4][1]
    assert paths[8][1] == right1 and paths[0][1] != right1
    # the driver's own net: the first repeater of each side only
    on_root = sorted(inst for inst, _, pins in r.cells for p, n in pins.items() if n == "root" and p == "A")
    assert on_root == sorted({right1, paths[0][1]})
    assert all(typ == "BUF" for inst, typ, _ in r.cells if inst.startswith("urep"))


def test_clusters_cut_at_the_buffers_load_limit():
    cells, xs = _row()
    # 0.03 pF a sink, limit 0.1 pF: three sinks a leaf (0.09 pF): 0-2, 3-5, 6-8, 9-11 mm; their four
    # inputs (0.03 pF each, 0.12 pF) overload the driver (0.05 pF): a chain each way, right [7, 10],
    # left [4, 1] (0.03 + 0.03 + the next repeater's 0.03 = 0.09 pF each)
    r = _run(cells, xs, cap=0.03, limit=0.1, seg=1e6)
    assert r.added == 4 + 2
    assert all(len(_trace(r.cells, f"s{k}")) == 4 for k in range(12))
    assert _trace(r.cells, "s0")[-2] == _trace(r.cells, "s2")[-2] != _trace(r.cells, "s3")[-2]
    # the wire counts: at 2e-5 pF/um a pair 1 mm apart is 0.03 + 0.03 + 0.02 = 0.08 pF, a third
    # sink 0.13: leaves of two, at 0.5, 2.5 ... 10.5 mm; the trunk's neighbours 2 mm apart load
    # 0.03 + 0.03 + 0.04 + 0.03 = 0.13 pF: one leaf a repeater, three each way
    r = _run(cells, xs, cap=0.03, limit=0.1, seg=1e6, wire=2e-5)
    assert r.added == 6 + 6
    assert len(_trace(r.cells, "s11")) == 2 + 1 + 3 and len(_trace(r.cells, "s0")) == 2 + 1 + 3


def test_a_short_net_loses_its_tree_and_is_driven_directly():
    cells, xs = _row(n=4, step=100.0)      # sinks 0-300 um, the driver at 5 mm: out of one segment
    xs["d"] = 150.0
    r = _run(cells, xs, cap=0.01)          # 0.04 pF within the driver's 0.05
    assert (r.removed, r.added, r.nets) == (2, 0, 1)
    assert all(pins["A"] == "root" for inst, _, pins in r.cells if inst.startswith("s"))
    # and beside it a long net (12 sinks over 11 mm, as in the first test): each rebuilt on its own
    long, lxs = _row()
    long = [(f"{i}L", t, {p: f"{n}L" for p, n in pins.items()}) for i, t, pins in long]
    at = {**xs, **{f"{k}L": v for k, v in lxs.items()}}
    r = rebuffer(cells + long, is_repair=lambda i: i.startswith("r"), outputs_of=lambda t: OUTS[t],
                 clock_pins=lambda t: set(), position=lambda ref: at.get(ref[0]),
                 cap_of=lambda t, p: 0.01, driver_limit=lambda t, p: 0.05,
                 buffer=("BUF", "A", "Y", 1.0), seg_um=3000.0, wire_pf_um=0.0)
    assert (r.removed, r.added, r.nets) == (4, 6, 2)


def test_left_alone_clock_block_driven_kept_and_unplaced():
    # a clock net through a repair buffer, a block output, a kept net, and a sink with no position
    cells = [("d", "DRV", {"Y": "clk"}), ("r0", "BUF", {"A": "clk", "Y": "clk_b"}),
             ("f0", "FF", {"CLK": "clk_b", "Q": "q0"}), ("f1", "FF", {"CLK": "clk", "Q": "q1"}),
             ("m", "M", {"o": "mo"}), ("s0", "SNK", {"A": "mo"}), ("s1", "SNK", {"A": "mo"}),
             ("e", "DRV", {"Y": "kept"}), ("s2", "SNK", {"A": "kept"}), ("s3", "SNK", {"A": "kept"}),
             ("g", "DRV", {"Y": "far"}), ("r1", "BUF", {"A": "far", "Y": "far_b"}),
             ("s4", "SNK", {"A": "far_b"}), ("s5", "SNK", {"A": "far_b"}), ("s6", "SNK", {"A": "far_b"})]
    xs = {"d": 0.0, "f0": 9000.0, "f1": 0.0, "m": 0.0, "s0": 9000.0, "s1": 0.0, "e": 0.0, "s2": 9000.0,
          "s3": 0.0, "g": 0.0, "s4": 9000.0, "s5": 20000.0}
    r = _run(cells, xs, keep=("kept",), wire=5e-6)   # the far net: 0.02 pF + 0.1 pF of wire > 0.05
    assert r.removed == 1
    by = {inst: pins for inst, _, pins in r.cells}
    assert by["r0"] == {"A": "clk", "Y": "clk_b"} and by["f0"]["CLK"] == "clk_b"
    assert by["s0"]["A"] == by["s1"]["A"] == "mo" and by["s2"]["A"] == by["s3"]["A"] == "kept"
    # the far net: 9 mm and 20 mm in leaves of their own (3 mm segments) and a chain of two
    # repeaters to them; s6, unplaced, stays on it
    assert by["s6"]["A"] == "far" and r.added == 4 and r.nets == 1
    first = _trace(r.cells, "s4")
    assert len(first) == 4 and _trace(r.cells, "s5")[:2] == first[:2] and len(_trace(r.cells, "s5")) == 5


def test_bad_segment_and_a_sink_too_heavy_for_the_repeater():
    cells, xs = _row()
    with pytest.raises(ValueError, match="segment"):
        _run(cells, xs, seg=0.0)
    with pytest.raises(ValueError, match="more than the repeater"):
        _run(cells, xs, cap=0.7, limit=0.6)


def test_a_long_net_its_driver_drives_is_left_alone_and_an_overloaded_one_is_not():
    # 20 mm, 0.01 pF of pin and 0.02 pF of wire: within the driver's 0.05 pF, so no repeater
    cells = [("d", "DRV", {"Y": "ok"}), ("s0", "SNK", {"A": "ok"})]
    r = _run(cells, {"d": 0.0, "s0": 20000.0}, wire=1e-6)
    assert (r.removed, r.added, r.nets) == (0, 0, 0) and r.cells == cells
    # 0.01 + 0.2 pF of wire: over it, though the repair (which counts no wire) left it alone: a leaf
    # buffer at the sink, and the trunk to it (20 mm, 3 mm segments) a chain of one repeater
    r = _run(cells, {"d": 0.0, "s0": 20000.0}, wire=1e-5)
    assert (r.removed, r.added, r.nets) == (0, 2, 1) and len(_trace(r.cells, "s0")) == 4
