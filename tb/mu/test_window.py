"""The ``exact`` mode on OCP MX formats, the window (hw/mu/window.py, docs/numerics.md 7.7).

The model (tb/mu/model_window.py) is checked against exact ``Fraction`` sums of the scaled products:
correctly rounded whenever no bit left the window, within the contract's bound otherwise. The
accumulator block (:class:`hw.mu.exact_acc.ExactAccumulator` on an MX format) is then driven with
Amaranth's simulator against the model bit for bit: rows interleaved, stalls and bubbles, zero
terms, anchors that jump past the whole window, long cancelling runs, specials.
"""

import random
from fractions import Fraction

import pytest
from amaranth.sim import Simulator

from hw.formats import BLOCK_FORMATS
from hw.mu.exact_acc import ExactAccumulator
from hw.mu.window import window_widths, windowed
from tb.mu.model_exact import NAN, fp32_value, rne_fp32
from tb.mu.model_window import WindowAccModel

MX = [f for f in BLOCK_FORMATS if windowed(f)]


def _value(code: int) -> Fraction:
    """The code's value; Inf as +-2**128 (above every finite code: RNE is monotone)."""
    if code & 0x7FFFFFFF == 0x7F800000:
        return Fraction(-1 if code >> 31 else 1) * Fraction(2) ** 128
    n, e = fp32_value(code)
    return Fraction(n) * Fraction(2) ** e


def _beats(rng, ww, n, *, spread, zeros=0.1, rows=1):
    """Random accumulations: terms over the full term range or small, exponent sums within
    ``spread`` binades of a random centre (``spread=None``: anywhere in the E8M0 range)."""
    lim = 1 << (ww.term_bits - 1)
    out = []
    while len(out) < n:
        k = rng.choice([1, 1, 2, 3, 8, 20])
        centre = rng.randint(-200, 200)
        row = rng.randrange(rows)
        for i in range(k):
            terms, exps = [], []
            for _ in range(ww.blocks):
                r = rng.random()
                p = 0 if r < zeros else rng.randint(-lim + 1, lim - 1) if r < 0.6 else \
                    rng.randint(-64, 64)
                e = rng.randint(-254, 256) if spread is None else \
                    max(-254, min(254, centre + rng.randint(-spread, spread)))
                terms.append(p)
                exps.append(e)
            out.append(dict(terms=terms, exps=exps, first=i == 0, last=i == k - 1, row=row))
    return out


def _exact(ww, accumulation) -> Fraction:
    return sum((Fraction(p) * Fraction(2) ** (e + ww.lsb_exp)
                for b in accumulation for p, e in zip(b["terms"], b["exps"], strict=True)),
               Fraction(0))


# ------------------------------------------------------------------------------ model vs Fraction
@pytest.mark.quick
@pytest.mark.parametrize("fmt,width", [("mxfp8_e4m3", 32), ("mxfp4_e2m1", 64), ("mxfp8_e5m2", 128)])
def test_model_against_fractions(fmt, width):
    """No loss: the result is RNE of the exact sum. With a loss: within half an ulp plus the dropped
    amount's bound (each drop below the final window's LSB)."""
    rng = random.Random(1)
    model = WindowAccModel(fmt, width)
    ww = model.ww
    seen = {False: 0, True: 0}
    for spread in (0, 10, 30, None):
        beats = _beats(rng, ww, 300, spread=spread)
        acc = []
        for b in beats:
            acc = [b] if b["first"] else acc + [b]
            got = model.beat(b["terms"], b["exps"], first=b["first"], last=b["last"])
            if got is None:
                continue
            st = model._rows[0]
            exact = _exact(ww, acc)
            seen[st.lost] += 1
            n, e = exact.numerator, exact.denominator.bit_length() - 1
            assert exact.denominator == 1 << e
            if not st.lost:
                assert got[0] == rne_fp32(n, -e), (spread, acc)
                continue
            # every floor (a row's move, a term) drops less than a unit of the final LSB
            drops = len(acc) * (1 + ww.blocks)
            bound = Fraction(drops) * Fraction(2) ** ww.lsb(st.b)
            lo, hi = rne_fp32(*_fr(exact - bound)), rne_fp32(*_fr(exact + bound))
            assert _between(got[0], lo, hi), (spread, hex(got[0]), hex(lo), hex(hi))
    assert seen[False] > 50 and seen[True] > 5, seen


