"""booth4's own normalize/round path (:mod:`hw.fp.round_product`) in the Amaranth simulator.

The SAT proof (``make prove DESIGN=bf16_mul``) covers every input of the whole multiplier; these
tests check the helpers exhaustively on small widths and the multiplier on the corner cases of the
path (subnormal operands, results around the underflow and overflow edges) against the integer
model, so a failure points at a block. The rounders are generic over the target format; E5M2
(exhaustively in ``full``) and FP32 (edge vectors) products are checked against ml_dtypes/numpy.
"""

import itertools
import random

import numpy as np
import pytest
from amaranth.hdl import Module, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from hw.formats import get_format
from hw.fp.bf16_mul import Bf16Multiplier, RawMultiply, product_rounder
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


def _increment_errors(width, values):
    """The ``(x, c)`` among ``values`` x {0, 1} where the ``width``-bit incrementer's output is not
    ``x + c``."""
    dut = _Inc(width)
    errors = []

    async def bench(ctx):
        for x, c in itertools.product(values, (0, 1)):
            ctx.set(dut.x, x)
            ctx.set(dut.c, c)
            if ctx.get(dut.y) != x + c:
                errors.append((x, c))

    _run(dut, bench)
    return errors


@pytest.mark.parametrize("width", [1, 2, 3, 5, 8])
def test_increment_exhaustive(width):
    assert not _increment_errors(width, range(1 << width))


