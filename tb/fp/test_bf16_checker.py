"""The BF16 testbench's own decoding and checking (no simulator): it must catch every kind of error.

:func:`tb.fp.bf16_mul_cocotb.binstr_to_bytes` must decode the simulator's binary strings exactly, and
:class:`tb.fp.bf16_mul_cocotb.Checker` must reject a wrong bit, a lost, duplicated or reordered
product and lanes that disagree, on monitor words built here the way the sim top builds them.
"""

import numpy as np
import pytest

from tb.fp.bf16_mul_cocotb import Checker, binstr_to_bytes
from tb.fp.bf16_ref import bf16_mul_ref

GROUPS = [("behavioral", 0, True), ("booth4", 2, False), ("behavioral", 1, True)]
LATENCIES = [0, 2, 1]
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


def _monitor(a, b, valid, ready=None, *, fire_out=None, split_at=None, refuse=None):
    """Monitor bytes of a perfect sim top (group 0 combinational, groups 1 and 2 pipelined with
    :data:`LATENCIES`) under ``ready`` (default: always); ``fire_out`` overrides group 1's out_fire
    rows (products still in order); ``refuse`` is a row where group 1 does not accept a valid input
    (the producer holds it to the next cycle, so the word is still accepted once)."""
    cycles = a.shape[0]
    ready = np.ones(cycles, bool) if ready is None else ready
    prods = np.zeros((cycles, 3, LANES), np.uint16)
    prods[:, 0] = bf16_mul_ref(a, b, True)
    flags = np.zeros((cycles, 8), np.uint8)
    for j, g in enumerate((1, 2)):
        lat, sub = LATENCIES[g], GROUPS[g][2]
        in_fire = valid.copy()
        if refuse is not None and g == 1:
            in_fire[refuse] = False
        out_fire = np.zeros(cycles, bool)
        if fire_out is not None and g == 1:
            out_fire[fire_out] = True
        else:   # a perfect pipeline at full rate: each product exactly lat cycles later
            out_fire[lat:] = in_fire[:cycles - lat]
        want = bf16_mul_ref(a[in_fire], b[in_fire], sub)
        n = min(out_fire.sum(), want.shape[0])
        prods[np.flatnonzero(out_fire)[:n], g] = want[:n]
        flags[:, 3 * j], flags[:, 3 * j + 1] = in_fire, out_fire
    if split_at is not None:
        flags[split_at, 2] = 1
    packed = np.packbits(flags, axis=1, bitorder="little")
    return np.concatenate([prods.reshape(cycles, -1).view(np.uint8), packed], axis=1)


def _check(a, b, valid, raw, ready=None):
    ready = np.ones(a.shape[0], bool) if ready is None else ready
    return Checker(LANES, GROUPS, LATENCIES).check(a, b, valid, ready, raw)


def _vectors(cycles=40, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 1 << 16, (cycles, LANES), dtype=np.int64)
    b = rng.integers(0, 1 << 16, (cycles, LANES), dtype=np.int64)
    valid = rng.random(cycles) < 0.7
    valid[-4:] = False  # room to drain
    return a, b, valid


def test_checker_accepts_a_correct_monitor():
    a, b, valid = _vectors()
    counts = _check(a, b, valid, _monitor(a, b, valid))
    assert counts == {"behavioral-s0": a.size, "booth4-s2-ftz": valid.sum() * LANES,
                      "behavioral-s1": valid.sum() * LANES}
    assert Checker(LANES, GROUPS).mon_bits == 16 * LANES * 3 + 3 * 2


@pytest.mark.parametrize("group", [0, 1, 2])
def test_checker_catches_a_wrong_bit(group):
    a, b, valid = _vectors()
    raw = _monitor(a, b, valid)
    row = 30 if group == 0 else np.flatnonzero(valid)[5] + LATENCIES[group]
    raw[row, 2 * (group * LANES + 1)] ^= 0x01  # lane 1, product bit 0
    with pytest.raises(AssertionError, match="expected"):
        _check(a, b, valid, raw)


@pytest.mark.parametrize("change", ["lost", "duplicated"])
def test_checker_catches_lost_and_duplicated(change):
    a, b, valid = _vectors()
    rows = list(np.flatnonzero(valid) + 2)
    rows = rows[:-1] if change == "lost" else rows + [a.shape[0] - 1]
    raw = _monitor(a, b, valid, fire_out=rows)
    with pytest.raises(AssertionError, match="lost or duplicated|cycles after"):
        _check(a, b, valid, raw)
    ready = np.ones(a.shape[0], bool)
    ready[0] = False  # no latency check under backpressure: the count check alone must catch it
    with pytest.raises(AssertionError, match="lost or duplicated"):
        _check(a, b, valid, raw, ready)


def test_checker_catches_reordering():
    a, b, valid = _vectors()
    raw = _monitor(a, b, valid)
    r0, r1 = np.flatnonzero(valid)[[3, 4]] + 2
    lo, hi = 2 * LANES, 4 * LANES  # group 1's products
    raw[[r0, r1], lo:hi] = raw[[r1, r0], lo:hi]
    with pytest.raises(AssertionError, match="expected"):
        _check(a, b, valid, raw)


def test_checker_catches_split_lanes_refusals_and_phantom_transfers():
    a, b, valid = _vectors()
    with pytest.raises(AssertionError, match="disagree"):
        _check(a, b, valid, _monitor(a, b, valid, split_at=7))
    with pytest.raises(AssertionError, match="refused while the output was ready"):
        _check(a, b, valid, _monitor(a, b, valid, refuse=np.flatnonzero(valid)[2]))
    with pytest.raises(AssertionError, match="in_fire without in_valid"):
        gap = np.flatnonzero(~valid[:-4])[0]
        _check(a, b, np.where(np.arange(a.shape[0]) == gap, True, valid) & (np.arange(a.shape[0]) != gap)
               | False, _monitor(a, b, np.where(np.arange(a.shape[0]) == gap, True, valid)))
    ready = np.ones(a.shape[0], bool)
    ready[np.flatnonzero(valid)[4] + 2] = False   # a product delivered while the output was blocked
    with pytest.raises(AssertionError, match="out_fire without out_ready"):
        _check(a, b, valid, _monitor(a, b, valid), ready)


def test_checker_catches_a_wrong_latency_and_a_deadlock():
    a, b, valid = _vectors()
    late = list(np.flatnonzero(valid) + 3)   # every product one cycle late, order kept
    with pytest.raises(AssertionError, match="2 cycles after"):
        _check(a, b, valid, _monitor(a, b, valid, fire_out=late))
    stuck = _monitor(a, b, np.zeros_like(valid))   # nothing ever accepted: 0 in, 0 out
    with pytest.raises(AssertionError, match="refused while the output was ready"):
        _check(a, b, valid, stuck)
