"""The stream parts of hw/stream.py in the Amaranth simulator: skid buffer and fork.

Random ``valid`` and ``ready`` patterns (idle and backpressure) drive each part; a plain Python model
of the transfer rules says what must come out: every beat once, in order, nothing invented. The
skid buffer's latency, full throughput and registered ``i.ready`` are checked cycle by cycle.
"""

import random

import pytest
from amaranth.sim import Simulator

from hw.stream import Fork, SkidBuffer

pytestmark = pytest.mark.quick


def _run(dut, testbenches):
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb, background in testbenches:
        sim.add_testbench(tb, background=background)
    sim.run()


@pytest.mark.parametrize("p_valid,p_ready", [(1.0, 1.0), (0.6, 0.4), (0.9, 0.9), (0.3, 1.0)])
def test_skid_buffer_delivers_in_order(p_valid, p_ready):
    rng = random.Random(int(p_valid * 10 + p_ready * 100))
    dut = SkidBuffer(16)
    beats = [rng.getrandbits(16) for _ in range(300)]
    got, accepted, offered = [], [], []

    async def source(ctx):
        cycle = 0
        for beat in beats:
            while rng.random() >= p_valid:      # idle cycles between beats
                ctx.set(dut.i.valid, 0)
                await ctx.tick()
                cycle += 1
            ctx.set(dut.i.payload, beat)
            ctx.set(dut.i.valid, 1)
            while True:
                ready = ctx.get(dut.i.ready)
                await ctx.tick()
                cycle += 1
                if ready:
                    accepted.append(cycle - 1)
                    break
        ctx.set(dut.i.valid, 0)

    async def sink(ctx):
        cycle = 0
        while len(got) < len(beats) and cycle < 20 * len(beats):
            ready = int(rng.random() < p_ready)
            ctx.set(dut.o.ready, ready)
            valid, payload = ctx.get(dut.o.valid), ctx.get(dut.o.payload)
            if valid:
                offered.append(cycle)
            await ctx.tick()
            cycle += 1
            if valid and ready:
                got.append(payload)

    _run(dut, [(source, True), (sink, False)])
    assert got == beats
    assert dut.latency == 1
    assert all(c + 1 in offered for c in accepted[:1]), "the first beat appears one cycle later"
    if p_valid == 1.0 and p_ready == 1.0:
        assert accepted == list(range(len(beats))), "full throughput: one beat every cycle"


def test_skid_buffer_ready_is_registered():
    """``i.ready`` does not follow ``o.ready`` combinationally: it only drops the cycle after the
    skid register filled, and two beats are held while the output is stalled."""
    dut = SkidBuffer(8)
    trace = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 0)
        ctx.set(dut.i.valid, 1)
        for n in range(4):
            ctx.set(dut.i.payload, 10 + n)
            trace.append(ctx.get(dut.i.ready))
            ctx.set(dut.o.ready, 1)            # flipping o.ready within the cycle ...
            trace.append(ctx.get(dut.i.ready))  # ... does not change i.ready
            ctx.set(dut.o.ready, 0)
            await ctx.tick()
        ctx.set(dut.i.valid, 0)
        out = []
        ctx.set(dut.o.ready, 1)
        for _ in range(4):
            if ctx.get(dut.o.valid):
                out.append(ctx.get(dut.o.payload))
            await ctx.tick()
        trace.append(out)

    _run(dut, [(bench, False)])
    # cycle 0: empty; 1: main full; 2: skid full -> ready low from then on
    assert trace[:8] == [1, 1, 1, 1, 0, 0, 0, 0]
    assert trace[8] == [10, 11]


@pytest.mark.parametrize("n", [1, 3])
def test_fork_gives_every_sink_every_beat(n):
    rng = random.Random(n)
    dut = Fork(n, 12)
    beats = [rng.getrandbits(12) for _ in range(200)]
    got = [[] for _ in range(n)]

    async def source(ctx):
        for beat in beats:
            ctx.set(dut.i.payload, beat)
            ctx.set(dut.i.valid, 1)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    def sink(u, p_ready):
        async def run(ctx):
            o = dut.outputs()[u]
            for _ in range(40 * len(beats)):
                if len(got[u]) == len(beats):
                    break
                ready = int(rng.random() < p_ready)
                ctx.set(o.ready, ready)
                valid, payload = ctx.get(o.valid), ctx.get(o.payload)
                await ctx.tick()
                if valid and ready:
                    got[u].append(payload)
        return run

    _run(dut, [(source, True)] + [(sink(u, [1.0, 0.5, 0.8][u]), False) for u in range(n)])
    for u in range(n):
        assert got[u] == beats, f"sink {u}"


def test_fork_full_rate_and_checks():
    dut = Fork(2, 4)
    count = []

    async def bench(ctx):
        ctx.set(dut.i.valid, 1)
        for o in dut.outputs():
            ctx.set(o.ready, 1)
        for _ in range(5):
            count.append(ctx.get(dut.i.ready))
            await ctx.tick()

    _run(dut, [(bench, False)])
    assert count == [1] * 5 and dut.latency == 0
    with pytest.raises(ValueError, match="n must be a positive integer"):
        Fork(0, 4)


def test_skid_register_stall_next_is_the_next_stall():
    """``skid_register(stall_next=...)`` predicts ``stall`` (the skid register full) one clock edge
    ahead, under random writes and backpressure: a producer's registered copies of its enable stay
    equal to ``~stall``."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib import stream, wiring
    from amaranth.lib.wiring import In, Out

    from hw.stream import skid_register

    class Dut(wiring.Component):
        o: Out(stream.Signature(8))
        write: In(1)
        data: In(8)
        stall: Out(1)
        stall_next: Out(1)

        def elaborate(self, platform):
            m = Module()
            main = Signal(8)
            with m.If(self.write & ~self.stall):
                m.d.sync += main.eq(self.data)
            m.d.comb += self.stall.eq(skid_register(m, self.o, main, write=self.write & ~self.stall,
                                                    write_valid=1, stall_next=self.stall_next))
            return m

    dut, rng, seen = Dut(), random.Random(7), []

    async def bench(ctx):
        predicted = None
        for _ in range(400):
            stall = ctx.get(dut.stall)
            if predicted is not None:
                seen.append((predicted, stall))
            ctx.set(dut.write, rng.random() < 0.7)
            ctx.set(dut.data, rng.getrandbits(8))
            ctx.set(dut.o.ready, rng.random() < 0.5)
            predicted = ctx.get(dut.stall_next)
            await ctx.tick()

    _run(dut, [(bench, False)])
    assert all(p == s for p, s in seen)
    assert {s for _, s in seen} == {0, 1}                  # both states were reached
