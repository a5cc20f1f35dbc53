"""The slice end to end (cocotb + Verilator): bit-exact results, stalls on every port, counters.

Quick set (CI): stub units at D=8 with ragged shapes and stalls everywhere (the dataflow), and the
real matrix unit at D=8 with ragged shapes and stalls plus the real MiniLM FFN up projection
(384 x 1536, M = 1), bit-exact against ``tb.mu.model``, and units in the ``exact`` accumulate mode
with the ``acc = 1`` write-back; block-scaled units (NVFP4, D=16) on ragged shapes with stalls,
bit-exact against ``tb.mu.model``. The full set adds the FFN at D=16, the other formats,
several accumulator rows, NVFP4 at D=32 and on the FFN, and MXFP8 and MXFP4 at D=32.
"""

import pytest

from hw.formats import MATRIX_FORMATS
from hw.mu.matrix_unit import MatrixUnitParams
from hw.slice.slice import Slice
from perf.contract import Product, slice_macs_per_cycle
from tb.slice import knee
from tb.slice.harness import run_cases

STALLS = {"hbm_pause": "random:0.3", "req_pause": "rbursty:4:6", "done_pause": "random:0.5",
          "read_pause": "random:0.4", "load_pause": "random:0.2"}

RAGGED = [[1, 8, 16], [1, 20, 37], [3, 17, 9], [2, 33, 50], [1, 1, 1]]
#: y (+)= x.W: a 4th entry 1 accumulates onto old y values the host wrote (random FP32 with
#: specials), 2 onto the previous command's result (a K split into two commands); 0 overwrites.
RAGGED_ACC = [[1, 20, 37, 1], [3, 17, 9, 0], [3, 40, 9, 2], [2, 33, 50, 1], [2, 5, 50, 2],
              [1, 1, 1, 1], [2, 9, 17, 0], [2, 9, 17, 2]]


@pytest.mark.quick
def test_stub_dataflow():
    """Stub units: three units, beats of 20 bytes for 24-byte rows, ragged shapes, stalls."""
    cases = [
        {"shapes": RAGGED, "rate": 20.0, "latency": 3, "seed": 1},
        {"shapes": RAGGED, "rate": 7.3, "latency": 31, "seed": 2, **STALLS},
        {"shapes": [[2, 64, 100]], "rate": 13.0, "latency": 9, "seed": 3,
         "hbm_pause": "bursty:20:30", "done_pause": "cycle:0001"},
        {"shapes": RAGGED_ACC, "rate": 20.0, "latency": 3, "seed": 9, "spy_reads": 3000},
        {"shapes": RAGGED_ACC, "rate": 9.1, "latency": 17, "seed": 10, "spy_reads": 800, **STALLS},
    ]
    res, dut = run_cases("slice-stub-u3w8f20", cases, numerics="stub", units=3, width=8,
                         feed_bytes=20, spad_bytes=8192)
    # the measured rate never beats the feed: bytes received / cycles <= rate (+1 beat of slack)
    for r, case in zip(res, cases, strict=True):
        busy = sum(r["cmd_cycles"])
        assert r["counters"]["hbm_rcv_bytes"] <= case["rate"] * busy + dut.feed_bytes * len(r["macs"])


@pytest.mark.parametrize("width", [pytest.param(16, marks=pytest.mark.quick),
                                   pytest.param(32, marks=pytest.mark.full)])
