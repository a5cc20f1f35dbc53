"""Block-scaled quantization: OCP MX v1.0 conversion and NVFP4's two-level scaling.

Blocks of B consecutive elements along the reduction axis (K) share one 8-bit scale code
(:data:`hw.formats.BLOCK_FORMATS`). K is zero-padded to a multiple of B.

* **OCP MX** (``mxfp8_e4m3`` .. ``mxfp4_e2m1``): per block, ``X = floor(log2(amax)) - emax_elem``
  clipped to the E8M0 range [-127, 127] (an all-zero block takes X = -127), scale code ``X + 127``;
  each element is ``v / 2^X`` rounded to nearest even in the element format, saturating at its
  largest finite value (also for E4M3 and E5M2, whose plain encode would give NaN or Inf).
* **NVFP4**: a per-tensor FP32 scale ``s_t = amax(tensor) / (6 * 448)`` (1 for an all-zero tensor),
  per block a UE4M3 scale ``s_b = RNE_e4m3(amax(block) / 6 / s_t)`` (at most 448), elements
  ``RNE_e2m1(v / (s_b * s_t))`` with saturation (zero where ``s_b`` is zero). ``s_t`` is applied
  outside the matrix unit (``docs/mu_interface.md``).

``tb/tiles/test_quant_block.py`` checks the MX conversion code for code against ``gfloat``'s
implementation of the OCP spec and NVFP4 against hand-worked cases.
"""

from dataclasses import dataclass

import numpy as np

from hw.formats import get_block_format, get_format

__all__ = ["BlockQuantized", "quantize_block", "dequantize_block", "NVFP4_SCALE_MAX", "SCALE_RULES"]

#: Largest UE4M3 block scale (the E4M3 largest finite).
NVFP4_SCALE_MAX = 448.0


@dataclass(frozen=True)
class BlockQuantized:
    """A block-quantized matrix.

    Attributes
    ----------
    fmt : str
        Block-scaled format name.
    codes : ndarray of uint8
        Element codes, K padded to ``Kp`` (a multiple of B) along ``axis``.
    scales : ndarray of uint8
        Scale codes, ``Kp / B`` along ``axis``.
    tensor_scale : float
        Per-tensor FP32 scale (NVFP4), 1.0 for MX.
    axis : int
        The K axis (1 for activations (M, K), 0 for weights (K, N)).
    k : int
        K before padding.
    """

    fmt: str
    codes: np.ndarray
    scales: np.ndarray
    tensor_scale: float
    axis: int
    k: int


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


def quantize_block(t: np.ndarray, fmt: str, axis: int, scale_rule: str = "ocp") -> BlockQuantized:
    """Quantize a 2-D float32 matrix to a block-scaled format, blocks along ``axis``.

    ``scale_rule`` (MX formats only, :data:`SCALE_RULES`): ``ocp`` takes
    ``X = floor(log2 amax) - emax_elem``, which maps amax into ``[2^emax, 2^(emax+1))`` and
    saturates the values above the element's largest finite (E2M1: up to 6 * 4/3); ``ceil`` takes
    ``X = ceil(log2(amax / max_elem))``, one binade more where that happens, and never saturates.

    Raises
    ------
    ValueError
        Unknown format or rule, a tensor that is not 2-D, or NaN / Inf in the tensor (no scale can
        be chosen; fix the producer of the tensor).
    """
    bf = get_block_format(fmt)
    if scale_rule not in SCALE_RULES or (scale_rule != "ocp" and bf.scale != "e8m0"):
        raise ValueError(f"scale_rule must be one of {', '.join(SCALE_RULES)} (ceil: MX formats "
                         f"only), not {scale_rule!r} for {fmt}")
    t = np.asarray(t, dtype=np.float32)
    if t.ndim != 2 or axis not in (0, 1):
        raise ValueError(f"quantize_block takes a 2-D matrix and axis 0 or 1, not shape {t.shape}, "
                         f"axis {axis!r}")
    if not np.all(np.isfinite(t)):
        raise ValueError("cannot quantize a tensor holding NaN or Inf; check the producer of the tensor")
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
    return BlockQuantized(fmt, np.moveaxis(codes, -1, axis), np.moveaxis(scales, -1, axis), ts, axis, k)


def dequantize_block(q: BlockQuantized) -> np.ndarray:
    """Float64 values of ``q`` (padding removed): element x block scale x tensor scale."""
    bf = get_block_format(q.fmt)
    s = np.repeat(bf.scale_decode(q.scales), bf.block, axis=q.axis)
    v = bf.element_format.decode(q.codes) * s * q.tensor_scale
    return np.take(v, np.arange(q.k), axis=q.axis)
