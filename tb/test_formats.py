"""hw/formats.py against ml_dtypes: every code decoded, float32 encoding around every boundary."""

import ml_dtypes
import numpy as np
import pytest

from hw.formats import CLASSES, FORMATS, MATRIX_FORMATS, FloatFormat, Overflow, Specials, get_format

pytestmark = pytest.mark.quick

SMALL = [f for f in FORMATS.values() if f.bits <= 16 and not f.is_integer]
INTS = [f for f in FORMATS.values() if f.is_integer]


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


NO_NAN = [f for f in FORMATS.values() if not f.has_nan and not f.is_integer]


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


#: Values from the OCP 8-bit FP v1.0 and OCP MX v1.0 tables (bias, largest finite, smallest
#: subnormal), for the rows of those names; the table may hold more rows.
SPEC = {"fp8_e4m3": (7, 448.0, 2.0 ** -9), "fp8_e5m2": (15, 57344.0, 2.0 ** -16),
        "fp4_e2m1": (1, 6.0, 0.5), "fp6_e3m2": (3, 28.0, 0.0625), "fp6_e2m3": (1, 7.5, 0.125)}


def test_matrix_formats_come_from_the_table():
    """``MATRIX_FORMATS`` and the design registry's ``fmt`` choices are the table's ``matrix`` rows,
    and every such row has the field widths, bias, range and subnormals of its ``ml_dtypes`` type."""
    from hw.designs import get_design

    assert MATRIX_FORMATS == tuple(n for n, f in FORMATS.items() if f.matrix)
    fmt_option = next(o for o in get_design("mu").options if o.name == "fmt")
    assert set(MATRIX_FORMATS) <= set(fmt_option.choices)
    for name in MATRIX_FORMATS:
        if get_format(name).is_integer:
            continue  # test_integer_rows
        f, fi = get_format(name), ml_dtypes.finfo(FORMATS[name].ml_dtype)
        assert (f.bits, f.exp_bits, f.man_bits) == (fi.bits, fi.nexp, fi.nmant), name
        assert f.decode(np.array([1 << f.man_bits]))[0] == float(fi.smallest_normal) == 2.0 ** (1 - f.bias)
        assert f.decode(np.array([1]))[0] == float(fi.smallest_subnormal), name
        assert f.max_finite == float(fi.max), name
    for name in set(SPEC) & set(MATRIX_FORMATS):
        f = get_format(name)
        assert (f.bias, f.max_finite, f.decode(np.array([1]))[0]) == SPEC[name], name


@pytest.mark.parametrize("fmt", INTS, ids=lambda f: f.name)
def test_integer_rows(fmt):
    """An integer row against numpy / ``ml_dtypes``: every code read as two's complement, the range
    of ``iinfo``, no special classes, and encoding as Python's round-half-even with saturation."""
    codes = np.arange(1 << fmt.bits)
    want = codes.astype(np.uint8).view(fmt.ml_dtype).astype(np.int64)  # sign-extends INT4's nibble
    assert np.array_equal(fmt.integers(codes), want)
    assert np.array_equal(fmt.decode(codes), want.astype(np.float64))
    ii = ml_dtypes.iinfo(fmt.ml_dtype)
    assert (fmt.bits, fmt.max_finite, fmt.min_int, fmt.lsb) == (ii.bits, ii.max, ii.min, 0)
    assert np.array_equal(fmt.classify(codes), np.where(want == 0, CLASSES.index("zero"),
                                                        CLASSES.index("normal")))
    rng = np.random.default_rng(5)
    x = np.r_[np.arange(-2 * ii.max - 3, 2 * ii.max + 4) / 2.0, rng.normal(0, ii.max, 2000),
              [1e30, -1e30, np.inf, -np.inf, -0.0, 0.5000001, -0.4999999]].astype(np.float32)
    ref = [max(ii.min, min(ii.max, round(float(v)))) if np.isfinite(v) else (ii.max if v > 0 else ii.min)
           for v in x]
    assert fmt.integers(fmt.encode(x)).tolist() == ref
    with pytest.raises(ValueError, match="no NaN"):
        fmt.encode(np.float32([np.nan]))


def test_bad_rules_are_rejected():
    with pytest.raises(TypeError, match="Specials"):
        FloatFormat("x", 2, 1, 1, True, "none", Overflow.SATURATE, None)
    with pytest.raises(ValueError, match="overflow INF needs"):
        FloatFormat("x", 2, 1, 1, True, Specials.NONE, Overflow.INF, None)


def test_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError, match="known formats: fp8_e4m3"):
        get_format("fp7")


#: A row the extending guide (docs/extending.md) would add: OCP-style E3M4 with IEEE specials.
NEW_ROW = ('        FloatFormat("fp8_e3m4", 3, 4, {bias}, True, _S.IEEE, _O.INF, ml_dtypes.float8_e3m4, '
           'matrix=True),\n')
#: Loads a patched copy of hw/formats.py as ``hw.formats``, then runs this file's other tests on it.
RUNNER = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("hw.formats", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
sys.modules["hw.formats"] = mod
spec.loader.exec_module(mod)
import hw
hw.formats = mod
import pytest
sys.exit(pytest.main(sys.argv[2:]))
"""


def _with_new_row(tmp_path, bias, *pytest_args):
    """This file's tests run on hw/formats.py with :data:`NEW_ROW` added after the last matrix row."""
    import subprocess
    import sys
    from pathlib import Path

    import hw.formats

    text = Path(hw.formats.__file__).read_text()
    anchor = text.index("matrix=True),\n", text.index('FloatFormat("fp6_e2m3"')) + len("matrix=True),\n")
    patched = tmp_path / "formats.py"
    patched.write_text(text[:anchor] + NEW_ROW.format(bias=bias) + text[anchor:])
    root = Path(__file__).resolve().parent.parent
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(patched), "-q", "-rA", "--noconftest", "-p", "no:xdist",
         "-p", "no:cacheprovider", "tb/test_formats.py", "--deselect",
         "tb/test_formats.py::test_a_new_format_row_needs_no_test_edit", *pytest_args],
        cwd=root, capture_output=True, text=True, timeout=120)


def test_a_new_format_row_needs_no_test_edit(tmp_path):
    """A new matrix row, added as docs/extending.md says, is checked by this file without an edit;
    the same row with a wrong bias fails it."""
    good = _with_new_row(tmp_path, 3)
    assert good.returncode == 0, good.stdout[-3000:]
    for test in ("test_decode_every_code", "test_encode_matches_ml_dtypes"):
        assert f"PASSED tb/test_formats.py::{test}[fp8_e3m4]" in good.stdout
    assert "PASSED tb/test_formats.py::test_matrix_formats_come_from_the_table" in good.stdout
    bad = _with_new_row(tmp_path, 4, "-k", "fp8_e3m4 or come_from_the_table")
    assert bad.returncode == 1, bad.stdout[-3000:]
    assert "FAILED tb/test_formats.py::test_matrix_formats_come_from_the_table" in bad.stdout
