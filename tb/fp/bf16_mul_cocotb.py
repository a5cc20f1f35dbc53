"""cocotb tests of the BF16 multiplier variants in :class:`tb.fp.bf16_simtop.Bf16SimTop`.

The stack is small and vectorized: a :class:`Driver` writes one wide operand word (``lanes`` pairs)
and the stream controls per cycle and records the registered monitor word of the same edge (one
read per cycle); a :class:`Checker` decodes the recorded words with numpy afterwards and compares
every group with the integer model :func:`tb.fp.bf16_ref.bf16_mul_ref`, bit for bit (all NaNs are
0x7FC0 by contract, so plain equality is the NaN-aware comparison). Pipelined groups are checked
as ordered streams: the operands accepted (``in_fire``) must come out (``out_fire``) in order, none
lost, none duplicated.

Knobs (environment, set by ``test_bf16_mul.py``):

``BF16_GROUPS``  JSON list of ``[arch, stages, subnormals]`` (the sim top's groups, in order)
``BF16_LANES``   multipliers per group
``BF16_BOUNDARY`` 1: the boundary sweep (every mantissa pair x boundary exponent pairs)
``BF16_RANDOM``  number of random pairs
``BF16_STALL_CYCLES`` cycles of random valid gaps and ready backpressure
``BF16_SEED``    random seed
"""

import json
import logging
import os
import time

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge

from tb.fp.bf16_ref import bf16_mul_ref
from tb.fp.bf16_vectors import boundary_vectors, random_vectors, special_pairs

GROUPS = [tuple(g) for g in json.loads(os.environ.get("BF16_GROUPS", '[["booth4", 0, true]]'))]
LANES = int(os.environ.get("BF16_LANES", "8"))
BOUNDARY = os.environ.get("BF16_BOUNDARY", "1") not in ("0", "")
NRANDOM = int(os.environ.get("BF16_RANDOM", "100000"))
STALL_CYCLES = int(os.environ.get("BF16_STALL_CYCLES", "2000"))
SEED = int(os.environ.get("BF16_SEED", "1"))
MAX_LATENCY = max(s for _, s, _ in GROUPS)


def _name(g) -> str:
    arch, stages, sub = g
    return f"{arch}-s{stages}" + ("" if sub else "-ftz")


class Driver:
    """Writes operands and stream controls at each falling edge; records the monitor word."""

    def __init__(self, dut, lanes: int):
        self.dut, self.lanes = dut, lanes
        self.log = logging.getLogger("bf16.driver")
        self.valid = self.ready = None

    async def reset(self):
        cocotb.start_soon(Clock(self.dut.clk, 2, unit="ns").start())
        self.dut.rst.value = 1
        self.dut.in_valid.value = 0
        self.dut.out_ready.value = 0
        for _ in range(3):
            await FallingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def run(self, words, valid, ready) -> list:
        """Drive ``words[c]``, ``valid[c]``, ``ready[c]`` in cycle ``c``; return the monitor words,
        entry ``c`` being what the rising edge of cycle ``c`` saw."""
        dut, mons = self.dut, []
        fall = FallingEdge(dut.clk)
        for c in range(len(words)):
            if valid[c] != self.valid:
                dut.in_valid.value = self.valid = int(valid[c])
            if ready[c] != self.ready:
                dut.out_ready.value = self.ready = int(ready[c])
            dut.ab.value = words[c]
            await fall
            mons.append(dut.mon.value)
        return mons


class Checker:
    """Decodes monitor words and checks every group against the integer model."""

    def __init__(self, lanes: int, groups):
        self.lanes, self.groups = lanes, groups
        self.log = logging.getLogger("bf16.checker")
        self.piped = [g for g, (_, s, _) in enumerate(groups) if s > 0]
        self.nbytes = (16 * lanes * len(groups) + 3 * len(self.piped) + 7) // 8

    def check(self, a, b, valid, mons, *, expect_all_accepted: bool) -> int:
        """``a``, ``b``: (cycles, lanes) operands driven; returns the number of products checked."""
        lanes, ng = self.lanes, len(self.groups)
        raw = np.frombuffer(b"".join(int(m).to_bytes(self.nbytes, "little") for m in mons),
                            dtype=np.uint8).reshape(len(mons), self.nbytes)
        prods = raw[:, :2 * lanes * ng].copy().view("<u2").reshape(len(mons), ng, lanes).astype(np.int64)
        flag_bits = np.unpackbits(raw[:, 2 * lanes * ng:], axis=1, bitorder="little")
        checked = 0
        refs = {}
        for g, (_arch, stages, sub) in enumerate(self.groups):
            name = _name(self.groups[g])
            if stages == 0:
                want = refs.setdefault(sub, bf16_mul_ref(a, b, sub))
                got = prods[:, g, :]
                bad = np.argwhere(got != want)
                assert bad.size == 0, self._fail(name, a, b, got, want, bad[0])
                checked += want.size
                continue
            j = self.piped.index(g)
            in_fire = flag_bits[:, 3 * j].astype(bool)
            out_fire = flag_bits[:, 3 * j + 1].astype(bool)
            split = flag_bits[:, 3 * j + 2]
            assert not split.any(), f"{name}: lanes disagree on i.ready/o.valid"
            assert not (in_fire & ~valid).any(), f"{name}: in_fire without in_valid"
            if expect_all_accepted:
                assert in_fire[valid].all(), f"{name}: an input was refused at full throughput"
            sent_a, sent_b = a[in_fire], b[in_fire]
            got = prods[out_fire, g, :]
            assert got.shape[0] == sent_a.shape[0], (
                f"{name}: {sent_a.shape[0]} operand words accepted but {got.shape[0]} products "
                "came out (lost or duplicated)")
            want = bf16_mul_ref(sent_a, sent_b, sub)
            bad = np.argwhere(got != want)
            assert bad.size == 0, self._fail(name, sent_a, sent_b, got, want, bad[0])
            checked += want.size
            self.log.info("%s: %d words in, %d out, in order", name, in_fire.sum(), out_fire.sum())
        return checked

    @staticmethod
    def _fail(name, a, b, got, want, at):
        r, k = at
        return (f"{name}: {a[r, k]:#06x} * {b[r, k]:#06x} = {got[r, k]:#06x}, "
                f"expected {want[r, k]:#06x} (word {r}, lane {k})")


