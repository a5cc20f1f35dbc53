"""The BF16 testbench's own decoding and checking (no simulator): it must catch every kind of error.

:func:`tb.fp.bf16_mul_cocotb.binstr_to_bytes` must decode the simulator's binary strings exactly, and
:class:`tb.fp.bf16_mul_cocotb.Checker` must reject a wrong bit, a lost, duplicated or reordered
product and lanes that disagree, on monitor words built here the way the sim top builds them.
"""

import numpy as np
import pytest

from tb.fp.bf16_mul_cocotb import Checker, binstr_to_bytes
from tb.fp.bf16_ref import bf16_mul_ref

GROUPS = [("behavioral", 0, True), ("booth4", 2, False)]
LANES = 4


@pytest.mark.parametrize("nbits", [1, 7, 8, 63, 64, 65, 8204, 32780])
def test_binstr_to_bytes_exact(nbits):
    rng = np.random.default_rng(nbits)
    vals = [int.from_bytes(rng.bytes(nbits // 8 + 1), "little") % (1 << nbits) for _ in range(5)]
    vals += [0, (1 << nbits) - 1]
    raw = binstr_to_bytes([f"{v:0{nbits}b}" for v in vals], nbits)
    assert raw.shape == (len(vals), -(-nbits // 64) * 8)
    assert [int.from_bytes(r.tobytes(), "little") for r in raw] == vals


def test_binstr_to_bytes_rejects_x_and_length():
    with pytest.raises(ValueError, match="not 0 or 1"):
        binstr_to_bytes(["0X10"], 4)
    with pytest.raises(ValueError, match="characters"):
        binstr_to_bytes(["010"], 4)


def _monitor(a, b, valid, latency=2, *, fire_out=None, split_at=None):
    """Monitor bytes of a perfect sim top (group 0 combinational, group 1 pipelined, always
    ready); ``fire_out`` overrides the pipelined group's out_fire rows (products still in order)."""
    cycles = a.shape[0]
    prods = np.zeros((cycles, 2, LANES), np.uint16)
    prods[:, 0] = bf16_mul_ref(a, b, True)
    in_fire = valid.copy()
    out_fire = np.zeros(cycles, bool)
    if fire_out is None:
        out_fire[latency:] = in_fire[:cycles - latency]
    else:
        out_fire[fire_out] = True
    want = bf16_mul_ref(a[in_fire], b[in_fire], False)
    n = min(out_fire.sum(), want.shape[0])
    prods[np.flatnonzero(out_fire)[:n], 1] = want[:n]
    flags = np.zeros((cycles, 8), np.uint8)
    flags[:, 0], flags[:, 1] = in_fire, out_fire
    if split_at is not None:
        flags[split_at, 2] = 1
    packed = np.packbits(flags, axis=1, bitorder="little")
    return np.concatenate([prods.reshape(cycles, -1).view(np.uint8), packed], axis=1)


def _vectors(cycles=40, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, (cycles, LANES), dtype=np.int64)
    b = rng.integers(0, 1 << 16, (cycles, LANES), dtype=np.int64)
    valid = rng.random(cycles) < 0.7
    valid[-4:] = False  # room to drain
    return a, b, valid


def test_checker_accepts_a_correct_monitor():
    a, b, valid = _vectors()
    raw = _monitor(a, b, valid)
    checked = Checker(LANES, GROUPS).check(a, b, valid, raw, expect_all_accepted=True)
    assert checked == a.size + valid.sum() * LANES


@pytest.mark.parametrize("group", [0, 1])
def test_checker_catches_a_wrong_bit(group):
    a, b, valid = _vectors()
    raw = _monitor(a, b, valid)
    row = 30 if group == 0 else np.flatnonzero(valid)[5] + 2
    raw[row, 2 * (group * LANES + 1)] ^= 0x01  # lane 1, product bit 0
    with pytest.raises(AssertionError, match="expected"):
        Checker(LANES, GROUPS).check(a, b, valid, raw, expect_all_accepted=True)


@pytest.mark.parametrize("change", ["lost", "duplicated"])
def test_checker_catches_lost_and_duplicated(change):
    a, b, valid = _vectors()
    rows = list(np.flatnonzero(valid) + 2)
    rows = rows[:-1] if change == "lost" else rows + [a.shape[0] - 1]
    raw = _monitor(a, b, valid, fire_out=rows)
    with pytest.raises(AssertionError, match="lost or duplicated"):
        Checker(LANES, GROUPS).check(a, b, valid, raw, expect_all_accepted=True)


def test_checker_catches_reordering():
    a, b, valid = _vectors()
    raw = _monitor(a, b, valid)
    r0, r1 = np.flatnonzero(valid)[[3, 4]] + 2
    lo, hi = 2 * LANES, 4 * LANES  # group 1's products
    raw[[r0, r1], lo:hi] = raw[[r1, r0], lo:hi]
    with pytest.raises(AssertionError, match="expected"):
        Checker(LANES, GROUPS).check(a, b, valid, raw, expect_all_accepted=True)


def test_checker_catches_split_lanes_and_refusals():
    a, b, valid = _vectors()
    with pytest.raises(AssertionError, match="disagree"):
        Checker(LANES, GROUPS).check(a, b, valid, _monitor(a, b, valid, split_at=7),
                                     expect_all_accepted=True)
    refused = valid.copy()
    refused[np.flatnonzero(valid)[2]] = False  # the top saw in_valid but did not accept
    raw = _monitor(a, b, refused)
    with pytest.raises(AssertionError, match="refused"):
        Checker(LANES, GROUPS).check(a, b, valid, raw, expect_all_accepted=True)