def _fr(v: Fraction) -> tuple:
    e = v.denominator.bit_length() - 1
    assert v.denominator == 1 << e
    return v.numerator, -e


def _between(code, lo, hi) -> bool:
    a, b = sorted((_value(lo), _value(hi)))
    return a <= _value(code) <= b


@pytest.mark.quick
def test_model_window_limit_is_cancellation():
    """What a window cannot do: a term far below a pair that cancels is lost (flagged), and the
    result is the lost bit's half LSB of the final window, not the exact sum: the error is within
    the absolute bound (units of the window's LSB), not within an ulp of the result."""
    model = WindowAccModel("mxfp8_e4m3", 32)
    ww = model.ww
    small, big = [1], [1 << 10]
    for order in ((small, -200), (big, 100), ([-(1 << 10)], 100)), \
                 ((big, 100), ([-(1 << 10)], 100), (small, -200)):
        for i, (t, e) in enumerate(order):
            got = model.beat(t, [e], first=i == 0, last=i == 2)
        st = model._rows[0]
        exact = Fraction(2) ** (-200 + ww.lsb_exp)
        assert st.lost and st.v == 0
        assert _value(got[0]) == Fraction(2) ** (ww.lsb(st.b) - 1) != exact
        assert abs(_value(got[0]) - exact) <= 2 * Fraction(2) ** ww.lsb(st.b)


# ------------------------------------------------------------------------------ RTL vs model
def _run(dut, model, beats, *, en_prob=0.8, bubble_prob=0.2, seed=0, nan_prob=0.0):
    rng = random.Random(seed)
    ww = model.ww
    slots = []
    for b in beats:
        while rng.random() < bubble_prob:
            slots.append(None)
        if nan_prob and rng.random() < nan_prob:
            b = {**b, "nan": True}
        slots.append(b)
    want = [r for b in slots if b is not None
            if (r := model.beat(b["terms"], b["exps"], nan=b.get("nan", False), first=b["first"],
                                last=b["last"], row=b["row"])) is not None]
    slots = [None] * dut.in_latency + slots + [None] * (dut.latency + 2)
    got = []
    tb, eb = ww.term_bits, ww.exp_bits

    async def bench(ctx):
        t = 0
        while t < len(slots):
            en = rng.random() < en_prob
            ctrl = slots[t]
            data = slots[t + dut.in_latency] if t + dut.in_latency < len(slots) else None
            ctx.set(dut.en, en)
            ctx.set(dut.we, ctrl is not None)
            ctx.set(dut.first, bool(ctrl and ctrl["first"]))
            ctx.set(dut.last, bool(ctrl and ctrl["last"]))
            if model.rows > 1:
                ctx.set(dut.row, ctrl["row"] if ctrl else 0)
            nxt = slots[t + 2] if t + 2 < len(slots) else None  # the beat two stages ahead
            ctx.set(dut.we_ahead, nxt is not None)
            ctx.set(dut.first_ahead, bool(nxt and nxt["first"]))
            if model.rows > 1:
                ctx.set(dut.row_ahead, nxt["row"] if nxt else 0)
            terms = data["terms"] if data else [rng.randint(-5, 5)] * ww.blocks
            exps = data["exps"] if data else [rng.randint(-254, 254)] * ww.blocks
            ctx.set(dut.t, sum((p % (1 << tb)) << (i * tb) for i, p in enumerate(terms)))
            ctx.set(dut.e, sum((e % (1 << eb)) << (i * eb) for i, e in enumerate(exps)))
            ctx.set(dut.nz, sum((p != 0) << i for i, p in enumerate(terms)))
            ctx.set(dut.s_nan, bool(data and data.get("nan")))
            if en and ctx.get(dut.y_valid):
                got.append((ctx.get(dut.y), ctx.get(dut.overflow)))
            await ctx.tick()
            t += en

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(got) == len(want), f"{len(got)} results, model {len(want)}"
    for i, ((g, go), (w, wo)) in enumerate(zip(got, want, strict=True)):
        assert (g, bool(go)) == (w, wo), f"result {i}: {g:#010x} ovf={go}, model {w:#010x} ovf={wo}"
    return got


@pytest.mark.quick
@pytest.mark.parametrize("fmt,width,rows", [("mxfp8_e4m3", 32, 2), ("mxfp4_e2m1", 64, 1),
                                            ("mxfp6_e2m3", 128, 1)])
