"""cocotb testbench of the matrix unit: sources for ``w``/``x`` (and ``ws`` on block-scaled
formats), a sink for ``y``, an in-order checker against the bit-true model, and the unit's counters
cross-checked against what the testbench itself observed.

It runs on the shared clocked loop (:mod:`tb.lib.clocked`, the project's one clock-edge rule):
inputs are written at the falling edge; in the default mode the handshakes are sampled once the
design has settled (two triggers per cycle), in the fast mode the ``w``/``x`` transfers are read
from the unit's own beat counters at the next falling edge (one trigger per cycle).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from hw.formats import BLOCK_FORMATS
from hw.mu.interface import MatrixUnitSignature
from tb.coverage_sample import sample_program, sample_stalls
from tb.lib.clocked import Clocked
from tb.lib.pause import no_pause
from tb.lib.stream import StreamSink, StreamSource, read_int

from .program import Program, unpack_y

__all__ = ["MuTestbench", "RunResult", "Checker"]


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


class _RunState:
    """Bookkeeping of one :meth:`MuTestbench.run`: the ``step`` of the clocked loop (books each
    rising edge) and a ``drive`` part that accounts the tile stall the coming edge will count."""

    def __init__(self, tb, prog, w_pause, x_pause, y_pause, snap_beats, drain, timeout, fast,
                 abort_after=None, ws_pause=None):
        d = tb.width
        self.tb, self.d, self.fast = tb, d, fast
        self.wdrv = StreamSource(tb.dut, "w", prog.w_beats(), w_pause)
        self.nb = prog.signature.blocks     # block-scaled: D/B ws beats per tile
        self.wsdrv = StreamSource(tb.dut, "ws", prog.ws_beats(), ws_pause) if self.nb else None
        self.xdrv = StreamSource(tb.dut, "x", prog.x_beats(), x_pause)
        self.ymon = StreamSink(tb.dut, "y", y_pause or no_pause())
        self.swaps = prog.swap
        self.n_out, self.n_x, self.n_w = prog.n_outputs, prog.n_beats, len(self.wdrv.beats)
        self.start = None
        self.drain = tb.latency + 8 if drain is None else drain
        self.timeout = timeout or (64 + 4 * d + tb.latency) * 8
        self.snap = set(snap_beats)
        self.windows = []
        self.obs = dict.fromkeys(tb.counter_names, 0)
        self.x_cycles, self.y_cycles = [], []
        self.w_done = 0          # w transfers so far
        self.ws_done = 0         # ws transfers so far (block-scaled formats)
        self.swapped = 0         # swap beats transferred so far
        self.idle = 0
        self.tail = None
        self.cycle = 0
        self.w_backpressure = 0  # edges with w valid and not taken
        self.abort_after, self.aborted = abort_after, False
        self._cw, self._cx = tb.cnt["w_beats"], tb.cnt["x_beats"]

    def step(self) -> bool:
        """At a falling edge: book the rising edge that just passed; True when the run is over."""
        if self.start is None:            # first call: no edge of this run has passed yet
            self.start = self.tb.counters()
            self._last_w, self._last_x = self.start["w_beats"], self.start["x_beats"]
            return False
        wdrv, xdrv = self.wdrv, self.xdrv
        if self.fast:                     # the transfers of that edge, from the unit's counters
            now_w, now_x = read_int(self._cw), read_int(self._cx)
            wf, xf = now_w - self._last_w, now_x - self._last_x
            self._last_w, self._last_x = now_w, now_x
            if wf > int(wdrv.valid) or xf > int(xdrv.valid):
                raise AssertionError(f"cycle {self.cycle}: counters stepped by w {wf}, x {xf} "
                                     f"with valid w={wdrv.valid}, x={xdrv.valid}")
            wdrv.fired, xdrv.fired = bool(wf), bool(xf)
        self.w_backpressure += wdrv.valid and not wdrv.fired
        self._book(wdrv.fired, xdrv.fired, self.ymon.fired)
        if self.abort_after is not None and self.cycle >= self.abort_after:
            self.aborted = True
            return True
        return self.tail is not None and self.tail <= 0

    def drive(self) -> None:
        """After the sources drove: count a cycle in which x is valid but its tile is not there
        (or x is not valid), as ``cnt_stall_tile``/``cnt_stall_x`` will at the coming edge (not
        booked when the run stops at this falling edge)."""
        if (self.tail is not None and self.tail <= 0) or self.aborted:
            return
        xdrv = self.xdrv
        if xdrv.valid:
            swap = self.swaps[xdrv.sent]
            loaded = self.w_done // self.d
            if self.wsdrv is not None:   # a tile needs its scales too
                loaded = min(loaded, self.ws_done // self.nb)
            pending = loaded > self.swapped
            if (swap and not pending) or (not swap and self.swapped == 0):
                self.obs["stall_tile"] += 1
        else:
            self.obs["stall_x"] += 1

    def _book(self, wf: bool, xf: bool, yf: bool) -> None:
        """Book the transfers of one rising edge (cycle ``self.cycle``)."""
        self.obs["cycles"] += 1
        if wf:
            self.w_done += 1
        if self.wsdrv is not None and self.wsdrv.fired:
            self.ws_done += 1
        if xf:
            self.x_cycles.append(self.cycle)
            i = self.xdrv.sent
            self.swapped += int(self.swaps[i])
        if yf:
            self.y_cycles.append(self.cycle)
        self.idle = 0 if (wf or xf or yf) else self.idle + 1
        if self.idle > self.timeout:
            dut = self.tb.dut
            raise AssertionError(
                f"no transfer for {self.idle} cycles: sent {self.w_done}/{self.n_w} w, "
                f"{len(self.x_cycles)}/{self.n_x} x beats, received {len(self.ymon.received)}/"
                f"{self.n_out} y rows (x ready={int(dut.x__ready.value)}, "
                f"w ready={int(dut.w__ready.value)})")
        self.cycle += 1
        if xf and i in self.snap:         # counters right after the edge that took beat i
            self.windows.append({"beat": i, "cycle": self.cycle,
                                 **{k: v - self.start[k] for k, v in self.tb.counters().items()}})
        if self.tail is None:
            if (len(self.ymon.received) >= self.n_out and len(self.x_cycles) >= self.n_x
                    and self.w_done >= self.n_w
                    and (self.wsdrv is None or self.ws_done >= len(self.wsdrv.beats))):
                self.tail = self.drain
        else:
            self.tail -= 1


class MuTestbench:
    """Testbench of one built matrix unit.

    Parameters
    ----------
    dut : cocotb handle of the ``mu`` top
    width, fmt, rows : int, str, int
        The unit's parameters (must match the build).
    latency : int
        ``MatrixUnit.latency`` read from the generator by the runner.
    acc : str
        The unit's accumulate mode (its counters: :attr:`MatrixUnitSignature.counters`).
    """

    def __init__(self, dut, width: int, fmt: str, rows: int, latency: int, acc: str = "fp32"):
        self.dut = dut
        self.width, self.fmt, self.rows, self.latency = width, fmt, rows, latency
        self.acc = acc
        self.log = logging.getLogger("cocotb.tb.mu")
        self.counter_names = MatrixUnitSignature(width, fmt, rows, acc).counters
        self.cnt = {c: getattr(dut, f"cnt_{c}") for c in self.counter_names}
        self.clock = Clocked(dut, period_ns=10)
        self._idle = (dut.w__valid, dut.x__valid, dut.y__ready) + (
            (dut.ws__valid,) if fmt in BLOCK_FORMATS else ())
        self.period_ns = self.clock.period_ns

    async def start(self, reset_cycles: int = 3) -> None:
        """Start the clock and hold reset (streams idle); check the counters read 0 after it."""
        await self.clock.reset(reset_cycles, idle=self._idle)
        got = self.counters()
        assert all(v == 0 for v in got.values()), f"counters not 0 right after reset: {got}"

    def counters(self) -> dict:
        """Read every counter port now."""
        return {k: read_int(h) for k, h in self.cnt.items()}

    async def run(self, prog: Program, *, w_pause=None, x_pause=None, y_pause=None,
                  snap_beats=(), drain: int | None = None, timeout: int | None = None,
                  fast: bool = False, overflows: int = 0,
                  abort_after: int | None = None, ws_pause=None) -> RunResult:
        """Send a program, collect every ``y`` row, check the counters against observation.

        Must be called right after :meth:`start` or another ``run``. Cycle 0 of the run is the
        first rising edge at which its beats can transfer.

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
            Cycles without any transfer before giving up.
        fast : bool
            One trigger per cycle instead of two: the ``w``/``x`` transfers of a rising edge are
            learnt from ``cnt_w_beats``/``cnt_x_beats`` at the next falling edge instead of from
            ``ready``. Counter errors then show up as lost or repeated beats in the checked rows
            rather than as a counter mismatch; the default (exact) mode observes ``ready`` itself.
        overflows : int
            Accumulations the model says exceed the ``exact`` accumulator's range (compared with
            ``cnt_acc_overflow``, which the testbench cannot see otherwise).
        abort_after : int, optional
            Stop after this many cycles with beats still in flight (a reset test follows): the
            result holds what was received and nothing is checked or sampled for coverage.
        ws_pause : iterator of bool, optional
            Pause generator of the ``ws`` stream (block-scaled formats). Block-scaled runs always
            sample ``ready`` themselves (there is no ``ws`` counter), so ``fast`` is ignored.

        Raises
        ------
        AssertionError
            On a timeout or on counters that disagree with what the testbench observed.
        """
        t0 = time.perf_counter()
        if prog.signature.blocks:
            fast = False
        st = _RunState(self, prog, w_pause, x_pause, y_pause, snap_beats, drain, timeout, fast,
                       abort_after, ws_pause)
        ws = (st.wsdrv,) if st.wsdrv is not None else ()
        drive = (st.wdrv, *ws, st.xdrv, st.ymon, st)
        sample = (st.ymon,) if fast else (st.wdrv, *ws, st.xdrv, st.ymon)
        await self.clock.run(st.step, drive, sample, settle=not fast)
        if st.aborted:
            return RunResult([unpack_y(p, self.width, self.rows) for p in st.ymon.received], {},
                             st.obs, np.array(st.x_cycles), np.array(st.y_cycles), st.windows,
                             st.cycle, time.perf_counter() - t0)
        end = self.counters()
        got = {k: end[k] - st.start[k] for k in self.counter_names}
        obs = st.obs
        obs["w_beats"] = st.wdrv.sent
        obs["x_beats"] = st.xdrv.sent
        obs["y_beats"] = len(st.ymon.received)
        obs["stall_y"] = st.ymon.backpressured
        obs["macs"] = self.width * self.width * st.xdrv.sent
        if "acc_overflow" in obs:
            obs["acc_overflow"] = overflows
        res = RunResult([unpack_y(p, self.width, self.rows) for p in st.ymon.received], got, obs,
                        np.array(st.x_cycles), np.array(st.y_cycles), st.windows, st.cycle,
                        time.perf_counter() - t0)
        diff = {k: (got[k], obs[k]) for k in self.counter_names if got[k] != obs[k]}
        assert not diff, f"counters (unit, testbench) disagree: {diff}"
        sample_program(prog, self.acc, overflows)
        sample_stalls(st.wdrv.paused, st.xdrv.paused, obs["stall_tile"], obs["stall_y"],
                      st.w_backpressure)
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
