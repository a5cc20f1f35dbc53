"""QoR regression gate: compare fresh metrics against ``reports/qor/rules-base.json`` (ORFS style).

The rules file lists, per gated variant, how to rebuild it and the golden value of each metric
with its comparison (``{"value": v, "compare": "<="}``, as ORFS ``rules-base.json``)::

    {"tolerance": {"default": 0.02},
     "variants": {"bf16_mul-booth4-s0-osu018": {
         "design": "bf16_mul", "params": {"arch": "booth4", "stages": 0, "subnormals": true},
         "flow": "auto", "liberty": "osu018",
         "rules": {"synth__design__instance__area__stdcell": {"value": 10000.0, "compare": "<="},
                   ...}}}}

``<=`` passes while ``actual <= value * (1 + tolerance)``; ``>=`` while
``actual >= value * (1 - tolerance)``; ``==`` needs equality. A per-rule ``"tolerance"`` overrides
the default (2% on area and delay, 5% on levels). ``python -m flows check`` re-runs each variant into
``build/qor-check/`` (the Yosys cache makes an unchanged design cheap) and fails on any regression;
``--update`` rewrites the golden values from the fresh runs (``make qor-update``).
"""

import json
from pathlib import Path

__all__ = ["GATED", "DEFAULT_VARIANTS", "compare", "check", "GateError", "RULES"]

REPO = Path(__file__).resolve().parent.parent
RULES = REPO / "reports" / "qor" / "rules-base.json"
CHECK_DIR = REPO / "build" / "qor-check"

#: Metrics the gate watches, with their comparison and tolerance.
GATED = {
    "synth__design__instance__area__stdcell": ("<=", 0.02),
    "synth__design__instance__area__ge": ("<=", 0.02),
    "synth__timing__critical_path__delay_ps": ("<=", 0.02),
    "synth__timing__critical_path__levels": ("<=", 0.05),
}

#: Variants gated by default (CI): the BF16 multiplier.
DEFAULT_VARIANTS = [
    {"design": "bf16_mul", "params": {"arch": "booth4", "stages": 0, "subnormals": True}, "flow": "auto"},
]


class GateError(RuntimeError):
    """The rules file or a gated run is unusable; the message says how to fix it."""


def compare(actual: dict, rules: dict, default_tol: float = 0.02) -> list:
    """Check metrics against rules; return failure messages (empty list: pass).

    Parameters
    ----------
    actual : dict
        A metrics dictionary (``metrics.json``).
    rules : dict
        ``{metric: {"value": v, "compare": "<=" | ">=" | "==", "tolerance": t (optional)}}``.
    """
    fails = []
    for key, rule in rules.items():
        ref, op = rule["value"], rule.get("compare", "<=")
        tol = rule.get("tolerance", default_tol)
        got = actual.get(key)
        if got is None or ref is None:
            if got != ref:
                fails.append(f"{key}: expected {ref}, got {got}")
            continue
        if op == "<=":
            ok, limit = got <= ref * (1 + tol) + 1e-9, ref * (1 + tol)
        elif op == ">=":
            ok, limit = got >= ref * (1 - tol) - 1e-9, ref * (1 - tol)
        elif op == "==":
            ok, limit = got == ref, ref
        else:
            raise GateError(f"rule {key}: unknown compare {op!r} (use <=, >= or ==)")
        if not ok:
            change = (got - ref) / ref * 100 if ref else float("inf")
            fails.append(f"{key}: {got} vs golden {ref} ({change:+.2f}%), limit {op} {limit:.4g} "
                         f"(tolerance {tol * 100:g}%)")
    return fails


def rules_for(metrics: dict) -> dict:
    """Golden rules from fresh metrics (the gated keys that have a value)."""
    return {k: {"value": metrics[k], "compare": op, **({"tolerance": tol} if tol != 0.02 else {})}
            for k, (op, tol) in GATED.items() if metrics.get(k) is not None}


def _load_rules(path: Path) -> dict:
    if not path.is_file():
        raise GateError(f"no golden values at {path}; create them with `make qor-update`")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise GateError(f"{path} is not valid JSON ({e}); regenerate it with `make qor-update`") from None


def check(update=False, rules_path: Path = RULES, log=print, run=None) -> int:
    """Run every gated variant and compare (or, with ``update``, refresh the goldens).

    Returns the exit status: 0 pass, 1 regression. ``run`` (for tests) replaces
    :func:`flows.flow.run`.
    """
    from .flow import resolve_library
    from .flow import run as flow_run

    run = run or flow_run
    rules_path = Path(rules_path)
    if update and not rules_path.exists():
        data = {"tolerance": {"default": 0.02}, "variants": {}}
        entries = [dict(v) for v in DEFAULT_VARIANTS]
    else:
        data = _load_rules(rules_path)
        entries = [dict(v, name=n) for n, v in data.get("variants", {}).items()]
    default_tol = data.get("tolerance", {}).get("default", 0.02)
    lib = resolve_library(log=log)
    failures = 0
    new_variants = {}
    for e in entries:
        want = e.get("liberty")
        if want and want != lib.short:
            raise GateError(f"the goldens of {e.get('name')} were measured with the {want} library but "
                            f"this run found {lib.short} ({lib.path}); install qflow-tech-osu018 or "
                            "set LIBERTY to that library, or refresh the goldens with `make qor-update`")
        out = run(e["design"], e["params"], flow=e.get("flow", "auto"), lib=lib,
                  outdir=CHECK_DIR / (e.get("name") or e["design"]), log=lambda *_: None)
        m = out.metrics
        name = m["variant"]
        if update:
            new_variants[name] = {"design": e["design"], "params": e["params"], "flow": e.get("flow", "auto"),
                                  "liberty": lib.short, "rules": rules_for(m)}
            log(f"qor-update: {name}: " + ", ".join(f"{k.split('__', 2)[-1]}={v['value']}"
                                                     for k, v in new_variants[name]["rules"].items()))
            continue
        fails = compare(m, e.get("rules", {}), default_tol)
        if fails:
            failures += 1
            log(f"qor-check FAIL {name}:")
            for f in fails:
                log(f"  {f}")
        else:
            log(f"qor-check pass {name}: " + ", ".join(
                f"{k.split('__', 2)[-1]} {m.get(k)} (golden {r['value']})"
                for k, r in e.get("rules", {}).items()))
    if update:
        data["variants"] = new_variants
        rules_path.parent.mkdir(parents=True, exist_ok=True)
        rules_path.write_text(json.dumps(data, indent=2) + "\n")
        log(f"wrote {rules_path}")
        return 0
    if failures:
        log(f"qor-check: {failures} variant(s) regressed beyond tolerance; if the change is intended, "
            "refresh the goldens with `make qor-update` and commit reports/qor/rules-base.json")
    return 1 if failures else 0
