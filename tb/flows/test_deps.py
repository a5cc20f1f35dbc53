"""Cache keys from import closures (:mod:`flows.deps`): the reader on a small tree, the closures
against what Python really loads, and every job's key against edits of every repository file."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flows import deps
from flows.explore.jobs import energy_inputs, energy_job_for, verify_inputs, verify_job_for
from flows.paths import REPO
from flows.sweep import cli
from flows.sweep.runner import job_key
from flows.sweep.synth_jobs import synth_inputs, synth_jobs
from hw.designs import get_design

pytestmark = pytest.mark.quick


def _tree(root, files: dict):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def test_reader_follows_every_kind_of_import(tmp_path):
    _tree(tmp_path, {
        "hw/__init__.py": "",
        "hw/reg.py": 'import importlib\nGENS = ["hw.gen.a:A", "hw.gen.b:B"]\nDOC = "see hw.gen.c for more"\n',
        "hw/gen/__init__.py": "from .. import shared\n",
        "hw/gen/a.py": "from ..util import f\nfrom .helpers import *\n",
        "hw/gen/b.py": "import numpy\n",
        "hw/gen/c.py": "",
        "hw/gen/helpers.py": "def g():\n    from hw import late\n",
        "hw/util.py": "", "hw/shared.py": "", "hw/late.py": "", "hw/unused.py": "",
        "tb/__init__.py": "",
        "tb/run.py": 'import hw.reg\ncmd = ["python", "-m", "tb.stim"]\nx = "tb.nothere"\n',
        "tb/stim.py": "",
    })
    got = deps.closure("tb.run", root=tmp_path)
    assert got == ("hw/__init__.py", "hw/gen/__init__.py", "hw/gen/a.py", "hw/gen/b.py", "hw/gen/helpers.py",
                   "hw/late.py", "hw/reg.py", "hw/shared.py", "hw/util.py", "tb/__init__.py", "tb/run.py",
                   "tb/stim.py")
    # a menu's strings are not followed: the caller names the one generator it builds
    menu = deps.closure("tb.run", "hw.gen.b:B", root=tmp_path, menus=("hw.reg",))
    assert "hw/gen/a.py" not in menu and "hw/gen/b.py" in menu and "tb/stim.py" in menu
    # an edit that adds an import extends the closure (the per-process memo notices the edit)
    (tmp_path / "tb/stim.py").write_text("from hw import unused\n")
    assert "hw/unused.py" in deps.closure("tb.run", root=tmp_path)
    with pytest.raises(ModuleNotFoundError, match="'tb.nope' is not a module under .*e.g. tb.verify"):
        deps.closure("tb.nope", root=tmp_path)


def _loaded(code: str) -> set:
    """Repository files Python has loaded after running ``code`` in a fresh interpreter."""
    probe = code + textwrap.dedent("""
        import json, sys
        from pathlib import Path
        root = Path(sys.argv[1]).resolve()
        mods = list(sys.modules.values())
        files = [Path(m.__file__).resolve() for m in mods if getattr(m, "__file__", None)]
        print(json.dumps(sorted(str(f.relative_to(root)) for f in files if f.is_relative_to(root)
                                and ".venv" not in f.parts)))
    """)
    r = subprocess.run([sys.executable, "-c", probe, str(REPO)], cwd=REPO, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.splitlines()[-1]))


def test_closures_hold_what_python_loads():
    """Independent check: every repository module a real import (and a real build through the
    registry) loads is in the closure computed from the source."""
    loaded = _loaded("import tb.verify, tb.power_stim, flows.power.run\n")
    assert loaded <= set(verify_inputs("mu")) | set(energy_inputs())
    assert {"tb/verify.py", "hw/designs.py"} <= loaded
    built = _loaded("import flows.synth.flow\nfrom hw.designs import get_design\n"
                    "from hw import hier\nhier.emit(get_design('mu').build({'width': 8}), 'mu')\n")
    assert "hw/mu/matrix_unit.py" in built
    assert built <= set(synth_inputs(get_design("mu"))), built - set(synth_inputs(get_design("mu")))


def test_closures_name_the_modules_loaded_by_name():
    """Modules loaded by name (registry factories, cocotb test modules, ``python -m``) are in."""
    v = verify_inputs("mu")
    assert {"tb/mu/mu_cocotb.py", "hw/mu/matrix_unit.py", "hw/fp/add.py", "tb/lib/stream.py"} <= set(v)
    assert "tb/fp/bf16_mul_cocotb.py" in verify_inputs("bf16_mul") and "hw/slice/slice.py" not in v
    assert {"tb/power_stim.py", "flows/synth/flow.py", "tb/tiles/corpus.py"} <= set(energy_inputs())
    assert "tb/flows/explore_verify.py" in verify_inputs("mu", "tb.flows.explore_verify fake")
    mu, sl = synth_inputs(get_design("mu")), synth_inputs(get_design("slice"))
    assert "hw/slice/slice.py" not in mu and "hw/mu/matrix_unit.py" in sl and "flows/synth/sta.py" in mu
    assert not any(p.startswith(("tb/", "flows/report", "flows/sweep", "flows/explore")) for p in mu)


def _jobs():
    settings = {"workload": "random", "runs": 1, "sample": 1}
    out = [(verify_job_for(d, {"width": 8}, "v", "smoke", 1), verify_inputs(d)) for d in ("mu", "bf16_mul")]
    out.append((energy_job_for({"width": 8, "fmt": "fp8_e4m3"}, "e", settings), energy_inputs()))
    out += [(synth_jobs(d, {})[0], synth_inputs(get_design(d))) for d in ("mu", "bf16_mul", "slice")]
    f = "tb.flows.sweep_jobs:square"
    out.append((cli.call_jobs(f, {"x": [1]})[0], deps.closure(f)))
    return out


def test_every_imported_file_and_no_other_changes_each_key(tmp_path, monkeypatch):
    """In a copy of the repository, changing the bytes of any file of a job's closure changes the
    job's key; the key reads no other file of hw, tb, flows and perf, so no other edit changes it."""
    monkeypatch.delenv("LIBERTY", raising=False)
    for pkg in deps.PACKAGES:
        shutil.copytree(REPO / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    read, read_bytes = set(), Path.read_bytes

    def spy(self):
        read.add(str(self.relative_to(tmp_path)) if self.is_relative_to(tmp_path) else str(self))
        return read_bytes(self)

    for job, inputs in _jobs():
        assert set(job.inputs) == set(inputs) and len(inputs) > 5, job.name
        read.clear()
        with monkeypatch.context() as m:
            m.setattr(Path, "read_bytes", spy)
            k0 = job_key(job, tmp_path)
        assert read == set(inputs), (job.name, read ^ set(inputs))
        for rel in inputs:
            p = tmp_path / rel
            text = p.read_bytes()
            p.write_bytes(text + b"\n# touched\n")
            assert job_key(job, tmp_path) != k0, (job.name, rel)
            p.write_bytes(text)
        assert job_key(job, tmp_path) == k0
