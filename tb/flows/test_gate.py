"""The QoR regression gate: fails on an injected regression, passes otherwise; CI runs it for real."""

import json
from types import SimpleNamespace

import pytest

from flows import gate
from flows import liberty as L

pytestmark = pytest.mark.quick

GOLD = {"synth__design__instance__area__stdcell": 10000.0,
        "synth__timing__critical_path__delay_ps": 5000.0,
        "synth__timing__critical_path__levels": 40}
RULES = {k: {"value": v, "compare": "<="} for k, v in GOLD.items()}
RULES["synth__timing__critical_path__levels"]["tolerance"] = 0.0


def test_compare_passes_within_tolerance_and_fails_beyond():
    assert gate.compare(dict(GOLD), RULES) == []
    assert gate.compare(dict(GOLD, synth__design__instance__area__stdcell=10150.0), RULES) == []   # +1.5%
    assert gate.compare(dict(GOLD, synth__design__instance__area__stdcell=8000.0), RULES) == []    # better
    fails = gate.compare(dict(GOLD, synth__design__instance__area__stdcell=10300.0), RULES)      # +3%
    assert len(fails) == 1 and "area__stdcell" in fails[0] and "+3.00%" in fails[0]
    fails = gate.compare(dict(GOLD, synth__timing__critical_path__delay_ps=5101.0), RULES)       # +2.02%
    assert len(fails) == 1 and "delay_ps" in fails[0]
    assert gate.compare(dict(GOLD, synth__timing__critical_path__levels=41), RULES)
    assert gate.compare({}, RULES)                                  # a missing metric is a failure


def test_check_fails_on_an_injected_regression(tmp_path):
    rules = tmp_path / "rules-base.json"
    rules.write_text(json.dumps({"tolerance": {"default": 0.02}, "variants": {"toy": {
        "design": "bf16_mul", "params": {}, "flow": "flat", "rules": RULES}}}))
    worse = {}

    def fake_run(design, params, **kw):
        return SimpleNamespace(metrics=dict(GOLD, variant="toy", **worse))

    said = []
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 0
    worse["synth__design__instance__area__stdcell"] = 10500.0
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 1
    assert any("FAIL toy" in s for s in said) and any("make qor-update" in s for s in said)
    # --update writes the fresh values; then the gate passes again
    assert gate.check(update=True, rules_path=rules, run=fake_run, log=said.append) == 0
    new = json.loads(rules.read_text())["variants"]["toy"]["rules"]
    assert new["synth__design__instance__area__stdcell"]["value"] == 10500.0
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 0


def test_missing_rules_file_says_how_to_create_it(tmp_path):
    with pytest.raises(gate.GateError, match="make qor-update"):
        gate.check(rules_path=tmp_path / "none.json", run=None, log=lambda *_: None)


@pytest.mark.skipif(not L.OSU018_DEFAULT.is_file(), reason="OSU 0.18um liberty not installed "
                    "(apt-get install qflow-tech-osu018); .ci/run installs it")
def test_make_qor_check_passes_on_the_committed_goldens():
    """What `make qor-check` runs in CI: the BF16 multiplier (booth4, stages 0) against the goldens."""
    data = json.loads(gate.RULES.read_text())
    assert "bf16_mul-booth4-s0-osu018" in data["variants"]
    said = []
    assert gate.check(log=said.append) == 0, "\n".join(said)
    assert any("pass bf16_mul-booth4-s0-osu018" in s for s in said)
