"""Pause generators (the cocotbext-axi convention) for stream sources and sinks.

A pause generator is an iterator yielding one truthy value per clock cycle in which the component
pauses: a source does not start a new beat, a sink holds ``ready`` low. Plain Python, no simulator:
the replay API builds them from text specs in the test process (:func:`make_pause`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

__all__ = ["no_pause", "cycle_pause", "random_pause", "bursty_pause", "make_pause"]


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
