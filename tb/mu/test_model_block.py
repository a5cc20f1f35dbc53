"""Unit tests of the bit-true numerics model (tb/mu/model.py) on block-scaled formats
(docs/numerics.md section 7) against independent oracles.

``ml_dtypes`` for the scale codes; exact ``Fraction`` arithmetic written from the contract text for
whole accumulations, with scale units derived from the scale *values* (not from the model's field
split) and the FP32 rounding by the nearest-neighbour search of ``tb/mu/test_model.py``; the
per-tensor path of the same model for unit scales.
"""

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS, check_block_width, get_block_format, get_format
from tb.mu.model import MatrixUnitModel, unit_matmul
from tb.mu.rounding import FP32_NAN, FP32_PINF, WINDOW_FRAC_BITS, window_sum
from tb.mu.test_model import rne_oracle

pytestmark = pytest.mark.quick


# --- block-scaled formats --------------------------------------------------------------------------
def test_scale_codes_match_ml_dtypes():
    codes = np.arange(256)
    e8m0 = get_block_format("mxfp8_e4m3").scale_decode(codes)
    oracle = codes.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    assert np.array_equal(e8m0, oracle, equal_nan=True) and np.isnan(e8m0[255]) and e8m0[0] == 2.0 ** -127
    ue4m3 = get_block_format("nvfp4").scale_decode(codes)
    e4m3 = codes[:128].astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    assert np.array_equal(ue4m3[:128], e4m3, equal_nan=True)
    assert np.isnan(ue4m3[0x7F]) and np.isnan(ue4m3[0x80:]).all() and ue4m3[0x7E] == 448.0


def test_block_rows_and_width_rule():
    assert set(BLOCK_FORMATS) == {"mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1",
                                  "nvfp4"}
    assert not set(BLOCK_FORMATS) & set(MATRIX_FORMATS)
    assert [check_block_width("mxfp4_e2m1", d) for d in (32, 64, 128)] == [1, 2, 4]
    assert check_block_width("nvfp4", 128) == 8
    for fmt, d in (("mxfp8_e4m3", 16), ("mxfp8_e4m3", 48), ("nvfp4", 8), ("nvfp4", 24)):
        with pytest.raises(ValueError, match="multiple of"):
            check_block_width(fmt, d)
    with pytest.raises(ValueError, match="block-scaled"):
        get_format("mxfp4_e2m1")


def test_unit_signature_checks_block_formats():
    """The unit takes a block format at a width that holds whole blocks, in either accumulate mode
    (OCP MX's exact mode is the window), and names the fix otherwise; the fixed-point grid of the
    exact mode refuses E8M0 scales and names the window."""
    from hw.mu.interface import MatrixUnitSignature
    from hw.mu.scales import check_exact_block, fixed_sum_widths
    assert MatrixUnitSignature(32, "mxfp8_e4m3", 1, "fp32").blocks == 1
    assert MatrixUnitSignature(32, "nvfp4", 1, "fp32").blocks == 2
    with pytest.raises(ValueError, match="multiple of 32"):
        MatrixUnitSignature(16, "mxfp8_e4m3", 1, "fp32")
    assert MatrixUnitSignature(32, "mxfp8_e4m3", 1, "exact").blocks == 1
    assert MatrixUnitSignature(32, "nvfp4", 1, "exact").blocks == 2
    check_exact_block("nvfp4")
    with pytest.raises(ValueError, match=r"most 64 binades \(nvfp4\).*exact mode is the window"):
        fixed_sum_widths("mxfp8_e4m3", 32)


# --- the contract in Fractions ---------------------------------------------------------------------
def _scale(bf, code) -> Fraction:
    v = bf.scale_decode(np.array([code]))[0]
    return Fraction(float(v))


def _unit(bf, s: Fraction) -> Fraction:
    """Weight of one unit of the scale's integer significand, from the scale value."""
    if bf.scale == "e8m0":
        return s
    if s == 0:
        return Fraction(2) ** -9
    return Fraction(2) ** (max(math.floor(math.log2(s)), -6) - 3)


def _odd(v: Fraction) -> int:
    """Round to odd: v itself if an integer, else whichever of its two neighbours is odd."""
    f = math.floor(v)
    return f if f == v else (f if f % 2 else f + 1)


