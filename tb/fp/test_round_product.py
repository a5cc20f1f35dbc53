"""booth4's own normalize/round path (:mod:`hw.fp.round_product`) in the Amaranth simulator.

The SAT proof (``make prove DESIGN=bf16_mul``) covers every input of the whole multiplier; these
tests check the helpers exhaustively on small widths and the multiplier on the corner cases of the
path (subnormal operands, results around the underflow and overflow edges) against the integer
model, so a failure points at a block. The rounder is generic over the target format; E5M2
(exhaustively) and FP32 (edge vectors) products are checked against ml_dtypes/numpy.
"""

import itertools

import numpy as np
import pytest
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.formats import get_format
from hw.fp.bf16_mul import Bf16Multiplier, RawMultiply
from hw.fp.round import RoundPack
from hw.fp.round_product import ProductRoundPack, at_least, increment
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


class _Product(wiring.Component):
    """RawMultiply of ``fmt`` and the rounder its ``arch`` uses (booth4: ProductRoundPack)."""

    def __init__(self, fmt, arch):
        self._fmt, self._arch = fmt, arch
        super().__init__({"a": In(fmt.bits), "b": In(fmt.bits), "p": Out(fmt.bits)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mul = mul = RawMultiply(arch=self._arch, subnormals=True, fmt=self._fmt)
        kind = ProductRoundPack if self._arch == "booth4" else RoundPack
        m.submodules.rnd = rnd = kind(self._fmt, sig_width=len(mul.raw.sig),
                                      exp_width=len(mul.raw.exp), subnormals=True)
        m.d.comb += [mul.a.eq(self.a), mul.b.eq(self.b), rnd.raw.eq(mul.raw), self.p.eq(rnd.code)]
        return m


def _products(fmt, arch, a, b) -> np.ndarray:
    dut = _Product(fmt, arch)
    out = []

    async def bench(ctx):
        for x, y in zip(a.tolist(), b.tolist(), strict=True):
            ctx.set(dut.a, x)
            ctx.set(dut.b, y)
            out.append(ctx.get(dut.p))

    _run(dut, bench)
    return np.array(out, dtype=np.uint64)


def _check_against_ml_dtypes(fmt, a, b, got):
    """``got`` == the single RNE rounding of the exact product (the float32 product of two codes
    with at most 12-bit significands is exact; ml_dtypes/numpy round it once), NaN as NaN."""
    with np.errstate(over="ignore", invalid="ignore"):
        prod = fmt.to_ml(a).astype(np.float32) * fmt.to_ml(b).astype(np.float32)
    want = prod.astype(fmt.ml_dtype) if fmt.bits < 32 else prod
    want_codes = want.view(np.uint8 if fmt.bits == 8 else np.uint32).astype(np.uint64)
    nan = np.isnan(prod)
    assert (got[nan] == fmt.nan_code).all(), "a NaN product is not the canonical NaN code"
    bad = np.nonzero((got != want_codes) & ~nan)[0]
    assert bad.size == 0, (f"{bad.size} wrong products, first: a={a[bad[0]]:#x} b={b[bad[0]]:#x} "
                           f"got {int(got[bad[0]]):#x} want {int(want_codes[bad[0]]):#x}")


@pytest.mark.parametrize("every", [pytest.param(False, id="every8th"),
                                   pytest.param(True, marks=pytest.mark.full, id="every")])
def test_product_round_pack_e5m2(every):
    """ProductRoundPack is generic over the target format: E5M2 x E5M2 products (subnormal
    operands and results, overflow to Inf, Inf and NaN operands) round as ml_dtypes does. ``full``
    runs all 65,536 pairs; quick, every a with every 8th b (a rotating eighth) and the specials."""
    fmt = get_format("fp8_e5m2")
    a, b = (g.ravel() for g in np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
    if not every:
        keep = (b % 8 == (a // 8) % 8) | (b & 0x7C == 0x7C) | (b & 0x7F == 0)  # + Inf/NaN/zero b
        a, b = a[keep], b[keep]
    _check_against_ml_dtypes(fmt, a, b, _products(fmt, "booth4", a, b))


def test_product_round_pack_fp32_random():
    """FP32 x FP32 through booth4's rounder against numpy's float32 product (correctly rounded,
    gradual underflow): random operands around the underflow and overflow edges (a 24 x 24 booth
    multiplier is slow in the Python simulator: 200 products)."""
    fmt = get_format("fp32")
    rng = np.random.default_rng(11)
    n = 200
    ea = rng.integers(0, 256, n)
    # the second exponent puts the product near the subnormal range, the overflow edge or anywhere
    target = rng.choice([127 - 126, 127 + 127, 127 + 30], n) + rng.integers(-26, 3, n)
    eb = np.clip(target - ea + 127, 0, 255)
    swap = rng.integers(0, 2, n).astype(bool)
    ea, eb = np.where(swap, eb, ea), np.where(swap, ea, eb)
    man = rng.integers(0, 1 << 23, (2, n))
    man[:, : n // 8] &= rng.integers(0, 2, (2, n // 8)) * ((1 << 23) - 1)  # some zero mantissas
    sgn = rng.integers(0, 2, (2, n))
    a = (sgn[0] << 31) | (ea << 23) | man[0]
    b = (sgn[1] << 31) | (eb << 23) | man[1]
    _check_against_ml_dtypes(fmt, a.astype(np.uint64), b.astype(np.uint64),
                             _products(fmt, "booth4", a, b))
