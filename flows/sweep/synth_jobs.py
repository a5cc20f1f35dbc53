"""Synthesis jobs for :func:`flows.sweep.runner.run`: one flow run per design variant.

A job's cache key covers the bytes of its inputs (:func:`synth_inputs`): every file the design's
generator and the synthesis flow import (their import closure, :func:`flows.deps.closure`), so
editing a report, the sweep, the gate or another generator leaves cached syntheses valid while any
edit of the flow or of a module the generator uses reruns them.
"""

import itertools
import json
import os
from pathlib import Path

from ..deps import closure
from ..paths import PUBLISHED_QOR, REPO, USER_QOR
from .runner import Job

__all__ = ["synth_job", "synth_jobs", "synth_inputs", "liberty_input", "SYNTH_FUNC", "SYNTH_FLOW", "REGISTRY",
           "CROSSCHECK"]

#: The worker function of a synthesis job.
SYNTH_FUNC = "flows.sweep.synth_jobs:synth_job"
#: The module that runs a synthesis.
SYNTH_FLOW = "flows.synth.flow"
#: The OpenSTA cross-check a job runs after synthesis with ``opensta=True``.
CROSSCHECK = "flows.sweep.opensta"
#: The design registry: it names every generator, a job builds one (see ``menus`` of
#: :func:`flows.deps.closure`).
REGISTRY = "hw.designs"


def synth_inputs(design, root: Path = REPO) -> tuple:
    """Cache inputs of a synthesis of ``design`` (a :class:`hw.designs.Design`): the import closure
    (:func:`flows.deps.closure`) of its generator and of the synthesis flow, without the other
    generators the registry names, so their edits leave its results valid."""
    return closure(design.factory, SYNTH_FLOW, root=root, menus=(REGISTRY,))


def synth_job(design: str, params: dict, liberty: str | None = None, clock_ps: float | None = None,
              booth: bool = False, publish: bool = False, opensta: bool = False) -> dict:
    """Worker side of a synthesis job: run the QoR flow on one variant, return its metrics and files.

    ``publish`` writes the reports under the committed ``reports/qor/`` (``make qor``), else under
    ``build/reports/qor/``. ``opensta`` cross-checks the point with OpenSTA
    (:func:`flows.sweep.opensta.check_point`: its numbers go into ``metrics.json``, a difference
    beyond the tolerance fails the job).

    Returns
    -------
    dict
        ``metrics`` (the flow's metrics dict), ``variant``, ``outdir`` (relative) and ``_files``:
        the text outputs of the report folder, so the driver has them even after a remote run.
    """
    from ..synth.flow import run

    out = run(design, params, liberty=liberty, clock_ps=clock_ps, booth=booth,
              reports_dir=PUBLISHED_QOR if publish else USER_QOR)
    outdir = Path(out.outdir).resolve()
    if opensta:
        from .opensta import check_point

        check_point(outdir, work=out.work)
        out.metrics = json.loads((outdir / "metrics.json").read_text())
    files = {}
    for f in sorted(outdir.iterdir()):
        if f.is_file() and f.stat().st_size < 20_000_000:
            try:
                files[str(f.relative_to(REPO))] = f.read_text()
            except (UnicodeDecodeError, ValueError):
                continue
    rel = str(outdir.relative_to(REPO)) if outdir.is_relative_to(REPO) else str(outdir)
    return {"metrics": out.metrics, "variant": outdir.name, "outdir": rel, "_files": files}


def liberty_input(liberty: str | None) -> tuple:
    """The liberty a job runs with and its cache input: the flow reads ``$LIBERTY`` when no liberty is
    given, so it becomes part of the job, and the file's bytes part of its cache key (``()`` for the
    default liberty of the flow)."""
    liberty = liberty or os.environ.get("LIBERTY") or None
    return liberty, ((str(Path(liberty).resolve()),) if liberty and Path(liberty).is_file() else ())


def synth_jobs(design: str, grid: dict, liberty: str | None = None, clock_ps: float | None = None,
               publish: bool = False, opensta: bool = False) -> list[Job]:
    """One synthesis :class:`Job` per point of the cross product ``grid`` (option -> values);
    ``opensta``: each job cross-checks its point with OpenSTA (:mod:`flows.sweep.opensta`, whose
    import closure joins the cache key).

    Raises
    ------
    hw.designs.OptionError
        An unknown design, option or value (the registry's message).
    """
    from hw.designs import get_design

    d = get_design(design)
    liberty, lib_input = liberty_input(liberty)
    extra = (tuple(f for f in closure(CROSSCHECK, menus=(REGISTRY,)) if f not in synth_inputs(d))
             if opensta else ())
    keys = list(grid)
    jobs = []
    for values in itertools.product(*(grid[k] for k in keys)):
        # Strings, so that the registry parses and validates them (it passes non-strings through).
        given = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in zip(keys, values, strict=True)}
        given = {k: ("on" if v == "true" else "off" if v == "false" else v) for k, v in given.items()}
        parsed = d.params(given)  # validates early, with the registry's messages
        kwargs = {"design": design, "params": {k: parsed[k] for k in keys}, "liberty": liberty,
                  "clock_ps": clock_ps}
        if publish:
            kwargs["publish"] = True
        if opensta:
            kwargs["opensta"] = True
        jobs.append(Job(d.variant(parsed), SYNTH_FUNC, kwargs, inputs=synth_inputs(d) + extra + lib_input))
    return jobs
