"""Unit tests of the bit-true numerics model (tb/mu/model.py) against independent oracles.

Oracles: Python ``fractions.Fraction`` with a nearest-neighbour search over numpy float32 (ties to
even decided on exact rationals), and numpy's float64 -> float32 cast where the value is exact in
float64. Nothing here compares the model with itself.

The block-scaled formats' tests are in ``tb/mu/test_model_block.py``.
"""

from fractions import Fraction

import numpy as np
import pytest

from hw.formats import CLASSES, MATRIX_FORMATS, get_format
from tb.mu.model import ElementCodec, MatrixUnitModel, error_metrics, exact_dot
from tb.mu.rounding import (
    FP32_NAN,
    FP32_NINF,
    FP32_PINF,
    accumulate,
    fp32_exact,
    round_fp32,
)

pytestmark = pytest.mark.quick

F32_MAX = Fraction(2) ** 128 - Fraction(2) ** 104
OVERFLOW_EDGE = Fraction(2) ** 128 - Fraction(2) ** 103     # midpoint max -> 2^128: rounds to Inf


def f32_bits(v: np.float32) -> int:
    return int(np.array([v], dtype=np.float32).view(np.uint32)[0])


def rne_oracle(q: Fraction) -> int:
    """FP32 bits of rational ``q`` rounded to nearest even, by exact comparison with neighbours."""
    if q == 0:
        return 0
    if abs(q) >= OVERFLOW_EDGE:
        return FP32_PINF if q > 0 else FP32_NINF
    guess = np.float32(float(q)) if abs(q) < F32_MAX else np.float32(np.sign(float(q)) * 3.4028235e38)
    with np.errstate(over="ignore"):
        cands = {guess, np.nextafter(guess, np.float32(np.inf)), np.nextafter(guess, np.float32(-np.inf))}
    cands = [c for c in cands if np.isfinite(c)]
    best = min(abs(Fraction(float(c)) - q) for c in cands)
    tied = [c for c in cands if abs(Fraction(float(c)) - q) == best]
    if len(tied) > 1:
        tied = [c for c in tied if f32_bits(c) & 1 == 0]
    bits = f32_bits(tied[0])
    return bits | (0x80000000 if q < 0 else 0)        # an underflow to zero keeps its sign


def exact_value(codec: ElementCodec, code: int):
    v = codec.value(np.array([code]))[0]
    return v if not np.isfinite(v) else Fraction(float(v))


# --- round_fp32 --------------------------------------------------------------------------------
def test_round_matches_numpy_where_float64_is_exact():
    rng = np.random.default_rng(1)
    n = rng.integers(-(1 << 53) + 1, 1 << 53, size=20000, dtype=np.int64)
    n[:2000] = rng.integers(-(1 << 30), 1 << 30, size=2000)      # short significands
    n[2000:4000] = (rng.integers(1, 1 << 24, 2000) << 29) | (1 << 28)   # exact ties
    e = rng.integers(-200, 100, size=n.size)
    for ni, ei in zip(n.tolist(), e.tolist(), strict=True):
        v = np.ldexp(float(ni), ei)
        assert float(v) == Fraction(ni) * Fraction(2) ** ei or v == 0
        with np.errstate(over="ignore"):
            want = f32_bits(np.float32(v))
        if ni == 0:
            want = 0
        assert round_fp32(ni, ei) == want, (ni, ei)


@pytest.mark.parametrize("seed", range(3))
def test_round_matches_fraction_oracle(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(3000):
        bits = int(rng.integers(1, 200))
        n = int(rng.integers(1, 1 << 62)) << max(0, bits - 62) | int(rng.integers(0, 1 << 62))
        n &= (1 << bits) - 1
        n = n or 1
        e = int(rng.integers(-300, 130 - bits + 20))
        cases.append((n if rng.random() < 0.5 else -n, e))
    # adversarial: ties at every guard position, carries into the next binade, overflow edge,
    # subnormal range and the subnormal/normal boundary
    for s in (1, 5, 30, 100):
        cases += [(((1 << 24) - 1) << s | (1 << (s - 1)), -s - 10),      # tie, odd -> up (carry)
                  ((1 << 24) << s | (1 << (s - 1)), -s),                  # tie, even -> down
                  ((((1 << 23) + 1) << s) | (1 << (s - 1)) | 1, -s)]      # above tie -> up
    cases += [((1 << 24) - 1, 104), ((1 << 25) - 1, 103), ((1 << 24) + 1, 103), (1, 128), (1, 127),
              (1, -149), (1, -150), (3, -151), (1, -151), ((1 << 23) - 1, -149),
              ((1 << 24) - 1, -150), (1, -126), (-(1 << 24) + 1, 104)]
    for n, e in cases:
        assert round_fp32(n, e) == rne_oracle(Fraction(n) * Fraction(2) ** e), (n, e)


def test_fp32_exact_roundtrip():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 1 << 32, size=5000).tolist() + [0, 1, 0x7F7FFFFF, 0x00800000, 0x807FFFFF]
    for b in bits:
        cls, n, e = fp32_exact(b)
        if (b >> 23) & 0xFF == 0xFF:
            assert cls != 0
            continue
        v = np.array([b], dtype=np.uint32).view(np.float32)[0]
        assert Fraction(n) * Fraction(2) ** e == Fraction(float(v))
        if b != 0x80000000:
            assert round_fp32(n, e) == b


