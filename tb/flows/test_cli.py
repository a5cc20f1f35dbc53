"""``python -m flows``: every command is dispatched (its own ``--help`` answers) and none is a stub."""

import subprocess
import sys

import pytest

from flows.__main__ import main
from flows.paths import REPO

pytestmark = pytest.mark.quick

COMMANDS = ("synth", "check", "bf16-compare", "prove", "qor", "sweep", "report-qor")


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_answers_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage:") and "not available" not in out


def test_top_level_help_lists_the_commands():
    r = subprocess.run([sys.executable, "-m", "flows", "--help"], cwd=REPO, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0
    assert all(c in r.stdout for c in COMMANDS)
