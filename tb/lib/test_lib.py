"""The testbench library's simulator-free part: the pause generators.

Payload packing through a layout (``hw.payload``) is tested with the unit's interface
(tb/mu/test_interface.py). The clocked loop and the stream source/sink are exercised by every
cocotb testbench (tb/mu, tb/slice, tb/fp), whose counters and monitors check each transfer the
loop books.
"""

import itertools

import pytest

from tb.lib.pause import bursty_pause, cycle_pause, make_pause, random_pause


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
