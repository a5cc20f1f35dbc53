"""Fast smoke test of the matrix unit in the Amaranth simulator (no Verilator): D = 8, every format
(the E5M2 cases in the full set).

An independent exact reference (Python ``Fraction``) checks a few tiles of random codes (specials
included) with ``first``/``last`` patterns and several rows; the full cocotb testbench is
``tb/mu/test_mu*.py``. This one exists to catch generator breakage in seconds.
"""

import random
from fractions import Fraction

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.formats import MATRIX_FORMATS, get_format
from hw.mu.matrix_unit import MatrixUnit
from tb.mu.program import unpack_y

NAN32 = 0x7FC00000


def rne_fp32(v: Fraction) -> int:
    """FP32 bits of the exact value ``v`` rounded to nearest even (subnormals, overflow to Inf)."""
    if v == 0:
        return 0
    sign = 1 if v < 0 else 0
    a = abs(v)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, -126)
    q = a / Fraction(2) ** (e - 23)  # significand in units of the quantum
    n = q.numerator // q.denominator
    rem = q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n & 1):
        n += 1
    if n == 1 << 24:
        n, e = 1 << 23, e + 1
    if e > 127:
        return (sign << 31) | 0x7F800000
    field = e + 127 if n >= 1 << 23 else 0
    return (sign << 31) | (field << 23) | (n & 0x7FFFFF)


def fp32_value(bits: int):
    """(kind, value) of FP32 bits: kind in finite/inf/nan."""
    f = np.array([bits], dtype=np.uint32).view(np.float32)[0]
    if np.isnan(f):
        return "nan", None
    if np.isinf(f):
        return "inf", 1 if f > 0 else -1
    return "finite", Fraction(float(f))


def column_step(acc_bits, first, xs, ws, fmt):
    """One beat of one column: new accumulator bits."""
    f = get_format(fmt)
    xv, wv = f.decode(np.array(xs)), f.decode(np.array(ws))
    nan, infs, s = False, set(), Fraction(0)
    for a, b in zip(xv, wv, strict=True):
        if np.isnan(a) or np.isnan(b) or (np.isinf(a) and b == 0) or (np.isinf(b) and a == 0):
            nan = True
        elif np.isinf(a) or np.isinf(b):
            infs.add(1 if (a > 0) == (b > 0) else -1)
        else:
            s += Fraction(float(a)) * Fraction(float(b))
    kind, av = ("finite", Fraction(0)) if first else fp32_value(acc_bits)
    if nan or len(infs) == 2 or kind == "nan":
        return NAN32
    if kind == "inf" and infs and av not in infs:
        return NAN32
    if kind == "inf" or infs:
        sgn = av if kind == "inf" else next(iter(infs))
        return 0x7F800000 | (0x80000000 if sgn < 0 else 0)
    return rne_fp32(av + s)


def random_codes(rng, fmt, n, special_rate=0.05):
    f = get_format(fmt)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < special_rate and f.nan_code is not None:
            out.append(f.nan_code | (rng.getrandbits(1) << (f.bits - 1)))
        elif r < 2 * special_rate and f.has_inf:
            out.append(f.inf_code | (rng.getrandbits(1) << (f.bits - 1)))
        elif r < 0.3:  # large magnitudes (overflow, cancellation)
            out.append(f.max_code - rng.randrange(3) | (rng.getrandbits(1) << (f.bits - 1)))
        elif r < 0.4:  # subnormals and zeros
            out.append(rng.randrange(1 << f.man_bits) | (rng.getrandbits(1) << (f.bits - 1)))
        else:
            c = rng.randrange(1 << f.bits)
            while (f.nan_code is not None and (c & ~f.sign_bit) == f.nan_code) or \
                  (f.has_inf and (c & ~f.sign_bit) >= f.inf_code):
                c = rng.randrange(1 << f.bits)
            out.append(c)
    return out


def pack(vals, bits):
    return sum(v << (i * bits) for i, v in enumerate(vals))


