"""The energy flow's stimulus for block-scaled units: the ``ws`` beats and expected results it writes
agree with the tiles it was cut from and with the whole-matmul block model (no synthesis)."""

import json

import ml_dtypes
import numpy as np

from hw.formats import get_block_format
from tb.mu.model import unit_matmul
from tb.power_stim import tile_runs, write


def test_block_tiles_stimulus_round_trips(tmp_path):
    d, fmt, n = 32, "mxfp8_e4m3", 2
    meta = write(tmp_path / "s.npz", d, fmt, 1, "tiles", n)
    z = np.load(tmp_path / "s.npz")
    assert json.loads(str(z["meta"])) == meta
    runs = tile_runs(d, fmt, 1, n)
    k_tiles = sum(r.k_tiles for r in runs)
    nb = d // get_block_format(fmt).block
    assert meta["ws_beats"] == z["ws"].shape[0] == k_tiles * nb
    assert z["w"].shape[0] == k_tiles * d and z["x"].shape[0] == k_tiles   # decode: one row
    # ws beat i holds column j's scale code in byte j
    assert np.array_equal(z["ws"], np.concatenate([r.ws for r in runs]).astype(np.uint8))
    # the beat-by-beat block model (Program.expected) equals the vectorised whole-matmul path
    whole = np.concatenate([unit_matmul(fmt, d, r.x, r.xs, r.w, r.ws) for r in runs])
    assert np.array_equal(z["y"], whole.astype(np.uint32))
    assert np.any(z["y"] != 0)


def test_block_zeros_use_unit_scales_and_give_zero(tmp_path):
    d, fmt = 16, "nvfp4"
    meta = write(tmp_path / "z.npz", d, fmt, 1, "zeros", 1)
    z = np.load(tmp_path / "z.npz")
    one = int(np.asarray(1.0, dtype=ml_dtypes.float8_e4m3fn).view(np.uint8))
    assert one == 0x38 and np.all(z["ws"] == one)
    assert meta["ws_beats"] == meta["x_beats"] == z["ws"].shape[0]      # D/B = 1, one row per tile
    assert not np.any(z["y"]) and not np.any(z["w"])
