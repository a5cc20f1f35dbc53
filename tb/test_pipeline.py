"""Pipeline placement (hw/pipeline.py) and latencies composed bottom-up from the blocks.

The placements are compared with the register positions the block docstrings promise, written out
by hand; the unit's composed latency with the contract of docs/mu_interface.md (``stages + 2``).
The unit's measured latency is checked against the property by the cocotb testbench (tb/mu).
"""

import pytest

from hw.fp.bf16_mul import Bf16Multiplier
from hw.mu.accumulate import AccumulatorParams
from hw.mu.column import ColumnParams
from hw.mu.matrix_unit import MatrixUnit
from hw.mu.tree import TreeParams, tree_levels
from hw.pipeline import BF16_MUL, COLUMN, EXACT_COLUMN, Cut, spread

pytestmark = pytest.mark.quick

I, T, R, N, O = Cut.INPUT, Cut.TREE, Cut.RAW, Cut.NORM, Cut.OUTPUT


def test_bf16_placement():
    assert [BF16_MUL.plan(s) for s in range(6)] == [
        (), (O,), (R, O), (I, R, O), (I, R, O, O), (I, R, O, O, O)]


def test_column_placement():
    assert [COLUMN.plan(s) for s in range(5)] == [(), (N,), (R, N), (T, R, N), (T, T, R, N)]
    assert [EXACT_COLUMN.plan(s) for s in range(4)] == [(), (R,), (T, R), (T, T, R)]
    with pytest.raises(ValueError, match="stages must be an integer >= 0"):
        COLUMN.plan(-1)


def test_spread_cuts_are_distinct_and_in_range():
    for levels in range(1, 12):
        for k in range(levels + 1):
            cuts = spread(k, levels)
            assert len(set(cuts)) == k and all(1 <= c <= levels for c in cuts), (k, levels, cuts)
    assert spread(1, 5) == (3,) and spread(2, 5) == (2, 4)


@pytest.mark.parametrize("width", [8, 16, 64])
def test_block_latencies_compose(width):
    for stages in range(MatrixUnit.max_stages(width) + 1):
        tree = TreeParams(width, "fp8_e4m3", stages)
        acc = AccumulatorParams(width, "fp8_e4m3", 1, stages)
        col = ColumnParams(width, "fp8_e4m3", 1, stages)
        # the tree holds every register but the normalize one, the accumulator that one + its own
        assert tree.latency == max(stages - 1, 0)
        assert acc.latency == (1 if stages == 0 else 2)
        assert col.latency == tree.latency + acc.latency == stages + 1
        assert col.write_delay == stages
        assert len(tree.cuts) == max(stages - 2, 0) <= tree_levels(width)
        unit = MatrixUnit(width=width, fmt="fp8_e4m3", stages=stages)
        unit._MustUse__silence = True
        assert unit.latency == stages + 2   # the documented contract


@pytest.mark.parametrize("width", [8, 64])
def test_exact_block_latencies_compose(width):
    """The exact mode: the tree holds every register (its two rows, then cuts), the accumulator
    none before its loop; the unit's latency is ``stages + 2 + drain_stages``."""
    for stages in range(MatrixUnit.max_stages(width, "exact") + 1):
        col = ColumnParams(width, "fp8_e4m3", 1, stages, acc="exact")
        tree, acc = col.tree_params, col.acc_params
        assert tree.carry_save and tree.latency == stages and not acc.in_reg
        assert len(tree.cuts) == max(stages - 1, 0) <= tree_levels(width)
        assert col.write_delay == stages
        unit = MatrixUnit(width=width, fmt="fp8_e4m3", stages=stages, acc="exact")
        unit._MustUse__silence = True
        assert unit.latency == stages + 2 + acc.drain_stages
    with pytest.raises(ValueError, match="stages must lie in 0..8 for width 8 and acc='fp32'"):
        MatrixUnit(width=8, stages=9)
    with pytest.raises(ValueError, match="stages must lie in 0..7 for width 8 and acc='exact'"):
        MatrixUnit(width=8, stages=8, acc="exact")


def test_bf16_latency_is_its_stages():
    for s in range(5):
        mul = Bf16Multiplier(stages=s)
        mul._MustUse__silence = True
        assert mul.latency == s == len(BF16_MUL.plan(s))
