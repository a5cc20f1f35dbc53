"""Quick checks of the block-scaled unit's RTL pieces (hw/mu/scales.py) without Verilator: the scale
decode against ``ml_dtypes``/the E8M0 rule, the window sum against the Python-integer window of
``tb/mu/rounding.py`` (itself checked against ``Fraction`` arithmetic), the ports' bit layout
against ``docs/mu_interface.md``, and the parameter errors. The whole unit runs in
``tb/mu/test_matrix_unit.py`` (``BLOCK_BUILDS``)."""

import ml_dtypes
import numpy as np
import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.formats import BLOCK_FORMATS, SCALE_FORMATS
from hw.mu.interface import MatrixUnitSignature
from hw.mu.matrix_unit import MatrixUnit
from hw.mu.scales import decode_scale, finish_sum, scaled_sum_widths, split_point, split_sum, window_sum

from .rounding import window_sum as model_window_sum


def _run_comb(m, drive, read, vectors):
    out = []

    async def bench(ctx):
        for v in vectors:
            for sig, val in zip(drive, v, strict=True):
                ctx.set(sig, int(val))
            out.append([ctx.get(r) for r in read])

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize("scale", list(SCALE_FORMATS))
def test_decode_every_scale_code(scale):
    """Every code of every scale-format row, decoded by the RTL, against the row's ``ml_dtypes``
    oracle (a code with a bit above the row's fields set is NaN) and the numpy split."""
    sf = SCALE_FORMATS[scale]
    m = Module()
    code = Signal(8)
    mant, e, nan = decode_scale(m, code, scale, name="s")
    got = _run_comb(m, [code], [mant, e, nan], [(c,) for c in range(256)])
    sm, se, snan = sf.split(np.arange(256))
    for c, (gm, ge, gn) in enumerate(got):
        v = float(np.array([c], np.uint8).view(sf.ml_dtype)[0])
        want = np.nan if c >> (sf.exp_bits + sf.man_bits) or np.isnan(v) else v
        assert bool(gn) == np.isnan(want) == bool(snan[c]), c
        if not gn:
            assert np.ldexp(float(gm), ge) == want == np.ldexp(float(sm[c]), int(se[c])), (c, gm, ge, want)


@pytest.mark.parametrize("nb,pb", [(2, 14), (4, 21), (4, 42)])
def test_window_sum_matches_model(nb, pb):
    """Random signed block terms and exponents whose spread crosses the window's edge."""
    m = Module()
    terms = [Signal(signed(pb), name=f"t{i}") for i in range(nb)]
    exps = [Signal(signed(10), name=f"e{i}") for i in range(nb)]
    s, top = window_sum(m, terms, exps, frac_bits=32)
    rng = np.random.default_rng(nb * 100 + pb)
    vecs = []
    for _ in range(400):
        t = rng.integers(-(1 << (pb - 1)) + 1, 1 << (pb - 1), nb)
        t[rng.random(nb) < 0.2] = 0
        t[rng.random(nb) < 0.2] = rng.choice([1, -1, 3, -(1 << (pb - 2))])
        base = int(rng.integers(-200, 200))
        e = base - rng.choice([0, 1, 16, 31, 32, 33, 34, 35, 60, 120, 300], nb)
        vecs.append(list(t) + list(e))
    got = _run_comb(m, terms + exps, [s, top], vecs)
    for v, (gs, gt) in zip(vecs, got, strict=True):
        t, e = v[:nb], v[nb:]
        num, lo = model_window_sum(t, e, 32)
        if num == 0:
            assert gs == 0, v
        else:
            assert (gs, gt - 33) == (num, lo), (v, gs, gt, num, lo)


