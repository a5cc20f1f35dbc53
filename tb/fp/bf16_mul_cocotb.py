"""cocotb tests of the BF16 multiplier variants in :class:`tb.fp.bf16_simtop.Bf16SimTop`.

The stack is small and vectorized, so that the simulator, not Python, sets the pace. A
:class:`Driver` runs on the shared clocked loop (:class:`tb.lib.clocked.Clocked`, the project's one
clock-edge rule): at each falling edge it keeps the monitor word the rising edge before registered,
as the simulator's binary string, then writes the next operand word (``lanes`` pairs, packed
through :data:`tb.fp.bf16_simtop.OPERANDS`, the multiplier's payload layout) and the stream
controls. The monitor is registered, so no settling phase is needed: one trigger per cycle, nothing
decoded in the loop. Every :data:`CHUNK` cycles the
strings are turned into bytes with numpy (:func:`binstr_to_bytes`). A :class:`Checker` then slices
every group's products out of those bytes and compares them with the integer model
:func:`tb.fp.bf16_ref.bf16_mul_ref`, bit for bit (all NaNs are 0x7FC0 by contract, so plain equality
is the NaN-aware comparison). Pipelined groups are checked as ordered streams: the operands accepted
(``in_fire``) must come out (``out_fire``) in order, none lost, none duplicated.

Per-cycle costs kept low: the clock runs in C++, the inputs are written ``Immediate`` at the falling
edge (the loop's rule), and the operand words are Python ints built from numpy bytes a chunk at a
time.

Each test prints its checking rate (``BF16 CHECK RATE``: products checked per wall-clock second,
from the first driven cycle to the end of the check, and per CPU second of this process, which
depends less on other jobs sharing the machine); neither is asserted.

Knobs (environment, set by ``test_bf16_mul.py``):

``BF16_GROUPS``  JSON list of ``[arch, stages, subnormals(, cuts)]`` (the sim top's groups, in order)
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
from cocotb.handle import Immediate

from tb.fp.bf16_ref import bf16_mul_ref
from tb.fp.bf16_simtop import OPERANDS
from tb.fp.bf16_vectors import boundary_vectors, random_vectors, special_pairs
from tb.lib.clocked import Clocked

GROUPS = [tuple(g) for g in json.loads(os.environ.get("BF16_GROUPS", '[["booth4", 0, true]]'))]
LANES = int(os.environ.get("BF16_LANES", "8"))
BOUNDARY = os.environ.get("BF16_BOUNDARY", "1") not in ("0", "")
NRANDOM = int(os.environ.get("BF16_RANDOM", "100000"))
STALL_CYCLES = int(os.environ.get("BF16_STALL_CYCLES", "2000"))
SEED = int(os.environ.get("BF16_SEED", "1"))
#: Each group's ``Bf16Multiplier.latency``, as the runner read it from the sim top.
LATENCIES = [int(v) for v in json.loads(os.environ.get("BF16_LATENCIES", "[0]"))]
assert len(LATENCIES) == len(GROUPS), "BF16_LATENCIES needs one entry per BF16_GROUPS group"
MAX_LATENCY = max(LATENCIES)
#: Cycles driven between two numpy conversions of the recorded monitor strings.
CHUNK = 256

_ONES = np.uint64(0x0101010101010101)
_GATHER = np.uint64(0x8040201008040201)


def _name(g) -> str:
    arch, stages, sub = g[:3]
    cuts = g[3] if len(g) > 3 else "auto"
    return f"{arch}-s{stages}" + ("" if sub else "-ftz") + ("" if cuts == "auto" else f"-{cuts}")


def binstr_to_bytes(strs, nbits: int) -> np.ndarray:
    """Binary strings (MSB first, ``nbits`` characters of ``0``/``1`` each) to little-endian bytes.

    Each string is left-padded with zeros to a multiple of 64 characters; every 8 characters (one
    little-endian ``uint64``) are masked to their low bits and gathered into one byte with a single
    multiply (character ``i`` of the group lands on bit ``7 - i``: the products of different
    characters fall on distinct bits, so no carries), and the byte order is then reversed.

    Parameters
    ----------
    strs : sequence of str
        One monitor value per cycle, as the simulator writes it (``vpiBinStrVal``).
    nbits : int
        Width of every value.

    Returns
    -------
    numpy.ndarray of uint8, shape (len(strs), ceil(nbits / 64) * 8)
        Byte ``j`` of row ``c`` holds bits ``8j + 7 .. 8j`` of value ``c``.

    Raises
    ------
    ValueError
        If a string has the wrong length or holds anything but ``0`` and ``1`` (X or Z).
    """
    if any(len(s) != nbits for s in strs):
        raise ValueError(f"monitor strings must be {nbits} characters each")
    width = -(-nbits // 64) * 64
    text = ("0" * (width - nbits)).join(["", *strs]).encode("ascii")
    chars = np.frombuffer(text, np.uint8).reshape(len(strs), width)
    if ((chars | 1) != ord("1")).any():
        raise ValueError("monitor value holds a bit that is not 0 or 1")
    x = chars.view("<u8") & _ONES
    x *= _GATHER
    x >>= np.uint64(56)
    return np.ascontiguousarray(x.astype(np.uint8)[:, ::-1])


def _words(a, b) -> list:
    """Pack (cycles, lanes) operand arrays into one int per cycle: lane k is an :data:`OPERANDS`
    payload at bit 32k (``a`` and ``b`` at the layout's offsets)."""
    ab = ((a.astype(np.uint32) << np.uint32(OPERANDS["a"].offset))
          | (b.astype(np.uint32) << np.uint32(OPERANDS["b"].offset))).astype("<u4")
    nbytes = 4 * a.shape[1]
    buf = ab.tobytes()
    return [int.from_bytes(buf[i:i + nbytes], "little") for i in range(0, len(buf), nbytes)]


class Driver:
    """Writes operands and stream controls at each falling edge; records the monitor word.

    Parameters
    ----------
    dut : cocotb handle
    lanes : int
    clock : Clocked
        The testbench's clocked loop (one per test: it owns the clock).
    """

    def __init__(self, dut, lanes: int, clock: Clocked):
        self.dut, self.lanes, self.clock = dut, lanes, clock
        self._mon, self._ab, self._in_valid, self._out_ready = dut.mon, dut.ab, dut.in_valid, dut.out_ready
        self.nbits = len(dut.mon)
        self.log = logging.getLogger("bf16.driver")
        self.valid = self.ready = None

    async def reset(self):
        await self.clock.reset(3, idle=(self.dut.in_valid, self.dut.out_ready))

    async def run(self, a, b, valid, ready) -> np.ndarray:
        """Drive lane operands ``a[c]``, ``b[c]`` and ``valid[c]``, ``ready[c]`` in cycle ``c``.

        Returns
        -------
        numpy.ndarray of uint8, shape (cycles, bytes)
            Row ``c``: the monitor word the rising edge of cycle ``c`` registered, little-endian
            (:func:`binstr_to_bytes`).
        """
        self._a, self._b, self._v, self._r = a, b, valid, ready
        self._n, self._c, self._got = a.shape[0], 0, 0
        self._strs, self._rows, self._chunk = [], [], []
        await self.clock.run(self.step, (self,), settle=False)
        return np.concatenate(self._rows)

    def step(self) -> bool:
        """At a falling edge: keep the monitor word of the edge after the last write; True once
        every cycle's word is in."""
        if self._c:
            self._strs.append(str(self._mon.value))
            self._got += 1
            if len(self._strs) == CHUNK or self._got == self._n:
                self._rows.append(binstr_to_bytes(self._strs, self.nbits))
                self._strs = []
        return self._got == self._n

    def drive(self) -> None:
        """At a falling edge: write cycle ``c``'s operand word and stream controls."""
        c = self._c
        if c == self._n:
            return
        k = c % CHUNK
        if k == 0:
            self._chunk = _words(self._a[c:c + CHUNK], self._b[c:c + CHUNK])
        v, r = self._v[c], self._r[c]
        if v != self.valid:
            self.valid = v
            self._in_valid.set(Immediate(int(v)))
        if r != self.ready:
            self.ready = r
            self._out_ready.set(Immediate(int(r)))
        self._ab.set(Immediate(self._chunk[k]))
        self._c = c + 1


class Checker:
    """Slices every group's products out of the monitor bytes and checks them bit for bit.

    Parameters
    ----------
    lanes : int
    groups : sequence of (arch, stages, subnormals[, cuts])
    latencies : sequence of int, optional
        Each group's ``Bf16Multiplier.latency`` (from the sim top); when given, a pipelined group
        must deliver each product exactly that many cycles after accepting it whenever the output
        is never blocked.
    """

    def __init__(self, lanes: int, groups, latencies=None):
        self.lanes, self.groups = lanes, groups
        self.latencies = latencies
        self.log = logging.getLogger("bf16.checker")
        self.piped = [g for g, grp in enumerate(groups) if grp[1] > 0]

    @property
    def mon_bits(self) -> int:
        """Width of the sim top's monitor word for these groups (``Bf16SimTop.mon``)."""
        return 16 * self.lanes * len(self.groups) + 3 * len(self.piped)

    def check(self, a, b, valid, ready, raw) -> dict:
        """Check every group; return the number of products checked per group name.

        Parameters
        ----------
        a, b : numpy.ndarray, shape (cycles, lanes)
            Operands driven.
        valid, ready : numpy.ndarray of bool, shape (cycles,)
            ``in_valid`` and ``out_ready`` driven.
        raw : numpy.ndarray of uint8, shape (cycles, bytes)
            Monitor words (:meth:`Driver.run`).

        Raises
        ------
        AssertionError
            On a wrong product; a lost, duplicated or reordered one; an input refused while the
            output was ready (every stage stalls only when the output is blocked); a transfer
            without its valid or ready; lanes disagreeing on the handshake; a wrong latency.
        """
        lanes, ng = self.lanes, len(self.groups)
        prods = raw[:, :2 * lanes * ng].view("<u2").reshape(raw.shape[0], ng, lanes)
        flag_bits = np.unpackbits(raw[:, 2 * lanes * ng:], axis=1, bitorder="little")
        # the model is elementwise: one evaluation over every operand word per subnormals setting;
        # a pipelined group's expected stream is its rows picked by in_fire
        refs = {sub: bf16_mul_ref(a, b, sub) for sub in {g[2] for g in self.groups}}
        counts = {}
        for g, (_arch, stages, sub, *_cuts) in enumerate(self.groups):
            name = _name(self.groups[g])
            if stages == 0:
                got, want, sent = prods[:, g, :], refs[sub], slice(None)
            else:
                j = self.piped.index(g)
                in_fire = flag_bits[:, 3 * j].astype(bool)
                out_fire = flag_bits[:, 3 * j + 1].astype(bool)
                assert not flag_bits[:, 3 * j + 2].any(), f"{name}: lanes disagree on i.ready/o.valid"
                assert not (in_fire & ~valid).any(), f"{name}: in_fire without in_valid"
                assert not (out_fire & ~ready).any(), f"{name}: out_fire without out_ready"
                # i.ready = o.ready | some stage empty: a valid input meets a ready output only
                # if it is accepted (catches a pipeline that deadlocks or stalls for nothing)
                refused = valid & ready & ~in_fire
                assert not refused.any(), (f"{name}: an input was refused while the output was "
                                           f"ready (cycle {np.flatnonzero(refused)[0]})")
                if self.latencies is not None and ready.all():
                    lat = self.latencies[g]
                    assert not out_fire[:lat].any() and np.array_equal(out_fire[lat:],
                                                                       in_fire[:-lat]), (
                        f"{name}: products do not come out {lat} cycles after their operands")
                got, want, sent = prods[out_fire, g, :], refs[sub][in_fire], in_fire
                assert got.shape[0] == want.shape[0], (
                    f"{name}: {want.shape[0]} operand words accepted but {got.shape[0]} products "
                    "came out (lost or duplicated)")
                self.log.info("%s: %d words in, %d out, in order", name, in_fire.sum(),
                              out_fire.sum())
            if not np.array_equal(got, want):
                bad = np.argwhere(got != want)[0]
                raise AssertionError(self._fail(name, a[sent], b[sent], got, want, bad))
            counts[name] = want.size
        return counts

    @staticmethod
    def _fail(name, a, b, got, want, at):
        r, k = at
        return (f"{name}: {a[r, k]:#06x} * {b[r, k]:#06x} = {got[r, k]:#06x}, "
                f"expected {want[r, k]:#06x} (word {r}, lane {k})")


def _shape(a, b, lanes):
    pad = (-a.size) % lanes
    a = np.r_[a, np.zeros(pad, np.int64)].reshape(-1, lanes)
    b = np.r_[b, np.zeros(pad, np.int64)].reshape(-1, lanes)
    return a, b


async def _run_and_check(dut, a, b, valid, ready, *, run: str) -> dict:
    """Drive, then check; report the rate; return the products checked per group."""
    # flush: inputs idle, outputs ready, long enough to drain every pipeline
    flush = MAX_LATENCY + 2
    cycles = a.shape[0]
    a_all = np.r_[a, np.zeros((flush, LANES), np.int64)]
    b_all = np.r_[b, np.zeros((flush, LANES), np.int64)]
    valid = np.r_[valid, np.zeros(flush, bool)]
    ready = np.r_[ready, np.ones(flush, bool)]
    checker = Checker(LANES, GROUPS, LATENCIES)
    drv = Driver(dut, LANES, Clocked(dut, period_ns=2))
    assert drv.nbits == checker.mon_bits, (
        f"the sim top's monitor is {drv.nbits} bits, BF16_GROUPS/BF16_LANES say {checker.mon_bits}")
    await drv.reset()
    t0, cpu0 = time.perf_counter(), time.process_time()
    raw = await drv.run(a_all, b_all, valid, ready)
    t1 = time.perf_counter()
    counts = checker.check(a_all, b_all, valid, ready, raw)
    checked = sum(counts.values())
    t2, cpu2 = time.perf_counter(), time.process_time()
    rate = checked / (t2 - t0)
    msg = (f"{checked:,} products checked ({len(GROUPS)} variants x {LANES} lanes, {cycles:,} cycles) "
           f"in {t2 - t0:.1f} s: {rate:,.0f} products/s (simulation {t1 - t0:.1f} s, "
           f"{(cycles + flush) / (t1 - t0):,.0f} cycles/s; numpy check {t2 - t1:.1f} s; "
           f"{cpu2 - cpu0:.1f} s of CPU, {checked / (cpu2 - cpu0):,.0f} products per CPU second)")
    dut._log.info(msg)
    print(f"\nBF16 CHECK RATE: {msg}", flush=True)
    out = os.environ.get("BF16_RATE_OUT")
    if out:   # the pytest runner reports it (junit property and the end-of-run summary)
        with open(out, "a") as fh:
            fh.write(json.dumps({"run": run, "products": checked,
                                 "seconds": t2 - t0, "products_per_s": rate,
                                 "products_per_cpu_s": checked / (cpu2 - cpu0)}) + "\n")
    return counts


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
    rows = a.shape[0]
    assert rows * LANES >= n
    ones = np.ones(rows, bool)
    counts = await _run_and_check(dut, a, b, ones, ones, run="full_rate")
    flush = MAX_LATENCY + 2
    for g in GROUPS:  # every operand word through every variant (combinational: flush rows too)
        assert counts[_name(g)] == (rows if g[1] > 0 else rows + flush) * LANES, (_name(g), counts)


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
    await _run_and_check(dut, a, b, valid, ready, run="stalls")