def _words(a, b) -> list:
    """Pack (cycles, lanes) operand arrays into one int per cycle: lane k = a | b << 16 at 32k."""
    ab = (a.astype(np.uint32) | (b.astype(np.uint32) << 16)).astype("<u4")
    nbytes = 4 * a.shape[1]
    buf = ab.tobytes()
    return [int.from_bytes(buf[i:i + nbytes], "little") for i in range(0, len(buf), nbytes)]


def _shape(a, b, lanes):
    pad = (-a.size) % lanes
    a = np.r_[a, np.zeros(pad, np.int64)].reshape(-1, lanes)
    b = np.r_[b, np.zeros(pad, np.int64)].reshape(-1, lanes)
    return a, b


async def _run_and_check(dut, a, b, valid, ready, *, expect_all_accepted):
    # flush: inputs idle, outputs ready, long enough to drain every pipeline
    flush = MAX_LATENCY + 2
    cycles = a.shape[0]
    a_all = np.r_[a, np.zeros((flush, LANES), np.int64)]
    b_all = np.r_[b, np.zeros((flush, LANES), np.int64)]
    valid = np.r_[valid, np.zeros(flush, bool)]
    ready = np.r_[ready, np.ones(flush, bool)]
    drv = Driver(dut, LANES)
    await drv.reset()
    t0 = time.perf_counter()
    mons = await drv.run(_words(a_all, b_all), valid, ready)
    t1 = time.perf_counter()
    checked = Checker(LANES, GROUPS).check(a_all, b_all, valid, mons,
                                           expect_all_accepted=expect_all_accepted)
    t2 = time.perf_counter()
    rate = checked / (t2 - t0)
    msg = (f"{checked:,} products checked ({len(GROUPS)} variants x {LANES} lanes, {cycles:,} cycles) "
           f"in {t2 - t0:.1f} s: {rate:,.0f} products/s (simulation {t1 - t0:.1f} s, "
           f"{(cycles + flush) / (t1 - t0):,.0f} cycles/s; numpy check {t2 - t1:.1f} s)")
    dut._log.info(msg)
    print(f"\nBF16 CHECK RATE: {msg}", flush=True)
    return checked


@cocotb.test()
async def full_rate(dut):
    """Boundary sweep + random + special pairs at full throughput, every variant, bit for bit."""
    parts = [special_pairs()]
    if BOUNDARY:
        parts.append(boundary_vectors())
    if NRANDOM:
        parts.append(random_vectors(NRANDOM, seed=SEED))
    a = np.concatenate([p[0] for p in parts])
    b = np.concatenate([p[1] for p in parts])
    n = a.size
    a, b = _shape(a, b, LANES)
    ones = np.ones(a.shape[0], bool)
    checked = await _run_and_check(dut, a, b, ones, ones, expect_all_accepted=True)
    assert checked >= n * len(GROUPS)


@cocotb.test()
async def stalls(dut):
    """Random valid gaps and ready backpressure: nothing lost, duplicated or reordered."""
    rng = np.random.default_rng(SEED + 1)
    n = STALL_CYCLES
    a = rng.integers(0, 1 << 16, (n, LANES), dtype=np.int64)
    b = rng.integers(0, 1 << 16, (n, LANES), dtype=np.int64)
    # pause patterns: segments of different densities, including long stalls and full bursts
    dens = rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], size=(n // 50 + 1, 2))
    dv = np.repeat(dens[:, 0], 50)[:n]
    dr = np.repeat(dens[:, 1], 50)[:n]
    valid = rng.random(n) < dv
    ready = rng.random(n) < dr
    valid[:5] = True
    ready[:5] = False  # fill every pipeline against a blocked output first
    await _run_and_check(dut, a, b, valid, ready, expect_all_accepted=False)
