"""The quantizer (tb/tiles/quant.py): per tensor by its amax rule, per block against gfloat's OCP MX
implementation and by hand.

``gfloat`` (Graphcore) implements the OCP MX v1.0 conversion independently: ``compute_scale_amax``
picks the shared scale and ``encode_block`` rounds (ties to even) and saturates the elements. Every
MX format is checked code for code, scales and elements, on data that exercises the scale clamp,
all-zero blocks, saturation and ties. NVFP4 (not in gfloat) is checked on hand-worked blocks.
"""

import gfloat
import numpy as np
import pytest
from gfloat.formats import (
    format_info_mxfp4_e2m1,
    format_info_mxfp6_e2m3,
    format_info_mxfp6_e3m2,
    format_info_mxfp8_e4m3,
    format_info_mxfp8_e5m2,
)

from hw.formats import MATRIX_FORMATS, get_block_format, get_format
from tb.tiles.quant import dequantize, quantize

pytestmark = pytest.mark.quick


# -- per tensor -------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_amax_lands_on_max_finite(fmt):
    t = np.array([[0.1, -3.0], [2.5, 0.0]], np.float32)
    q = quantize(t, fmt)
    f = get_format(fmt)
    assert q.codes.dtype == np.uint8 and q.scale == pytest.approx(3.0 / f.max_finite, rel=1e-7)
    assert dequantize(q)[0, 1] == pytest.approx(-3.0, rel=1e-6)
    assert np.all(np.isfinite(f.decode(q.codes)))
    assert q.scales is None


def test_quantize_rejects_nan():
    with pytest.raises(ValueError, match="NaN or Inf"):
        quantize(np.array([1.0, np.nan], np.float32), "fp8_e4m3")


def test_quantize_rejects_non_element_formats():
    with pytest.raises(ValueError, match="matrix element format.*not 'bf16'"):
        quantize(np.ones(2, np.float32), "bf16")


# -- per block --------------------------------------------------------------------------------

GFLOAT = {"mxfp8_e4m3": format_info_mxfp8_e4m3, "mxfp8_e5m2": format_info_mxfp8_e5m2,
          "mxfp6_e3m2": format_info_mxfp6_e3m2, "mxfp6_e2m3": format_info_mxfp6_e2m3,
          "mxfp4_e2m1": format_info_mxfp4_e2m1}


def _data(rng):
    blocks = [rng.standard_normal(32) * 2.0 ** rng.integers(-20, 20) for _ in range(24)]
    blocks.append(np.zeros(32))                                       # all-zero block
    blocks.append(np.full(32, 2.0 ** -140, dtype=np.float64))          # below the E8M0 range: clamp
    b = rng.standard_normal(32)
    b[0] = 1.875 * 2.0 ** 7                                           # amax just below a power of 2
    blocks.append(b)
    t = np.concatenate(blocks).astype(np.float32)
    return t.reshape(1, -1)


@pytest.mark.parametrize("fmt", sorted(GFLOAT))
def test_mx_codes_match_gfloat(fmt):
    fi = GFLOAT[fmt]
    t = _data(np.random.default_rng(7))
    q = quantize(t, fmt, axis=1)
    assert q.codes.shape == t.shape and q.scales.shape == (1, t.shape[1] // 32) and q.scale == 1.0
    for i in range(q.scales.shape[1]):
        vals = t[0, 32 * i:32 * (i + 1)].astype(np.float64)
        scale = gfloat.compute_scale_amax(fi.etype.emax, vals)
        theirs = list(gfloat.encode_block(fi, scale, vals / scale))
        assert theirs[0] == q.scales[0, i], (i, scale)
        assert theirs[1:] == list(q.codes[0, 32 * i:32 * (i + 1)]), i


def test_mx_axis_and_padding():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((40, 3)).astype(np.float32)         # K = 40 pads to 64 along axis 0
    q = quantize(w, "mxfp8_e4m3", axis=0)
    assert q.codes.shape == (64, 3) and q.scales.shape == (2, 3) and (q.codes[40:] == 0).all()
    back = dequantize(q)
    assert back.shape == w.shape
    assert np.abs(back - w).max() <= 2.0 ** -4 * np.abs(w).max()        # E4M3: half an ulp, 3 bits
    qt = quantize(w.T, "mxfp8_e4m3", axis=1)
    assert np.array_equal(qt.codes, q.codes.T) and np.array_equal(qt.scales, q.scales.T)


@pytest.mark.parametrize("fmt", ["mxfp4_e2m1", "mxfp8_e4m3"])
def test_ceil_scale_rule_never_saturates(fmt):
    t = _data(np.random.default_rng(5))
    ocp, up = quantize(t, fmt, axis=1), quantize(t, fmt, axis=1, scale_rule="ceil")
    step = up.scales.astype(int) - ocp.scales.astype(int)
    assert set(np.unique(step)) <= {0, 1} and step.any()          # the same or one binade up
    blocks = np.abs(t.reshape(-1, 32)).max(axis=1)
    smax = get_block_format(fmt).scale_decode(up.scales[0]) * get_block_format(fmt).element_format.max_finite
    live = (blocks > 2.0 ** -100)
    assert (blocks[live] <= smax[live]).all()                      # amax fits: nothing saturates
    with pytest.raises(ValueError, match="scale_rule"):
        quantize(t, "nvfp4", axis=1, scale_rule="ceil")


def test_nvfp4_hand_worked():
    # tensor amax 2688 = 6 * 448, so the FP32 tensor scale is exactly 1.
    a = [2688.0, 1344.0] + [0.0] * 14        # block scale 2688/6 = 448 (0x7E); 6 -> 0x7, 3 -> 0x5
    b = [3.0, 0.25, 1.25] + [0.0] * 13       # scale 0.5 (0x30); 6 -> 0x7, 0.5 -> 0x1, 2.5 ties to 2 -> 0x4
    c = [1.0, -0.5] + [0.0] * 14     # 1/6 rounds to 0.171875 (0x23); 5.82 -> 6 (0x7), -2.91 -> -3 (0xD)
    q = quantize(np.array([a + b + c], dtype=np.float32), "nvfp4", axis=1)
    assert q.scale == 1.0
    assert list(q.scales[0]) == [0x7E, 0x30, 0x23]
    assert list(q.codes[0, :2]) == [0x7, 0x5]
    assert list(q.codes[0, 16:19]) == [0x7, 0x1, 0x4]
    assert list(q.codes[0, 32:34]) == [0x7, 0xD]
    assert dequantize(q)[0, 32] == 6 * 0.171875
    # a tensor eight times smaller: same codes and block scales, the tensor scale takes the factor
    q10 = quantize(np.array([a + b + c], dtype=np.float32) / 8, "nvfp4", axis=1)
    assert q10.scale == 0.125 and np.array_equal(q10.codes, q.codes)
    assert np.array_equal(q10.scales, q.scales)


def test_bad_input():
    with pytest.raises(ValueError, match="NaN or Inf"):
        quantize(np.array([[np.nan, 1.0]]), "mxfp4_e2m1", axis=1)
    with pytest.raises(ValueError, match="or a block-scaled format .*not 'mxfp5'"):
        quantize(np.ones((2, 2)), "mxfp5", axis=1)
    with pytest.raises(ValueError, match="2-D matrix and axis 0 or 1"):
        quantize(np.ones((2, 2)), "mxfp4_e2m1")
    with pytest.raises(ValueError, match="ceil: MX formats only"):
        quantize(np.ones((2, 2)), "fp4_e2m1", scale_rule="ceil")
