"""The top-level placer (flows.pnr.place): its spring system against solutions by hand, and its
placements' legality, wirelength and density on small netlists whose good placement is known."""

import numpy as np
import pytest

from flows.pnr.place import _System, place_cells
from flows.pnr.top import floorplan

SIZES = {"INVX1": (1.6, 10.0), "DFFPOSX1": (19.2, 10.0)}


def _check_legal(placed, cells, fp):
    by_row = {}
    for inst, cell, _ in cells:
        x, y, orient = placed[inst]
        assert (y - 0.5, orient) in fp.rows                            # in a row, its orientation
        assert (x - 0.4) / 0.8 == pytest.approx(round((x - 0.4) / 0.8), abs=1e-6)   # half a pitch off
        assert fp.margin <= x and x + SIZES[cell][0] <= fp.width - fp.margin
        by_row.setdefault(y, []).append((x, x + SIZES[cell][0]))
    for spans in by_row.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(spans, spans[1:], strict=False))    # no overlap


def test_springs_solve_a_chain_by_hand():
    """Free nodes in a chain between two fixed points settle evenly spaced (the minimum of the sum
    of squared lengths), and a star's centre at the mean of its fixed pins."""
    s = _System(5)
    s.anchor(0, 10.0, 1.0)
    for i in range(4):
        s.spring(i, i + 1, 1.0)
    s.anchor(4, 70.0, 1.0)
    s.freeze()
    assert s.solve(np.zeros(5)) == pytest.approx([20.0, 30.0, 40.0, 50.0, 60.0], abs=1e-6)
    star = _System(1)
    for at in (3.0, 5.0, 13.0):
        star.anchor(0, at, 1.5)
    star.freeze()
    assert star.solve(np.zeros(1)) == pytest.approx([7.0])


def test_placement_is_legal_and_follows_the_anchors():
    """Each cell lands in a row, on a site, inside the die, without overlaps, near the macro pin its
    net reaches; a chain of cells hanging off one macro pin stays together (the centroid placer
    this replaces stretched such chains along the row); cells that cannot fit are a clear error."""
    fp = floorplan(["m0", "m1", "m2", "m3"], (100.0, 80.0), 60 * 16.0 * 10, util=0.5)
    top = fp.macros[0][2] + 80.0
    cells = [(f"c{k}", "INVX1", {"A": f"n{k}", "Y": f"o{k}"}) for k in range(40)]
    anchors = {f"n{k}": [(fp.macros[k % 4][1] + 50, top)] for k in range(40)}
    chain = [(f"h{k}", "INVX1", {"A": "o3" if k == 0 else f"h{k - 1}", "Y": f"h{k}"}) for k in range(20)]
    placed = place_cells(cells + chain, anchors, SIZES, fp)
    _check_legal(placed, cells + chain, fp)
    for k in range(40):
        assert abs(placed[f"c{k}"][0] + 0.8 - anchors[f"n{k}"][0][0]) < 20
    xs = [placed[f"h{k}"][0] for k in range(20)]
    assert max(xs) - min(xs) < 60 and abs(np.mean(xs) - anchors["n3"][0][0]) < 40
    tight = floorplan(["m0"], (20.0, 20.0), 16.0, util=1.0)
    with pytest.raises(ValueError, match="do not fit"):
        place_cells(cells, {}, SIZES, tight)


def test_crowded_cells_spread_to_the_target_density():
    """300 cells all wanting one point spread so that no 100 um stretch of the rows holds more than
    the target utilization plus one cell per row, and the result's wirelength stays within twice
    that of the ideal (every cell's own wire the distance to its anchor at that density)."""
    fp = floorplan(["m0", "m1"], (200.0, 50.0), 300 * 16.0 * 10, util=0.5)
    at = (fp.width / 2, fp.macros[0][2] + 50.0)
    cells = [(f"c{k}", "INVX1", {"A": "hub" if k % 2 else f"p{k}", "Y": f"o{k}"}) for k in range(300)]
    anchors = {f"p{k}": [at] for k in range(0, 300, 2)}
    placed = place_cells(cells, anchors, SIZES, fp, max_fanout=400)
    _check_legal(placed, cells, fp)
    rows = len(fp.rows)
    for x0 in np.arange(fp.margin, fp.width - fp.margin - 100, 20.0):
        inside = sum(1.6 for x, _, _ in placed.values() if x0 <= x < x0 + 100)
        assert inside <= 0.5 * 100 * rows + 1.6 * rows
    # each anchored cell's two-pin net: |dx| + |dy| from its centre to the anchor
    wire = sum(abs(placed[f"c{k}"][0] + 0.8 - at[0]) + abs(placed[f"c{k}"][1] - 0.5 + 5 - at[1])
               for k in range(0, 300, 2))
    width = 300 * 1.6 / (0.5 * rows)            # the stretch the cells need at the density
    ideal = 150 * (width / 4 + rows * 10 / 4)   # mean distance from the middle, in x and y
    assert wire < 2 * ideal


def test_ports_pull_their_cells_to_the_upper_edge():
    """A cell between a port and nothing else sits in the top row; one between a macro pin and
    nothing else, in the bottom row."""
    fp = floorplan(["m0"], (200.0, 50.0), 400 * 16.0, util=0.5)
    cells = [("up", "INVX1", {"A": "port", "Y": "u"}), ("down", "INVX1", {"A": "pin", "Y": "d"})]
    cells += [(f"f{k}", "INVX1", {"A": f"x{k}", "Y": f"y{k}"}) for k in range(300)]
    placed = place_cells(cells, {"pin": [(100.0, fp.macros[0][2] + 50)]}, SIZES, fp, ports=["port"])
    assert placed["up"][1] - 0.5 == fp.rows[-1][0]
    assert placed["down"][1] - 0.5 == fp.rows[0][0]