def test_rtl_against_model(fmt, width, rows):
    rng = random.Random(hash(fmt) & 0xFFFF)
    dut = ExactAccumulator(fmt, width, rows, guard_bits=6)
    model = WindowAccModel(fmt, width, rows, guard_bits=6)
    beats = []
    for spread in (0, 8, 30, None):  # fewer at D = 128 (four terms a beat: a slower simulation)
        beats += _beats(rng, model.ww, 120 if width < 128 else 50, spread=spread, rows=rows)
    got = _run(dut, model, beats, seed=3, nan_prob=0.02)
    assert sum(c == NAN for c, _ in got) < len(got)


@pytest.mark.quick
def test_rtl_cancellation_and_jumps():
    """Long runs that cancel to a few units, an anchor that jumps past the whole window with a
    negative sum below it (the resolved sign), zero beats at a huge exponent."""
    fmt, width = "mxfp8_e4m3", 32
    dut = ExactAccumulator(fmt, width, 1, guard_bits=6)
    model = WindowAccModel(fmt, width, guard_bits=6)
    ww = window_widths(fmt, width, 6)
    lim = (1 << (ww.term_bits - 1)) - 1
    beats = []

    def acc(parts):
        for i, (p, e) in enumerate(parts):
            beats.append(dict(terms=[p], exps=[e], first=i == 0, last=i == len(parts) - 1, row=0))

    acc([(lim, 0), (-lim, 0), (3, 0), (-lim, 40), (lim, 40)])
    acc([(-5, -100), (7, 200), (-7, 200)])           # negative sum dropped entirely: -1 remains
    acc([(-1, -100), (0, 250), (1, 0)])               # a zero term at 2^250 moves nothing
    acc([(lim, 10), (-lim + 1, 10), (-1, 9), (1, 130)])
    acc([(-lim, e) for e in range(-250, 250, 9)])
    acc([(lim if i % 2 else -lim, 20 + (i % 3)) for i in range(40)] + [(1, -30)])
    _run(dut, model, beats, en_prob=0.7, bubble_prob=0.3, seed=5)


@pytest.mark.quick
def test_rtl_directed_carries_sign_and_sticky():
    """Cases random data rarely reaches (positions for MXFP8 E4M3 at D = 32: ``Q = 8``, a term of
    exponent sum ``E' = 8 b`` sits at the top position ``H`` of anchor ``b``, one of ``8 b - H`` at
    position 0):

    * the dropped chunks of a pending sum resolve to exactly ``2**(8 k)``: the carry out of them
      must enter the kept sum and the drop is not a loss;
    * a positive sum whose top pending bit is one (a pending carry makes it positive) dropped past
      the whole window: the resolved sign, not the top bit, says 0 rather than -1;
    * a loss that decides a tie: the lost bit rounds the midpoint up (and its mirror down)."""
    fmt, width = "mxfp8_e4m3", 32
    dut = ExactAccumulator(fmt, width, 1)
    model = WindowAccModel(fmt, width)
    ww = model.ww
    H = ww.top
    beats = []

    def acc(parts):  # (term, E') pairs
        for i, (p, ep) in enumerate(parts):
            beats.append(dict(terms=[p], exps=[ep + ww.exp_min], first=i == 0,
                              last=i == len(parts) - 1, row=0))

    lo = 240 - H  # lands at position 0 under anchor 30 (every result below is an FP32 normal)
    acc([(1, 240), (0xFFFF, lo), (1, lo), (1, 256), (-1, 256), (-1, 240)])      # carry out: 1 LSB
    acc([(1, 240), (-1, 240), (-1, lo), (0x100, lo), (1, 376), (-1, 376)])       # resolved sign
    acc([(1, 200), ((1 << 24) + 1, 280)])                                        # tie, lost: up
    acc([(-1, 200), (-(1 << 24) - 1, 280)])                                      # mirrored
    acc([(1, 200), ((1 << 24) + 3, 280)])                                        # tie, odd: up anyway
    _run(dut, model, beats, en_prob=0.9, bubble_prob=0.1, seed=9)
    codes = [model.beat(b["terms"], b["exps"], first=b["first"], last=b["last"]) for b in beats]
    codes = [c for c, _ in filter(None, codes)]
    assert codes[0] == rne_fp32(1, ww.lsb(32))            # the carry out of the dropped chunks
    assert codes[1] == rne_fp32(1, ww.lsb(47) - 1)        # +half an LSB: sign 0, lost
    assert codes[2] == rne_fp32((1 << 24) + 2, ww.lsb(35) + H)
    assert codes[3] == rne_fp32(-(1 << 24) - 2, ww.lsb(35) + H)
    assert codes[4] == rne_fp32((1 << 24) + 4, ww.lsb(35) + H)
    assert all(0 < c & 0x7F800000 < 0x7F800000 for c in codes), [hex(c) for c in codes]


