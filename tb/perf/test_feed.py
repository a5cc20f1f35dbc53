"""The slice feed model of perf.contract (element rows, and scale rows for block-scaled formats)
against numbers worked out by hand."""

import pytest

from perf.contract import (
    Product,
    knee_feed,
    slice_knee_feed,
    slice_load_cycles,
    slice_macs_per_cycle,
    tile_bytes,
)


def test_tile_bytes_and_knee_by_hand():
    # MXFP8 at D = 32: 32 rows of 32 bytes + one scale row of 32 codes
    assert tile_bytes(32, "mxfp8_e4m3") == 32 * 32 + 32
    assert knee_feed(32, "mxfp8_e4m3") == 33.0          # 32 * (8 + 8/32) / 8
    assert knee_feed(32, "mxfp4_e2m1") == 17.0          # 32 * (4 + 8/32) / 8
    assert knee_feed(16, "nvfp4") == 9.0                # 16 * (4 + 8/16) / 8
    assert knee_feed(64, "mxfp6_e3m2", units=2) == 2 * 64 * 6.25 / 8
    # the slice's element rows go one per cycle, the scale rows beside them: 32 cycles per MXFP8
    # tile at D = 32 (1056 bytes), so its knee is the contract's 1056 / 32 = 33 bytes per cycle
    assert slice_load_cycles(32, "mxfp8_e4m3") == 32
    assert slice_knee_feed(32, "mxfp8_e4m3") == 33.0
    assert slice_load_cycles(64, "nvfp4") == 64                        # D/B = 4 scale rows, no cycle
    assert slice_knee_feed(64, "nvfp4", units=2) == 2 * 64 * 4.5 / 8   # 72 bytes per cycle
    assert slice_load_cycles(32, "mxfp4_e2m1", feed=8.5) == 544 / 8.5   # feed-bound: 64 cycles
    assert slice_load_cycles(32, "mxfp4_e2m1", feed=17.5) == 32        # above the knee: D rows


def test_macs_per_cycle_by_hand():
    # M = 1, K = N = 64 on one MXFP4 unit of D = 32: 4 tiles, each bound by the feed at 8.5 B/cycle
    p = Product(1, 64, 64, 32)
    assert slice_macs_per_cycle(p, "mxfp4_e2m1", feed=8.5) == pytest.approx(64 * 64 / (4 * 64))
    # unlimited feed: 32 cycles per tile, the unit's peak of D MACs per cycle
    assert slice_macs_per_cycle(p, "mxfp4_e2m1") == pytest.approx(32)
    # just below the knee (17 bytes per cycle at D = 32): 16.5 bytes per cycle take 544/16.5 cycles
    assert slice_macs_per_cycle(p, "mxfp4_e2m1", feed=16.5) == pytest.approx(64 * 64 / (4 * 544 / 16.5))


def test_bad_inputs():
    with pytest.raises(ValueError, match="feed"):
        slice_load_cycles(32, "mxfp8_e4m3", feed=0)
    with pytest.raises(ValueError, match="16"):
        knee_feed(16, "mxfp8_e4m3")   # MX needs D a multiple of 32
    with pytest.raises(ValueError, match="unknown"):
        tile_bytes(32, "fp16_e5m10")   # neither an element nor a block-scaled format


def test_per_tensor_formats_have_no_scale_rows():
    """E4M3 at D = 32: 32 rows of 32 bytes, no scale row; at 16 bytes per cycle a tile takes 64
    cycles, as the unit contract's load_cycles says."""
    from perf.contract import load_cycles

    assert tile_bytes(32, "fp8_e4m3") == 1024 and knee_feed(32, "fp8_e4m3") == 32.0
    assert slice_load_cycles(32, "fp8_e4m3") == 32
    assert slice_load_cycles(32, "fp8_e4m3", feed=16.0) == 64 == load_cycles(32, 8, feed=16.0)
