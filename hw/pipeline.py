"""Where pipeline registers go: the shared vocabulary of the pipelined datapaths' default placements.

The arithmetic blocks follow one shape (HardFloat's): operands -> an exact raw result (built by a
reduction tree) -> normalize -> round and pack (or accumulate). A pipeline register can sit at one of
the :class:`Cut` positions along it, and a block's :class:`Placement` says which positions its
``stages`` registers fill, in order of preference (fpnew's before / after / inside / distributed
placement). :meth:`Placement.plan` gives the positions of ``stages`` registers; the block then puts
them there, and its latency is ``stages``.

========================  =====================================================================
block                     placement for ``stages`` = 1, 2, 3, 4, ...
========================  =====================================================================
matrix-unit column        NORM; + RAW; then TREE cuts spread evenly between the Dadda stages
(``exact`` accumulate)    RAW (the tree's two carry-save rows); then TREE cuts spread evenly
BF16 multiplier           OUTPUT; + RAW; + INPUT; then more OUTPUT registers (for retiming)
FP32 adder (slice)        RAW (the exact sum); + NORM; + TREE (after the alignment, the first of
                          the exact sum's two steps); + INPUT; at most 4
========================  =====================================================================
"""

import enum
from collections import Counter
from dataclasses import dataclass

__all__ = ["Cut", "Placement", "COLUMN", "EXACT_COLUMN", "BF16_MUL", "FP32_ADD", "spread"]


class Cut(enum.IntEnum):
    """A register position along the datapath; the values order them input to output."""

    #: On the operands.
    INPUT = 0
    #: Between stages of the reduction tree that forms the exact result (spread with :func:`spread`).
    TREE = 1
    #: On the exact raw result (the product record, the tree's sum).
    RAW = 2
    #: On the normalized raw result, before rounding or accumulation.
    NORM = 3
    #: On the rounded result.
    OUTPUT = 4


@dataclass(frozen=True)
class Placement:
    """The order in which a block's pipeline registers are placed.

    Parameters
    ----------
    order : tuple of Cut
        Positions taken by the first ``len(order)`` registers, one each, first preference first.
    extra : Cut
        Where every register beyond those goes.
    """

    order: tuple
    extra: Cut

    def plan(self, stages: int) -> tuple:
        """Positions of ``stages`` registers, input to output (a position may repeat).

        Raises
        ------
        ValueError
            If ``stages`` is negative.
        """
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 0:
            raise ValueError(f"stages must be an integer >= 0, not {stages!r}")
        cuts = list(self.order[:stages]) + [self.extra] * max(0, stages - len(self.order))
        return tuple(sorted(cuts))

    def count(self, stages: int) -> Counter:
        """Registers at each position for ``stages`` registers."""
        return Counter(self.plan(stages))


#: The matrix unit's column: normalize register first, then the tree's output, then inside the tree.
COLUMN = Placement(order=(Cut.NORM, Cut.RAW), extra=Cut.TREE)
#: The column in the ``exact`` accumulate mode: the tree's carry-save rows go straight into the
#: accumulator's integer loop (no sum to normalize), so the first register holds the two rows and the
#: rest go inside the tree.
EXACT_COLUMN = Placement(order=(Cut.RAW,), extra=Cut.TREE)
#: The BF16 multiplier: after the rounder, on the raw product, on the inputs, then more outputs.
BF16_MUL = Placement(order=(Cut.OUTPUT, Cut.RAW, Cut.INPUT), extra=Cut.OUTPUT)
#: The FP32 adder: on the exact sum, after the normalization, after the alignment, on the operands
#: (one register at each; the adder takes at most ``len(order)``).
FP32_ADD = Placement(order=(Cut.RAW, Cut.NORM, Cut.TREE, Cut.INPUT), extra=Cut.OUTPUT)


def spread(count: int, levels: int) -> tuple:
    """``count`` register positions spread evenly after stages 1..``levels`` of a ``levels``-stage
    tree (distinct while ``count <= levels``): the cuts ``i * (levels + 1) // (count + 1)``."""
    return tuple((i * (levels + 1)) // (count + 1) for i in range(1, count + 1))
