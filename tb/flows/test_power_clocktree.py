"""The least clock tree against trees built by hand from the liberty's own tables."""

import dataclasses

import pytest

from flows.power.clocktree import ClockTreeError, least_tree
from flows.power.energy import Energy
from flows.power.layout import LayoutEnergy, summary
from tb.flows import needs_osu
from tb.flows.liberty_by_hand import V, at, raw, transitions

pytestmark = pytest.mark.quick

BUFFERS = ("BUFX2", "BUFX4", "CLKBUF1", "CLKBUF2", "CLKBUF3", "INVX1", "INVX2", "INVX4", "INVX8")


def _by_hand(cell, load, slew):
    """(buffers per level, pJ per cycle) of the tree of ``cell`` that holds ``slew``: each buffer's
    most load within the slew found by bisection on the hand-read transition tables."""
    caps, power, _ = raw(cell)
    (a,) = caps
    tr = transitions(cell)[("Y", a)]

    def worst(c):
        return max(at(tr[k], c, slew) for k in ("rise_transition", "fall_transition"))

    lo, hi = 0.0, 100.0
    for _ in range(80):
        lo, hi = ((lo + hi) / 2, hi) if worst((lo + hi) / 2) <= slew else (lo, (lo + hi) / 2)
    levels, pj, below = [], 0.0, load
    while True:
        n = -(-below // lo)
        each = below / n
        levels.append(int(n))
        pj += n * (sum(at(t["rise_power"], each, slew) + at(t["fall_power"], each, slew)
                       for t in power.values()) + caps[a] * V ** 2)
        if n == 1:
            return levels, pj, lo, worst
        below = n * caps[a]


@needs_osu
@pytest.mark.parametrize("load", [0.05, 20.0, 143.0])
def test_the_least_clock_tree_is_the_cheapest_hand_built_tree(libs, load):
    """Of the trees built by hand from every buffer and inverter, the one returned is the cheapest,
    with the same buffers per level and the same energy; each of its buffers holds the slew and one
    buffer fewer on any level would not."""
    lib, plib = libs
    slew = lib.default_input_slew()
    t = least_tree(load, lib, plib)
    hand = {c: _by_hand(c, load, slew) for c in BUFFERS}
    cheapest = min(hand, key=lambda c: hand[c][1])
    levels, pj, most, worst = hand[t["cell"]]
    assert t["cell"] == cheapest
    assert t["levels"] == levels and t["pj_per_cycle"] == pytest.approx(pj, rel=1e-6)
    assert t["buffer_load_pf"] == pytest.approx(most, rel=1e-6)
    below = load
    for n in levels:
        assert worst(below / n) <= slew * (1 + 1e-9)
        if n > 1:
            assert worst(below / (n - 1)) > slew
        below = n * raw(t["cell"])[0]["A"]
    assert t["internal_pj"] + t["input_pins_pj"] == pytest.approx(t["pj_per_cycle"])
    assert t["load_pf"] == load and t["slew_ns"] == pytest.approx(slew)     # OSU: pF and ns


@needs_osu
def test_a_slower_clock_needs_a_cheaper_tree(libs):
    lib, plib = libs
    s = lib.default_input_slew()
    fast, slow = least_tree(100.0, lib, plib), least_tree(100.0, lib, plib, slew=2 * s)
    assert slow["pj_per_cycle"] < fast["pj_per_cycle"]     # each buffer takes more (the cheapest may change)


def test_what_no_tree_can_be_built_from_is_named(libs):
    lib, plib = libs
    with pytest.raises(ClockTreeError, match="clock load -1.0: expected a finite load >= 0"):
        least_tree(-1.0, lib, plib)
    bare = dataclasses.replace(lib, cells={k: v for k, v in lib.cells.items()
                                           if len(v.inputs) != 1 or v.is_seq})
    with pytest.raises(ClockTreeError, match="no buffer or inverter cell with energy tables"):
        least_tree(10.0, bare, plib)
    with pytest.raises(ClockTreeError, match=r"drives a copy of itself within the clock slew 0\.001 ns"):
        least_tree(10.0, lib, plib, slew=0.001)


def test_the_tree_adds_its_energy_once_per_counted_cycle():
    """``wires_clock_tree`` is ``wires_clock`` plus the tree's pJ per cycle over the counted cycles."""
    def e(total):
        return Energy(total, 0.0, 0.0, 50, 5.0, {"clock": {"internal": total}})
    clock = {"min_tree_um": {"column": 1.0, "top": None}, "pf": 1.0,
             "tree": {"cell": "BUFX4", "levels": [3, 1], "pj_per_cycle": 2.0}}
    r = LayoutEnergy("t", "v", "column", "blk", "tiles", e(300.0), e(290.0), e(280.0), e(310.0), e(305.0),
                     clock, {"useful_macs": 100, "issued_macs": 100, "runs": ["a"], "width": 8, "fmt": "f"},
                     5000.0, "rev", 8, 8, 0, 0, 0, {"column": 1.0, "top": None},
                     {"column": 10.0, "top": None}, [], {})
    p = summary(r)["pj_per_useful_mac"]
    assert p["wires_clock"] == 3.05 and p["wires_clock_tree"] == pytest.approx((305.0 + 2.0 * 50) / 100)
    assert "wires_clock_tree" not in summary(dataclasses.replace(r, clock=None, wires_clock=None))[
        "pj_per_useful_mac"]
