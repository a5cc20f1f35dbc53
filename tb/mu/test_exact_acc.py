"""ExactAccumulator (hw/mu/exact_acc.py) against the exact model (tb/mu/model_exact.py), bit for bit.

The model's FP32 rounding is first checked against independent oracles (numpy's float64 -> float32
cast where float64 is exact, and a Fraction nearest-neighbour search near ties). The block is then
driven with Amaranth's simulator at D = 8 in every matrix format: random beats with rows interleaved
and stalls, long cancelling accumulations, ties, carries into a new binade, single-beat
accumulations back to back, specials, exact zero and the overflow limit.
"""

import gc
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from amaranth.hdl import Fragment
from amaranth.sim import Simulator

from hw.formats import MATRIX_FORMATS, get_format
from hw.mu.exact_acc import ExactAccumulator
from tb.mu.model_exact import NAN, NINF, PINF, Beat, ExactAccModel, fp32_value, rne_fp32
from tb.mu.rounding import round_fp32  # the fp32 mode's rounding, written separately

D = 8


# ---------------------------------------------------------------------------- model's rounding
def _fp32_neighbours(v: Fraction):
    """The two FP32 values around v (exact, by bisection on the ordered codes)."""
    lo, hi = 0, 0x7F800000  # positive codes are ordered like their values
    mag = abs(v)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        n, e = fp32_value(mid)
        if Fraction(n) * Fraction(2) ** e <= mag:
            lo = mid
        else:
            hi = mid
    return lo, hi


def _fraction_rne(v: Fraction) -> int:
    """RNE by comparing distances to the two neighbours (ties: even code)."""
    if v == 0:
        return 0
    lo, hi = _fp32_neighbours(v)
    n, e = fp32_value(lo)
    a = Fraction(n) * Fraction(2) ** e
    if hi == 0x7F800000:  # beyond the largest finite: the overflow threshold is 2^128 - 2^103
        b = Fraction(2) ** 128
    else:
        n, e = fp32_value(hi)
        b = Fraction(n) * Fraction(2) ** e
    mag = abs(v)
    pick = lo if mag - a < b - mag else hi if mag - a > b - mag else (lo if lo % 2 == 0 else hi)
    return pick | (0x80000000 if v < 0 else 0)


@pytest.mark.quick
def test_rne_fp32_against_numpy():
    rng = random.Random(1)
    for _ in range(20000):
        n = rng.randrange(-(1 << 53) + 1, 1 << 53) >> rng.randrange(0, 53)
        e = rng.randrange(-200, 120)
        with np.errstate(over="ignore"):
            want = int(np.array([n * 2.0 ** e]).astype(np.float32).view(np.uint32)[0])
        if n == 0:
            want = 0  # the model gives +0 for every exact zero
        assert rne_fp32(n, e) == want == round_fp32(n, e), (n, e)


@pytest.mark.quick
def test_rne_fp32_ties_against_fractions():
    rng = random.Random(2)
    cases = []
    for _ in range(1500):
        u = rng.randrange(1 << 24, 1 << 25) | 1  # 25 significant bits, odd: an exact tie
        e = rng.randrange(-180, 104)
        sign = rng.choice((1, -1))
        for n in (u, u - 1, u + 1, (u << 30) + 1, (u << 30) - 1, (1 << 25) - 1):
            cases.append((sign * n, e))
    cases += [((1 << 24) - 1, 104), ((1 << 25) - 1, 103), ((1 << 25) - 3, 103), (1, -150), (3, -151)]
    for n, e in cases:
        assert rne_fp32(n, e) == _fraction_rne(Fraction(n) * Fraction(2) ** e), (n, e)


# ---------------------------------------------------------------------------- simulation
def _set_sum(ctx, dut, s: int, rng):
    """Hand the block S as the tree's carry-save rows: unsigned ``s0 + s1 = S + 2**(W-1)``, split at
    random (sometimes all in one row)."""
    W = len(dut.s0)
    total = s + (1 << (W - 1))
    assert 0 <= total < 1 << W, f"S = {s} does not fit {W} bits"
    a = rng.choice([0, total, rng.randint(0, total)])
    ctx.set(dut.s0, a)
    ctx.set(dut.s1, total - a)


