"""Package layering, read from the source: no import cycles, and no import upwards.

Every ``import`` statement (top-level or inside a function) of ``hw/``, ``perf/`` and ``flows/`` is
read with :mod:`ast`; relative imports are resolved against the file's package. The rules:

* ``hw`` imports only ``hw``; ``perf`` only ``hw`` and ``perf``; ``flows`` never ``tb``.
* Inside ``flows``, layers from the bottom: the shared names (``flows.metric_keys``, ``flows.deps``,
  ``flows.paths``) < ``flows.synth`` < ``flows.pnr`` < ``flows.report`` < ``flows.sweep`` < the commands
  (``flows.gate``, ``flows.bf16_compare``, ``flows.prove``, ``flows.bench_mu``, ``flows.__main__``).
  A module imports only its own layer or lower ones, so reports never run the flow.
* No cycle among the modules of these packages (a module importing its own package's
  ``__init__`` does not count).

Every flows module is also imported for real, so a broken import fails here first.
"""

import ast
import importlib
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("hw", "perf", "flows")
#: flows layer of a module, by the longest matching prefix.
FLOWS_LAYERS = {"flows.metric_keys": 0, "flows.paths": 0, "flows.qor_plan": 0, "flows.deps": 0,
                "flows.synth": 1, "flows.pnr": 2, "flows.report": 3,
                "flows.sweep": 4, "flows": 5}
ALLOWED_TOP = {"hw": {"hw"}, "perf": {"hw", "perf"}, "flows": {"hw", "perf", "flows"}}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict:
    """``{module name: path}`` of every ``.py`` file of :data:`PACKAGES`."""
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
            if "__pycache__" not in p.parts}


def imports(name: str, path: Path, known: set) -> set:
    """Modules of this repository that ``name`` imports (``from a import b`` counts ``a.b`` when
    that is a module, else ``a``)."""
    is_pkg = path.name == "__init__.py"
    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + (node.module.split(".") if node.module else []))
            for a in node.names:
                out.add(f"{mod}.{a.name}" if f"{mod}.{a.name}" in known else mod)
    return {m for m in out if m.split(".")[0] in PACKAGES + ("tb",)}


def graph() -> dict:
    src = sources()
    return {n: imports(n, p, set(src)) for n, p in src.items()}


def flows_layer(name: str) -> int:
    best = max((k for k in FLOWS_LAYERS if name == k or name.startswith(k + ".")), key=len)
    return FLOWS_LAYERS[best]


def test_the_reader_sees_relative_imports():
    """Guards the test itself: known imports of three files are found."""
    g = graph()
    assert "flows.metric_keys" in g["flows.synth.metrics"] and "flows.synth.sta" in g["flows.synth.metrics"]
    assert "hw.designs" in g["flows.report.common"] and "perf.shapes" in g["flows.report.verdict"]
    assert "hw.formats" in g["hw.designs"]


def test_generators_sit_below_the_registry():
    """The design registry loads the generators; no generator imports it back."""
    bad = [n for n, deps in graph().items()
           if n.startswith("hw.") and n not in ("hw.designs", "hw.cli", "hw.__main__")
           and "hw.designs" in deps]
    assert not bad, f"generators importing hw.designs: {bad}"


def test_no_package_imports_upwards():
    bad = [f"{n} imports {m}" for n, deps in graph().items() for m in deps
           if m.split(".")[0] not in ALLOWED_TOP[n.split(".")[0]]]
    assert not bad, "\n".join(bad)


def test_flows_layers():
    bad = [f"{n} (layer {flows_layer(n)}) imports {m} (layer {flows_layer(m)})"
           for n, deps in graph().items() if n.startswith("flows")
           for m in deps if m.startswith("flows") and flows_layer(m) > flows_layer(n)]
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    g = graph()
    edges = {n: {m for m in deps if m in g and not n.startswith(m + ".") and m != n} for n, deps in g.items()}
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = "open"
        stack.append(n)
        for m in sorted(edges[n]):
            if state.get(m) == "open":
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = "done"

    for n in sorted(edges):
        if n not in state:
            visit(n)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", sorted(n for n in sources() if n.startswith("flows")))
def test_every_flows_module_imports(name):
    importlib.import_module(name)
