"""The testbench library's simulator-free parts: payload packing through a layout, pause generators.

The clocked loop and the stream source/sink are exercised by every cocotb testbench (tb/mu,
tb/slice, tb/fp), whose counters and monitors check each transfer the loop books.
"""

import itertools

import pytest
from amaranth.lib import data

from tb.lib.pause import bursty_pause, cycle_pause, make_pause, random_pause
from tb.lib.stream import layout_codec


def test_layout_codec_places_fields_least_significant_first():
    layout = data.StructLayout({"x": 8, "swap": 1, "row": 3})
    pack, unpack = layout_codec(layout)
    assert pack({"x": 0xA5, "swap": 1, "row": 5}) == 0xA5 | 1 << 8 | 5 << 9   # worked by hand
    v = unpack(0xA5 | 1 << 8 | 5 << 9)
    assert (int(v["x"]), int(v["swap"]), int(v["row"])) == (0xA5, 1, 5)
    with pytest.raises(ValueError, match="nope"):
        pack({"x": 1, "nope": 1})


def test_pause_generators():
    assert list(itertools.islice(cycle_pause([0, 1]), 4)) == [False, True, False, True]
    assert list(itertools.islice(bursty_pause(2, 3), 7)) == [False] * 2 + [True] * 3 + [False] * 2
    r = list(itertools.islice(random_pause(0.25, seed=3), 4000))
    assert 800 < sum(r) < 1200
    seeded = list(itertools.islice(bursty_pause(4, 4, seed=1), 200))
    assert 0 < sum(seeded) < 200
    assert list(itertools.islice(make_pause("rbursty:4:4", seed=1), 200)) == seeded
    with pytest.raises(ValueError, match="random:P"):
        make_pause("often")
