"""Tests of the simulator-free parts of the harness: packing, programs, stimulus, pause generators."""

import itertools

import numpy as np
import pytest

from hw.formats import MATRIX_FORMATS, get_format
from hw.mu.interface import MatrixUnitSignature
from tb.lib.pause import make_pause

from .program import Program, Tile, pack_rows, unpack_y
from .stimulus import ADVERSARIAL, every_product, product_oracle, random_program

pytestmark = pytest.mark.quick


@pytest.mark.parametrize("bits", [1, 4, 6, 8])
@pytest.mark.parametrize("n", [1, 5, 16])
def test_pack_rows_layout(bits, n):
    rng = np.random.default_rng(bits * 100 + n)
    codes = rng.integers(0, 1 << bits, (5, n))
    for row, packed in zip(codes, pack_rows(codes, bits), strict=True):
        assert packed < 1 << (n * bits)
        assert [(packed >> (k * bits)) & ((1 << bits) - 1) for k in range(n)] == row.tolist()


def test_pack_rows_refuses_wide_codes():
    with pytest.raises(ValueError, match="does not fit in 6 bits"):
        pack_rows(np.array([[64, 0]]), 6)
    with pytest.raises(ValueError, match="1..8"):
        pack_rows(np.array([[1]]), 9)


def test_unpack_y_layout():
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 8)
    payload = sum(int(b) << (32 * j) for j, b in enumerate(bits)) | (5 << 256)
    row, got = unpack_y(payload, 8, 6)
    assert row == 5 and got.tolist() == bits.tolist()
    # ceil(log2 R) row bits, 0 for R = 1 (hand-computed)
    assert [MatrixUnitSignature(8, "fp8_e4m3", r).row_bits for r in (1, 2, 3, 4, 5)] == [0, 1, 2, 2, 3]


def test_x_payload_flags():
    w = np.zeros((8, 8), dtype=np.int64)
    x = np.arange(16).reshape(2, 8)
    prog = Program.from_tiles(8, "fp8_e4m3", 4, [Tile(w, x, [True, False], [False, True], [3, 1])])
    b0, b1 = prog.x_beats()
    assert b0 >> 64 == 1 | 2 | (3 << 3)              # swap, first, row 3
    assert b1 >> 64 == 4 | (1 << 3)                  # last, row 1
    assert b0 & 0xFF == 0 and (b1 >> 8) & 0xFF == 9


def test_program_validation():
    w = np.zeros((8, 8), dtype=np.int64)
    with pytest.raises(ValueError, match="w must be"):
        Program.from_tiles(8, "fp8_e4m3", 1, [Tile(np.zeros((4, 4)), np.zeros((1, 8)))])
    with pytest.raises(ValueError, match="row indices"):
        Program.from_tiles(8, "fp8_e4m3", 2, [Tile(w, np.zeros((1, 8)), row=2)])


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_every_product_covers_all_pairs(fmt):
    prog = every_product(16, fmt)
    n = 1 << get_format(fmt).bits
    seen = set()
    for t, s in enumerate(np.nonzero(prog.swap)[0]):
        w = prog.tiles[t]
        k0 = int(np.nonzero(prog.x[s + 1])[0][0])          # beat 1 holds code 1 at k0
        assert (np.delete(w, k0, axis=0) == 0).all() and (np.delete(prog.x[s:s + n], k0, 1) == 0).all()
        for i in range(s, s + n):
            seen.update((int(prog.x[i, k0]), int(b)) for b in w[k0])
    assert seen >= set(itertools.product(range(n), range(n)))


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_model_products_match_float64_oracle(fmt):
    prog = every_product(64, fmt)
    got = np.array([y.bits for y in prog.expected()])
    for t, s in enumerate(np.nonzero(prog.swap)[0]):
        w = prog.tiles[t]
        k0 = int(np.nonzero(prog.x[s + 1])[0][0])
        n = 1 << get_format(fmt).bits
        a = prog.x[s:s + n, k0]
        want = product_oracle(fmt, a[:, None], w[k0][None, :])
        assert (got[s:s + n] == want).all()


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_stimulus_programs_are_valid(fmt):
    for gen in ADVERSARIAL.values():
        gen(16, fmt, 3).validate()
    random_program(16, fmt, 3, seed=1).validate()


def test_pause_specs():
    assert list(itertools.islice(make_pause("cycle:0011"), 6)) == [False, False, True, True] + [False] * 2
    assert list(itertools.islice(make_pause("bursty:2:1"), 6)) == [False, False, True] * 2
    assert not any(itertools.islice(make_pause("none"), 10))
    r = list(itertools.islice(make_pause("random:0.5", seed=1), 1000))
    assert 400 < sum(r) < 600
    with pytest.raises(ValueError, match="unknown pause spec"):
        make_pause("sometimes")
