"""``python -m flows qor`` (``make qor``): synthesize every width and format, then write the report.

The sweep is every accumulate mode x study width (``hw.designs.STUDY_WIDTHS``) x matrix format
(``hw.formats.MATRIX_FORMATS``), plus the block-scaled formats of
:data:`flows.qor_plan.QOR_BLOCK_FORMATS` in the ``fp32`` mode, each at the pipeline stages
:mod:`flows.qor_plan` gives it, plus
the BF16 multiplier architectures, run by
:mod:`flows.sweep.runner` (local pool or Ray, cached by content hash so a rerun only synthesizes
what changed) into the committed ``reports/qor/<variant>/``, followed by :mod:`flows.report.qor`,
which writes ``reports/qor_comparison.md`` and ``reports/plots/qor_*.png``. Failed points are
listed and the report says "not measured yet" for them; the exit status is 1 when any point failed.

Every published point is cross-checked: OpenSTA times the same repaired netlist (flat, or the
composed hierarchy) under our STA's assumptions (:mod:`flows.sweep.opensta`), both critical paths
go into its ``metrics.json`` and the report's signoff table, and a difference beyond 2% fails the
point. ``--no-opensta`` skips the check; ``--opensta-only`` runs only the check, on every published
point from the netlists its run left in ``build/qor/<run>/``, then writes the report.

Examples::

    make qor JOBS=2
    python -m flows qor --widths 32 --formats fp8_e4m3 --no-bf16     # both modes, then the report
    python -m flows qor --widths 32 --acc exact --no-bf16            # one mode
    python -m flows qor --opensta-only                                # re-check, no synthesis
    RAY_ADDRESS=ray://head:10001 python -m flows qor --executor ray
"""

import argparse
import sys

from hw.designs import STUDY_WIDTHS

from ..qor_plan import DEFAULT_STAGES, QOR_ACC_MODES, QOR_FORMATS, qor_points
from ..report import qor as report_qor
from .cli import add_run_args, clock_from_env, run_from_cli
from .runner import Job
from .synth_jobs import synth_jobs

__all__ = ["qor_jobs", "main", "BF16_ARCHS"]

#: BF16 multiplier points: (arch, use Yosys's own ``synth -booth``), combinational, subnormals on.
BF16_ARCHS = (("behavioral", False), ("booth4", False), ("behavioral", True))


def _csv(text, conv=str):
    return tuple(conv(t) for t in text.split(",") if t.strip()) if text else ()


def qor_jobs(widths=STUDY_WIDTHS, formats=QOR_FORMATS, bf16=True, liberty=None,
             clock_ps=None, modes=QOR_ACC_MODES, opensta=True) -> list:
    """The sweep's jobs, cheapest first (small widths, then larger; BF16 multipliers first).

    Every job publishes its reports under ``reports/qor/`` and, with ``opensta``, cross-checks its
    point with OpenSTA. A matrix-unit job names its width, format and accumulate mode (the
    registry's default mode depends on the format) and its stages where they differ from the
    generator's default.
    """
    jobs = []
    if bf16:
        for arch, booth in BF16_ARCHS:
            for j in synth_jobs("bf16_mul", {"arch": [arch], "stages": [0]}, liberty, clock_ps, True,
                                opensta):
                if booth:
                    j = Job(j.name + "-ysbooth", j.func, dict(j.kwargs, booth=True), j.inputs,
                                  j.exclude)
                jobs.append(j)
    for acc, d, fmt, stages in qor_points(widths, formats, modes):
        grid = {"width": [d], "fmt": [fmt], "acc": [acc]}
        if stages != DEFAULT_STAGES:
            grid["stages"] = [stages]
        jobs += synth_jobs("mu", grid, liberty, clock_ps, True, opensta)
    return jobs


def main(argv=None) -> int:
    """Run the QoR sweep and write the cross-width report."""
    p = argparse.ArgumentParser(prog="python -m flows qor", description=__doc__.split("\n\n")[0])
    p.add_argument("--widths", default=",".join(map(str, STUDY_WIDTHS)),
                   help="matrix-unit widths, comma separated (default: %(default)s)")
    p.add_argument("--formats", default=",".join(QOR_FORMATS),
                   help="element and block-scaled formats, comma separated (default: %(default)s)")
    p.add_argument("--acc", default=",".join(QOR_ACC_MODES),
                   help="accumulate modes, comma separated (default: %(default)s)")
    p.add_argument("--no-bf16", action="store_true", help="leave out the BF16 multiplier points")
    p.add_argument("--report-only", action="store_true", help="only regenerate the report from metrics")
    p.add_argument("--no-opensta", action="store_true",
                   help="skip the OpenSTA cross-check of each point (Debian package opensta)")
    p.add_argument("--opensta-only", action="store_true",
                   help="only cross-check every published point with OpenSTA (from the netlists under "
                   "build/qor/, no synthesis), then regenerate the report")
    p.add_argument("--points", default="",
                   help="with --opensta-only: only these report folders, comma separated "
                   "(e.g. mu-w32-fp8_e4m3-xacc-osu018; default: every published point)")
    p.add_argument("--liberty", default=None, help="liberty file (default: the flow's: $LIBERTY, OSU 0.18um)")
    p.add_argument("--clock-ps", default=None,
                   help="target period for ABC in ps (default: none; $CLOCK_PS is not read, so the "
                   "committed study stays unconstrained)")
    add_run_args(p)
    a = p.parse_args(argv)
    rc = 0
    if a.opensta_only and (a.report_only or a.no_opensta):
        p.error("--opensta-only runs the cross-check: it excludes --report-only and --no-opensta")
    if a.opensta_only:
        from .opensta import check_published

        rc = check_published(names=_csv(a.points))
        if rc == 2:
            return rc
    elif not a.report_only:
        rc = run_from_cli(
            "python -m flows qor",
            lambda: qor_jobs(_csv(a.widths, int), _csv(a.formats), not a.no_bf16, a.liberty,
                             clock_from_env(a.clock_ps), _csv(a.acc), not a.no_opensta),
            a, "rerun to continue, or --report-only for a report of what exists")
        if rc in (2, 130):
            return rc
    rrc = report_qor.main([])
    return rc or rrc


if __name__ == "__main__":
    sys.exit(main())
