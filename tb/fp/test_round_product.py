"""booth4's own normalize/round path (:mod:`hw.fp.round_product`) in the Amaranth simulator.

The SAT proof (``make prove DESIGN=bf16_mul``) covers every input of the whole multiplier; these
tests check the helpers exhaustively on small widths and the multiplier on the corner cases of the
path (subnormal operands, results around the underflow and overflow edges) against the integer
model, so a failure points at a block.
"""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.fp.bf16_mul import Bf16Multiplier
from hw.fp.round_product import at_least, increment
from tb.fp.bf16_ref import bf16_mul_ref

pytestmark = pytest.mark.quick


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


class _Inc(wiring.Component):
    def __init__(self, width):
        super().__init__({"x": In(width), "c": In(1), "y": Out(width + 1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(increment(m, self.x, self.c))
        return m


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8])
def test_increment_exhaustive(width):
    dut = _Inc(width)
    errors = []

    async def bench(ctx):
        for x, c in itertools.product(range(1 << width), (0, 1)):
            ctx.set(dut.x, x)
            ctx.set(dut.c, c)
            if ctx.get(dut.y) != x + c:
                errors.append((x, c))

    _run(dut, bench)
    assert not errors


class _AtLeast(wiring.Component):
    def __init__(self, width, consts):
        self._consts = consts
        super().__init__({"x": In(signed(width)), "ge": Out(len(consts))})

    def elaborate(self, platform):
        m = Module()
        for i, c in enumerate(self._consts):
            m.d.comb += self.ge[i].eq(at_least(self.x, c))
        return m


def test_at_least_exhaustive():
    consts = list(range(0, 40))
    dut = _AtLeast(6, consts)
    errors = []

    async def bench(ctx):
        for x in range(-32, 32):
            ctx.set(dut.x, x)
            got = ctx.get(dut.ge)
            for i, c in enumerate(consts):
                if (got >> i) & 1 != (x >= c):
                    errors.append((x, c))

    _run(dut, bench)
    assert not errors


def _edge_vectors(rng, n):
    """Operand pairs around the underflow and overflow edges, with subnormal operands."""
    def code(e, m, s):
        return (s << 15) | (e << 7) | m

    a, b = [], []
    man = rng.integers(0, 128, size=(n, 2))
    sgn = rng.integers(0, 2, size=(n, 2))
    for k in range(n):
        kind = k % 4
        if kind == 0:  # one subnormal operand, the other's exponent anywhere
            ea, eb = 0, int(rng.integers(1, 255))
        elif kind == 1:  # both normal, the product around the smallest normal
            ea = int(rng.integers(1, 128))
            eb = int(np.clip(126 - ea + rng.integers(-10, 4), 1, 254))
        elif kind == 2:  # both normal, the product around the largest finite
            ea = int(rng.integers(127, 255))
            eb = int(np.clip(254 + 127 - ea + rng.integers(-2, 2), 1, 254))
        else:  # one subnormal, the product around the smallest normal or the subnormal grid
            ea, eb = 0, int(rng.integers(120, 140))
        if rng.integers(0, 2):
            ea, eb = eb, ea
        a.append(code(ea, int(man[k, 0]), int(sgn[k, 0])))
        b.append(code(eb, int(man[k, 1]), int(sgn[k, 1])))
    specials = [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0xFF80, 0x7FC0, 0x3F80]
    for x, y in itertools.product(specials, repeat=2):
        a.append(x)
        b.append(y)
    return np.array(a), np.array(b)


@pytest.mark.parametrize("subnormals", [True, False], ids=["subnormals", "ftz"])
def test_booth4_edges_against_model(subnormals):
    """Bf16Multiplier(booth4) == the integer model on edge vectors (a few thousand products)."""
    a, b = _edge_vectors(np.random.default_rng(7), 1200)
    want = bf16_mul_ref(a, b, subnormals=subnormals)
    dut = Bf16Multiplier("booth4", 0, subnormals)
    errors = []

    async def bench(ctx):
        for x, y, w in zip(a.tolist(), b.tolist(), want.tolist(), strict=True):
            ctx.set(dut.a, x)
            ctx.set(dut.b, y)
            got = ctx.get(dut.p)
            if got != w:
                errors.append((hex(x), hex(y), hex(got), hex(w)))

    _run(dut, bench)
    assert not errors, f"{len(errors)} wrong products, first {errors[:3]}"
