"""The throughput contract (perf.contract) against numbers worked out by hand.

The RTL side (the same schedules against the unit's and the slice's counters) is checked by
tb/mu/mu_cocotb.py ``throughput``, tb/tiles/rtl.py and tb/slice/slice_cocotb.py.
"""

import itertools

import pytest

from perf.contract import Product, Schedule, load_cycles


def test_schedule_cycles_by_hand():
    # D = 32: tile 0 loads in 32 cycles, two more tiles of one beat each hold 32 cycles apiece, the
    # last one's beat, then a latency of 4
    assert Schedule(32, (1, 1, 1)).cycles(4) == 32 + 32 + 32 + 1 + 4
    # tiles serving more beats than D hold the unit for their beats
    assert Schedule(32, (40, 40)).cycles() == 32 + 40 + 40
    # 12 k-tiles of 16 rows at D = 32, latency 3
    assert Product(16, 12 * 32, 32, 32).schedule().cycles(3) == 32 * 12 + 16 + 3
    # steady state drops the fill and the drain: 3 tiles of one beat = 3 * D
    assert Schedule(8, (1, 1, 1)).steady_cycles() == 24
    assert Schedule(8, (1, 9, 3)).steady_cycles() == 8 + 9 + 8


def test_schedule_counters_by_hand():
    s = Schedule(8, (3, 3, 5), y_beats=3)
    assert s.counters() == {"w_beats": 24, "x_beats": 11, "y_beats": 3, "macs": 11 * 64}


def test_product_walks_groups_passes_and_k_tiles():
    # M = 5 rows on R = 2 accumulator rows: passes of 2, 2, 1; K = 20 at D = 8: 3 k-tiles;
    # N = 17: 3 column tiles on 2 units -> 2 groups per unit (the second group half padding)
    p = Product(5, 20, 17, 8, rows=2, units=2)
    assert (p.k_tiles, p.n_tiles, p.groups, p.passes) == (3, 3, 2, 3)
    assert p.schedule().tile_beats == (2, 2, 2, 2, 2, 2, 1, 1, 1) * 2
    assert p.schedule().y_beats == 2 * 5 and p.y_rows == 5 * 3
    assert p.weights_streamed == 3 * 2 * 2 * 3 * 64 and p.weights_useful == 3 * 20 * 17
    # default rows: one pass serving every row
    assert Product(5, 20, 17, 8).schedule().tile_beats == (5,) * 9


def test_load_cycles_and_feed_bound():
    assert load_cycles(32) == 32 and load_cycles(32, 8, feed=64.0) == 32   # more feed: still D
    assert load_cycles(32, 8, feed=16.0) == 64                             # half the bytes: 2 D
    assert load_cycles(16, 4, feed=4.0, units=2) == 16 * (2 * 16 * 4 / 8 / 4)
    # MiniLM FFN up at M = 1, D = 32: 12 x 48 tiles, all useful: min(feed, D) MACs per cycle (FP8)
    p = Product(1, 384, 1536, 32)
    assert p.macs_per_cycle(feed=8.0) == pytest.approx(8.0)
    assert p.macs_per_cycle(feed=32.0) == pytest.approx(32.0)
    assert p.macs_per_cycle(feed=64.0) == pytest.approx(32.0)
    assert p.macs_per_cycle(bits=4, feed=8.0) == pytest.approx(16.0)  # FP4: two weights a byte
    # a padded shape: K = 20 on D = 8 streams 24 rows, N = 10 streams 16 columns
    p = Product(1, 20, 10, 8)
    assert p.macs_per_cycle(feed=100.0) == pytest.approx(8 * 200 / (24 * 16))


@pytest.mark.parametrize("kw, err", [
    (dict(m=0, k=1, n=1, width=8), ValueError), (dict(m=1, k=1, n=1, width=8, rows=0), ValueError),
    (dict(m=1.5, k=1, n=1, width=8), TypeError), (dict(m=1, k=1, n=1, width=8, units=0), ValueError),
])
def test_bad_products(kw, err):
    with pytest.raises(err, match=next(k for k, v in kw.items() if v in (0, 1.5))):
        Product(**kw)


