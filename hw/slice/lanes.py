"""Lane masks and counter increments in logarithmic depth, for the slice's control logic.

The gearbox zeroes the columns past N and the bytes past the end of the region, and the activation
issue zeroes the lanes past K: each is a mask ``lane j is live iff j < n`` for a run-time ``n``
(:func:`thermometer`). The slice's 32-bit event counters add one per event (:func:`increment`).
Written the obvious way, synthesis maps both to chains one gate per lane or bit long.
"""

from amaranth.hdl import Cat, Const

__all__ = ["thermometer", "increment"]


def thermometer(n, lanes: int):
    """``(below, full)``: ``below[j] = n > j`` for ``j < lanes``, and ``full = n >= lanes``, in
    logarithmic depth.

    Written as comparators, ``n > j`` for every lane lets synthesis share each one with its
    neighbour's and ripple through all the lanes (one gate pair per lane: 20 ns at 128 lanes in
    OSU 0.18 um). Here each bit of ``n`` halves the lanes it decides: with ``n = h * 2**k + l``,
    the lanes below ``2**k`` are ``h | (l > j)`` and those above ``h & (l > j - 2**k)``, so the
    depth is one gate per bit of ``n`` below ``lanes`` plus an OR of the bits above it.

    Parameters
    ----------
    n : amaranth.hdl.Value
        Unsigned count.
    lanes : int
        Lanes (>= 1).
    """
    bits = (lanes - 1).bit_length()
    t = [Const(0, 1)]                      # no bits: n = 0 is above no lane
    for k in range(bits):
        h = n[k] if k < len(n) else Const(0, 1)
        t = [h | x for x in t] + [h & x for x in t]
    full = n[bits:].any() if len(n) > bits else Const(0, 1)
    if lanes < len(t):
        full = full | t[lanes - 1]
    return Cat(*(full | t[j] for j in range(lanes))), full


def increment(v):
    """``v + 1`` modulo ``2**len(v)``, the carries a log-depth prefix AND (Kogge-Stone).

    A ``+ 1`` is mapped to a ripple of AND gates, one per bit (4 ns for 32 bits in OSU 0.18 um).
    Here bit i flips when all the bits below it are ones, and that AND is built in
    ``ceil(log2(len(v)))`` levels of two-input gates.

    Parameters
    ----------
    v : amaranth.hdl.Value
        Unsigned value, at least one bit.
    """
    n = len(v)
    pre = [v[i] for i in range(n)]        # pre[i]: AND of v[i - span + 1 .. i]
    span = 1
    while span < n:
        pre = [pre[i] & pre[i - span] if i >= span else pre[i] for i in range(n)]
        span *= 2
    return v ^ Cat(Const(1, 1), *pre[:n - 1])
