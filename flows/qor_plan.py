"""Which matrix-unit points the QoR study measures: every accumulate mode, width and format, each at
the column pipeline depth (``stages``) it needs.

One table, read by the sweep (:mod:`flows.sweep.qor`, which synthesizes these points) and by the
report (:mod:`flows.report.qor`, which picks these points out of the measured ones), so the two
cannot drift apart. Each point's stages are the recommended unit's, the registry's default
(:func:`hw.mu.numerics.default_stages`: in the ``exact`` mode the fewest that meet its goals,
:data:`EXACT_GOAL_PS`, :data:`EXACT_AREA_GOAL`, which the QoR report marks met or missed; the
``fp32`` mode at the generator's usual 2, since its single-cycle accumulate loop sets its clock
whatever the stages).
"""

from hw.designs import ACC_MODES, STUDY_WIDTHS
from hw.formats import BLOCK_FORMATS, FORMATS, MATRIX_FORMATS
from hw.mu.numerics import DEFAULT_STAGES, default_stages

__all__ = ["QOR_ACC_MODES", "QOR_BLOCK_FORMATS", "QOR_FORMATS", "DEFAULT_STAGES",
           "EXACT_BLOCK_FORMATS", "EXACT_GOAL_PS", "EXACT_AREA_GOAL", "qor_stages", "in_study",
           "qor_points"]

#: Accumulate modes in the study, the contract's default first.
QOR_ACC_MODES = ACC_MODES
#: Block-scaled formats in the study: every one the generator builds, measured with ``fp32``
#: accumulation.
QOR_BLOCK_FORMATS = tuple(BLOCK_FORMATS)
#: Block-scaled formats the study also measures in the ``exact`` mode (NVFP4 on a fixed-point grid,
#: OCP MX in the window of ``hw/mu/window.py``): all of them.
EXACT_BLOCK_FORMATS = QOR_BLOCK_FORMATS
#: Every format of the study: the element formats, then the block-scaled ones.
QOR_FORMATS = MATRIX_FORMATS + QOR_BLOCK_FORMATS
#: ``exact`` mode's critical-path goal per format (ps), at every study width.
EXACT_GOAL_PS = {"fp8_e4m3": 5300, "fp8_e5m2": 6500, "fp4_e2m1": 4500}
#: ``exact`` mode's area goal: at most this times the ``fp32`` unit's at the same width and format.
EXACT_AREA_GOAL = 1.15


def qor_stages(acc: str, fmt: str, width: int) -> int:
    """Column pipeline stages of the study's point ``(acc, fmt, width)``.

    Raises
    ------
    ValueError
        An unknown accumulate mode (the message lists the known ones).
    """
    if acc not in QOR_ACC_MODES:
        raise ValueError(f"acc must be one of {', '.join(QOR_ACC_MODES)}, not {acc!r}")
    return default_stages(width, fmt, acc)


def in_study(acc: str, fmt: str) -> bool:
    """Whether the study measures format ``fmt`` in mode ``acc``: block formats in ``fp32``, and in
    ``exact`` those of :data:`EXACT_BLOCK_FORMATS`, integers in
    ``exact`` only (their dot product is exact, so the mode that keeps it exact is theirs; the unit
    builds them in ``fp32`` too, with its own tests)."""
    if fmt in BLOCK_FORMATS:
        return acc == "fp32" or fmt in EXACT_BLOCK_FORMATS
    f = FORMATS.get(fmt)  # an unknown name is the sweep's to refuse, with its message
    return acc == "exact" or f is None or not f.is_integer


def qor_points(widths=STUDY_WIDTHS, formats=QOR_FORMATS, modes=QOR_ACC_MODES) -> list:
    """The study's matrix-unit points as ``(acc, width, fmt, stages)``, smallest width first (which
    modes a format is measured in: :func:`in_study`)."""
    return [(acc, d, f, qor_stages(acc, f, d)) for d in sorted(widths) for acc in modes
            for f in formats if in_study(acc, f)]
