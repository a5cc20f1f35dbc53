"""Synthesis jobs for :func:`flows.sweep.runner.run`: one flow run per design variant.

A job's cache key covers the bytes of its inputs (:func:`synth_inputs`): the package holding the
design's generator, the shared ``hw/*.py`` modules, and the synthesis flow (:func:`flow_inputs`:
every file of ``flows/synth/`` plus the ``flows`` modules it imports, found by reading their
imports), so editing a report, the sweep or the gate leaves cached syntheses valid while any edit
of the flow or the generator reruns them.
"""

import ast
import functools
import itertools
import json
import os
from pathlib import Path

from ..paths import PUBLISHED_QOR, REPO, USER_QOR
from .runner import Job

__all__ = ["synth_job", "synth_jobs", "synth_inputs", "flow_inputs", "liberty_input", "SYNTH_FUNC"]

#: The worker function of a synthesis job.
SYNTH_FUNC = "flows.sweep.synth_jobs:synth_job"


def _flows_imports(path: Path) -> set:
    """Top-level ``flows`` modules or packages (``flows.paths``) a file imports, relative or absolute."""
    pkg = path.relative_to(REPO).with_suffix("").parts[:-1]   # ("flows", "synth")
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = list(pkg[:len(pkg) - node.level + 1]) if node.level else []
            mod = base + (node.module.split(".") if node.module else [])
            names = [".".join(mod + [a.name]) for a in node.names] if not node.module else [".".join(mod)]
        else:
            continue
        for n in names:
            parts = n.split(".")
            if parts[0] == "flows" and len(parts) > 1:
                out.add(parts[1])
    return out


@functools.cache
def flow_inputs() -> tuple:
    """Repository-relative paths of the synthesis flow: ``flows/synth`` and what it imports in ``flows``."""
    todo, seen = ["synth"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        p = REPO / "flows" / name
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p.with_suffix(".py")]
        for f in files:
            if f.is_file():
                todo += sorted(_flows_imports(f) - seen)
    out = []
    for name in sorted(seen):
        p = REPO / "flows" / name
        out.append(f"flows/{name}" if p.is_dir() else f"flows/{name}.py")
    return tuple(out)


def synth_inputs(design, root: Path = REPO) -> tuple:
    """Cache inputs of a synthesis of ``design`` (a :class:`hw.designs.Design`).

    The package holding its generator (``hw/mu`` for ``hw.mu.matrix_unit:MatrixUnit``), the shared
    ``hw/*.py`` modules and :func:`flow_inputs`; other generators' edits leave its results valid.
    """
    pkg = design.factory.split(":")[0].rsplit(".", 1)[0].replace(".", "/")
    if pkg == "hw" or not (root / pkg).is_dir():
        return ("hw",) + flow_inputs()
    shared = tuple(sorted(str(f.relative_to(root)) for f in (root / "hw").glob("*.py")))
    return (pkg,) + shared + flow_inputs()


def synth_job(design: str, params: dict, liberty: str | None = None, clock_ps: float | None = None,
              booth: bool = False, publish: bool = False) -> dict:
    """Worker side of a synthesis job: run the QoR flow on one variant, return its metrics and files.

    ``publish`` writes the reports under the committed ``reports/qor/`` (``make qor``), else under
    ``build/reports/qor/``.

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
               publish: bool = False) -> list[Job]:
    """One synthesis :class:`Job` per point of the cross product ``grid`` (option -> values).

    Raises
    ------
    hw.designs.OptionError
        An unknown design, option or value (the registry's message).
    """
    from hw.designs import get_design

    d = get_design(design)
    liberty, lib_input = liberty_input(liberty)
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
        jobs.append(Job(d.variant(parsed), SYNTH_FUNC, kwargs, inputs=synth_inputs(d) + lib_input))
    return jobs
