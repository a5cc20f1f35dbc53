"""QoR regression gate: compare fresh metrics against ``reports/qor/rules-base.json`` (ORFS style).

The rules file lists, per gated variant, how to rebuild it and the golden limit of each metric
(``{"value": v, "compare": "<="}``, as ORFS ``rules-base.json``)::

    {"padding": {"synth__design__instance__area__stdcell": 0.02, ...},
     "tolerance": {"default": 0.0},
     "variants": {"mu-w8-fp8_e4m3-osu018": {
         "design": "mu", "params": {"width": 8, "fmt": "fp8_e4m3"}, "flow": "auto",
         "liberty": "osu018",
         "rules": {"synth__design__instance__area__stdcell":
                   {"value": 2248936, "compare": "<=", "measured": 2204839.0}, ...}}}}

As ORFS ``genRuleFile`` does, ``--update`` derives each limit from a fresh measurement plus a
padding (:data:`GATED`: 2% on area and delay, 5% on levels), rounded up, and records the measured
value beside it; the check then compares directly (``<=``: ``actual <= value``). A ``tolerance``
(file default or per rule) loosens a limit further: ``<=`` passes while
``actual <= value * (1 + tolerance)``, ``>=`` while ``actual >= value * (1 - tolerance)``; ``==``
needs equality.

``python -m flows check`` re-runs each variant into ``build/qor-check/`` (the Yosys cache makes an
unchanged design cheap) and fails on any regression; ``--update`` rewrites the limits from fresh
runs of :data:`DEFAULT_VARIANTS` (``make qor-update``).
"""

import json
import math
from pathlib import Path

from . import metric_keys as K
from .paths import BUILD, PUBLISHED_QOR

__all__ = ["GATED", "DEFAULT_VARIANTS", "compare", "rules_for", "check", "GateError", "RULES"]

RULES = PUBLISHED_QOR / "rules-base.json"
CHECK_DIR = BUILD / "qor-check"

#: Metrics the gate watches: their comparison and the padding of the golden limit.
GATED = {
    K.AREA: ("<=", 0.02),
    K.GE: ("<=", 0.02),
    K.CP_PS: ("<=", 0.02),
    K.CP_LV: ("<=", 0.05),
}

