"""Stream source and sink for ``amaranth.lib.stream`` ports, in the cocotbext-axi style.

A :class:`StreamSource` sends beats into a port where the design receives (it drives
``<name>__payload`` and ``<name>__valid``, reads ``<name>__ready``); a :class:`StreamSink` takes
beats from a port where the design sends (reads ``valid``/``payload``, drives ``ready``). Both take
a pause generator (:mod:`tb.lib.pause`). They never await anything: the clocked loop
(:class:`tb.lib.clocked.Clocked`) calls ``drive()`` at every falling edge and ``sample()`` when the
values the next rising edge sees have settled, which is the project's one clock-edge rule.

Payloads are ints on the port; tests build and read them through the hardware's own layouts
(:func:`hw.payload.pack`, :func:`hw.payload.unpack`), never by bit arithmetic. A source never
withdraws ``valid`` before its beat was taken.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from .clocked import write
from .pause import no_pause

__all__ = ["StreamSource", "StreamSink", "read_int"]


def read_int(handle) -> int:
    """Integer value of a signal (any width); raises ``ValueError`` on X/Z bits.

    Parses the simulator's binary string directly: building a ``LogicArray`` first (what
    ``int(handle.value)`` does) costs about 10x more, over 100 us for a 2048-bit ``y`` payload.
    """
    raw = getattr(handle, "_handle", None)
    if raw is None or not hasattr(raw, "get_signal_val_binstr"):
        return int(handle.value)
    return int(raw.get_signal_val_binstr(), 2)


class StreamSource:
    """Sends beats into a stream port of the design.

    Parameters
    ----------
    dut : cocotb handle
    name : str
        Stream member name (``x`` for ``x__payload``/``x__valid``/``x__ready``).
    beats : list
        Payload integers to send, in order.
    pause : iterator of bool, optional
        Pause generator (default: never).

    Attributes
    ----------
    sent : int
        Beats transferred so far.
    paused : int
        Cycles the pause generator held a beat back (beats left, ``valid`` low).
    valid : bool
        ``valid`` as driven this cycle.
    fired : bool
        Whether the coming rising edge transfers the presented beat (set by :meth:`sample`, or by
        a testbench that learns transfers from the design's own registered record).
    """

    def __init__(self, dut, name: str, beats: list, pause: Iterator[bool] | None = None):
        self.log = logging.getLogger(f"cocotb.tb.{name}.source")
        self._payload = getattr(dut, f"{name}__payload")
        self._valid = getattr(dut, f"{name}__valid")
        self._ready = getattr(dut, f"{name}__ready")
        self.beats = beats
        self.pause = pause or no_pause()
        self.sent = 0
        self.paused = 0
        self.valid = self.fired = False
        self._written_valid = None

    @property
    def done(self) -> bool:
        return self.sent >= len(self.beats)

    @property
    def head(self):
        """Beat on the port now (None if ``valid`` is low)."""
        return self.beats[self.sent] if self.valid else None

    def drive(self) -> None:
        """At a falling edge: retire a transferred beat, present the next one unless paused."""
        if self.fired:
            self.sent += 1
            self.valid = self.fired = False
        paused = next(self.pause)
        if not self.valid and self.sent < len(self.beats):
            if paused:
                self.paused += 1
            else:
                write(self._payload, self.beats[self.sent])
                self.valid = True
        if self.valid is not self._written_valid:
            write(self._valid, self.valid)
            self._written_valid = self.valid

    def sample(self) -> bool:
        """Settled before a rising edge: will it transfer the presented beat?"""
        self.fired = self.valid and bool(read_int(self._ready))
        return self.fired


class StreamSink:
    """Takes beats from a stream port of the design, ``ready`` from a pause generator.

    Parameters
    ----------
    dut : cocotb handle
    name : str
        Stream member name.
    pause : iterator of bool, optional
        Pause generator (default: never).
    callback : callable, optional
        Called with every received beat.

    Attributes
    ----------
    received : list
        Payload integers received, in order.
    valid, fired : bool
        ``valid`` seen and whether a beat transfers, at the last :meth:`sample`.
    backpressured : int
        Samples with ``valid`` high and ``ready`` low (what a ``stall``-type counter counts).
    """

    def __init__(self, dut, name: str, pause: Iterator[bool] | None = None, callback=None):
        self.log = logging.getLogger(f"cocotb.tb.{name}.sink")
        self._payload = getattr(dut, f"{name}__payload")
        self._valid = getattr(dut, f"{name}__valid")
        self._ready = getattr(dut, f"{name}__ready")
        self.pause = pause or no_pause()
        self.callback = callback
        self.received: list = []
        self.ready = self.valid = self.fired = False
        self.backpressured = 0
        self._written = None

    def drive(self) -> None:
        """At a falling edge: set ``ready`` for the next rising edge."""
        self.ready = not next(self.pause)
        if self.ready is not self._written:
            write(self._ready, self.ready)
            self._written = self.ready

    def sample(self) -> bool:
        """Before a rising edge: capture the beat it transfers (``valid`` and ``ready``), if any.

        ``valid`` never depends on ``ready`` (the stream rule), so a registered ``valid`` may be
        sampled right after :meth:`drive`, without settling.
        """
        self.valid = bool(read_int(self._valid))
        self.fired = self.valid and self.ready
        if not self.valid:
            return False
        if not self.ready:
            self.backpressured += 1
            return False
        beat = read_int(self._payload)
        self.received.append(beat)
        if self.callback is not None:
            self.callback(beat)
        return True
