"""cocotb testbench of the matrix unit: one clocked loop, drivers for ``w``/``x``, a monitor for ``y``,
an in-order checker against the bit-true model, and the unit's counters cross-checked against what the
testbench itself observed.

The loop awaits two triggers per cycle whatever the number of streams: after the rising edge every
component drives, at the falling edge every component samples (see :mod:`tb.mu.stream`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from .program import Program, row_bits, unpack_y
from .stream import StreamDriver, StreamMonitor, no_pause

__all__ = ["COUNTERS", "MuTestbench", "RunResult", "Checker"]

#: Counter ports (docs/mu_interface.md), as ``cnt_<name>``.
COUNTERS = ("cycles", "w_beats", "x_beats", "y_beats", "stall_tile", "stall_x", "stall_y", "macs")


@dataclass
class RunResult:
    """What one :meth:`MuTestbench.run` observed.

    Attributes
    ----------
    y : list of (int, ndarray)
        Received rows (row index, FP32 bits), in order.
    counters : dict
        The unit's counters at the end (delta over the run).
    observed : dict
        The same quantities counted by the testbench.
    x_cycles, y_cycles : ndarray
        Cycle (relative to the start of the run) of each ``x`` / ``y`` transfer.
    windows : list of dict
        Counter snapshots taken right after chosen ``x`` beats (see ``snap_beats``).
    cycles : int
        Cycles the run took.
    wall : float
        Seconds of wall time.
    """

    y: list
    counters: dict
    observed: dict
    x_cycles: np.ndarray
    y_cycles: np.ndarray
    windows: list = field(default_factory=list)
    cycles: int = 0
    wall: float = 0.0


class Checker:
    """In-order comparison of received rows with the model's, bit for bit (NaN is one code).

    Parameters
    ----------
    expected : list of YRow
    log : logging.Logger
    """

    def __init__(self, expected, log=None):
        self.expected = expected
        self.log = log or logging.getLogger("cocotb.tb.checker")

    def mismatches(self, got: list, limit: int = 8) -> list[str]:
        """Describe the differences (empty list: all rows equal and none missing or extra)."""
        errs = []
        if len(got) != len(self.expected):
            errs.append(f"received {len(got)} y rows, expected {len(self.expected)}")
        for i, (g, e) in enumerate(zip(got, self.expected, strict=False)):
            row, bits = g
            if row != e.row:
                errs.append(f"y[{i}]: row index {row}, expected {e.row}")
            bad = np.nonzero(bits != e.bits)[0]
            if bad.size:
                cols = ", ".join(f"col {j}: got {int(bits[j]):#010x} expected {int(e.bits[j]):#010x}"
                                 for j in bad[:4])
                errs.append(f"y[{i}] (row {e.row}): {bad.size} columns differ: {cols}")
            if len(errs) >= limit:
                break
        return errs

    def check(self, got: list) -> None:
        errs = self.mismatches(got)
        for e in errs:
            self.log.error(e)
        assert not errs, f"{len(errs)} mismatch(es), first: {errs[0] if errs else ''}"


class MuTestbench:
    """Testbench of one built matrix unit.

    Parameters
    ----------
    dut : cocotb handle of the ``mu`` top
    width, fmt, rows : int, str, int
        The unit's parameters (must match the build).
    latency : int
        ``MatrixUnit.latency`` read from the generator by the runner.
    """

    def __init__(self, dut, width: int, fmt: str, rows: int, latency: int):
        self.dut = dut
        self.width, self.fmt, self.rows, self.latency = width, fmt, rows, latency
        self.log = logging.getLogger("cocotb.tb.mu")
        self.rb = row_bits(rows)
        self.cnt = {c: getattr(dut, f"cnt_{c}") for c in COUNTERS}
        self._clock = None

    async def start(self, reset_cycles: int = 3) -> None:
        """Start the clock and hold reset (streams idle)."""
        dut = self.dut
        if self._clock is None:
            self._clock = Clock(dut.clk, 10, unit="ns")
            self._clock.start()
        dut.w__valid.value = 0
        dut.x__valid.value = 0
        dut.y__ready.value = 0
        dut.rst.value = 1
        for _ in range(reset_cycles):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        await FallingEdge(dut.clk)
        got = self.counters()
        assert all(v == 0 for v in got.values()), f"counters not 0 right after reset: {got}"

    def counters(self) -> dict:
        """Read every counter port now."""
        return {k: int(h.value) for k, h in self.cnt.items()}

    async def run(self, prog: Program, *, w_pause=None, x_pause=None, y_pause=None,
                  snap_beats=(), drain: int | None = None, timeout: int | None = None) -> RunResult:
        """Send a program, collect every ``y`` row, check the counters against observation.

        Must be called right after :meth:`start` or another ``run`` (at a falling edge).

        Parameters
        ----------
        prog : Program
        w_pause, x_pause, y_pause : iterator of bool, optional
            Pause generators (default: none).
        snap_beats : iterable of int
            Indices of ``x`` beats after whose transfer the counters are read (throughput windows).
        drain : int, optional
            Idle cycles after the last expected row, watching for extra rows (default latency + 8).
        timeout : int, optional
            Cycles without any transfer before giving up (default 64 + 4 D + latency + pauses).

        Raises
        ------
        AssertionError
            On a timeout or on counters that disagree with what the testbench observed.
        """
        dut, d = self.dut, self.width
        t0 = time.perf_counter()
        n_out = prog.n_outputs
        wdrv = StreamDriver(dut, "w", prog.w_beats(), w_pause)
        xdrv = StreamDriver(dut, "x", prog.x_beats(), x_pause)
        ymon = StreamMonitor(dut, "y", y_pause or no_pause())
        swaps = prog.swap
        start = self.counters()
        drain = self.latency + 8 if drain is None else drain
        timeout = timeout or (64 + 4 * d + self.latency) * 8
        snap = set(snap_beats)
        windows = []
        obs = dict.fromkeys(COUNTERS, 0)
        x_cycles, y_cycles = [], []
        w_done = 0          # w transfers so far
        swapped = 0         # swap beats transferred so far
        idle = 0
        tail = None
        want_snap = None
        cycle = 0
        rising, falling = RisingEdge(dut.clk), FallingEdge(dut.clk)
        n_x, n_w = len(xdrv.beats), len(wdrv.beats)
        # We are at a falling edge: each iteration samples the transfers of the coming rising edge
        # (with the values driven after the previous one), then drives the next cycle.
        while True:
            if want_snap is not None:
                windows.append({"beat": want_snap, "cycle": cycle,
                                **{k: v - start[k] for k, v in self.counters().items()}})
                want_snap = None
            if tail is not None and tail <= 0:
                break
            wf = wdrv.sample()
            if xdrv.valid:
                swap = swaps[xdrv.sent]
                pending = (w_done // d) > swapped
                if (swap and not pending) or (not swap and swapped == 0):
                    obs["stall_tile"] += 1
            else:
                obs["stall_x"] += 1
            xf = xdrv.sample()
            yf = ymon.sample()
            obs["cycles"] += 1
            if wf:
                w_done += 1
            if xf:
                x_cycles.append(cycle)
                swapped += int(swaps[xdrv.sent])
                if xdrv.sent in snap:
                    want_snap = xdrv.sent
            if yf:
                y_cycles.append(cycle)
            idle = 0 if (wf or xf or yf) else idle + 1
            if idle > timeout:
                raise AssertionError(
                    f"no transfer for {idle} cycles: sent {w_done}/{n_w} w, {len(x_cycles)}/{n_x} "
                    f"x beats, received {len(ymon.received)}/{n_out} y rows "
                    f"(x ready={int(dut.x__ready.value)}, w ready={int(dut.w__ready.value)})")
            cycle += 1
            if tail is None:
                if len(ymon.received) >= n_out and len(x_cycles) >= n_x and w_done >= n_w:
                    tail = drain
            else:
                tail -= 1
            await rising
            wdrv.drive()
            xdrv.drive()
            ymon.drive()
            await falling
        end = self.counters()
        got = {k: end[k] - start[k] for k in COUNTERS}
        obs["w_beats"] = wdrv.sent
        obs["x_beats"] = xdrv.sent
        obs["y_beats"] = len(ymon.received)
        obs["stall_y"] = ymon.backpressured
        obs["macs"] = d * d * xdrv.sent
        res = RunResult([unpack_y(p, d, self.rows) for p in ymon.received], got, obs,
                        np.array(x_cycles), np.array(y_cycles), windows, cycle,
                        time.perf_counter() - t0)
        diff = {k: (got[k], obs[k]) for k in COUNTERS if got[k] != obs[k]}
        assert not diff, f"counters (unit, testbench) disagree: {diff}"
        return res

    def check_latency(self, prog: Program, res: RunResult) -> None:
        """With ``y`` never backpressured, each row leaves exactly ``latency`` cycles after its beat."""
        last_cycles = res.x_cycles[np.nonzero(prog.last)[0]]
        n = min(len(last_cycles), len(res.y_cycles))
        assert n == len(last_cycles), "missing rows"
        lat = res.y_cycles[:n] - last_cycles[:n]
        assert (lat == self.latency).all(), (
            f"y left {sorted(set(lat.tolist()))} cycles after its x beat; the latency property "
            f"says {self.latency}")
