"""The integer BF16 multiply model against ml_dtypes and a float64 single-rounding oracle."""

import ml_dtypes
import numpy as np
import pytest

from tb.fp.bf16_ref import NAN, bf16_mul_ref, double_rounding_mask, is_nan, ml_dtypes_mul
from tb.fp.bf16_vectors import boundary_vectors, random_vectors, special_pairs

pytestmark = pytest.mark.quick


def _f64_oracle(a, b, subnormals):
    """Round the exact float64 product once to bfloat16 (independent of the integer model)."""
    with np.errstate(all="ignore"):
        if not subnormals:
            a = np.where((a & 0x7F80) == 0, a & 0x8000, a)
            b = np.where((b & 0x7F80) == 0, b & 0x8000, b)
        fa = a.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        fb = b.astype(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
        x = fa * fb  # exact
        mag = np.abs(x)
        e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
        e = np.where(np.ldexp(1.0, e.astype(np.int64)) > mag, e - 1, e)  # log2 rounding guard
        quantum = np.ldexp(1.0, (np.maximum(e, -126) - 7).astype(np.int64))
        r = np.round(x / quantum) * quantum  # np.round: ties to even; /quantum is exact
        r = np.where(np.isfinite(x), r, x)  # Inf and NaN pass through
        if not subnormals:
            r = np.where(mag < 2.0 ** -126, 0.0 * x, r)
        codes = r.astype(np.float32).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.int64)
    return np.where(is_nan(codes), NAN, codes)


def _all_vectors():
    parts = [boundary_vectors(), random_vectors(200_000, seed=7), special_pairs()]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


@pytest.mark.parametrize("subnormals", [True, False], ids=["subnormals", "ftz"])
def test_ref_matches_ml_dtypes(subnormals):
    a, b = _all_vectors()
    ref = bf16_mul_ref(a, b, subnormals)
    ml = ml_dtypes_mul(a, b, subnormals)
    dr = double_rounding_mask(a, b)
    assert dr.sum() > 100_000, "the vectors must reach the float32 subnormal range"
    single = ~dr
    bad = np.flatnonzero(single & (ref != ml))
    assert bad.size == 0, f"single-rounding products differ, e.g. {a[bad[0]]:#06x} * {b[bad[0]]:#06x}"
    # where ml_dtypes rounds twice, the 16-bit products still give the same codes (see bf16_ref)
    bad = np.flatnonzero(dr & (ref != ml))
    assert bad.size == 0, f"double-rounded products differ, e.g. {a[bad[0]]:#06x} * {b[bad[0]]:#06x}"
    bad = np.flatnonzero(ref != _f64_oracle(a, b, subnormals))
    assert bad.size == 0, f"float64 oracle differs, e.g. {a[bad[0]]:#06x} * {b[bad[0]]:#06x}"


@pytest.mark.parametrize("a, b, sub, want", [
    (0x7F80, 0x0000, True, NAN),        # Inf x 0
    (0x8000, 0x7F80, True, NAN),        # -0 x Inf
    (0xFF81, 0x3F80, True, NAN),        # -NaN -> canonical NaN
    (0x8000, 0x3F80, True, 0x8000),     # -0 x 1 = -0
    (0x8000, 0x8000, True, 0x0000),     # -0 x -0 = +0
    (0x7F7F, 0x4000, True, 0x7F80),     # max x 2 -> +Inf
    (0xFF7F, 0x3FC0, True, 0xFF80),     # -max x 1.5 -> -Inf
    (0x0001, 0x3F00, True, 0x0000),     # min subnormal / 2: tie, rounds to even (0)
    (0x0001, 0x3F40, True, 0x0001),     # min subnormal * 0.75 rounds up
    (0x0003, 0x3F00, True, 0x0002),     # 3 * 2^-133 / 2 = 1.5 ulp: tie -> even (2)
    (0x0080, 0x3F00, True, 0x0040),     # min normal / 2 -> subnormal
    (0x0080, 0x3F00, False, 0x0000),    # ... flushed
    (0x0040, 0x4000, True, 0x0080),     # subnormal * 2 -> min normal
    (0x0040, 0x4000, False, 0x0000),    # subnormal input flushed
    (0x807F, 0x4000, False, 0x8000),    # -subnormal flushed keeps its sign
    (0x0080, 0x3F7F, False, 0x0000),    # exact product just below 2^-126 flushed before rounding
    (0x0080, 0x3F7F, True, 0x0080),     # ... but rounds up to the min normal with subnormals
    (0x3F81, 0x3F81, True, 0x3F82),     # (1+2^-7)^2 = 1 + 2^-6 + 2^-14 -> 1 + 2^-6
    (0x3FC0, 0x3FC0, True, 0x4010),     # 1.5 * 1.5 = 2.25
])
def test_ref_hand_cases(a, b, sub, want):
    got = int(bf16_mul_ref(np.array([a]), np.array([b]), sub)[0])
    assert got == want, f"{a:#06x} * {b:#06x} (subnormals={sub}) = {got:#06x}, want {want:#06x}"