def test_bad_schedules_and_feeds():
    with pytest.raises(ValueError, match="tile_beats"):
        Schedule(8, ())
    with pytest.raises(ValueError, match="tile_beats"):
        Schedule(8, (1, 0))
    with pytest.raises(ValueError, match="feed"):
        load_cycles(8, 8, feed=0.0)


def test_loop2_interlock_bubbles_by_hand():
    # loop = 2: a beat repeating the previous beat's row waits one cycle. One tile of 5 beats on
    # rows 0 0 1 1 0 at D = 8 (load 8): beats at cycles 8, 10, 11, 13, 14 (two bubbles), so the last
    # beat is taken 7 cycles after the first; latency 6 -> 8 + 7 + 6 = 21
    one = Schedule(8, (5,), rows=((0, 0, 1, 1, 0),), loop=2)
    assert one.spans() == (7,) and one.cycles(6) == 21
    # the same beats with loop = 1 (or rows in turn with loop = 2) take 5 cycles
    assert Schedule(8, (5,)).cycles(6) == 19
    assert Schedule(8, (5,), rows=((0, 1, 2, 0, 1),), loop=2).cycles(6) == 19
    # R = 1 at full rate: every beat after the first waits, 2 cycles per beat; two tiles of 8 beats
    # at D = 8: tile 0 spans 15 cycles + 1 for tile 1's first beat (same row, would follow at
    # once), tile 1 spans 15: 8 + 16 + 15 + 3
    r1 = Schedule(8, (8, 8), rows=((0,) * 8,) * 2, loop=2)
    assert r1.spans() == (16, 15) and r1.cycles(3) == 8 + 16 + 15 + 3
    # one-beat tiles (decode, R = 1): the tile's D load cycles hide the bubble
    assert Schedule(8, (1, 1, 1), rows=((0,),) * 3, loop=2).cycles(4) == 8 + 8 + 8 + 1 + 4
    # a tile edge between different rows costs nothing
    assert Schedule(8, (8, 8), rows=(tuple(range(8)), (1,) * 1 + (0, 1) * 3 + (0,)),
                    loop=2).spans() == (8, 8)


def test_loop2_products_pay_nothing():
    # a product serves rows in turn (one beat per row per tile), so its schedule on a loop = 2 unit
    # (the same beats, each with its row) costs the same cycles; one-beat tiles (M = 1) wait inside
    # the next tile's D-cycle load
    for m, rows in ((1, None), (5, 2), (16, None)):
        a = Product(m, 96, 40, 8, rows=rows).schedule()
        b = Schedule(a.width, a.tile_beats, rows=tuple(tuple(range(t)) for t in a.tile_beats), loop=2)
        assert b.cycles(7) == a.cycles(7) and b.steady_cycles() == a.steady_cycles()
    assert Schedule(1, (1, 1, 1), rows=((0,),) * 3, loop=2).steady_cycles() == 2 + 2 + 1   # D = 1: no room


def test_loop2_schedule_needs_rows():
    with pytest.raises(ValueError, match="rows"):
        Schedule(8, (2,), loop=2)
    with pytest.raises(ValueError, match="one row per beat"):
        Schedule(8, (2, 1), rows=((0, 1), (0, 1)), loop=2)
    with pytest.raises(ValueError, match="loop"):
        Schedule(8, (2,), loop=3)


def test_product_steady_cycles_equals_its_schedule():
    # the per-pass closed form against the tile-by-tile schedule it summarizes
    for m, k, n, d, rows, units in itertools.product(
            (1, 2, 5, 17), (8, 96, 100), (8, 40, 130), (1, 8, 16), (None, 1, 2, 4), (1, 3)):
        if d == 1 and k * n > 1000:
            continue
        p = Product(m, k, n, d, rows=rows, units=units)
        for bits, feed in ((8, None), (8, 2.0), (4, 1.5), (8, 100.0), (6, 0.7)):
            load = load_cycles(d, bits, feed, units)
            want = p.schedule().steady_cycles(load)
            assert p.steady_cycles(bits, feed) == pytest.approx(want, rel=1e-12, abs=0), \
                (m, k, n, d, rows, units, bits, feed)