#: Variants gated (``make qor-check``): the BF16 multiplier, the matrix unit at D = 8 and 32 in the
#: recommended ``exact`` mode and at D = 32 in the ``fp32`` mode, and the default slice (two D = 8
#: units, ``exact``). The accumulate mode is named: the registry's default depends on the format.
DEFAULT_VARIANTS = [
    {"design": "bf16_mul", "params": {"arch": "booth4", "stages": 0, "subnormals": True}, "flow": "auto"},
    {"design": "mu", "params": {"width": 8, "fmt": "fp8_e4m3", "acc": "exact"}, "flow": "auto"},
    {"design": "mu", "params": {"width": 32, "fmt": "fp8_e4m3", "acc": "exact"}, "flow": "auto"},
    {"design": "mu", "params": {"width": 32, "fmt": "fp8_e4m3", "acc": "fp32"}, "flow": "auto"},
    {"design": "slice", "params": {"acc": "exact"}, "flow": "auto"},
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


def _padded(value, op: str, padding: float):
    """A golden limit: ``value`` moved by ``padding`` away from failing, rounded outwards to an integer."""
    if op == "<=":
        return math.ceil(value * (1 + padding))
    if op == ">=":
        return math.floor(value * (1 - padding))
    return value


def rules_for(metrics: dict) -> dict:
    """Golden rules from fresh metrics (the gated keys that have a value), padded as :data:`GATED`."""
    return {k: {"value": _padded(metrics[k], op, pad), "compare": op, "measured": metrics[k]}
            for k, (op, pad) in GATED.items() if metrics.get(k) is not None}


def _load_rules(path: Path) -> dict:
    if not path.is_file():
        raise GateError(f"no golden values at {path}; create them with `make qor-update`")
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise GateError(f"{path} is not valid JSON ({e}); regenerate it with `make qor-update`") from None


def _entries(update, data, variants, names) -> list:
    """The variants to run: ``variants`` if given, else :data:`DEFAULT_VARIANTS` (update) or the rules
    file's; ``names`` keeps only those of the rules file, also when updating (an unknown name is an
    error listing the known ones)."""
    if variants is not None:
        entries = [dict(v) for v in variants]
    elif update and not names:
        entries = [dict(v) for v in DEFAULT_VARIANTS]
    else:
        entries = [dict(v, name=n) for n, v in data.get("variants", {}).items()]
    if names:
        known = [e.get("name") for e in entries]
        missing = sorted(set(names) - set(known))
        if missing:
            raise GateError(f"no gated variant {', '.join(missing)} in {RULES.name}; gated: "
                            f"{', '.join(str(k) for k in known)} (add it with `make qor-update`)")
        entries = [e for e in entries if e.get("name") in names]
    return entries


def _report(name, m, rules, default_tol, log) -> bool:
    """Compare one variant, log the outcome; True when it passes."""
    fails = compare(m, rules, default_tol)
    if fails:
        log(f"qor-check FAIL {name}:")
        for f in fails:
            log(f"  {f}")
        return False
    log(f"qor-check pass {name}: " + ", ".join(
        f"{k.split('__', 2)[-1]} {m.get(k)} (limit {r['value']})" for k, r in rules.items()))
    return True


def check(update=False, rules_path: Path = RULES, log=print, run=None, names=None, variants=None) -> int:
    """Run the gated variants and compare (or, with ``update``, refresh the golden limits).

    Parameters
    ----------
    update : bool
        Rewrite the rules file from fresh runs (limits padded as :data:`GATED`).
    names : list of str, optional
        Check only these variants of the rules file (e.g. ``["mu-w8-fp8_e4m3-osu018"]``); with
        ``update``, refresh only their goldens and keep the others'.
    variants : list of dict, optional
        Entries (``design``, ``params``, ``flow``) to run instead of the default ones.
    run : callable, optional
        Replaces :func:`flows.synth.flow.run` (tests).

    Returns
    -------
    int
        The exit status: 0 pass, 1 regression.

    Raises
    ------
    GateError
        A missing or invalid rules file, an unknown variant name, or goldens measured with
        another library.
    """
    from .synth.flow import resolve_library
    from .synth.flow import run as flow_run

    run = run or flow_run
    rules_path = Path(rules_path)
    if update and not rules_path.exists():
        data = {}
    else:
        data = _load_rules(rules_path)
    entries = _entries(update, data, variants, names)
    default_tol = data.get("tolerance", {}).get("default", 0.0)
    lib = resolve_library(log=log)
    failures = 0
    new_variants = {}
    for e in entries:
        want = e.get("liberty")
        if want and want != lib.short:
            raise GateError(f"the goldens of {e.get('name')} were measured with the {want} library but "
                            f"this run found {lib.short} ({lib.path}); install qflow-tech-osu018 or "
                            "set LIBERTY to that library, or refresh the goldens with `make qor-update`")
        tag = e.get("name") or "-".join([e["design"]] + [f"{k}{v}" for k, v in e["params"].items()])
        out = run(e["design"], e["params"], flow=e.get("flow", "auto"), lib=lib, outdir=CHECK_DIR / tag,
                  log=lambda *_: None)
        m = out.metrics
        name = m["variant"]
        if update:
            new_variants[name] = {"design": e["design"], "params": e["params"], "flow": e.get("flow", "auto"),
                                  "liberty": lib.short, "rules": rules_for(m)}
            log(f"qor-update: {name}: " + ", ".join(f"{k.split('__', 2)[-1]}={v['value']}"
                                                     for k, v in new_variants[name]["rules"].items()))
        elif not _report(name, m, e.get("rules", {}), default_tol, log):
            failures += 1
    if update:
        if names:   # the other variants keep their goldens
            new_variants = {**data.get("variants", {}), **new_variants}
        out = {"padding": {k: pad for k, (_, pad) in GATED.items()}, "tolerance": {"default": 0.0},
               "variants": new_variants}
        rules_path.parent.mkdir(parents=True, exist_ok=True)
        rules_path.write_text(json.dumps(out, indent=2) + "\n")
        log(f"wrote {rules_path}")
        return 0
    if failures:
        log(f"qor-check: {failures} variant(s) regressed beyond their limits; if the change is intended, "
            "refresh the goldens with `make qor-update` and commit reports/qor/rules-base.json")
    return 1 if failures else 0
