"""Real MiniLM block-scaled tiles through the block-scaled unit's RTL, bit-exact against the model.

The D = 16 and 32 runs share the builds of tb/mu/test_matrix_unit.py's ``BLOCK_BUILDS``: the quick
set sends two NVFP4 runs through the D = 16 build (stalls on every stream in the first); ``full``
sends MXFP8 E4M3 and MXFP4 at D = 32, NVFP4 at D = 32 and MXFP4 at D = 64 (two blocks per beat: the
window; the word-level tree build of :data:`tb.tiles.block_rtl.BLOCK_UNITS`), with stalls. The
block-scaled regression (96 runs, no stalls) is ``test_block_regression.py``.
"""

import pytest

from tb.tiles import block_tiles, minilm
from tb.tiles.block_rtl import BLOCK_UNITS, run_block_rtl
from tb.tiles.corpus import RunSpec


def _runs(points):
    return [RunSpec(minilm.OPS[(3 * i + 1) % len(minilm.OPS)], mode, fmt, width, 900 + i)
            for i, (fmt, width, mode) in enumerate(points)]


def _check(points, pauses=None):
    runs = _runs(points)
    for i, tile in enumerate(block_tiles.tiles(runs)):
        model = block_tiles.replay_block(tile)
        got = run_block_rtl(tile, model["bits"], pauses=pauses if i == 0 else None)
        m, rows = tile.x.shape[0], BLOCK_UNITS[(tile.width, tile.fmt)][0]
        groups = -(-m // rows)
        assert got["x_beats"] == m * tile.k_tiles, got
        assert got["w_beats"] == groups * tile.k_tiles * tile.width, got


@pytest.mark.quick
def test_quick_block_rtl():
    _check([("nvfp4", 16, "prefill"), ("nvfp4", 16, "decode")],
           pauses={"w": "random:0.3", "ws": "random:0.5", "x": "random:0.3", "y": "random:0.3"})


@pytest.mark.full
def test_full_block_rtl():
    _check([("mxfp8_e4m3", 32, "prefill"), ("mxfp4_e2m1", 32, "decode"), ("nvfp4", 32, "prefill"),
            ("mxfp4_e2m1", 64, "prefill"), ("mxfp8_e4m3", 32, "decode"), ("mxfp4_e2m1", 32, "prefill")],
           pauses={"w": "random:0.3", "ws": "random:0.5", "x": "random:0.3", "y": "random:0.3"})