# --- exact dot products ------------------------------------------------------------------------
def fraction_dot(codec, x, w):
    """Per-column exact sum by Fractions, with the contract's special rules (None = NaN)."""
    out = []
    for j in range(w.shape[1]):
        s, infs, nan = Fraction(0), set(), False
        for k in range(w.shape[0]):
            a, b = exact_value(codec, x[k]), exact_value(codec, w[k, j])
            if isinstance(a, float) or isinstance(b, float):      # NaN or Inf operand
                fa = float(a) if isinstance(a, float) else float(a)
                fb = float(b) if isinstance(b, float) else float(b)
                p = fa * fb
                if np.isnan(p):
                    nan = True
                else:
                    infs.add(np.sign(p))
            else:
                s += a * b
        if nan or len(infs) == 2:
            out.append(("nan", None))
        elif infs:
            out.append(("inf", infs.pop()))
        else:
            out.append(("fin", s))
    return out


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
@pytest.mark.parametrize("width", [8, 16])
def test_exact_dot_matches_fractions(fmt, width):
    codec = ElementCodec(fmt)
    rng = np.random.default_rng(width)
    n = 1 << codec.fmt.bits
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    x = rng.choice(finite, size=(30, width))
    w = rng.choice(finite, size=(width, width))
    x[:3] = rng.integers(0, n, size=(3, width))          # specials in a few beats
    w[0, :3] = rng.integers(0, n, size=3)
    # max magnitudes everywhere in one beat (the widest exact sum)
    x[5] = codec.fmt.max_code
    num, cls = exact_dot(codec, x, w)
    for i in range(x.shape[0]):
        want = fraction_dot(codec, x[i], w)
        for j, (kind, v) in enumerate(want):
            if kind == "nan":
                assert cls[i, j] == 3
            elif kind == "inf":
                assert cls[i, j] == (1 if v > 0 else 2)
            else:
                assert cls[i, j] == 0
                assert Fraction(int(num[i, j])) * Fraction(2) ** (2 * codec.lsb) == v


def test_e5m2_extreme_dot_is_exact():
    """The largest and smallest E5M2 products in one sum (needs ~2^-32..2^38: beyond float64)."""
    codec = ElementCodec("fp8_e5m2")
    d = 128
    x = np.zeros((1, d), dtype=np.int64)
    w = np.zeros((d, d), dtype=np.int64)
    x[0, :] = 0x7B                                  # 57344
    x[0, 0] = 0x01                                  # 2^-16
    w[:, :] = 0x7B
    w[0, :] = 0x01
    num, cls = exact_dot(codec, x, w)
    want = Fraction(2) ** -32 + 127 * Fraction(57344) ** 2
    assert Fraction(int(num[0, 0])) * Fraction(2) ** (2 * codec.lsb) == want
    assert (cls == 0).all()


# --- accumulate --------------------------------------------------------------------------------
def test_accumulate_matches_fraction_oracle():
    rng = np.random.default_rng(7)
    e = 2 * ElementCodec("fp8_e5m2").lsb
    for _ in range(4000):
        acc = int(rng.integers(0, 1 << 32))
        if (acc >> 23) & 0xFF == 0xFF:
            continue
        num = int(rng.integers(-(1 << 62), 1 << 62)) >> int(rng.integers(0, 62))
        cls, an, ae = fp32_exact(acc)
        want = rne_oracle(Fraction(an) * Fraction(2) ** ae + Fraction(num) * Fraction(2) ** e)
        assert accumulate(acc, num, 0, e) == want, (hex(acc), num)
    # cancellation to exact zero gives +0, from either sign
    assert accumulate(round_fp32(-5, 0), 5 << 64, 0, -64) == 0
    assert accumulate(round_fp32(5, 0), -5, 0, 0) == 0


