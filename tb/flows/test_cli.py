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


@pytest.mark.parametrize("args", [["--sample", "0"], ["--sample", "-1"], ["--sample", "100"],
                                  ["--runs", "0"], ["--check-composition", "9"]])
def test_power_refuses_counts_out_of_range(args, capsys):
    """Refused before anything is synthesized, with the allowed range (D = 8: 1 to 8 columns)."""
    assert main(["power", "--width", "8"] + args) == 2
    err = capsys.readouterr().err
    assert "error:" in err and args[1] in err
    assert ("from 1 to 8" in err) if args[0] != "--runs" else (">= 1" in err)


def test_make_power_sample_zero_fails_with_the_range():
    r = subprocess.run(["make", "-s", "power", "WIDTH=8", "SAMPLE=0"], cwd=REPO, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0
    assert "SAMPLE (--sample) must be a number of columns from 1 to 8" in r.stderr


@pytest.mark.parametrize("cmd", ["qor", "check", "power", "pnr", "sweep", "explore"])
def test_a_drive_limit_other_commands_do_not_take_is_refused(cmd, capsys, monkeypatch):
    """DRIVE_LIMIT is a synth option: the study, the gate, power, place and route and the searches
    refuse it rather than silently repair with the default limit (past the guard, every command
    here fails at once instead of starting its jobs); synth takes it, help still answers."""
    import flows.__main__ as cli

    def bypassed(*a, **k):
        raise AssertionError("the guard let it through")

    monkeypatch.setattr(cli, "_DELEGATED", {k: ("tb.flows.no_such_module", v[1])
                                            for k, v in cli._DELEGATED.items()})
    monkeypatch.setattr(cli, "_parser", bypassed)
    monkeypatch.setenv("DRIVE_LIMIT", "tables")
    assert main([cmd]) == 2
    err = capsys.readouterr().err
    assert "DRIVE_LIMIT=tables applies to synth" in err and "unset DRIVE_LIMIT" in err
    monkeypatch.undo()
    monkeypatch.setenv("DRIVE_LIMIT", "tables")
    assert cli._parser().parse_args(["synth", "--design", "mu"]).drive_limit == "tables"
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0


@pytest.mark.parametrize("target, flag", [("pnr", "--no-rebuffer"), ("pnr-study", "--rebuffer off")])
def test_make_rebuffer_zero_reaches_the_hierarchical_flows(target, flag):
    """REBUFFER=0 keeps the repair's trees in make pnr HIER=1 and make pnr-study UNIT=...; left
    out, neither command gets the flag; any other value stops make with the values it takes."""
    args = ["make", "-n", target, "DESIGN=mu", "HIER=1", "UNIT=fp4_e2m1:16"]
    zero = subprocess.run(args + ["REBUFFER=0"], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=True).stdout
    commands = [line for line in zero.splitlines() if "-m flows " + target + " " in line]
    assert len(commands) == 1 and flag in commands[0]
    default = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "-m flows " + target + " " in default and "rebuffer" not in default
    bad = subprocess.run(args + ["REBUFFER=off"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "REBUFFER=off: use REBUFFER=0" in bad.stderr
