"""Event counters that keep their exact value every cycle without a carry chain through all bits.

A plain ``cnt <= cnt + event`` over 48 bits maps to a ripple of the whole width after the event
logic, which becomes the unit's critical path once the datapath is pipelined. :func:`event_counter`
splits the count into a short lowest segment of ``low_bits`` bits and segments of ``seg_bits`` bits:

* the lowest segment counts the event directly (a ``low_bits``-bit increment: the event signals
  arrive late, after the unit's high-fanout handshake logic);
* every higher segment ``i`` keeps two registered helpers computed from the segments' values on the
  previous cycle: ``s_i + 1`` and "every segment between the lowest and ``i`` is all ones";
* segment ``i`` takes its precomputed ``s_i + 1`` when the lowest segment wraps on this event and
  that helper is set (one AND after the wrap, whatever the number of segments).

A higher segment changes only when the lowest segment wraps, at most once every ``2**low_bits``
cycles (``low_bits >= 1``), so its helpers are always up to date by the next time they are used.
The port value is the concatenation of the segments and equals, in every cycle, the number of events
of the cycles before it (modulo ``2**bits``): the same timing as the plain counter, with the
longest event path being a ``low_bits``-bit all-ones test, one AND and the segments' enables.
"""

from amaranth.hdl import Cat, Const, Module, Signal

from ..clock_gate import gated_assign

__all__ = ["event_counter", "SEG_BITS", "LOW_BITS"]

#: Default width of the higher segments (their increments are a cycle ahead, off the event path).
SEG_BITS = 8
#: Default width of the lowest segment (counted on the event's own path).
LOW_BITS = 2


def event_counter(m: Module, name: str, bits: int, event, *, shift: int = 0,
                  seg_bits: int = SEG_BITS, low_bits: int = LOW_BITS, gate=None):
    """Add a ``bits``-bit counter of a 1-bit ``event`` to ``m``'s ``sync`` domain (reset to 0).

    Parameters
    ----------
    m : Module
    name : str
        Prefix of the registers' names.
    bits : int
        Width of the returned value (the count wraps modulo ``2**bits``).
    event : Value
        One bit: the count increments by ``2**shift`` at every clock edge where it is high.
    shift : int
        The count steps by ``2**shift`` per event; its ``shift`` low bits are constant zero.
    seg_bits : int
        Width of each higher segment (the last one may be shorter).
    low_bits : int
        Width of the lowest segment.
    gate : platform, optional
        If given (the ``platform`` of the caller's ``elaborate``), each higher segment and its
        precomputed increment are clocked through clock gates (:func:`hw.clock_gate.gated_assign`):
        the segment loads when it steps, its increment the cycle after (when ``s_i + 1`` changes),
        the same values in every cycle as without gates.

    Returns
    -------
    Value
        The count, ``bits`` wide.

    Raises
    ------
    ValueError
        ``bits``, ``shift``, ``seg_bits`` or ``low_bits`` out of range.
    """
    if not 0 <= shift < bits or seg_bits < 1 or low_bits < 1:
        raise ValueError(f"need 0 <= shift < bits, seg_bits >= 1 and low_bits >= 1, not bits={bits}, "
                         f"shift={shift}, seg_bits={seg_bits}, low_bits={low_bits}")
    n = bits - shift
    low_w = min(low_bits, n)
    widths = [low_w] + [min(seg_bits, n - lo) for lo in range(low_w, n, seg_bits)]
    low = Signal(widths[0], name=f"{name}_s0")
    wrap = Signal(name=f"{name}_wrap")
    m.d.comb += wrap.eq(event & low.all())
    m.d.sync += low.eq(low + event)
    segs, below = [low], Const(1, 1)  # below: segments 1 .. i-1 are all ones (now)
    for i, w in enumerate(widths[1:], start=1):
        seg = Signal(w, name=f"{name}_s{i}")
        inc = Signal(w, name=f"{name}_p{i}", init=1)  # seg + 1, a cycle late
        ones = Signal(name=f"{name}_f{i}", init=int(i == 1))  # segments 1 .. i-1 all ones, late
        if gate is None:
            m.d.sync += [inc.eq(seg + 1), ones.eq(below)]
            with m.If(wrap & ones):
                m.d.sync += seg.eq(inc)
        else:
            m.d.sync += ones.eq(below)
            stepped = Signal(name=f"{name}_u{i}")   # seg stepped at the last edge: inc is stale
            m.d.sync += stepped.eq(wrap & ones)
            gated_assign(m, gate, wrap & ones, [(seg, inc)], f"{name}_s{i}g")
            gated_assign(m, gate, stepped, [(inc, seg + 1)], f"{name}_p{i}g")
        segs.append(seg)
        nxt = Signal(name=f"{name}_a{i}")
        m.d.comb += nxt.eq(below & seg.all())
        below = nxt
    return Cat(Const(0, shift), *segs) if shift else Cat(*segs)
