"""Per-tensor quantization as deployments do it: one float32 scale per tensor, codes from hw/formats.

A tensor ``t`` becomes ``codes = encode(t / s)`` with ``s = amax(|t|) / max_finite(fmt)``, so its
largest magnitude lands on the format's largest finite value (no overflow; the formats without Inf
saturate anyway). Every matrix element format (:data:`hw.formats.MATRIX_FORMATS`) is accepted.
The matrix unit sees codes only; the product of the two scales is applied to its FP32 results outside
the unit: ``y ~= s_x * s_w * unit(codes_x, codes_w)``. Block scaling (OCP MX, NVFP4) is
:mod:`tb.tiles.quant_block`.
"""

from dataclasses import dataclass

import numpy as np

from hw.formats import MATRIX_FORMATS, get_format

__all__ = ["Quantized", "quantize", "dequantize"]


@dataclass(frozen=True)
class Quantized:
    """Codes (uint8, one code per element, formats narrower than 8 bits in the low bits) and the
    per-tensor scale."""

    fmt: str
    codes: np.ndarray
    scale: float


def quantize(t: np.ndarray, fmt: str) -> Quantized:
    """Quantize ``t`` (float32) to ``fmt`` codes with a per-tensor amax scale.

    Raises
    ------
    ValueError
        If ``fmt`` is not a matrix element format, or ``t`` holds NaN or Inf (a scale cannot be
        chosen; fix the producer of the tensor).
    """
    if fmt not in MATRIX_FORMATS:
        raise ValueError(f"fmt must be a matrix element format ({', '.join(MATRIX_FORMATS)}), "
                         f"not {fmt!r}")
    f = get_format(fmt)
    t = np.asarray(t, dtype=np.float32)
    if not np.all(np.isfinite(t)):
        raise ValueError("cannot quantize a tensor holding NaN or Inf; check the producer of the tensor")
    amax = float(np.abs(t).max()) if t.size else 0.0
    scale = np.float32(amax / f.max_finite) if amax > 0 else np.float32(1.0)
    codes = f.encode((t / scale).astype(np.float32)).astype(np.uint8)
    return Quantized(fmt, codes, float(scale))


def dequantize(q: Quantized) -> np.ndarray:
    """Float64 values represented by ``q`` (codes decoded, times the scale)."""
    return get_format(q.fmt).decode(q.codes) * q.scale
