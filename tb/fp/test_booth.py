"""The structural Booth multiplier, exhaustively on small widths (Amaranth simulator)."""

import itertools

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.fp.booth import Booth4Multiplier, booth4_columns, dadda_heights, dadda_reduce, prefix_add

pytestmark = pytest.mark.quick


@pytest.mark.parametrize("na, nb", [(1, 1), (2, 3), (3, 2), (4, 4), (5, 3), (3, 6), (6, 5)])
def test_booth_exhaustive(na, nb):
    dut = Booth4Multiplier(na, nb)
    errors = []

    async def bench(ctx):
        for a, b in itertools.product(range(1 << na), range(1 << nb)):
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            got = ctx.get(dut.p)
            if got != a * b:
                errors.append((a, b, got))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert not errors, f"{na}x{nb}: {len(errors)} wrong products, first {errors[0]}"


@pytest.mark.parametrize("na, nb", [(2, 2), (4, 4), (3, 5), (5, 2), (6, 6)])
def test_signed_booth_exhaustive(na, nb):
    """Two's-complement operands (the integer lanes' multiplier): every pair, product modulo
    ``2**(na + nb)`` against Python's signed product."""
    m, a, b = Module(), Signal(na), Signal(nb)
    p = prefix_add(m, *dadda_reduce(m, booth4_columns(m, a, b, na + nb, signed=True)))
    errors = []

    def sx(v, n):
        return v - (1 << n) if v >> (n - 1) else v

    async def bench(ctx):
        for x, y in itertools.product(range(1 << na), range(1 << nb)):
            ctx.set(a, x)
            ctx.set(b, y)
            if ctx.get(p) != (sx(x, na) * sx(y, nb)) % (1 << (na + nb)):
                errors.append((sx(x, na), sx(y, nb), ctx.get(p)))

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    assert not errors, f"{na}x{nb} signed: {len(errors)} wrong products, first {errors[0]}"


def test_dadda_heights():
    assert dadda_heights(2) == [2]
    assert dadda_heights(5) == [4, 3, 2]
    assert dadda_heights(13) == [9, 6, 4, 3, 2]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8"])
def test_booth_rejects_bad_widths(bad):
    with pytest.raises(TypeError, match="a_width must be a positive integer"):
        Booth4Multiplier(bad, 4)