def _run(dut: ExactAccumulator, model: ExactAccModel, beats: list, *, en_prob=1.0, bubble_prob=0.0,
         seed=0):
    """Drive ``beats`` (with bubbles and stalls), return the block's results and the model's."""
    rng = random.Random(seed)
    slots = []
    for b in beats:
        while rng.random() < bubble_prob:
            slots.append(None)
        slots.append(b)
    want = [r for b in beats if (r := model.beat(b)) is not None]
    slots = [None] * dut.in_latency + slots + [None] * (dut.latency + 2)
    got = []
    flags = [n for n in ("s_nan", "s_inf", "s_inf_neg") if hasattr(dut, n)]

    async def bench(ctx):
        t = 0  # enabled cycles so far = slot at the accumulate stage
        while t < len(slots):
            en = rng.random() < en_prob
            ctrl = slots[t]
            data = slots[t + dut.in_latency] if t + dut.in_latency < len(slots) else None
            ctx.set(dut.en, en)
            ctx.set(dut.we, ctrl is not None)
            ctx.set(dut.first, bool(ctrl and ctrl.first))
            ctx.set(dut.last, bool(ctrl and ctrl.last))
            if model.rows > 1:
                ctx.set(dut.row, ctrl.row if ctrl else 0)
            _set_sum(ctx, dut, data.s if data else 0, rng)
            for n in flags:
                ctx.set(getattr(dut, n), bool(data and getattr(data, n[2:])))
            if en and ctx.get(dut.y_valid):
                got.append((ctx.get(dut.y), ctx.get(dut.overflow)))
            await ctx.tick()
            t += en

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return got, want


def _check(got, want):
    assert len(got) == len(want), f"{len(got)} results, model {len(want)}"
    for i, ((g, go), (w, wo)) in enumerate(zip(got, want, strict=True)):
        assert (g, bool(go)) == (w, wo), f"result {i}: {g:#010x} ovf={go}, model {w:#010x} ovf={wo}"