def test_stub_block_scaled_tiles_take_d_cycles(width):
    """Block-scaled stub units (NVFP4, two units; D = 16: one scale row per k-tile, D = 32: two, so
    one skid buffer of lead on the element rows): ragged shapes with stalls and garbage padding,
    bit-exact against the stub's integers with the scale codes in the sum (a scale row at the wrong
    tile, unit or column, or a garbage scale code past K left unzeroed, changes the result); then at
    full feed a command of 1 x 512 x 256 (256 or 64 k-tiles per unit) takes D cycles per tile, not
    the D + D/B a cycle per scale row would cost, fill and drain aside."""
    fill = 40   # SETUP (one cycle per group), HBM latency 3, the last x beat, unit and write-back
    feed = 20 * width // 16   # bytes per beat and per cycle, above the knee (18 or 36)
    cases = [
        {"shapes": RAGGED_BLOCK, "rate": 11.0, "latency": 13, "seed": 26, "spy_reads": 300, **STALLS},
        {"shapes": [[1, 512, 256]], "rate": float(feed), "latency": 3, "seed": 27},
    ]
    res, dut = run_cases(f"slice-stub-u2w{width}-nvfp4", cases, numerics="stub", units=2,
                         width=width, fmt="nvfp4", feed_bytes=feed, spad_bytes=16384)
    prod = Product(1, 512, 256, width, units=2)
    tiles, nb = prod.groups * prod.k_tiles, dut.scale_rows
    assert (tiles, nb) == {16: (256, 1), 32: (64, 2)}[width]
    model = prod.macs_useful / slice_macs_per_cycle(prod, "nvfp4", float(feed))
    assert model == tiles * width
    cycles = res[1]["cmd_cycles"][0]
    assert model <= cycles <= model + fill < tiles * (width + nb), (model, cycles)


@pytest.mark.full
def test_stub_block_scaled_four_scale_rows():
    """Block-scaled stub units at NVFP4 D = 64 (four scale rows per k-tile, so three skid buffers of
    lead on the element rows; two units): ragged shapes with stalls on every port and garbage
    padding, bit-exact against the stub's integers with the scale codes in the sum."""
    cases = [{"shapes": RAGGED_BLOCK + [[1, 130, 70, 0]], "rate": 30.0, "latency": 13, "seed": 28,
              "spy_reads": 300, **STALLS}]
    _, dut = run_cases("slice-stub-u2w64-nvfp4", cases, numerics="stub", units=2, width=64,
                       fmt="nvfp4", feed_bytes=72, spad_bytes=32768)
    assert dut.scale_rows == 4


@pytest.mark.parametrize("acc", [pytest.param("exact", marks=pytest.mark.quick),
                                 pytest.param("fp32", marks=pytest.mark.full)])
