"""Reusable stream parts on :mod:`amaranth.lib.stream` signatures: a skid buffer and a fork.

Transfer rule (``amaranth.lib.stream``): a beat moves in a cycle where ``valid`` and ``ready`` are
both high; ``valid`` never depends on ``ready`` in the same cycle.

* :func:`skid_register` / :class:`SkidBuffer`: an output register plus one skid register, so the
  upstream's ``ready`` is a register (no combinational path from ``o.ready``). Latency 1 cycle,
  throughput one beat per cycle, two beats of storage.
* :class:`Fork`: one stream to ``n`` sinks, each beat delivered once to every sink; no added
  latency, one beat per cycle when every sink is ready.
"""

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .clock_gate import gated_assign

__all__ = ["skid_register", "SkidBuffer", "Fork"]


def skid_register(m: Module, o, main, *, write, write_valid, load=(), out_valid=None,
                  skid_valid=None, skid=None, stall_next=None, gate=None):
    """Drive stream ``o`` from an output register ``main`` that the producer overwrites, with a
    skid register that saves an unconsumed beat from being overwritten.

    The producer writes ``main`` at the end of every cycle where ``write`` is high (a new beat if
    ``write_valid``, else something that is not a beat) and must not write while the returned
    ``stall`` is high. ``stall`` is a register, so it never depends on ``o.ready`` in the same cycle.
    If ``main`` holds a beat that ``o`` has not taken when it is overwritten, the beat moves to the
    skid register and leaves first; the producer stalls until the skid register is empty again.

    Parameters
    ----------
    m : Module
        Where the logic goes (inline: no submodule, so the signals keep the caller's names).
    o : stream interface (Out)
        The output; its ``payload`` has ``main``'s shape.
    main : value-like
        The output register (owned by the producer).
    write, write_valid : value-like
        ``main`` is written this cycle; the written value is a beat.
    load : list of statements
        Synchronous statements that write (parts of) ``main`` owned here rather than by the
        producer; they run in the cycles where ``main`` is written.
    out_valid, skid_valid, skid : Signal, optional
        The state registers (created if not given; pass them to place and name them yourself):
        ``main`` holds a beat not yet taken; the skid register is full; the skid register.
    stall_next : Signal, optional
        If given, driven (combinationally) with the value ``stall`` takes at the next clock edge, so
        a producer can keep registered copies of its enable (``~stall``).
    gate : platform, optional
        If given (the ``platform`` of the caller's ``elaborate``), the skid register is clocked
        through clock gates (:func:`hw.clock_gate.gated_assign`; ``skid`` must then be a
        :class:`Signal`): it sees the clock only in the cycles it saves a beat.

    Returns
    -------
    Signal
        ``stall`` (= ``skid_valid``): the producer must not write ``main``.
    """
    width = len(Cat(main))
    out_valid = Signal(name="out_valid") if out_valid is None else out_valid
    skid_valid = Signal(name="skid_valid") if skid_valid is None else skid_valid
    skid = Signal(width, name="skid", reset_less=True) if skid is None else skid
    if gate is not None:
        gated_assign(m, gate, ~skid_valid & write & out_valid & ~o.ready, [(skid, main)], "skid_g")
    with m.If(skid_valid):
        with m.If(o.ready):
            m.d.sync += skid_valid.eq(0)
    with m.Elif(write):
        with m.If(out_valid & ~o.ready):
            m.d.sync += skid_valid.eq(1) if gate is not None else [skid.eq(main), skid_valid.eq(1)]
        m.d.sync += out_valid.eq(write_valid)
        m.d.sync += load
    with m.Elif(o.ready):
        m.d.sync += out_valid.eq(0)
    if stall_next is not None:
        m.d.comb += stall_next.eq(Mux(skid_valid, ~o.ready, write & out_valid & ~o.ready))
    m.d.comb += [
        o.valid.eq(out_valid | skid_valid),
        Value.cast(o.payload).eq(Mux(skid_valid, skid, main)),
    ]
    return skid_valid


class SkidBuffer(wiring.Component):
    """A registered stream stage with a skid register: ``i.ready`` is a register.

    Latency 1 cycle (a beat accepted in cycle t is offered on ``o`` from cycle t + 1), one beat per
    cycle when ``o`` is ready, ``i.ready`` low only while the skid register is full (after a cycle
    in which ``o`` was not ready and a new beat arrived). Beats leave in order.

    Parameters
    ----------
    shape : shape-like
        Payload shape.

    Members
    -------
    i : In(stream.Signature(shape))
    o : Out(stream.Signature(shape))
    """

    def __init__(self, shape):
        self._shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    latency = 1

    def elaborate(self, platform):
        m = Module()
        main = Signal(self._shape, name="main", reset_less=True)
        fire = Signal()
        stall = skid_register(m, self.o, main, write=fire, write_valid=1,
                              load=[main.eq(self.i.payload)])
        m.d.comb += [self.i.ready.eq(~stall), fire.eq(self.i.valid & self.i.ready)]
        return m


class Fork(wiring.Component):
    """One stream to ``n`` sinks; a beat leaves when every sink has taken it.

    Each output's ``valid`` is the input's ``valid`` and a register saying this sink already has the
    beat, so no ``valid`` depends on a ``ready``. No added latency; one beat per cycle while every
    sink is ready; a slow sink holds the input, the others each take the beat once.

    Parameters
    ----------
    n : int
        Number of sinks (>= 1).
    shape : shape-like
        Payload shape.

    Members
    -------
    i : In(stream.Signature(shape))
    o0 .. o{n-1} : Out(stream.Signature(shape))
        The sinks (also :meth:`outputs`).
    """

    def __init__(self, n: int, shape):
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            self._MustUse__silence = True   # never built
            raise ValueError(f"n must be a positive integer, not {n!r}")
        self._n = n
        super().__init__({"i": In(stream.Signature(shape)),
                          **{f"o{u}": Out(stream.Signature(shape)) for u in range(n)}})

    latency = 0

    def outputs(self) -> list:
        """The output streams, sink 0 first."""
        return [getattr(self, f"o{u}") for u in range(self._n)]

    def elaborate(self, platform):
        m = Module()
        outs = self.outputs()
        taken = Signal(self._n)
        done = [taken[u] | outs[u].ready for u in range(self._n)]
        all_done = Signal()
        m.d.comb += all_done.eq(Cat(*done).all())
        m.d.comb += self.i.ready.eq(all_done)
        for u, o in enumerate(outs):
            m.d.comb += [o.payload.eq(self.i.payload), o.valid.eq(self.i.valid & ~taken[u])]
        with m.If(self.i.valid):
            with m.If(all_done):
                m.d.sync += taken.eq(0)
            with m.Else():
                for u, o in enumerate(outs):
                    with m.If(o.ready):
                        m.d.sync += taken[u].eq(1)
        return m
