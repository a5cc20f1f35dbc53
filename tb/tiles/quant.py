"""Quantization as deployments do it: per tensor, or per block along K (OCP MX, NVFP4); codes from
hw/formats.

* **Per tensor** (an element format, :data:`hw.formats.MATRIX_FORMATS`): ``codes = encode(t / s)``
  with ``s = amax(|t|) / max_finite(fmt)``, so the tensor's largest magnitude lands on the format's
  largest finite value (no overflow; the formats without Inf saturate anyway).
* **Per block** (a block-scaled format, :data:`hw.formats.BLOCK_FORMATS`): blocks of B consecutive
  elements along the reduction axis K share one 8-bit scale code; K is zero-padded to a multiple of B.

  - **OCP MX** (``mxfp8_e4m3`` .. ``mxfp4_e2m1``): per block, ``X = floor(log2(amax)) - emax_elem``
    clipped to the E8M0 range [-127, 127] (an all-zero block takes X = -127), scale code ``X + 127``;
    each element is ``v / 2^X`` rounded to nearest even in the element format, saturating at its
    largest finite value (also for E4M3 and E5M2, whose plain encode would give NaN or Inf).
  - **NVFP4**: a per-tensor FP32 scale ``s_t = amax(tensor) / (6 * 448)`` (1 for an all-zero
    tensor), per block a UE4M3 scale ``s_b = RNE_e4m3(amax(block) / 6 / s_t)`` (at most 448),
    elements ``RNE_e2m1(v / (s_b * s_t))`` with saturation (zero where ``s_b`` is zero).

The matrix unit sees codes (and block scale codes) only; the per-tensor scale (``Quantized.scale``:
the amax scale, NVFP4's ``s_t``, 1 for MX) is applied to its FP32 results outside the unit:
``y ~= s_x * s_w * unit(codes_x, codes_w)``. ``tb/tiles/test_quant.py`` checks the MX conversion
code for code against ``gfloat``'s implementation of the OCP spec and NVFP4 against hand-worked cases.
"""

from dataclasses import dataclass

import numpy as np

from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS, get_block_format, get_format

__all__ = ["Quantized", "quantize", "dequantize", "NVFP4_SCALE_MAX", "SCALE_RULES"]

#: Largest UE4M3 block scale (the E4M3 largest finite).
NVFP4_SCALE_MAX = 448.0


@dataclass(frozen=True)
class Quantized:
    """A quantized tensor.

    Attributes
    ----------
    fmt : str
        Element format or block-scaled format name.
    codes : ndarray of uint8
        Element codes, one per element (formats narrower than 8 bits in the low bits); block-scaled:
        K padded to ``Kp`` (a multiple of B) along ``axis``.
    scale : float
        The per-tensor scale, applied outside the unit (block-scaled: NVFP4's ``s_t``, 1.0 for MX).
    scales : ndarray of uint8 or None
        Block-scaled: scale codes, ``Kp / B`` along ``axis``.
    axis : int or None
        Block-scaled: the K axis (1 for activations (M, K), 0 for weights (K, N)).
    k : int or None
        Block-scaled: K before padding.
    """

    fmt: str
    codes: np.ndarray
    scale: float
    scales: np.ndarray | None = None
    axis: int | None = None
    k: int | None = None


