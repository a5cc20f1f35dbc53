"""The README's and docs' commands run as written, from a clean environment.

Every ``python -m ...`` command quoted in README.md and docs/*.md is answered by its module: its
``--help`` (the module and, for ``hw`` and ``flows``, the subcommand as quoted) exits 0 with a
usage line, run the way the README says (``. .venv/bin/activate``) in an environment without
``PYTHONPATH`` or ``VIRTUAL_ENV``, from the repository root. The cheap commands (``--help``, small
D) run exactly as quoted, an output file redirected to a temporary folder. The slow ones (synthesis,
sweeps, simulations) are not run here; the README states their time.
"""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The one activation line the README gives for its ``python -m`` commands.
ACTIVATE = ". .venv/bin/activate"
#: Commands quoted in the docs that are cheap enough to run as written (``-o`` goes to a temp dir).
CHEAP = ("python -m hw gen --help", "python -m hw gen slice --units 2 --width 8 --feed-bytes 12 -o slice.v")
#: Modules whose first argument is a subcommand.
SUBCOMMANDS = ("hw", "flows", "tb.tiles", "tb.ci_budget")


def quoted_commands() -> dict:
    """``python -m`` commands in backquotes of the docs -> the file quoting them first."""
    found = {}
    for doc in DOCS:
        for cmd in re.findall(r"`((?:\.venv/bin/)?python -m [A-Za-z_][\w.]*(?: [^`]*)?)`", doc.read_text()):
            cmd = cmd.replace(".venv/bin/python", "python").replace("\\|", "|")
            found.setdefault(cmd, doc.name)
    return found


def probe(cmd: str) -> str:
    """``python -m <module> [<subcommand>] --help`` for a quoted command."""
    words = shlex.split(cmd.split("[")[0].split("|")[0].replace("$(JOBS)", "2"))
    module = words[2]
    sub = words[3:4] if module in SUBCOMMANDS and len(words) > 3 and not words[3].startswith("-") \
        and not words[3].startswith("<") else []
    return shlex.join(["python", "-m", module, *sub, "--help"])


def clean_run(script: str, timeout: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    return subprocess.run(["bash", "-c", f"{ACTIVATE} && {script}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_readme_says_how_to_activate_the_environment():
    text = (REPO / "README.md").read_text()
    assert f"`{ACTIVATE}`" in text
    assert all(c in quoted_commands() for c in CHEAP), "a CHEAP command is no longer quoted in the docs"


def test_every_quoted_module_answers_help():
    probes = sorted({probe(c) for c in quoted_commands()})
    assert len(probes) >= 10, probes
    # one shell: each probe's exit status and a marker line, so one failure names its command
    script = "; ".join(f"echo '@@ {p}'; {p} >/dev/null 2>&1; echo \"@@ rc=$?\"" for p in probes)
    r = clean_run(script, timeout=300)
    rcs = dict(zip(re.findall(r"^@@ (python .*)$", r.stdout, re.M),
                   re.findall(r"^@@ rc=(\d+)$", r.stdout, re.M), strict=True))
    assert set(rcs) == set(probes), r.stderr[-2000:]
    bad = {p: rc for p, rc in rcs.items() if rc != "0"}
    assert not bad, f"quoted commands whose module does not answer --help: {bad}"


@pytest.mark.parametrize("cmd", CHEAP)
def test_cheap_commands_run_as_written(cmd, tmp_path):
    words = shlex.split(cmd)
    if "-o" in words:
        words[words.index("-o") + 1] = str(tmp_path / words[words.index("-o") + 1])
    r = clean_run(shlex.join(words), timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    if "--help" in words:
        assert r.stdout.startswith("usage:")
    else:
        out = Path(words[words.index("-o") + 1])
        assert "module " in out.read_text() and "endmodule" in out.read_text()
