"""Block-scaled real-tile runs (tb/tiles/block_tiles.py) through the block model.

Each run is replayed beat by beat through ``BlockMatrixUnitModel`` (what the block-scaled RTL will
be compared with) and must equal the whole-matmul path bit for bit and stay within the contract's
bound of the float64 product (both asserted inside ``replay_block``). The quick set covers every
block format at D = 32, 64 and 128 and every op class; the full set is every op x mode x format x
width (288 runs).
"""

import pytest

from hw.formats import BLOCK_FORMATS
from tb.tiles import block_tiles, minilm


def _check(runs):
    results = [block_tiles.replay_block(t) for t in block_tiles.tiles(runs)]
    assert len(results) == len(runs)
    # a working quantization, per format on average (single FP4 runs can lose everything: a decode
    # P.V row whose one large probability meets V values below E2M1's range in their block)
    for fmt in {r["fmt"] for r in results}:
        mean = sum(r["mean_rel"] for r in results if r["fmt"] == fmt) / sum(r["fmt"] == fmt for r in results)
        assert mean < (0.3 if "fp4" in fmt else 0.15), (fmt, mean)
    return results


@pytest.mark.quick
def test_quick_block_runs():
    runs = block_tiles.plan_block(full=False)
    assert {s.fmt for s in runs} == set(BLOCK_FORMATS) and {s.op for s in runs} == set(minilm.OPS)
    assert {s.width for s in runs} == {32, 64, 128}
    _check(runs)


@pytest.mark.full
def test_full_block_runs():
    runs = block_tiles.plan_block(full=True)
    assert len(runs) >= 90
    _check(runs)
