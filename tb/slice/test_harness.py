"""The slice harness's unit choice (no simulation): real units with either column tree, stub units,
and clear errors for the combinations that do not exist."""

import pytest

from hw import hier
from tb.slice.harness import make_slice


@pytest.mark.quick
@pytest.mark.parametrize("tree", [None, "words"])
def test_real_units_take_the_tree(tree):
    """``tree`` reaches the matrix units: their module (named from the unit's own parameters) is
    the word-level tree's with ``words`` and the Dadda tree's by default."""
    dut, geom = make_slice("mu", tree, units=1, width=8, feed_bytes=16, spad_bytes=4096)
    names = hier.emit(dut, "slice").blocks()
    units = [n for n in names if n.startswith("mu_w8_")]
    assert len(units) == 1, names
    assert units[0].endswith("_twords") == (tree == "words"), units
    assert geom.width == 8 and geom.units == 1


@pytest.mark.quick
@pytest.mark.parametrize("numerics,tree,match", [
    ("timing", None, "numerics must be 'mu'.*or 'stub'"),
    ("stub", "words", "stub unit has no tree"),
])
def test_bad_unit_choice(numerics, tree, match):
    with pytest.raises(ValueError, match=match):
        make_slice(numerics, tree, units=1, width=8)
