"""The QoR regression gate: fails on an injected regression, passes otherwise; CI runs it for real."""

import json
import math
import time
from types import SimpleNamespace

import pytest

from flows import gate
from flows import metric_keys as K

from . import needs_osu

pytestmark = pytest.mark.quick

GOLD = {K.AREA: 10000.0, K.CP_PS: 5000.0, K.CP_LV: 40}
RULES = {k: {"value": v, "compare": "<="} for k, v in GOLD.items()}
RULES[K.CP_LV]["tolerance"] = 0.0


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
    worse[K.AREA] = 10500.0
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 1
    assert any("FAIL toy" in s for s in said) and any("make qor-update" in s for s in said)
    # --update writes the fresh values plus the padding (ORFS genRuleFile), rounded up
    toy = [{"design": "bf16_mul", "params": {}, "flow": "flat"}]
    assert gate.check(update=True, rules_path=rules, run=fake_run, log=said.append, variants=toy) == 0
    data = json.loads(rules.read_text())
    new = data["variants"]["toy"]["rules"]
    assert new[K.AREA] == {"value": math.ceil(10500.0 * 1.02), "compare": "<=", "measured": 10500.0}
    assert new[K.CP_LV]["value"] == math.ceil(40 * 1.05) == 42
    assert data["tolerance"]["default"] == 0.0
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 0
    # within the padding: passes; beyond it: fails
    worse[K.AREA] = 10500.0 * 1.019
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 0
    worse[K.AREA] = 10500.0 * 1.021
    assert gate.check(rules_path=rules, run=fake_run, log=said.append) == 1


def test_update_of_named_variants_keeps_the_others(tmp_path):
    """``--update --variant NAME`` reruns that variant of the rules file and keeps the other
    variants' goldens as they were."""
    rules = tmp_path / "rules-base.json"
    other = {"design": "mu", "params": {"width": 8}, "flow": "auto", "rules": RULES}
    rules.write_text(json.dumps({"variants": {
        "toy": {"design": "bf16_mul", "params": {}, "flow": "flat", "rules": RULES}, "other": other}}))
    ran = []

    def fake_run(design, params, **kw):
        ran.append(design)
        return SimpleNamespace(metrics=dict(GOLD, variant="toy", **{K.AREA: 12000.0}))

    assert gate.check(update=True, rules_path=rules, run=fake_run, log=lambda *_: None,
                      names=["toy"]) == 0
    data = json.loads(rules.read_text())
    assert ran == ["bf16_mul"]
    assert data["variants"]["other"] == other
    assert data["variants"]["toy"]["rules"][K.AREA]["measured"] == 12000.0


def test_missing_rules_file_says_how_to_create_it(tmp_path):
    with pytest.raises(gate.GateError, match="make qor-update"):
        gate.check(rules_path=tmp_path / "none.json", run=None, log=lambda *_: None)


def test_unknown_variant_name_lists_the_gated_ones(tmp_path):
    rules = tmp_path / "rules-base.json"
    rules.write_text(json.dumps({"variants": {"toy": {"design": "bf16_mul", "params": {}, "rules": RULES}}}))
    with pytest.raises(gate.GateError, match="no gated variant nope .*gated: toy"):
        gate.check(rules_path=rules, run=None, log=lambda *_: None, names=["nope"])


def test_committed_rules_cover_the_gated_variants():
    """The committed rules gate the BF16 multiplier, the matrix unit at D = 8 and 32 (the recommended
    ``exact`` mode, and ``fp32`` at D = 32) and the slice, each limit padded above its recorded
    measurement."""
    data = json.loads(gate.RULES.read_text())
    assert set(data["variants"]) == {*QUICK, *FULL}
    for v in data["variants"].values():
        for key, (op, pad) in gate.GATED.items():
            rule = v["rules"][key]
            assert rule["compare"] == op and rule["value"] == math.ceil(rule["measured"] * (1 + pad))


#: Gated in the quick set: the small points (the slice's units reuse the D = 8 unit's cached blocks).
QUICK = ["bf16_mul-booth4-s0-osu018", "mu-w8-fp8_e4m3-xacc-osu018",
         "slice-u2-w8-fp8_e4m3-sp16384-xacc-osu018"]
FULL = ["mu-w32-fp8_e4m3-xacc-osu018", "mu-w32-fp8_e4m3-osu018"]


@needs_osu
def test_make_qor_check_passes_on_the_committed_goldens():
    """What `make qor-check` gates, less the D = 32 unit (test-full): fresh synthesis of each."""
    said = []
    t0 = time.monotonic()
    assert gate.check(log=said.append, names=QUICK) == 0, "\n".join(said)
    for name in QUICK:
        assert any(f"pass {name}" in s for s in said), name
    print(f"qor-check of {len(QUICK)} variants: {time.monotonic() - t0:.0f} s")


@needs_osu
@pytest.mark.full
def test_make_qor_check_passes_at_d32():
    said = []
    assert gate.check(log=said.append, names=FULL) == 0, "\n".join(said)
