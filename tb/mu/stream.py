"""Reusable cocotb pieces for ``amaranth.lib.stream`` ports: pause generators, a driver, a monitor.

The pieces do not await anything themselves. One clocked loop (see :class:`tb.mu.testbench.
MuTestbench`) calls, every cycle,

1. after the rising edge: :meth:`StreamDriver.drive` / :meth:`StreamMonitor.drive` to present the
   next beat / ``ready`` (the writes settle in the same time step);
2. at the falling edge, when the design's combinational outputs have settled for the values that the
   next rising edge samples: :meth:`StreamDriver.sample` / :meth:`StreamMonitor.sample`, which decide
   whether a transfer happens at that edge.

Sampling at the falling edge rather than right after the rising edge keeps the handshake exact even
when ``ready`` depends combinationally on the same cycle's ``valid``/``payload`` (the matrix unit's
``x__ready`` depends on the ``swap`` bit), and costs two triggers per cycle for all streams together.

Pause generators follow cocotbext-axi: an iterator yielding truthy values for cycles in which the
component pauses (a driver does not start a new beat; a monitor holds ``ready`` low). A driver never
withdraws ``valid`` before its beat was taken.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
from collections.abc import Iterator

from cocotb.handle import Immediate

__all__ = ["no_pause", "cycle_pause", "random_pause", "bursty_pause", "make_pause",
           "StreamDriver", "StreamMonitor", "read_int", "fast_reader", "fast_writer"]


def no_pause() -> Iterator[bool]:
    """Never pause."""
    return itertools.repeat(False)


def cycle_pause(pattern) -> Iterator[bool]:
    """Repeat a fixed pattern, e.g. ``[0, 0, 1]`` pauses every third cycle."""
    return itertools.cycle([bool(p) for p in pattern])


def random_pause(p: float, seed: int = 0) -> Iterator[bool]:
    """Pause each cycle with probability ``p``."""
    rng = random.Random(seed)
    while True:
        yield rng.random() < p


def bursty_pause(run: int, gap: int, seed: int | None = None) -> Iterator[bool]:
    """Alternate ``run`` active cycles and ``gap`` paused ones; with ``seed``, random lengths up to
    those values (at least 1 each)."""
    rng = random.Random(seed)
    while True:
        for _ in range(run if seed is None else rng.randint(1, run)):
            yield False
        for _ in range(gap if seed is None else rng.randint(1, gap)):
            yield True


def make_pause(spec: str, seed: int = 0) -> Iterator[bool]:
    """Pause generator from a short text spec (used by environment knobs).

    ``none``; ``random:P`` (probability); ``bursty:RUN:GAP`` (fixed); ``rbursty:RUN:GAP`` (random
    lengths); ``cycle:0010`` (pattern, 1 = pause).

    Raises
    ------
    ValueError
        For an unknown spec, naming the accepted forms.
    """
    kind, _, arg = spec.partition(":")
    if kind == "none":
        return no_pause()
    if kind == "random":
        return random_pause(float(arg), seed)
    if kind in ("bursty", "rbursty"):
        run, gap = (int(v) for v in arg.split(":"))
        return bursty_pause(run, gap, seed if kind == "rbursty" else None)
    if kind == "cycle":
        return cycle_pause([c == "1" for c in arg])
    raise ValueError(f"unknown pause spec {spec!r}; use none, random:P, bursty:RUN:GAP, "
                     "rbursty:RUN:GAP or cycle:PATTERN")


def read_int(handle) -> int:
    """Integer value of a signal (any width); raises ``ValueError`` on X/Z bits."""
    return int(handle.value)


#: Direct simulator-object reads and immediate writes (``MU_FAST_IO=1``); off by default until
#: measured on an idle machine (the default path uses cocotb's public ``.value``).
FAST_IO = os.environ.get("MU_FAST_IO", "0") == "1"


def fast_reader(handle):
    """A zero-argument callable reading ``handle`` as an unsigned int, bypassing ``LogicArray``.

    cocotb's ``handle.value`` builds a ``LogicArray`` per read (several microseconds); the matrix
    unit's testbench reads a few signals every cycle, so it reads the simulator object directly
    (X/Z bits raise ``ValueError`` through ``int(..., 2)``). Falls back to :func:`read_int`.
    """
    raw = getattr(handle, "_handle", None)
    if not FAST_IO or raw is None or not hasattr(raw, "get_signal_val_binstr"):
        return lambda: read_int(handle)
    if len(handle) <= 32 and hasattr(raw, "get_signal_val_long"):
        return raw.get_signal_val_long
    get = raw.get_signal_val_binstr
    return lambda: int(get(), 2)


def fast_writer(handle):
    """A one-argument callable writing an int to ``handle`` at once (``Immediate``).

    Immediate writes skip cocotb's per-time-step ReadWrite callback; the testbench only writes
    inputs at clock edges it has already passed, so the ordering is the same.
    """
    def write(value, _h=handle):
        _h.set(Immediate(value))

    def deposit(value, _h=handle):
        _h.value = value

    return write if FAST_IO else deposit


class StreamDriver:
    """Drives a stream sink port of the design (the design receives): ``<name>__payload``,
    ``<name>__valid``; reads ``<name>__ready``.

    Parameters
    ----------
    dut : cocotb handle
    name : str
        Stream member name (``x``).
    beats : list of int
        Payloads to send, in order (already packed).
    pause : iterator of bool, optional
        Pause generator (default: never).

    Attributes
    ----------
    sent : int
        Beats transferred so far.
    fired : bool
        Whether the most recent sampled edge transferred a beat.
    """

    def __init__(self, dut, name: str, beats: list, pause: Iterator[bool] | None = None):
        self.log = logging.getLogger(f"cocotb.tb.{name}.driver")
        self.payload = fast_writer(getattr(dut, f"{name}__payload"))
        self.valid_h = fast_writer(getattr(dut, f"{name}__valid"))
        self.ready_h = fast_reader(getattr(dut, f"{name}__ready"))
        self.beats = beats
        self.pause = pause or no_pause()
        self.sent = 0
        self.valid = False
        self.fired = False
        self.valid_h(0)
        self._written_valid = False

    @property
    def done(self) -> bool:
        return self.sent >= len(self.beats)

    @property
    def head(self) -> int | None:
        """Payload on the port now (None if ``valid`` is low)."""
        return self.beats[self.sent] if self.valid else None

    def drive(self) -> None:
        """After a rising edge: retire a transferred beat, present the next one unless paused."""
        if self.fired:
            self.sent += 1
            self.valid = False
            self.fired = False
        paused = next(self.pause)
        if not self.valid and not paused and self.sent < len(self.beats):
            self.payload(self.beats[self.sent])
            self.valid = True
        if self.valid != self._written_valid:
            self.valid_h(int(self.valid))
            self._written_valid = self.valid

    def sample(self) -> bool:
        """At the falling edge: will the next rising edge transfer the presented beat?"""
        self.fired = self.valid and bool(self.ready_h())
        return self.fired


class StreamMonitor:
    """Receives a stream source port of the design: reads ``<name>__valid``/``__payload``, drives
    ``<name>__ready`` from a pause generator.

    Attributes
    ----------
    received : list of int
        Payloads received, in order.
    backpressured : int
        Cycles with ``valid`` high and ``ready`` low (what the design's ``stall_y`` should count).
    """

    def __init__(self, dut, name: str, pause: Iterator[bool] | None = None, callback=None):
        self.log = logging.getLogger(f"cocotb.tb.{name}.monitor")
        self.payload = fast_reader(getattr(dut, f"{name}__payload"))
        self.valid_h = fast_reader(getattr(dut, f"{name}__valid"))
        self.ready_h = fast_writer(getattr(dut, f"{name}__ready"))
        self.pause = pause or no_pause()
        self.callback = callback
        self.received: list[int] = []
        self.ready = False
        self.valid = False
        self.backpressured = 0
        self.ready_h(0)
        self._written = False

    def drive(self) -> None:
        """After a rising edge: set ``ready`` for this cycle."""
        self.ready = not next(self.pause)
        if self.ready != self._written:
            self.ready_h(int(self.ready))
            self._written = self.ready

    def step(self) -> bool:
        """One-trigger-per-cycle mode, at the falling edge: choose ``ready`` for the coming rising
        edge and capture the beat that edge transfers (``valid`` and ``payload`` are registered
        outputs, already stable for that edge)."""
        self.drive()
        return self.sample()

    def sample(self, count: bool = True) -> bool:
        """At the falling edge: capture a beat if ``valid`` and ``ready``; return whether one was."""
        self.valid = bool(self.valid_h())
        if not self.valid:
            return False
        if not self.ready:
            self.backpressured += count
            return False
        beat = self.payload()
        self.received.append(beat)
        if self.callback is not None:
            self.callback(beat)
        return True