def _blocks(t: np.ndarray, axis: int, b: int):
    """(rows, nblk, B) float64 view of ``t`` with K along ``axis``, zero-padded."""
    t = np.moveaxis(np.asarray(t, dtype=np.float32), axis, -1)
    k = t.shape[-1]
    kp = -(-k // b) * b
    t = np.concatenate([t, np.zeros(t.shape[:-1] + (kp - k,), np.float32)], axis=-1)
    return t.reshape(t.shape[:-1] + (kp // b, b)).astype(np.float64), k


def _encode_sat(fmt: str, v: np.ndarray) -> np.ndarray:
    f = get_format(fmt)
    return f.encode(np.clip(v, -f.max_finite, f.max_finite).astype(np.float32)).astype(np.uint8)


#: MX shared-exponent rules: ``ocp`` the OCP MX v1.0 conversion, ``ceil`` the smallest power of two
#: that maps the block's amax to at most the element's largest finite value (no saturation).
SCALE_RULES = ("ocp", "ceil")


def quantize(t: np.ndarray, fmt: str, axis: int | None = None, scale_rule: str = "ocp") -> Quantized:
    """Quantize ``t`` (float32) to ``fmt``: per tensor for an element format, per block along
    ``axis`` (0 or 1 of a 2-D matrix) for a block-scaled format.

    ``scale_rule`` (MX formats only, :data:`SCALE_RULES`): ``ocp`` takes
    ``X = floor(log2 amax) - emax_elem``, which maps amax into ``[2^emax, 2^(emax+1))`` and
    saturates the values above the element's largest finite (E2M1: up to 6 * 4/3); ``ceil`` takes
    ``X = ceil(log2(amax / max_elem))``, one binade more where that happens, and never saturates.

    Raises
    ------
    ValueError
        If ``fmt`` is neither a matrix element format nor a block-scaled format, a rule that the
        format does not take, a block-scaled tensor that is not 2-D or has no axis 0 or 1, or ``t``
        holds NaN or Inf (a scale cannot be chosen; fix the producer of the tensor).
    """
    if fmt not in MATRIX_FORMATS and fmt not in BLOCK_FORMATS:
        raise ValueError(f"fmt must be a matrix element format ({', '.join(MATRIX_FORMATS)}) or a "
                         f"block-scaled format ({', '.join(BLOCK_FORMATS)}), not {fmt!r}")
    mx = fmt in BLOCK_FORMATS and get_block_format(fmt).scale == "e8m0"
    if scale_rule not in SCALE_RULES or (scale_rule != "ocp" and not mx):
        raise ValueError(f"scale_rule must be one of {', '.join(SCALE_RULES)} (ceil: MX formats "
                         f"only), not {scale_rule!r} for {fmt}")
    t = np.asarray(t, dtype=np.float32)
    if fmt in BLOCK_FORMATS and (t.ndim != 2 or axis not in (0, 1)):
        raise ValueError(f"a block-scaled format takes a 2-D matrix and axis 0 or 1 (its K axis), not "
                         f"shape {t.shape}, axis {axis!r}")
    if not np.all(np.isfinite(t)):
        raise ValueError("cannot quantize a tensor holding NaN or Inf; check the producer of the tensor")
    if fmt in BLOCK_FORMATS:
        return _quantize_blocks(t, fmt, axis, scale_rule)
    f = get_format(fmt)
    amax = float(np.abs(t).max()) if t.size else 0.0
    scale = np.float32(amax / f.max_finite) if amax > 0 else np.float32(1.0)
    codes = f.encode((t / scale).astype(np.float32)).astype(np.uint8)
    return Quantized(fmt, codes, float(scale))


def _quantize_blocks(t: np.ndarray, fmt: str, axis: int, scale_rule: str) -> Quantized:
    bf = get_block_format(fmt)
    blk, k = _blocks(t, axis, bf.block)
    amax = np.abs(blk).max(axis=-1)
    ef = bf.element_format
    if bf.scale == "e8m0":
        tiny = amax == 0
        if scale_rule == "ocp":
            x = np.floor(np.log2(np.where(tiny, 1.0, amax))) - ef.emax
        else:
            x = np.ceil(np.log2(np.where(tiny, 1.0, amax) / ef.max_finite))
        x = np.clip(np.where(tiny, -127, x), -127, 127).astype(np.int64)
        codes = _encode_sat(bf.element, np.ldexp(blk, -x[..., None]))
        scales, ts = (x + 127).astype(np.uint8), 1.0
    else:
        tmax = float(amax.max()) if amax.size else 0.0
        ts = float(np.float32(tmax / (ef.max_finite * NVFP4_SCALE_MAX))) if tmax > 0 else 1.0
        want = np.minimum(amax / ef.max_finite / ts, NVFP4_SCALE_MAX).astype(np.float32)
        scales = get_format("fp8_e4m3").encode(want).astype(np.uint8)
        sb = bf.scale_decode(scales) * ts
        safe = np.where(sb > 0, sb, 1.0)
        codes = np.where(sb[..., None] > 0, _encode_sat(bf.element, blk / safe[..., None]), 0)
    codes = codes.reshape(codes.shape[:-2] + (-1,)).astype(np.uint8)
    return Quantized(fmt, np.moveaxis(codes, -1, axis), ts, np.moveaxis(scales, -1, axis), axis, k)


def dequantize(q: Quantized) -> np.ndarray:
    """Float64 values represented by ``q`` (padding removed): codes decoded, times the block scales
    (block-scaled formats) and the per-tensor scale."""
    if q.scales is None:
        return get_format(q.fmt).decode(q.codes) * q.scale
    bf = get_block_format(q.fmt)
    s = np.repeat(bf.scale_decode(q.scales), bf.block, axis=q.axis)
    v = bf.element_format.decode(q.codes) * s * q.scale
    return np.take(v, np.arange(q.k), axis=q.axis)
