"""The structural Booth multiplier, exhaustively on small widths (Amaranth simulator)."""

import itertools

import pytest
from amaranth.sim import Simulator

from hw.fp.booth import Booth4Multiplier, dadda_heights

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


def test_dadda_heights():
    assert dadda_heights(2) == [2]
    assert dadda_heights(5) == [4, 3, 2]
    assert dadda_heights(13) == [9, 6, 4, 3, 2]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "8"])
def test_booth_rejects_bad_widths(bad):
    with pytest.raises(TypeError, match="a_width must be a positive integer"):
        Booth4Multiplier(bad, 4)