@pytest.mark.parametrize("w", [7, 17, 42, 51])
def test_split_sum_is_the_carry_save_sum(w):
    """The window's block-sum adder split over a register: the low half with its carry, then the high
    half, equals the integer ``a + b - 2**(W-1)`` for rows with ``a + b < 2**W`` (what a carry-save
    tree hands out), and the carry-free zero test equals ``S == 0``; every pair at W = 7, at the
    real widths random pairs, pairs at and next to zero and carries that cross the split."""
    m = Module()
    a, b = Signal(w, name="a"), Signal(w, name="b")
    part, nz = split_sum(m, a, b, name="t")
    reg = Signal.like(part, name="reg")  # the register the split stands for
    m.d.comb += reg.eq(part)
    s = finish_sum(m, reg, w, name="s")
    k, h = 1 << (w - 1), split_point(w)
    assert 0 < h < w
    if w <= 7:
        pairs = [(x, y) for x in range(1 << w) for y in range((1 << w) - x)]
    else:
        rng = np.random.default_rng(w)
        pairs = []
        for _ in range(600):
            total = int(rng.integers(0, 1 << w))
            x = int(rng.integers(0, total + 1))
            pairs.append((x, total - x))
        for total in (k, k - 1, k + 1, 0, (1 << w) - 1, k + (1 << h), k - (1 << h)):
            for x in (0, total, total // 2, total & ((1 << h) - 1), (1 << h) - 1):
                if 0 <= x <= total:
                    pairs.append((x, total - x))
    got = _run_comb(m, [a, b], [s, nz], pairs)
    for (x, y), (gs, gnz) in zip(pairs, got, strict=True):
        assert (gs, gnz) == (x + y - k, int(x + y != k)), (x, y, gs, gnz)


def test_block_ports_layout():
    """x: data, then D/B scale codes at [D*b + 8*i], then swap/first/last/row; ws: D codes."""
    sig = MatrixUnitSignature(64, "mxfp4_e2m1", 4)
    assert sig.blocks == 2 and sig.bits == 4
    assert sig.pack_x(0, scales=0xAB << 8) == 0xAB << (64 * 4 + 8)
    assert sig.pack_x(0, swap=1) == 1 << (64 * 4 + 16)
    assert sig.pack_x(0, row=3) == 3 << (64 * 4 + 16 + 3)
    assert sig.members["ws"].signature.members["payload"].shape.width == 8 * 64
    assert "ws" not in MatrixUnitSignature(64, "fp4_e2m1").members


@pytest.mark.parametrize("kw,match", [
    ({"width": 16, "fmt": "mxfp8_e4m3"}, "multiple of 32"),
    ({"width": 8, "fmt": "nvfp4"}, "multiple of 16"),
    ({"width": 32, "fmt": "mxfp8_e4m3", "stages": 99}, "stages"),
])
def test_block_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        MatrixUnit(**kw)


def test_window_bad_parameters():
    """The window's accumulator names what it needs: an MX format and whole chunks of 4+ bits."""
    from hw.mu.exact_acc import ExactAccumulator
    from hw.mu.window import window_widths
    with pytest.raises(ValueError, match="power of two >= 4"):
        ExactAccumulator("mxfp8_e4m3", 32, chunk_bits=6)
    with pytest.raises(ValueError, match="registers its input: in_reg must be True"):
        ExactAccumulator("mxfp8_e4m3", 32, in_reg=False)
    with pytest.raises(ValueError, match="has no window.*E8M0"):
        window_widths("nvfp4", 32, 16)


def test_block_unit_latency():
    """The latency property composes as the plain unit's: x register + trees (at width B) +
    accumulator; D = 2B adds nothing to it (the window is combinational)."""
    a, b = MatrixUnit(32, "mxfp8_e4m3"), MatrixUnit(64, "mxfp8_e4m3")
    plain = MatrixUnit(32, "fp8_e4m3")
    assert a.latency == b.latency == plain.latency


def test_window_matches_the_contract():
    """The RTL's window and the model's are the same contract constant (docs/numerics.md 7.2)."""
    from hw.mu.scales import WINDOW_FRAC_BITS as rtl_f

    from .rounding import WINDOW_FRAC_BITS as model_f

    assert rtl_f == model_f == 32


@pytest.mark.parametrize("fmt", list(BLOCK_FORMATS))
def test_scaled_sum_holds_the_largest_block_term(fmt):
    """The beat sum of a column with one block (D = B) holds the largest block term: B products of
    the element format's largest magnitude, times the largest product of two scale significands,
    in units of the element format's smallest subnormal squared (from ml_dtypes, independently of
    the generator's width arithmetic)."""
    bf = BLOCK_FORMATS[fmt]
    elem, sf = bf.element_format, bf.scale_format
    top = float(ml_dtypes.finfo(elem.ml_dtype).max)
    tiny = float(ml_dtypes.finfo(elem.ml_dtype).smallest_subnormal)
    m, _, nan = sf.split(np.arange(256))  # checked against ml_dtypes above
    sig = int(m[~nan].max())
    largest = bf.block * (top / tiny) ** 2 * sig ** 2
    bits, _ = scaled_sum_widths(fmt, bf.block)
    assert largest < 2 ** (bits - 1), (fmt, largest, bits)
