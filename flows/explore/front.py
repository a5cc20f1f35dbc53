"""Pareto fronts and hypervolume of minimized objective vectors (plain Python, no Optuna).

Hypervolumes are measured relative to a baseline: each objective is divided by the baseline's value,
and the reference point is :data:`REF` in every objective (twice the baseline), so the numbers of two
studies of the same design compare directly. A point no better than the reference in some
objective adds nothing.
"""

__all__ = ["dominates", "pareto_front", "hypervolume_2d", "hypervolume_curve", "REF"]

#: Reference point of the normalized hypervolume (a multiple of the baseline in every objective).
REF = 2.0


def dominates(a, b) -> bool:
    """``a`` is no worse than ``b`` in every objective and better in at least one (minimizing)."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and any(x < y for x, y in zip(a, b, strict=True))


def pareto_front(points: list) -> list:
    """Indices of the non-dominated points (ties: the first of equal points is kept)."""
    out = []
    for i, p in enumerate(points):
        if any(dominates(q, p) for q in points):
            continue
        if any(tuple(points[j]) == tuple(p) for j in out):
            continue
        out.append(i)
    return out


def hypervolume_2d(points: list, ref=(REF, REF)) -> float:
    """Area dominated by ``points`` (pairs, minimized) and bounded by ``ref``.

    Raises
    ------
    ValueError
        If a point is not a pair.
    """
    pts = []
    for p in points:
        if len(p) != 2:
            raise ValueError(f"hypervolume_2d takes pairs, not {p!r}")
        if p[0] < ref[0] and p[1] < ref[1]:
            pts.append((float(p[0]), float(p[1])))
    hv, best_y = 0.0, float(ref[1])
    for x, y in sorted(pts):
        if y < best_y:
            hv += (ref[0] - x) * (best_y - y)
            best_y = y
    return hv


def hypervolume_curve(points: list, baseline) -> list:
    """Normalized hypervolume after each trial: ``points[i]`` is the i-th trial's objective pair, or
    None when it has none (failed or infeasible); ``baseline`` is the pair that normalizes."""
    out, seen = [], []
    for p in points:
        if p is not None:
            seen.append((p[0] / baseline[0], p[1] / baseline[1]))
        out.append(hypervolume_2d(seen))
    return out