def test_accumulate_specials():
    one = round_fp32(1, 0)
    assert accumulate(None, 0, 1, 0) == FP32_PINF
    assert accumulate(None, 0, 2, 0) == FP32_NINF
    assert accumulate(None, 0, 3, 0) == FP32_NAN
    assert accumulate(FP32_PINF, 7, 0, 0) == FP32_PINF
    assert accumulate(FP32_NINF, 7, 0, 0) == FP32_NINF
    assert accumulate(FP32_PINF, 0, 2, 0) == FP32_NAN          # Inf - Inf
    assert accumulate(FP32_NINF, 0, 2, 0) == FP32_NINF
    assert accumulate(one, 0, 3, 0) == FP32_NAN
    assert accumulate(FP32_NAN, 1, 0, 0) == FP32_NAN
    assert accumulate(0x7FFFFFFF, 1, 0, 0) == FP32_NAN          # any NaN in -> canonical out
    big = round_fp32((1 << 24) - 1, 104)                          # FP32 max
    assert accumulate(big, 1, 0, 103) == FP32_PINF                # overflow by rounding
    assert accumulate(big, 1, 0, 102) == big


def test_product_specials():
    e5 = ElementCodec("fp8_e5m2")
    x = np.zeros((1, 8), dtype=np.int64)
    w = np.zeros((8, 8), dtype=np.int64)
    one, neg_one, pinf, ninf, nan = 0x3C, 0xBC, 0x7C, 0xFC, 0x7E
    x[0, 0] = pinf
    w[0, :] = [one, neg_one, 0, nan, pinf, ninf, one, one]
    w[1, 6] = ninf
    x[0, 1] = one                       # column 6: +Inf * 1 + 1 * -Inf -> NaN
    w[1, 7] = one
    _, cls = exact_dot(e5, x, w)
    assert cls[0].tolist() == [1, 2, 3, 3, 1, 2, 3, 1]
    e4 = ElementCodec("fp8_e4m3")
    x = np.zeros((1, 8), dtype=np.int64)
    w = np.full((8, 8), 0x38, dtype=np.int64)                     # 1.0
    w[3, 2] = 0xFF                                                  # -NaN
    x[0, 3] = 0                                                     # NaN * 0 is NaN too
    _, cls = exact_dot(e4, x, w)
    assert cls[0].tolist() == [0, 0, 3, 0, 0, 0, 0, 0]


# --- the whole model ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_model_sequence_matches_fractions(fmt):
    """Rows, first/last and one rounding per beat, against a Fraction re-computation."""
    d, rows, n = 8, 3, 60
    codec = ElementCodec(fmt)
    rng = np.random.default_rng(11)
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    m = MatrixUnitModel(d, fmt, rows)
    tiles = [rng.choice(finite, size=(d, d)) for _ in range(3)]
    acc = {}
    for t, w in enumerate(tiles):
        x = rng.choice(finite, size=(n, d))
        row = rng.integers(0, rows, n)
        first = rng.random(n) < 0.2
        first[:rows] = True
        row[:rows] = np.arange(rows)
        last = rng.random(n) < 0.5
        if t > 0:
            first[:rows] = False
        out = m.run(w, x, first, last, row)
        want = []
        for i in range(n):
            s = fraction_dot(codec, x[i], w)
            r = int(row[i])
            new = []
            for j in range(d):
                base = 0 if first[i] else (lambda b: Fraction(fp32_exact(b)[1]) *
                                           Fraction(2) ** fp32_exact(b)[2])(acc[r][j])
                new.append(rne_oracle(base + s[j][1]))
            acc[r] = new
            if last[i]:
                want.append((r, new))
        assert [(o.row, o.bits.tolist()) for o in out] == want


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_exact_mode_matches_fractions(fmt):
    """The ``exact`` mode: rows, first/last (a row goes on after ``last`` without ``first``), with
    NaN/Inf operands, and one rounding of the whole accumulation, against Fractions."""
    d, rows, n = 8, 3, 80
    codec = ElementCodec(fmt)
    rng = np.random.default_rng(12)
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    special = np.nonzero(codec.is_nan | codec.is_inf)[0]
    m = MatrixUnitModel(d, fmt, rows, acc="exact")
    state = {r: ([Fraction(0)] * d, [set() for _ in range(d)]) for r in range(rows)}  # from reset
    for _ in range(3):
        w = rng.choice(finite, size=(d, d))
        x = rng.choice(finite, size=(n, d))
        if special.size:
            hit = rng.random((n, d)) < 0.01
            x[hit] = rng.choice(special, size=int(hit.sum()))
        row = rng.integers(0, rows, n)
        first, last = rng.random(n) < 0.1, rng.random(n) < 0.3
        out = m.run(w, x, first, last, row)
        want = []
        for i in range(n):
            r = int(row[i])
            if first[i]:
                state[r] = ([Fraction(0)] * d, [set() for _ in range(d)])
            sums, kinds = state[r]
            for j, (kind, v) in enumerate(fraction_dot(codec, x[i], w)):
                if kind == "fin":
                    sums[j] += v
                else:
                    kinds[j].add(kind if kind == "nan" else v)
            if last[i]:
                bits = []
                for j in range(d):
                    k = kinds[j]
                    if "nan" in k or {1.0, -1.0} <= k:
                        bits.append(FP32_NAN)
                    elif k:
                        bits.append(FP32_PINF if 1.0 in k else FP32_NINF)
                    else:
                        bits.append(rne_oracle(sums[j]))
                want.append((r, bits))
        assert [(o.row, o.bits.tolist()) for o in out] == want