def test_increment_wide_carry_chains():
    """32 bits (five prefix levels): every run of trailing ones alone, under random upper bits and
    with one of its bits cleared, and random values, against Python's ``+``."""
    width = 32
    rng = random.Random(32)
    values = []
    for j in range(width + 1):
        ones = (1 << j) - 1
        values += [ones, ones | (rng.getrandbits(width) << (j + 1)) % (1 << width)]
        values += [ones ^ (1 << i) for i in range(j)]
    values += [rng.getrandbits(width) for _ in range(200)]
    assert not _increment_errors(width, values)


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
    """RawMultiply of ``fmt`` and its rounder (:func:`hw.fp.bf16_mul.product_rounder`, as in
    :class:`hw.fp.bf16_mul.Bf16Multiplier`), combinational."""

    def __init__(self, fmt, arch):
        self._fmt, self._arch = fmt, arch
        super().__init__({"a": In(fmt.bits), "b": In(fmt.bits), "p": Out(fmt.bits)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.mul = mul = RawMultiply(arch=self._arch, subnormals=True, fmt=self._fmt)
        m.submodules.rnd = rnd = product_rounder(mul)
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
    """``got`` == the single RNE rounding of the exact product, NaN as the canonical NaN; return
    the reference results (as float32).

    The reference multiplies in float32: exact for E5M2 codes (3-bit significands), and for FP32
    numpy's float32 multiply is itself the correctly rounded product (gradual underflow); ml_dtypes
    then rounds the exact float32 product to E5M2 once."""
    with np.errstate(over="ignore", invalid="ignore"):
        prod = fmt.to_ml(a).astype(np.float32) * fmt.to_ml(b).astype(np.float32)
    want = prod.astype(fmt.ml_dtype) if fmt.bits < 32 else prod
    want_codes = want.view(np.uint8 if fmt.bits == 8 else np.uint32).astype(np.uint64)
    nan = np.isnan(prod)
    assert (got[nan] == fmt.nan_code).all(), "a NaN product is not the canonical NaN code"
    bad = np.nonzero((got != want_codes) & ~nan)[0]
    assert bad.size == 0, (f"{bad.size} wrong products, first: a={a[bad[0]]:#x} b={b[bad[0]]:#x} "
                           f"got {int(got[bad[0]]):#x} want {int(want_codes[bad[0]]):#x}")
    return want.astype(np.float32)


def _classes(fmt, a, b, res) -> dict:
    """How many rounded products ``res`` of finite operands overflow, are subnormal, normal or
    zero; how many are NaN."""
    finite = np.isfinite(fmt.to_ml(a).astype(np.float32)) & np.isfinite(fmt.to_ml(b).astype(np.float32))
    tiny = float(np.finfo(fmt.ml_dtype).tiny)
    mag = np.abs(res)
    return {"overflow": int((finite & np.isinf(res)).sum()),
            "subnormal": int((finite & (mag > 0) & (mag < tiny)).sum()),
            "normal": int((finite & (mag >= tiny) & np.isfinite(res)).sum()),
            "zero": int((finite & (mag == 0)).sum()), "nan": int(np.isnan(res).sum())}


@pytest.mark.parametrize("arch,every", [
    pytest.param("booth4", False, id="booth4-subset"),
    pytest.param("behavioral", False, id="behavioral-subset"),
    pytest.param("booth4", True, marks=pytest.mark.full, id="booth4-every")])
def test_e5m2_products(arch, every):
    """The rounders are generic over the target format: E5M2 x E5M2 products through booth4's
    ProductRoundPack (and the behavioral RoundPack) round as ml_dtypes does. ``full``: all 65,536
    pairs; quick: every a with a rotating eighth of b, and every a with each zero, subnormal, Inf
    and NaN b."""
    fmt = get_format("fp8_e5m2")
    a, b = (g.ravel() for g in np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
    if not every:
        keep = (b % 8 == (a // 8) % 8) | (b & 0x7C == 0x7C) | (b & 0x7C == 0)
        a, b = a[keep], b[keep]
    res = _check_against_ml_dtypes(fmt, a, b, _products(fmt, arch, a, b))
    c = _classes(fmt, a, b, res)
    assert min(c.values()) >= 100, c     # every class of result is exercised


def _fp32_vectors(rng, n):
    """Finite operands whose product lands near the smallest normal (subnormal results), near the
    largest finite (overflow) or anywhere, some with a subnormal operand, then the specials."""
    kind = rng.integers(0, 3, n)                                          # product's biased exponent:
    target = np.choose(kind, [1 + rng.integers(-26, 3, n),               # around the smallest normal,
                              254 + rng.integers(-2, 3, n),              # the largest finite,
                              rng.integers(2, 254, n)])                  # anywhere
    lo, hi = np.maximum(1, target + 127 - 254), np.minimum(254, target + 127 - 1)
    ea = lo + (rng.random(n) * (hi - lo + 1)).astype(np.int64)
    eb = target + 127 - ea                                                # both in [1, 254]
    sub = rng.random(n) < 0.15                                            # a subnormal operand
    ea[sub], eb[sub] = 0, rng.integers(100, 255, int(sub.sum()))
    man = rng.integers(0, 1 << 23, (2, n))
    sgn = rng.integers(0, 2, (2, n))
    a = (sgn[0] << 31) | (ea << 23) | man[0]
    b = (sgn[1] << 31) | (eb << 23) | man[1]
    specials = np.array([0x0, 0x80000000, 0x1, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000,
                         0xFF800000, 0x7FC00001, 0x3F800000])
    sa, sb = (g.ravel() for g in np.meshgrid(specials, specials, indexing="ij"))
    return (np.concatenate([a, sa]).astype(np.uint64), np.concatenate([b, sb]).astype(np.uint64))


def test_fp32_products():
    """FP32 x FP32 through booth4's rounder against numpy's float32 product: 160 products around
    the underflow and overflow edges and the 100 pairs of specials (a 24 x 24 booth multiplier is
    slow in the Python simulator)."""
    fmt = get_format("fp32")
    a, b = _fp32_vectors(np.random.default_rng(11), 160)
    res = _check_against_ml_dtypes(fmt, a, b, _products(fmt, "booth4", a, b))
    c = _classes(fmt, a, b, res)
    assert c["overflow"] >= 15 and c["subnormal"] >= 20 and c["normal"] >= 50, c
    assert c["zero"] >= 1 and c["nan"] >= 10, c
