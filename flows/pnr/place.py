"""Placement of the top's standard cells around fixed block macros.

graywolf cannot place cells around fixed macros (it parses a fixed hard cell's position and drops
it), so the hierarchical flow places the top's own cells here, in the rows its floorplan
(:func:`flows.pnr.top.floorplan`) lays above the macro row:

1. **Quadratic placement.** Every net is a spring system: a two-pin net one spring, a larger net a
   star (a free centre node, a spring of weight p/(p-1) to each of its p pins, which pulls each pin
   towards the net's mean as the clique model does, with p springs instead of p(p-1)/2). The macro
   pins are fixed terminals; the top's ports are free along the die's upper edge (their x follows
   what they connect to, their y is the edge). Nets of more than ``max_fanout`` pins (the clock,
   resets, enables) carry no spring: they would pull every cell to one point. x and y are each the
   solution of a sparse linear system (conjugate gradients, Jacobi-preconditioned).
2. **Spreading** (as SimPL does it): the solution is spread to the target density by recursive
   bisection: a region's cells are split in half by area along the region's longer side, in the
   order of their coordinate on it, and the cut goes where the cells' own gap is, moved only as
   far as it takes for each side to hold its half at the target density; each cell gets an anchor
   spring to its spread position, the system is solved again, with the anchors stiffening from one
   iteration to the next, until the solved and the spread placements agree.
3. **Legalization**: cells in the order of their spread x, each into the row (and x past that row's
   last cell) that moves it least, on the sites half a track pitch off the metal2 tracks (as qflow
   places them: on the tracks, a flip-flop's D pin has no grid point) and half a metal1 pitch off
   the metal1 tracks.
"""

import numpy as np

from .top import ROW_HEIGHT, SITE, _snap

__all__ = ["place_cells"]


class _System:
    """The spring system of one axis: ``n`` free nodes; springs between nodes and to fixed points."""

    def __init__(self, n: int):
        self.n = n
        self.diag = np.zeros(n)
        self.rhs = np.zeros(n)
        self.rows, self.cols, self.vals = [], [], []

    def spring(self, i: int, j: int, w: float):
        self.diag[i] += w
        self.diag[j] += w
        self.rows += [i, j]
        self.cols += [j, i]
        self.vals += [-w, -w]

    def anchor(self, i: int, at: float, w: float):
        self.diag[i] += w
        self.rhs[i] += w * at

    def freeze(self):
        self.rows = np.array(self.rows, dtype=np.int64)
        self.cols = np.array(self.cols, dtype=np.int64)
        self.vals = np.array(self.vals)

    def solve(self, x0, extra_diag=None, extra_rhs=None, *, iters: int = 400, tol: float = 1e-7):
        """Conjugate gradients on (springs + extra anchors) x = rhs, from ``x0``."""
        diag = self.diag if extra_diag is None else self.diag + extra_diag
        b = self.rhs if extra_rhs is None else self.rhs + extra_rhs

        def mul(v):
            return diag * v + np.bincount(self.rows, weights=self.vals * v[self.cols], minlength=self.n)

        x = x0.astype(float).copy()
        r = b - mul(x)
        z = r / diag
        p = z.copy()
        rz = r @ z
        stop = tol * (np.linalg.norm(b) or 1.0)
        for _ in range(iters):
            if np.linalg.norm(r) < stop:
                break
            ap = mul(p)
            a = rz / (p @ ap)
            x += a * p
            r -= a * ap
            z = r / diag
            rz, rz0 = r @ z, rz
            p = z + (rz / rz0) * p
        return x


def _spread(x, y, area, box, density: float):
    """Spread positions: recursive bisection of ``box`` (x0, x1, y0, y1) by the cells' area, the
    cuts across the rows on row boundaries."""
    sx, sy = x.copy(), y.copy()
    stack = [(np.arange(len(x)), box)]
    while stack:
        idx, (x0, x1, y0, y1) = stack.pop()
        if len(idx) <= 1:
            sx[idx] = np.clip(x[idx], x0, x1)
            sy[idx] = np.clip(y[idx], y0, y1)
            continue
        rows = round((y1 - y0) / ROW_HEIGHT)
        along_x = rows < 2 or (x1 - x0) >= (y1 - y0)
        coord = x if along_x else y
        order = idx[np.argsort(coord[idx], kind="stable")]
        cum = np.cumsum(area[order])
        total = cum[-1]
        k = min(max(int(np.searchsorted(cum, total / 2)) + 1, 1), len(order) - 1)
        left, right = order[:k], order[k:]
        lo, hi = (x0, x1) if along_x else (y0, y1)
        span = (y1 - y0) if along_x else (x1 - x0)
        need_l = cum[k - 1] / (density * span)           # the length each side needs at the density
        need_r = (total - cum[k - 1]) / (density * span)
        if need_l + need_r >= hi - lo:                    # an over-full region: cut by area
            cut = lo + (hi - lo) * cum[k - 1] / total
        else:                                             # else where the cells part, if both fit
            cut = min(max((coord[left[-1]] + coord[right[0]]) / 2, lo + need_l), hi - need_r)
        if along_x:
            stack += [(left, (x0, cut, y0, y1)), (right, (cut, x1, y0, y1))]
        else:
            r = min(max(round((cut - y0) / ROW_HEIGHT), 1), rows - 1)
            cut = y0 + r * ROW_HEIGHT
            stack += [(left, (x0, x1, y0, cut)), (right, (x0, x1, cut, y1))]
    return sx, sy