@pytest.mark.quick
@pytest.mark.parametrize("fmt,width", [("mxfp4_e2m1", 128), ("mxfp8_e4m3", 32)])
def test_rtl_every_move_size(fmt, width):
    """Every move of the row's sum from 0 chunks to past the whole window (``nc`` .. ``nc + 3``),
    each on the sum +255 whose top pending bit is one (a pending carry makes it positive): kept
    while it fits, else dropped to 0 and the lost bit. MXFP4 at D = 128 has 13 chunks, not a whole
    number of the shift's groups of four, so moves of 13 to 15 chunks reach a group that exists
    only in part; MXFP8 E4M3 at D = 32 has 16."""
    dut = ExactAccumulator(fmt, width, 1)
    model = WindowAccModel(fmt, width)
    ww = model.ww
    lo = 240 - ww.top  # position 0 under anchor 30
    pad = [(0, 0)] * (ww.blocks - 1)
    beats = []

    def acc(parts):  # (term, E') pairs, one a beat
        for i, pair in enumerate(parts):
            beats.append(dict(terms=[p for p, _ in [pair] + pad],
                              exps=[ep + ww.exp_min for _, ep in [pair] + pad],
                              first=i == 0, last=i == len(parts) - 1, row=0))

    for k in range(ww.chunks + 4):
        e = 240 + ww.chunk_bits * k
        acc([(1, 240), (-1, 240), (-1, lo), (0x100, lo), (1, e), (-1, e)])
    _run(dut, model, beats, en_prob=0.9, bubble_prob=0.1, seed=13)
    codes = [model.beat(b["terms"], b["exps"], first=b["first"], last=b["last"]) for b in beats]
    codes = [c for c, _ in filter(None, codes)]
    assert codes[0] == rne_fp32(255, ww.lsb(30))  # no move: +255 exactly
    assert all(c == rne_fp32(1, ww.lsb(30 + k) - 1)  # dropped entirely: 0 and the lost bit
               for k, c in enumerate(codes) if k >= ww.chunks), [hex(c) for c in codes]


@pytest.mark.quick
def test_rtl_resolved_sign_takes_pending_carries():
    """The row's sign kept for a move past the whole window counts every pending carry (two blocks
    a beat, MXFP8 E4M3 at D = 64; positions as in the test above):

    * a carry left pending by an earlier beat and not resolved by a zero beat makes the
      all-ones sum +255: dropped entirely it leaves 0 and the lost bit (+half an LSB);
    * the carry out of the chunks a smaller move drops makes the kept all-ones sum exactly 0:
      dropped entirely it leaves +0 (no loss), not -1."""
    fmt, width = "mxfp8_e4m3", 64
    dut = ExactAccumulator(fmt, width, 1)
    model = WindowAccModel(fmt, width)
    ww = model.ww
    assert ww.blocks == 2
    lo = 240 - ww.top  # position 0 under anchor 30
    beats = []

    def acc(parts):  # per beat: two (term, E') pairs
        for i, pairs in enumerate(parts):
            beats.append(dict(terms=[p for p, _ in pairs], exps=[ep + ww.exp_min for _, ep in pairs],
                              first=i == 0, last=i == len(parts) - 1, row=0))

    zero = (0, 0)
    acc([[(1, 240), (-1, 240)], [(-1, lo), zero], [(0x100, lo), zero], [zero, zero],
         [(1, 392), (-1, 392)]])
    acc([[(1, 240), (-1, 240)], [(-1, lo + 16), zero], [(0xFFFF, lo), zero], [(1, lo), zero],
         [(1, 256), (-1, 256)], [(1, 392), (-1, 392)]])
    _run(dut, model, beats, en_prob=0.8, bubble_prob=0.2, seed=11)
    codes = [model.beat(b["terms"], b["exps"], first=b["first"], last=b["last"]) for b in beats]
    codes = [c for c, _ in filter(None, codes)]
    assert codes[0] == rne_fp32(1, ww.lsb(49) - 1)  # +255 dropped: 0 and the lost bit, +half an LSB
    assert codes[1] == 0  # exactly 0 below the window: +0
