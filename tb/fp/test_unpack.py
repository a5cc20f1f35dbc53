"""hw/fp/unpack.py against ml_dtypes: every code of the element formats (and a BF16 sweep) unpacked
by the RTL's one field split / special-value decode, compared with the oracle's value and class."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.formats import FORMATS, get_format
from hw.fp.unpack import Unpack

pytestmark = pytest.mark.quick

#: Signed formats with zero and subnormals: every code up to 8 bits, a sweep of BF16.
CASES = [f.name for f in FORMATS.values() if f.signed and f.has_subnormals and f.bits <= 16]


def _codes(fmt):
    if fmt.bits <= 8:
        return np.arange(1 << fmt.bits)
    rng = np.random.default_rng(0)
    edges = [0, 1, fmt.max_code, fmt.max_code + 1, fmt.max_code + 2, (1 << fmt.bits - 1) - 1]
    return np.unique(np.r_[edges, np.array(edges) | fmt.sign_bit, rng.integers(0, 1 << fmt.bits, 400)])


@pytest.mark.parametrize("name", CASES)
def test_unpack_every_code(name):
    fmt = get_format(name)
    dut = Unpack(fmt)
    codes = _codes(fmt)
    got = []

    async def bench(ctx):
        for c in codes:
            ctx.set(dut.code, int(c))
            r = dut.raw
            got.append([ctx.get(v) for v in (r.sign, r.is_zero, r.is_inf, r.is_nan, r.sig, r.exp)])

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    sign, zero, inf, nan, sig, exp = np.array(got, dtype=np.int64).T
    with np.errstate(invalid="ignore"):
        want = codes.astype(np.uint16 if fmt.bits == 16 else np.uint8).view(fmt.ml_dtype).astype(np.float64)
    assert np.array_equal(nan == 1, np.isnan(want)), name
    assert np.array_equal(inf == 1, np.isinf(want)), name
    assert np.array_equal(zero == 1, want == 0), name
    fin = np.isfinite(want)
    assert np.array_equal(sign[fin] == 1, np.signbit(want[fin])), name
    value = np.ldexp(sig.astype(np.float64), exp - fmt.man_bits)
    assert np.array_equal(np.where(sign == 1, -value, value)[fin], want[fin]), name