def place_cells(cells, fixed_pins: dict, sizes: dict, fp, *, ports=(), max_fanout: int = 64,
                iterations: int = 40) -> dict:
    """Place the top's cells in the floorplan's rows: ``{instance: (x, y, orientation)}``.

    Parameters
    ----------
    cells : list
        ``(instance, cell, {pin: net})`` of the standard cells to place.
    fixed_pins : dict
        ``{net: [(x, y), ...]}``: the fixed pins on each net (the macros' pins).
    sizes : dict
        ``{cell: (width, height)}`` from the cells' LEF.
    fp : flows.pnr.top.Floorplan
        Die, rows and target utilization.
    ports : iterable of str
        The top's port nets: each a pin free along the die's upper edge.

    Raises
    ------
    ValueError
        The cells do not fit in the rows.
    """
    if not cells:
        return {}
    if not fp.rows:
        raise ValueError(f"the top's {len(cells)} cells have no rows: lower the top-level utilization")
    m = len(cells)
    box = (fp.margin, fp.width - fp.margin, fp.rows[0][0], fp.rows[-1][0] + ROW_HEIGHT)
    sx, sy = _springs(cells, fixed_pins, ports, fp.height, max_fanout, ((box[0] + box[1]) / 2,
                                                                         (box[2] + box[3]) / 2))
    width = np.array([sizes[c][0] for _, c, _ in cells])
    area = width * ROW_HEIGHT
    x = sx.solve(np.full(sx.n, (box[0] + box[1]) / 2))
    y = sy.solve(np.full(sy.n, (box[2] + box[3]) / 2))
    tx, ty = _spread(x[:m], y[:m], area, box, fp.util)
    mean_w = float(np.mean(sx.diag[:m]))
    for it in range(iterations):      # anchor springs to the spread positions, stiffer each time
        alpha = np.zeros(sx.n)
        alpha[:m] = mean_w * 0.01 * 1.3 ** it
        x = sx.solve(x, alpha, alpha * np.concatenate([tx, np.zeros(sx.n - m)]))
        y = sy.solve(y, alpha, alpha * np.concatenate([ty, np.zeros(sy.n - m)]))
        tx, ty = _spread(x[:m], y[:m], area, box, fp.util)
        if np.mean(np.abs(x[:m] - tx) + np.abs(y[:m] - ty)) < ROW_HEIGHT:
            break
    return _legalize(cells, tx - width / 2, ty - ROW_HEIGHT / 2, width, fp)


def _springs(cells, fixed_pins: dict, ports, top_y: float, max_fanout: int, centre) -> tuple:
    """The x and y spring systems of :func:`place_cells` (nodes: the cells in order, then the
    ports, then the stars' centres)."""
    m = len(cells)
    members = {}
    for k, (_, _, pins) in enumerate(cells):
        for n in sorted(set(pins.values())):
            members.setdefault(n, []).append(k)
    node = {p: m + k for k, p in enumerate(p for p in dict.fromkeys(ports) if p in members)}
    count = {net: len(ins) + len(fixed_pins.get(net, ())) + (net in node) for net, ins in members.items()}
    star = {}
    for net, p in count.items():
        if 3 <= p <= max_fanout:
            star[net] = m + len(node) + len(star)
    sx, sy = _System(m + len(node) + len(star)), _System(m + len(node) + len(star))
    for net, ins in members.items():
        p, fixed = count[net], fixed_pins.get(net, ())
        if p < 2 or p > max_fanout:
            continue
        free = ins + ([node[net]] if net in node else [])
        if net in star:
            c, w = star[net], p / (p - 1)
            for i in free:
                sx.spring(i, c, w)
                if i < m:
                    sy.spring(i, c, w)
                else:                         # the port: on the upper edge
                    sy.anchor(c, top_y, w)
            for fx, fy in fixed:
                sx.anchor(c, fx, w)
                sy.anchor(c, fy, w)
        elif len(free) == 2:                  # two cells, or a cell and a port
            sx.spring(free[0], free[1], 1.0)
            if net in node:
                sy.anchor(ins[0], top_y, 1.0)
            else:
                sy.spring(free[0], free[1], 1.0)
        else:                                 # one cell, one macro pin
            (fx, fy), = fixed
            sx.anchor(free[0], fx, 1.0)
            sy.anchor(free[0], fy, 1.0)
    for i in node.values():                   # a port's own y is the edge
        sy.anchor(i, top_y, 1.0)
    for i in range(sx.n):                     # a weak pull to the centre: no node left undetermined
        sx.anchor(i, centre[0], 1e-4)
        sy.anchor(i, centre[1], 1e-4)
    sx.freeze()
    sy.freeze()
    return sx, sy


def _legalize(cells, want_x, want_y, width, fp) -> dict:
    """Cells into the rows, in x order, each where it moves least (left edges ``want_x``)."""
    lo, hi = fp.margin, fp.width - fp.margin
    cursor = [lo] * len(fp.rows)
    row_y = np.array([y for y, _ in fp.rows])
    out = {}
    for k in np.lexsort((np.arange(len(cells)), want_x)):
        inst = cells[k][0]
        w = width[k]
        want = min(max(want_x[k], lo), hi - w)
        best = None
        for r, at in enumerate(cursor):
            pos = max(at, want)
            if pos + w > hi:
                continue
            cost = abs(pos - want) + abs(row_y[r] - want_y[k])
            if best is None or cost < best[0]:
                best = (cost, r, pos)
        if best is None:
            raise ValueError(f"the top's cells do not fit in its {len(fp.rows)} rows: lower the top-level "
                             "utilization")
        _, r, pos = best
        px = _snap(pos - SITE / 2, SITE) + SITE / 2      # half a track pitch off the metal2 tracks
        if px < pos - 1e-6:
            px += SITE
        cursor[r] = px + w
        y, orient = fp.rows[r]
        out[inst] = (round(px, 3), y + 0.5, orient)    # and half a metal1 pitch off its tracks
    return out
