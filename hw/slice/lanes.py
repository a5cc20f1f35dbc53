"""Lane masks in logarithmic depth, for the slice's padding lanes and bytes.

The gearbox zeroes the columns past N and the bytes past the end of the region, and the activation
issue zeroes the lanes past K: each is a mask ``lane j is live iff j < n`` for a run-time ``n``.
"""

from amaranth.hdl import Cat, Const

__all__ = ["thermometer"]


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