def test_mu_ragged_stalls_and_minilm(acc):
    """Real matrix units (D=8, two units): ragged shapes, slow and bursty HBM, slow consumers; then
    the real MiniLM layer-0 FFN up projection (384 x 1536, M=1) at full feed, bit-exact, in each
    accumulate mode (the recommended one in the quick set, sharing its build with
    :func:`test_mu_exact_write_back`)."""
    cases = [
        {"shapes": RAGGED, "rate": 16.0, "latency": 5, "seed": 4},
        {"shapes": RAGGED, "rate": 5.5, "latency": 40, "seed": 5, **STALLS},
        {"minilm": "ffn_up", "layer": 0, "token": 1, "rate": 16.0, "latency": 20, "seed": 6},
        {"shapes": RAGGED_ACC, "rate": 16.0, "latency": 5, "seed": 11, "spy_reads": 2000},
        {"shapes": RAGGED_ACC, "rate": 5.5, "latency": 40, "seed": 12, "spy_reads": 500, **STALLS},
    ]
    res, dut = run_cases("slice-mu-u2w8f12" + ("-xacc" if acc == "exact" else ""), cases, numerics="mu",
                         units=2, width=8, feed_bytes=12, spad_bytes=8192, acc=acc)
    # beats of 12 bytes at 16 bytes/cycle: the port, not the units, bounds the rate (12 B/cycle);
    # the contract's steady state at that feed: 36,864 super-rows of 16 bytes at 12 bytes a cycle
    model = Product(1, 384, 1536, 8, units=2).steady_cycles(feed=12.0)
    assert model == pytest.approx(384 * 1536 // dut.row_bytes * 16 / 12)
    cycles = res[2]["cmd_cycles"][0]
    assert model <= cycles <= model * 1.02 + 100, (model, cycles)


@pytest.mark.quick
def test_mu_exact_write_back():
    """Units in the ``exact`` accumulate mode (each K-long sum rounded once): ragged shapes with
    ``acc = 1`` write-back onto host values and onto a previous command's result, with stalls,
    bit-exact against the model in that mode."""
    cases = [{"shapes": RAGGED_ACC, "rate": 9.1, "latency": 17, "seed": 13, "spy_reads": 500,
              **STALLS}]
    run_cases("slice-mu-u2w8f12-xacc", cases, numerics="mu", units=2, width=8, feed_bytes=12,
              spad_bytes=8192, acc="exact")


@pytest.mark.full
def test_minilm_ffn_up():
    """The real MiniLM layer-0 FFN up projection (384 x 1536) at M=1, bit-exact; full feed rate."""
    cases = [{"minilm": "ffn_up", "layer": 0, "token": 1, "rate": 32.0, "latency": 20, "seed": 6,
              "garbage": True}]
    res, dut = run_cases("slice-mu-u2w16", cases, numerics="mu", units=2, width=16,
                         spad_bytes=32768)
    r = res[0]
    # at full feed the two units take a row per cycle: cycles close to rows (384 * 1536 / 32)
    model = Product(1, 384, 1536, 16, units=2).steady_cycles(feed=32.0)
    assert model == 384 * 1536 // dut.row_bytes
    assert model <= r["cmd_cycles"][0] <= model * 1.02 + 100, (model, r["cmd_cycles"])


@pytest.mark.full
@pytest.mark.parametrize("fmt", [f for f in MATRIX_FORMATS if f != "fp8_e4m3"])
def test_mu_formats(fmt):
    """The slice with real units in every other element format (E4M3 is the quick tests' format)."""
    cases = [{"shapes": RAGGED, "rate": 9.0, "latency": 12, "seed": 7, **STALLS}]
    run_cases(f"slice-mu-u2w8-{fmt}", cases, numerics="mu", units=2, width=8, fmt=fmt,
              feed_bytes=12, spad_bytes=8192)


@pytest.mark.full
def test_mu_rows():
    """Three accumulator rows: activation rows share one pass over the weights."""
    cases = [{"shapes": [[3, 20, 30], [5, 9, 17], [1, 16, 8]], "rate": 11.0, "latency": 8, "seed": 8,
              **STALLS}]
    run_cases("slice-mu-u3w8r3", cases, numerics="mu", units=3, width=8, rows=3, feed_bytes=24,
              spad_bytes=8192)


#: Block-scaled slices: ragged shapes (K not a multiple of B or D, N not a multiple of D), with and
#: without accumulation onto old y values, at the format's smallest legal D.
RAGGED_BLOCK = [[1, 40, 37, 0], [2, 17, 20, 1], [2, 50, 20, 2], [1, 1, 1, 0], [3, 33, 16, 1]]


@pytest.mark.quick
def test_block_nvfp4_ragged():
    """NVFP4 units (D = 16, B = 16, two units): ragged shapes with ``acc = 1`` write-back and
    garbage in every padding byte (element rows, scale rows, activation lanes and scales past K),
    stalls on every port, bit-exact against the block model; counters include the scale bytes."""
    cases = [{"shapes": RAGGED_BLOCK, "rate": 7.0, "latency": 13, "seed": 21, "spy_reads": 300,
              **STALLS}]
    run_cases("slice-mu-u2w16-nvfp4", cases, numerics="mu", units=2, width=16, fmt="nvfp4",
              feed_bytes=20, spad_bytes=8192)


@pytest.mark.quick
def test_slice_takes_any_unit_variant():
    """The slice takes its units' whole parameter value: NVFP4 units with the two-cycle accumulate
    loop and the word-level tree (both options the slice's own keywords never had), ragged shapes
    with ``acc = 1`` write-back and stalls, bit-exact against the block model."""
    mu = MatrixUnitParams(width=16, fmt="nvfp4", rows=1, tree="words", loop=2)
    cases = [{"shapes": RAGGED_BLOCK[:3], "rate": 7.0, "latency": 13, "seed": 5, **STALLS}]
    _, dut = run_cases("slice-mu-u2w16-nvfp4-l2", cases, numerics="mu", units=2, mu=mu,
                       feed_bytes=20, spad_bytes=8192)
    assert dut.mu == mu and dut.fmt == "nvfp4" and dut.width == 16


@pytest.mark.quick
def test_slice_unit_parameters_are_validated_once():
    """A unit combination that does not exist is refused by the unit's parameter value, whether
    the slice gets it whole or as keywords; the two forms do not mix."""
    with pytest.raises(ValueError, match="loop must be one of"):
        Slice(width=8, acc="exact", loop=2)
    with pytest.raises(ValueError, match="left unset"):
        Slice(mu=MatrixUnitParams(width=8), width=16)
    s = Slice(mu=MatrixUnitParams(width=8, stages=3, tree="words"))
    s._MustUse__silence = True
    assert (s.width, s.stages, s.mu.tree) == (8, 3, "words")


@pytest.mark.full
def test_block_nvfp4_minilm():
    """NVFP4 (D = 16, two units): the real MiniLM layer-0 FFN up projection (384 x 1536, M = 1,
    two-level quantized; the per-tensor FP32 scales stay with the host) under feed and host stalls,
    bit-exact against the block model."""
    cases = [{"minilm": "ffn_up", "layer": 0, "token": 1, "rate": 12.0, "latency": 20, "seed": 22,
              "hbm_pause": "random:0.2", "done_pause": "random:0.5", "read_pause": "random:0.4"}]
    run_cases("slice-mu-u2w16-nvfp4", cases, numerics="mu", units=2, width=16, fmt="nvfp4",
              feed_bytes=20, spad_bytes=8192)


@pytest.mark.full
def test_block_nvfp4_two_blocks():
    """NVFP4 at D = 32 (two blocks per k-tile, one unit): a block wholly past K in a k-tile, so the
    slice must zero its weight-scale row and the activation scale (garbage there, NaN codes
    included), with stalls, bit-exact."""
    cases = [{"shapes": RAGGED_BLOCK, "rate": 9.0, "latency": 11, "seed": 25, **STALLS}]
    run_cases("slice-mu-u1w32-nvfp4", cases, numerics="mu", units=1, width=32, fmt="nvfp4",
              feed_bytes=20, spad_bytes=8192)


@pytest.mark.full
@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "mxfp4_e2m1"])
def test_block_mx(fmt):
    """MX units at D = 32 (two units): ragged shapes with ``acc = 1`` write-back and padding
    garbage, and the real MiniLM layer-0 FFN up projection (M = 1), both under feed and host
    stalls, bit-exact against the block model."""
    cases = [{"shapes": RAGGED_BLOCK, "rate": 23.0, "latency": 13, "seed": 23, "spy_reads": 300,
              **STALLS},
             {"minilm": "ffn_up", "layer": 0, "token": 1, "rate": 40.0, "latency": 20, "seed": 24,
              "hbm_pause": "random:0.2", "done_pause": "random:0.5", "read_pause": "random:0.4"}]
    params = knee.slice_params(fmt, 32, 2)
    run_cases(f"slice-mu-u2w32-{fmt}", cases, numerics="mu", **params)


@pytest.mark.quick
@pytest.mark.parametrize("width", [8, 16, 32, 64, 128])
def test_knee_model_is_the_feed_bound_line(width):
    """The knee's model column: min(feed, D) MACs per cycle for FP8 at M = 1 (no padding at these
    widths: 384 and 1536 are multiples of D), worked by hand."""
    for rate in (0.25, 0.5, 1.0, 2.0):
        assert knee.model_macs(rate * width, width) == pytest.approx(min(rate, 1.0) * width)
    assert knee.model_macs(width, width, units=2) == pytest.approx(width)  # two units, one D feed


@pytest.mark.quick
@pytest.mark.parametrize("kw, match", [
    ({"units": 0}, "units"), ({"width": 12}, "width"), ({"width": 256}, "width"),
    ({"fmt": "bf16"}, "fmt"), ({"spad_bytes": 16}, "spad_bytes"), ({"feed_bytes": 0}, "feed_bytes"),
    ({"rows": 0}, "rows"), ({"burst": 0}, "burst"), ({"acc": "fp16"}, "acc"),
    ({"fmt": "mxfp8_e4m3", "width": 16}, "multiple of 32"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        Slice(**kw)
