"""The slice's loop nest, stepped in hardware: one helper for every engine that walks it.

Every engine of the slice walks (part of) one loop nest over a command's tiles::

    for pass in 0 .. ceil(M / rows) - 1:          # rows activation rows share one weight stream
        for g in 0 .. ceil(N / (units*D)) - 1:   # a group: one N-tile per unit
            <inner levels of the engine>         # bytes of a group, k-tiles, rows, units

and keeps its position in registers of its own (counters, addresses). :func:`advance` writes the
step from one iteration to the next, for any nest: the innermost level that has another iteration
takes it, every level inside it goes back to its start, and after the last iteration of the
outermost level the engine is done.

========================  ===================================================================
engine                    levels, innermost first (then: the pass level, ``last`` -> done)
========================  ===================================================================
``RequestGenerator``      bursts of a group, groups
``Gearbox`` (input)       beats of a group, groups
``Gearbox`` (output)      super-rows (k) of a group, groups
``ActivationIssue``       rows of a pass, k-tiles, groups
``WriteBack``             units, rows of a pass, groups
========================  ===================================================================
"""

from dataclasses import dataclass, field

__all__ = ["Level", "advance"]


@dataclass
class Level:
    """One loop of a nest.

    Attributes
    ----------
    more : value-like
        This loop has another iteration after the current one.
    step : list of statements
        Synchronous updates that move to that next iteration.
    wrap : list of statements
        Synchronous updates that move back to the loop's first iteration (the next outer loop
        steps in the same cycle).
    """

    more: object
    step: list = field(default_factory=list)
    wrap: list = field(default_factory=list)


def advance(m, levels, *, last, done) -> None:
    """Step a loop nest by one iteration (call it under the condition that moves the engine on).

    Parameters
    ----------
    m : Module
    levels : list of Level
        Innermost first. The outermost loop's own step belongs in the ``wrap`` of the level inside
        it (it is taken whenever that level wraps).
    last : value-like
        The outermost loop is at its last iteration (tested when every level wraps).
    done : list of statements
        Synchronous updates after the nest's last iteration (e.g. ``busy`` low).
    """
    level, inner = levels[0], levels[1:]
    with m.If(level.more):
        m.d.sync += level.step
    with m.Else():
        m.d.sync += level.wrap
        if inner:
            advance(m, inner, last=last, done=done)
        else:
            with m.If(last):
                m.d.sync += done
