"""hw/formats.py against ml_dtypes: every code decoded, float32 encoding around every boundary."""

import ml_dtypes
import numpy as np
import pytest

from hw.formats import CLASSES, FORMATS, MATRIX_FORMATS, FloatFormat, Overflow, Specials, get_format

pytestmark = pytest.mark.quick

SMALL = [f for f in FORMATS.values() if f.bits <= 16]


def _same(x, y):
    """Bit-for-bit equal float arrays, all NaNs equal."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return (np.isnan(x) & np.isnan(y)) | ((x == y) & (np.signbit(x) == np.signbit(y)))


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_decode_every_code(fmt):
    codes = np.arange(1 << fmt.bits)
    with np.errstate(invalid="ignore"):
        want = fmt.to_ml(codes).astype(np.float64)
    got = fmt.decode(codes)
    bad = np.flatnonzero(~_same(got, want))
    assert bad.size == 0, f"{fmt.name}: code {codes[bad[0]]:#x} decodes to {got[bad[0]]}, " \
                          f"ml_dtypes says {want[bad[0]]}"
    cls = fmt.classify(codes)
    assert np.array_equal(cls == CLASSES.index("nan"), np.isnan(want))
    assert np.array_equal(cls == CLASSES.index("inf"), np.isinf(want))
    assert np.array_equal(cls == CLASSES.index("zero"), want == 0)
    assert fmt.max_finite == float(ml_dtypes.finfo(fmt.ml_dtype).max)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_encode_every_code_roundtrip(fmt):
    codes = np.arange(1 << fmt.bits)
    vals = fmt.decode(codes)
    ok = ~np.isnan(vals)
    with np.errstate(over="ignore"):
        enc = fmt.encode(vals[ok].astype(np.float32))
    want = fmt.to_ml(codes[ok]).view(np.uint16 if fmt.bits == 16 else np.uint8).astype(np.int64)
    want = want & ((1 << fmt.bits) - 1)  # ml_dtypes stores sub-byte formats in a byte
    assert np.array_equal(enc, want)


def _boundary_floats(fmt, rng):
    """float32 values around every rounding boundary of ``fmt``, in every float32 binade."""
    exps = np.arange(0, 255)  # every float32 exponent field except Inf/NaN
    man = fmt.man_bits
    shift = 23 - man  # float32 mantissa bits below the target's LSB
    tails = {0, 1, 2, (1 << shift) - 1}
    for base in (1 << (shift - 1),):  # the halfway point
        tails |= {base - 2, base - 1, base, base + 1, base + 2}
    tails = np.array(sorted(t for t in tails if 0 <= t < (1 << shift)), dtype=np.int64)
    kept = np.unique(np.r_[0, 1, 2, (1 << man) - 2, (1 << man) - 1, rng.integers(0, 1 << man, 4)])
    kept = kept[(kept >= 0) & (kept < (1 << man))]
    e, k, t = np.meshgrid(exps, kept, tails, indexing="ij")
    bits = (e << 23) | (k << shift) | t
    bits = np.r_[bits.ravel(), rng.integers(0, 0x7F800000, 100_000)]
    bits = np.r_[bits, bits | (1 << 31)]
    return bits.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("fmt", SMALL, ids=lambda f: f.name)
def test_encode_matches_ml_dtypes(fmt):
    rng = np.random.default_rng(3)
    x = _boundary_floats(fmt, rng)
    x = np.r_[x, np.float32([np.inf, -np.inf, 0.0, -0.0])]
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(fmt.ml_dtype).astype(np.float64)
        got = fmt.decode(fmt.encode(x))
    bad = np.flatnonzero(~_same(got, want))
    assert bad.size == 0, f"{fmt.name}: encode({x[bad[0]]!r}) = {got[bad[0]]}, ml_dtypes {want[bad[0]]}"


NO_NAN = [f for f in FORMATS.values() if not f.has_nan]


@pytest.mark.parametrize("fmt", NO_NAN, ids=lambda f: f.name)
def test_encode_nan_without_nan_code_is_an_error(fmt):
    with pytest.raises(ValueError, match="no NaN"):
        fmt.encode(np.float32([1.0, np.nan]))


@pytest.mark.parametrize("fmt", [f for f in FORMATS.values() if f.has_nan], ids=lambda f: f.name)
def test_encode_nan_where_allowed(fmt):
    assert fmt.classify(fmt.encode(np.float32([np.nan])))[0] == CLASSES.index("nan")


def test_saturating_formats_saturate_like_ml_dtypes():
    """Formats without Inf/NaN (E2M1, E3M2, E2M3) give +-max for huge values and +-Inf, as the
    ml_dtypes conversion (and OCP MX) does; the table's rule says so."""
    assert NO_NAN and all(f.overflow is Overflow.SATURATE for f in NO_NAN)
    x = np.float32([1e30, -1e30, np.inf, -np.inf])
    for f in NO_NAN:
        with np.errstate(over="ignore"):
            want = x.astype(f.ml_dtype).astype(np.float64)
        assert want.tolist() == [f.max_finite, -f.max_finite] * 2
        assert f.decode(f.encode(x)).tolist() == want.tolist()


def test_matrix_formats_come_from_the_table():
    assert MATRIX_FORMATS == tuple(n for n, f in FORMATS.items() if f.matrix)
    assert {"fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "fp6_e3m2", "fp6_e2m3"} == set(MATRIX_FORMATS)
    e3m2, e2m3 = get_format("fp6_e3m2"), get_format("fp6_e2m3")   # OCP MX v1.0 table
    assert (e3m2.bias, e3m2.max_finite, e3m2.decode(np.array([1]))[0]) == (3, 28.0, 0.0625)
    assert (e2m3.bias, e2m3.max_finite, e2m3.decode(np.array([1]))[0]) == (1, 7.5, 0.125)


def test_bad_rules_are_rejected():
    with pytest.raises(TypeError, match="Specials"):
        FloatFormat("x", 2, 1, 1, True, "none", Overflow.SATURATE, None)
    with pytest.raises(ValueError, match="overflow INF needs"):
        FloatFormat("x", 2, 1, 1, True, Specials.NONE, Overflow.INF, None)


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match="known formats: fp8_e4m3"):
        get_format("fp7")