def _pieces(rng, total: int, n: int, limit: int, swing: float = 1.0) -> list:
    """n integers with |p| < limit summing to ``total``; ``swing`` pushes them to large values."""
    out, acc = [], 0
    for i in range(n):
        k = n - i
        rem = total - acc
        lo = max(-(limit - 1), rem - (k - 1) * (limit - 1))
        hi = min(limit - 1, rem + (k - 1) * (limit - 1))
        if k > 1 and rng.random() < swing:
            p = hi if (i // max(n // 4, 1)) % 2 == 0 else lo  # long runs of one sign, then back
            p = rng.randint((p + lo) // 2, p) if p == hi else rng.randint(p, (p + hi) // 2)
        else:
            p = rng.randint(lo, hi) if k > 1 else rem
        out.append(p)
        acc += p
    assert acc == total
    return out


def _accumulation(parts, row=0):
    return [Beat(s=p, first=i == 0, last=i == len(parts) - 1, row=row) for i, p in enumerate(parts)]


def _random_s(rng, limit):
    k = rng.randrange(1, limit.bit_length() + 1)
    return rng.randrange(-(1 << k) + 1, 1 << k) if (1 << k) <= limit else rng.randrange(-limit + 1, limit)


def _specials(fmt, rng):
    """Flag tuples (nan, inf, inf_neg) the format can produce."""
    f = get_format(fmt)
    opts = [(False, False, False)]
    if f.has_nan or f.has_inf:
        opts.append((True, False, False))
    if f.has_inf:
        opts += [(False, True, False), (False, True, True)]
    return opts


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_random_rows_stalls(fmt):
    """R = 3 rows interleaved, random lengths, specials, bubbles and en stalls, in_reg on."""
    rng = random.Random(hash(fmt) & 0xFFFF)
    model = ExactAccModel(fmt, D, rows=3)
    lim = model.s_limit
    spec = _specials(fmt, rng)
    open_rows, beats = set(), []
    for _ in range(1200):
        row = rng.randrange(3)
        first = row not in open_rows
        last = rng.random() < 0.15
        nan, inf, neg = rng.choice(spec) if rng.random() < 0.03 else (False, False, False)
        beats.append(Beat(s=_random_s(rng, lim), nan=nan, inf=inf, inf_neg=neg, first=first, last=last,
                          row=row))
        open_rows.discard(row) if last else open_rows.add(row)
    got, want = _run(ExactAccumulator(fmt, D, rows=3, drain_stages=3), model, beats, en_prob=0.7,
                     bubble_prob=0.2, seed=3)
    _check(got, want)
    assert len(want) > 100


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_long_cancellation(fmt):
    """Accumulations of thousands of large beats that cancel to a tiny (or zero) result."""
    rng = random.Random(11)
    model = ExactAccModel(fmt, D)
    lim = model.s_limit
    beats = []
    for total, n in ((1, 2500), (-3, 700), (0, 400), (rng.randrange(-99, 99), 300)):
        beats += _accumulation(_pieces(rng, total, n, lim, swing=0.9))
    got, want = _run(ExactAccumulator(fmt, D, drain_stages=2), model, beats, en_prob=0.9, seed=4)
    _check(got, want)
    assert want[2] == (0, False) and want[0][0] == rne_fp32(1, model.dw.lsb_exp)


def _tie_totals(rng, model, count):
    """Sums exactly halfway between two FP32 values (25 significant bits, odd) and their
    neighbours, plus sums that carry into a new binade, all within the accumulator's range."""
    amax = model.s_limit << 3  # sums of up to ~10 beats (long sums: test_long_cancellation)
    totals = []
    for _ in range(count):
        u = rng.randrange(1 << 24, 1 << 25) | 1
        sh = rng.randrange(0, max(amax.bit_length() - 26, 1))
        sign = rng.choice((1, -1))
        totals += [sign * (u << sh), sign * ((u << sh) + 1), sign * ((u << sh) - 1)]
        totals += [sign * (((1 << 25) - 1) << sh), sign * ((((1 << 24) - 1) << (sh + 1)) + 1)]
    return [t for t in totals if abs(t) < amax]


def _narrow(fmt) -> bool:
    """Sums of ~10 beats of this format at D = 8 stay below 2^26: ties need long sums."""
    return (ExactAccModel(fmt, D).s_limit << 3).bit_length() <= 26


@pytest.mark.parametrize("fmt", [f for f in MATRIX_FORMATS if not _narrow(f)])
def test_ties_and_binade_carry(fmt):
    rng = random.Random(5)
    model = ExactAccModel(fmt, D)
    beats = []
    for t in _tie_totals(rng, model, 12):
        n = max(-(-abs(t) // (model.s_limit - 1)), 1) + rng.randrange(3)
        beats += _accumulation(_pieces(rng, t, n, model.s_limit, swing=0.3))
    got, want = _run(ExactAccumulator(fmt, D, drain_stages=4), model, beats, en_prob=0.8, seed=6)
    _check(got, want)
    assert len(want) >= 40


@pytest.mark.parametrize("fmt", [
    pytest.param(f, marks=[pytest.mark.full] if ExactAccModel(f, D).s_limit < 1 << 14 else [])
    for f in MATRIX_FORMATS if _narrow(f)])
def test_ties_and_binade_carry_long_sums(fmt):
    """Formats with narrow D = 8 sums (E2M1 |S| < 2^11: over 8192 beats per sum; E2M3 |S| < 2^15;
    E3M2 |S| < 2^21) reach 25 significant bits only through long accumulations: tie up, tie down
    and the carry into a new binade."""
    rng = random.Random(7)
    model = ExactAccModel(fmt, D)
    totals = [(1 << 24) + 3, -((1 << 24) + 5), (1 << 25) - 1]  # tie up, tie down, new binade
    beats = []
    for t in totals:
        n = -(-abs(t) // (model.s_limit - 1)) + 2
        beats += _accumulation(_pieces(rng, t, n, model.s_limit, swing=0.1))
    got, want = _run(ExactAccumulator(fmt, D), model, beats, seed=8)
    _check(got, want)
    assert [w for w, _ in want] == [rne_fp32(t, model.dw.lsb_exp) for t in totals]
    assert want[2][0] == rne_fp32(1 << 25, model.dw.lsb_exp)


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
@pytest.mark.parametrize("stages", [1, 2, 3, 5, 7])
def test_single_beat_back_to_back(fmt, stages):
    """One result per cycle: every beat is its own accumulation (first and last)."""
    rng = random.Random(stages)
    model = ExactAccModel(fmt, D)
    beats = [Beat(s=_random_s(rng, model.s_limit), first=True, last=True) for _ in range(60)]
    beats += [Beat(s=0, first=True, last=True), Beat(s=model.s_limit - 1, first=True, last=True),
              Beat(s=1 - model.s_limit, first=True, last=True)]
    dut = ExactAccumulator(fmt, D, drain_stages=stages, in_reg=stages % 2 == 1)
    assert dut.latency == stages + 1
    got, want = _run(dut, model, beats)
    _check(got, want)


@pytest.mark.parametrize("fmt", [f for f in MATRIX_FORMATS
                                 if get_format(f).has_nan or get_format(f).has_inf])
def test_specials(fmt):
    """NaN, +Inf, -Inf and both anywhere in an accumulation, each followed by a clean one."""
    rng = random.Random(9)
    model = ExactAccModel(fmt, D, rows=3)
    spec = _specials(fmt, rng)[1:]
    combos = [[s] for s in spec] + [[a, b] for a in spec for b in spec]
    beats, wants = [], []
    for combo in combos:
        n = rng.randrange(3, 8)
        acc = [Beat(s=_random_s(rng, model.s_limit)) for _ in range(n)]
        for nan, inf, neg in combo:
            b = acc[rng.randrange(n)]
            b.nan, b.inf, b.inf_neg = b.nan or nan, b.inf or inf, b.inf_neg if b.inf else neg
        acc[0].first, acc[-1].last = True, True
        beats += acc + _accumulation([5, -2])
        flags = [(b.nan, b.inf, b.inf_neg) for b in acc]
        if any(f[0] for f in flags) or ({f[2] for f in flags if f[1]} == {True, False}):
            wants.append(NAN)
        elif any(f[1] for f in flags):
            wants.append(NINF if any(f[2] for f in flags if f[1]) else PINF)
        else:
            wants.append(None)
        wants.append(rne_fp32(3, model.dw.lsb_exp))
    got, want = _run(ExactAccumulator(fmt, D, rows=3), model, beats, en_prob=0.8, seed=10)
    _check(got, want)
    for hand, (model_code, _) in zip(wants, want, strict=True):  # hand-derived specials
        assert hand is None or model_code == hand
    assert NAN in wants and (not get_format(fmt).has_inf or (PINF in wants and NINF in wants))


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_overflow_limit(fmt):
    """guard_bits = 2: up to 4 beats are exact (even at the extreme S), a 5th gives NaN + overflow."""
    model = ExactAccModel(fmt, D, rows=3, guard_bits=2)
    big = model.s_limit - 1
    beats = []
    for n in (1, 3, 4, 5, 9, 4):
        beats += _accumulation([-big if n % 2 else big] * n, row=n % 3)
    beats += _accumulation([big, big, big, big, -1], row=2)  # 5 beats: overflow even if in range
    got, want = _run(ExactAccumulator(fmt, D, rows=3, guard_bits=2), model, beats, en_prob=0.7, seed=12)
    _check(got, want)
    assert [o for _, o in want] == [False, False, False, True, True, False, True]
    assert want[2][0] == rne_fp32(4 * big, model.dw.lsb_exp)


@pytest.mark.quick
@pytest.mark.parametrize(("fmt", "acc_bits", "row_bits"),
                         [("fp8_e4m3", 58, 83), ("fp8_e5m2", 86, 116), ("fp4_e2m1", 30, 50)])
def test_geometry_d32(fmt, acc_bits, row_bits):
    """Widths by hand at D = 32, g = 16, 8-bit chunks (docs/numerics.md section 6.4):
    W = P + log2(32) + 1 with P = 36 / 64 / 8; row = A + (chunks - 1) + g + 1 + flags."""
    dut = ExactAccumulator(fmt, 32)
    assert dut.acc_bits == acc_bits and dut.row_state_bits == row_bits
    assert dut.latency == 6 and dut.in_latency == 1
    Fragment.get(dut, None)  # elaborates at D = 32
    with warnings.catch_warnings():  # the half-built component is never elaborated
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="guard_bits") as err:
            ExactAccumulator(fmt, 32, guard_bits=0)
        del err
        gc.collect()


@pytest.mark.parametrize("stages", [1, 5])
def test_latency_counts_enabled_cycles(stages):
    """y_valid is high exactly ``latency`` enabled cycles after the cycle that takes the last beat
    (a stall in between delays it by the stalled cycles and holds it while en is low)."""
    dut = ExactAccumulator("fp8_e4m3", D, drain_stages=stages, in_reg=False)
    en_seq = [1, 1, 0, 0, 1, 0] + [1] * 12  # the beat is taken in cycle 1
    seen = []

    async def bench(ctx):
        for cyc, en in enumerate(en_seq):
            ctx.set(dut.en, en)
            ctx.set(dut.we, cyc == 1)
            ctx.set(dut.first, 1)
            ctx.set(dut.last, 1)
            _set_sum(ctx, dut, 3, random.Random(cyc))
            seen.append((cyc, en, ctx.get(dut.y_valid), ctx.get(dut.y)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    enabled_after = [c for c, en, _, _ in seen if c > 1 and en]  # enabled cycles after the beat's
    due = enabled_after[dut.latency - 1]
    assert [c for c, en, v, _ in seen if en and v] == [due]
    assert all(y == rne_fp32(3, ExactAccModel("fp8_e4m3", D).dw.lsb_exp) for _, _, v, y in seen if v)
