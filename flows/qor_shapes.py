"""Adapter to the real-model shape catalog (:mod:`perf.shapes`) for equal-silicon comparisons.

The catalog lists every matmul of one decode step of each model (MiniLM, Llama-3.1-8B, Phi-2,
gpt-oss-120b, DeepSeek-R1) at a given batch, and its ``cost`` gives useful MACs and cycles on a unit
of width D from the unit's throughput contract (docs/mu_interface.md): ``ceil(K/D) * ceil(N/D)``
zero-padded tiles, each costing ``max(D, M)`` cycles. Nothing here re-models it.
"""

__all__ = ["available", "model_costs", "slice80"]


def _shapes():
    try:
        from perf import shapes
    except ImportError:
        return None
    return shapes


def available() -> bool:
    """Whether the shape catalog can be imported."""
    return _shapes() is not None


def model_costs(batch: int, width: int):
    """``{model: (useful MACs, cycles)}`` of one decode step at ``batch`` on a unit of width ``width``.

    Returns None when the catalog is not available.
    """
    shapes = _shapes()
    if shapes is None:
        return None
    out = {}
    for mm in shapes.catalog(batch):
        c = shapes.cost(mm, width)
        macs, cyc = out.get(mm.model, (0.0, 0.0))
        out[mm.model] = (macs + c["macs_useful"], cyc + c["cycles"])
    return out


def slice80(width: int):
    """Padding of the 80-wide slice on a unit of width ``width`` (see ``perf.shapes.slice80``)."""
    shapes = _shapes()
    return None if shapes is None else shapes.slice80(width)