def test_exact_mode_overflow_and_zero():
    """``exact`` mode: 2**g beats are exact, one more gives NaN in every column with ``overflow``;
    the next ``first`` starts clean; an exact zero (also from -0 operands) is +0."""
    d, g = 8, 2
    codec = ElementCodec("fp8_e4m3")
    w = np.full((d, d), 0x38)                              # 1.0
    m = MatrixUnitModel(d, "fp8_e4m3", 1, acc="exact", guard_bits=g)
    for n, over in ((4, False), (5, True), (1, False)):
        x = np.full((n, d), 0x30)                          # 0.5
        (y,) = m.run(w, x, np.arange(n) == 0, np.arange(n) == n - 1)
        assert y.overflow == over
        want = FP32_NAN if over else f32_bits(np.float32(0.5 * d * n))
        assert (y.bits == want).all(), (n, y.bits)
    x = np.array([[0x30, 0xB0] * (d // 2), [0x80] * d])      # +0.5 - 0.5 ..., then all -0
    (y,) = m.run(w, x, [True, False], [False, True])
    assert (y.bits == 0).all() and codec.value(np.array([0x80]))[0] == 0


def test_exact_mode_does_not_depend_on_the_split():
    """Equal dot products give equal bits however they are cut into beats and ordered (one
    rounding), where the ``fp32`` mode's per-beat rounding differs."""
    d = 8
    codec = ElementCodec("fp8_e5m2")
    rng = np.random.default_rng(13)
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    w = rng.choice(finite, size=(d, d))
    x = rng.choice(finite, size=(64, d))
    res = {}
    for mode in ("exact", "fp32"):
        for order in (np.arange(64), rng.permutation(64), rng.permutation(64)):
            m = MatrixUnitModel(d, "fp8_e5m2", 1, acc=mode)
            (y,) = m.run(w, x[order], np.arange(64) == 0, np.arange(64) == 63)
            res.setdefault(mode, set()).add(tuple(y.bits.tolist()))
    assert len(res["exact"]) == 1 and len(res["fp32"]) > 1


def test_error_within_bound_e5m2_d128():
    d = 128
    codec = ElementCodec("fp8_e5m2")
    rng = np.random.default_rng(5)
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    m = MatrixUnitModel(d, "fp8_e5m2", 1)
    out = []
    for t in range(4):
        w = rng.choice(finite, size=(d, d))
        x = rng.choice(finite, size=(16, d))
        out = m.run(w, x, [t == 0] + [False] * 15, [False] * 15 + [t == 3])
    (y,) = out
    met = error_metrics(y.bits, y.ref, y.bound)
    assert met["within_bound"], met
    # the bound is the a-priori one or better: beats * 2^-24 * sum |products| (docs/numerics.md)
    assert (y.bound <= (m.beats[0] + 1) * 2.0 ** -24 * m.absum[0]).all()


@pytest.mark.parametrize("kw,match", [({"width": 0}, "width"), ({"rows": 0}, "rows"),
                                      ({"fmt": "bf16"}, "fmt"), ({"acc": "fp16"}, "acc"),
                                      ({"acc": "exact", "guard_bits": 0}, "guard_bits"),
                                      ({"fmt": "mxfp8_e4m3", "width": 16}, "multiple of 32")])
def test_bad_parameters(kw, match):
    args = {"width": 8, "fmt": "fp8_e4m3", "rows": 1} | kw
    with pytest.raises(ValueError, match=match):
        MatrixUnitModel(**args)


def test_codec_covers_format_table():
    for fmt in MATRIX_FORMATS:
        c = ElementCodec(fmt)
        f = get_format(fmt)
        # the largest magnitude: the largest finite, or an integer format's most negative value
        assert c.max_int * 2.0 ** c.lsb == np.abs(f.decode(np.arange(1 << f.bits))[f.classify(
            np.arange(1 << f.bits)) < CLASSES.index("inf")]).max() >= f.max_finite