@pytest.mark.parametrize("fmt,stages,rows,tree,gate", [
    pytest.param("fp8_e4m3", 2, 1, "dadda", False, marks=pytest.mark.quick),
    pytest.param("fp8_e4m3", 5, 2, "words", False, marks=pytest.mark.quick),  # word-level tree, 3 cuts
    pytest.param("fp4_e2m1", 2, 1, "dadda", False, marks=pytest.mark.quick),
    pytest.param("fp6_e3m2", 2, 1, "dadda", False, marks=pytest.mark.quick),
    pytest.param("fp6_e2m3", 0, 3, "dadda", False, marks=pytest.mark.quick),  # no pipeline registers
    # slower in the Python simulator (wide E5M2 shifters): in make test-full
    pytest.param("fp8_e5m2", 2, 1, "dadda", False, marks=pytest.mark.full),
    pytest.param("fp8_e5m2", 0, 3, "dadda", False, marks=pytest.mark.full),  # no pipeline registers, 3 rows
    # a register after every Dadda stage
    pytest.param("fp8_e4m3", MatrixUnit.max_stages(8), 2, "dadda", False, marks=pytest.mark.full),
    # clock-gated weight buffers: the simulator's view of the gate is the load enable
    pytest.param("fp8_e4m3", 2, 2, "dadda", True, marks=pytest.mark.quick),
])
def test_unit_smoke(fmt, stages, rows, tree, gate):
    D = 8
    dut = MatrixUnit(width=D, fmt=fmt, rows=rows, stages=stages, tree=tree, gate=gate)
    f = get_format(fmt)
    b = f.bits
    rng = random.Random(f"{fmt}{stages}{rows}{tree}")
    specials = 0.02 if f.has_nan or f.has_inf else 0.0
    tiles = [[random_codes(rng, fmt, D, specials) for _ in range(D)] for _ in range(3)]
    beats = []  # (tile index, x codes, swap, first, last, row)
    accs = {}
    expected = []
    for t in range(3):
        for i in range(5):
            row = rng.randrange(rows)
            first = row not in accs or rng.random() < 0.3
            last = rng.random() < 0.6
            xs = random_codes(rng, fmt, D, specials)
            beats.append((xs, i == 0, first, last, row))
            W = tiles[t]
            acc = accs.get(row, [0] * D)
            acc = [column_step(acc[j], first, xs, [W[k][j] for k in range(D)], fmt) for j in range(D)]
            accs[row] = acc
            if last:
                expected.append((row, acc))

    got = []

    async def feed_w(ctx):
        for tile in tiles:
            for wrow in tile:
                ctx.set(dut.w.payload, pack(wrow, b))
                ctx.set(dut.w.valid, 1)
                await ctx.tick().until(dut.w.ready)
        ctx.set(dut.w.valid, 0)

    async def feed_x(ctx):
        for xs, swap, first, last, row in beats:
            word = dut.signature.pack_x(pack(xs, b), swap=swap, first=first, last=last, row=row)
            ctx.set(dut.x.payload.as_value(), word)
            ctx.set(dut.x.valid, 1)
            await ctx.tick().until(dut.x.ready)
        ctx.set(dut.x.valid, 0)

    async def drain_y(ctx):
        for _ in range(2000):
            if len(got) == len(expected):
                break
            ready = int(rng.random() < 0.7)  # some backpressure
            ctx.set(dut.y.ready, ready)
            valid, word = ctx.get(dut.y.valid), ctx.get(dut.y.payload.as_value())
            await ctx.tick()
            if valid and ready:
                row, vals = unpack_y(word, D, rows)
                got.append((row, vals.tolist()))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(feed_w, background=True)
    sim.add_testbench(feed_x, background=True)
    sim.add_testbench(drain_y)
    sim.run()
    assert len(got) == len(expected), f"{len(got)} rows out, {len(expected)} expected"
    for n, ((grow, gv), (erow, ev)) in enumerate(zip(got, expected, strict=True)):
        assert grow == erow, f"y beat {n}: row {grow}, expected {erow}"
        assert gv == ev, f"y beat {n}: {[hex(v) for v in gv]} != {[hex(v) for v in ev]}"


def _throughput(beats_per_tile, tiles, D=8, fmt="fp8_e4m3", stages=2):
    """Cycle of every accepted x beat with w, x always valid and y always ready."""
    dut = MatrixUnit(width=D, fmt=fmt, stages=stages)
    b = get_format(fmt).bits
    accepted = []

    async def feed_w(ctx):
        ctx.set(dut.w.valid, 1)
        for n in range(tiles * D):
            ctx.set(dut.w.payload, pack([0x38 + n % 4] * D, b))
            await ctx.tick().until(dut.w.ready)
        ctx.set(dut.w.valid, 0)

    async def feed_x(ctx):
        ctx.set(dut.y.ready, 1)
        ctx.set(dut.x.valid, 1)
        cycle = 0
        for _ in range(tiles):
            for i in range(beats_per_tile):
                ctx.set(dut.x.payload.as_value(),
                        dut.signature.pack_x(pack([0x38] * D, b), swap=i == 0, first=1, last=1))
                while True:
                    ready = ctx.get(dut.x.ready)
                    await ctx.tick()
                    cycle += 1
                    if ready:
                        break
                accepted.append(cycle)
        ctx.set(dut.x.valid, 0)
        for _ in range(dut.latency + 2):
            await ctx.tick()
        counts = {n: ctx.get(getattr(dut, n)) for n in ("cnt_x_beats", "cnt_y_beats", "cnt_macs",
                                                         "cnt_w_beats")}
        assert counts == {"cnt_x_beats": tiles * beats_per_tile, "cnt_y_beats": tiles * beats_per_tile,
                          "cnt_macs": tiles * beats_per_tile * D * D, "cnt_w_beats": tiles * D}

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(feed_w, background=True)
    sim.add_testbench(feed_x)
    sim.run()
    return accepted


@pytest.mark.quick
def test_throughput_contract():
    D = 8
    # batch 1: one single-beat tile per D cycles once the first tile is loaded
    acc = _throughput(1, 6, D)
    assert [b - a for a, b in zip(acc, acc[1:], strict=False)] == [D] * 5, acc
    # tiles serving D beats: one x beat per cycle, swaps included
    acc = _throughput(D, 4, D)
    assert [b - a for a, b in zip(acc, acc[1:], strict=False)] == [1] * (4 * D - 1), acc


@pytest.mark.quick
@pytest.mark.parametrize("kwargs,exc,words", [
    ({"width": 12}, ValueError, ("width", "12", "8, 16, 32, 64, 128")),
    ({"width": 256}, ValueError, ("width", "256")),
    ({"width": "8"}, TypeError, ("width", "'8'")),
    ({"fmt": "bf16"}, ValueError, ("fmt", "bf16", ", ".join(MATRIX_FORMATS))),
    ({"rows": 0}, ValueError, ("rows", "0")),
    ({"stages": 99}, ValueError, ("stages", "99", "0..13")),
    ({"tree": "wallace"}, ValueError, ("tree", "wallace", "dadda, words")),
    ({"gate": 1}, TypeError, ("gate", "1", "bool")),
])
def test_bad_parameters(kwargs, exc, words):
    with pytest.raises(exc) as info:
        MatrixUnit(**kwargs)
    for w in words:
        assert w in str(info.value), str(info.value)