def oracle(fmt, frac_bits, x, xs, w, ws):
    """Per column FP32 bits of one accumulation over the beats of x (one row), from the contract."""
    bf = get_block_format(fmt)
    ef = get_format(bf.element)
    lsb = Fraction(2) ** (ef.emin - ef.man_bits)
    b = bf.block
    out = []
    for j in range(w.shape[1]):
        acc = None
        for t in range(x.shape[0]):
            terms = []
            for i in range(x.shape[1] // b):
                sx, sw = _scale(bf, xs[t, i]), _scale(bf, ws[i, j])
                p = sum(Fraction(float(v)) for v in ef.decode(x[t, i * b:(i + 1) * b])
                        * ef.decode(w[i * b:(i + 1) * b, j]))
                terms.append((sx * sw * p, _unit(bf, sx) * _unit(bf, sw) * lsb * lsb))
            nz = [(v, u) for v, u in terms if v != 0]
            s = Fraction(0)
            if nz:
                q = max(u for _, u in nz) / 2 ** frac_bits         # exact down to here
                s = sum(v if u >= q else _odd(2 * v / q) * q / 2 for v, u in nz)
            if acc is None or isinstance(acc, Fraction):  # an Inf accumulator stays Inf (finite S)
                acc = s if acc is None else acc + s
                v = float(np.uint32(rne_oracle(acc)).view(np.float32))
                acc = Fraction(v) if math.isfinite(v) else v
        out.append(rne_oracle(acc) if isinstance(acc, Fraction) else FP32_PINF | (acc < 0) << 31)
    return np.array(out, dtype=np.uint32)


def _random(fmt, d, beats, cols, spread, rng):
    bf = get_block_format(fmt)
    nb = d // bf.block
    ef = get_format(bf.element)
    finite = np.nonzero(np.isfinite(ef.decode(np.arange(1 << ef.bits))))[0]
    x = rng.choice(finite, (beats, d))
    w = rng.choice(finite, (d, cols))
    if bf.scale == "e8m0":
        xs = 127 + rng.integers(-spread, spread + 1, (beats, nb))
        ws = 127 + rng.integers(-spread, spread + 1, (nb, cols))
    else:
        xs, ws = rng.integers(0, 0x7F, (beats, nb)), rng.integers(0, 0x7F, (nb, cols))
    x[0, :bf.block] = 0                       # an all-zero block must not set the alignment
    if nb > 1:                                # cancellation between blocks of one beat
        x[1, bf.block:2 * bf.block] = x[1, :bf.block] ^ ef.sign_bit
        w[bf.block:2 * bf.block] = w[:bf.block]
        xs[1, 1], ws[1] = xs[1, 0], ws[0]
    return x, xs, w, ws


@pytest.mark.parametrize("fmt,d,spread,frac_bits", [
    ("mxfp8_e4m3", 64, 30, WINDOW_FRAC_BITS), ("mxfp8_e4m3", 128, 30, 4), ("mxfp4_e2m1", 128, 30, 0),
    ("mxfp4_e2m1", 64, 127, WINDOW_FRAC_BITS), ("mxfp6_e2m3", 64, 30, 8), ("mxfp8_e5m2", 64, 20, 6),
    ("nvfp4", 64, 0, WINDOW_FRAC_BITS), ("nvfp4", 128, 0, 3)])
def test_accumulation_matches_fraction_oracle(fmt, d, spread, frac_bits):
    rng = np.random.default_rng(d + spread + frac_bits)
    x, xs, w, ws = _random(fmt, d, 3, 6, spread, rng)
    ws_tile = np.tile(ws, (1, d // ws.shape[1] + 1))[:, :d]
    w_tile = np.tile(w, (1, d // w.shape[1] + 1))[:, :d]
    m = MatrixUnitModel(d, fmt, frac_bits=frac_bits)
    m.run(w_tile, x, True, True, ws=ws_tile, xs=xs)          # an earlier accumulation, then first
    res = m.run(w_tile, x, np.arange(3) == 0, np.arange(3) == 2, ws=ws_tile, xs=xs)
    assert np.array_equal(res[0].bits[:6], oracle(fmt, frac_bits, x, xs, w, ws))
    got = unit_matmul(fmt, d, x.reshape(1, -1), xs.reshape(1, -1), np.vstack([w_tile] * 3),
                      np.vstack([ws_tile] * 3), frac_bits)
    assert np.array_equal(got[0], res[0].bits)


def test_terms_below_the_window_round_to_odd():
    # MXFP4 blocks in column 0, block i holding one product +-1.0 * 2^e_i (E8M0 scales), F = 32
    bf = get_block_format("mxfp4_e2m1")
    one = int(bf.element_format.encode(np.array([1.0]))[0])

    def run(exps, signs, frac_bits=WINDOW_FRAC_BITS):
        d = 32 * len(exps)
        x, w = np.zeros((1, d), np.int64), np.zeros((d, d), np.int64)
        for i, sg in enumerate(signs):
            x[0, 32 * i], w[32 * i, 0] = one | (8 if sg < 0 else 0), one
        m = MatrixUnitModel(d, "mxfp4_e2m1", frac_bits=frac_bits)
        xs = np.array([[127 + e for e in exps]])
        return m.run(w, x, True, True, ws=np.full((len(exps), d), 127), xs=xs)[0].bits[0]

    two = Fraction(2)
    # by hand: terms 4 * 2^-32 and +-4 * 2^-72; the window's last bit is 2^(-32 - 32 - 1) = 2^-65,
    # the low term (2^-70) sits below it and becomes one unit of its sign
    assert window_sum([4, 4], [-32, -72]) == ((1 << 35) + 1, -65)
    assert window_sum([4, -4], [-32, -72]) == ((1 << 35) - 1, -65)
    assert window_sum([4, -4], [-32, -72], None) == ((1 << 42) - 4, -72)
    assert window_sum([4, -4], [-32, -64]) == ((1 << 35) - 8, -65)      # 2^-62 is inside: exact
    num, lo = window_sum([0, 5], [100, -64])                            # a zero block never aligns
    assert num * two ** lo == 5 * two ** -64
    assert run([-30, -70], [1, -1], None) == rne_oracle(two ** -30 - two ** -70)
    # the sticky bit breaks a tie as the exact sum does: 1 + 2^-24 + 2^-40 rounds up (a plain
    # truncation would leave the tie 1 + 2^-24 and round to even, 1.0)
    up = np.float32(1 + 2.0 ** -23).view(np.uint32)
    assert run([0, -24, -40, -40], [1, 1, 1, 1]) == up == run([0, -24, -40, -40], [1, 1, 1, 1], None)
    assert run([0, -24, -40, -40], [1, 1, -1, 1]) == rne_oracle(1 + two ** -24)   # exactly the tie
    assert run([0, -24, -40, -40], [1, 1, -1, -1]) == np.float32(1.0).view(np.uint32)


def test_specials():
    d = 32
    bf = get_block_format("mxfp8_e5m2")
    inf = bf.element_format.inf_code
    x, w = np.zeros((1, d), np.int64), np.zeros((d, d), np.int64)
    x[0, 0] = inf                                 # Inf * 1.0 in columns 0 and 1, Inf * 0 elsewhere
    w[0, 0] = w[0, 1] = 0x3C
    xs, ws = np.array([[127]]), np.full((1, d), 127)
    ws[0, 2] = 0xFF                               # NaN scale in column 2
    bits = MatrixUnitModel(d, "mxfp8_e5m2").run(w, x, True, True, ws=ws, xs=xs)[0].bits
    assert bits[0] == FP32_PINF and bits[1] == FP32_PINF and bits[2] == FP32_NAN and bits[3] == FP32_NAN
    # finite elements with 2^127 scales overflow FP32: RNE gives +Inf
    m = MatrixUnitModel(d, "mxfp4_e2m1")
    six = 0x7
    x, w = np.full((1, d), six), np.full((d, d), six)
    bits = m.run(w, x, True, True, ws=np.full((1, d), 254), xs=np.array([[254]]))[0].bits
    assert (bits == FP32_PINF).all()


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp4_e2m1"])
def test_unit_scales_reduce_to_the_plain_contract(fmt):
    rng = np.random.default_rng(3)
    d = 32
    hi = 0x7E if fmt == "fp8_e4m3" else 0xF
    x, w = rng.integers(0, hi, (2, 2 * d)), rng.integers(0, hi, (2 * d, d))
    got = unit_matmul(fmt, d, x, None, w, None)
    plain = MatrixUnitModel(d, fmt)
    for r in range(2):
        for t in range(2):
            res = plain.run(w[t * d:(t + 1) * d], x[r:r + 1, t * d:(t + 1) * d], t == 0, t == 1)
        assert np.array_equal(res[0].bits, got[r])


def test_run_checks_the_scale_codes():
    w, x = np.zeros((32, 32), np.int64), np.zeros((1, 32), np.int64)
    with pytest.raises(ValueError, match="per-tensor format: run takes no scale codes"):
        MatrixUnitModel(32, "fp4_e2m1").run(w, x, True, True, ws=np.zeros((1, 32)), xs=np.zeros((1, 1)))
    with pytest.raises(ValueError, match="block-scaled: run needs the scale codes"):
        MatrixUnitModel(32, "nvfp4").run(w, x, True, True)
    with pytest.raises(ValueError, match=r"need xs \(N, 2\) and ws \(2, 32\)"):
        MatrixUnitModel(32, "nvfp4").run(w, x, True, True, ws=np.zeros((1, 32)), xs=np.zeros((1, 1)))
