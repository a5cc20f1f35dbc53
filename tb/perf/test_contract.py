"""The throughput contract (perf.contract) against numbers worked out by hand.

The RTL side (the same schedules against the unit's and the slice's counters) is checked by
tb/mu/mu_cocotb.py ``throughput``, tb/tiles/rtl.py and tb/slice/slice_cocotb.py.
"""

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
