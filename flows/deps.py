"""Which repository files a module depends on: its import closure, read from the source.

The cache key of a job (:func:`flows.sweep.runner.job_key`) covers the bytes of its input files; a
job's inputs are the files of its entry modules' import closure (:func:`closure`), so editing any
file a job runs invalidates its cached result, and editing any other file does not.

The closure is read with :mod:`ast`, never by importing (``flows`` reads ``tb`` files only as
bytes). A module depends on:

* the modules its ``import`` and ``from ... import`` statements name, at any depth (inside
  functions too), relative ones resolved against the file's package; ``from a import b`` counts
  ``a.b`` when that is a module;
* every package ``__init__.py`` above each of them (Python runs them on import);
* the modules that string constants name in full: ``"hw.mu.matrix_unit:MatrixUnit"`` (the design
  registry's factories, loaded with :func:`importlib.import_module`), ``"tb.mu.mu_cocotb"`` (the
  cocotb module a simulation loads), ``"tb.power_stim"`` (a ``python -m`` subprocess). A string
  counts when it is exactly a dotted name of a module in :data:`PACKAGES`, optionally followed by
  ``:attribute``.

Only files of :data:`PACKAGES` below the repository root are followed; data files a module reads and
third-party packages are not part of the closure.

Each file is parsed once per process (again only when its modification time or size changes), and a
closure is kept per process while none of its files changes, so a repeated call costs one ``stat``
per file of the closure.
"""

import ast
import functools
import re
from pathlib import Path

from .paths import REPO

__all__ = ["closure", "module_file", "imports", "PACKAGES"]

#: Top-level packages of the repository whose modules are followed.
PACKAGES = ("hw", "tb", "flows", "perf")
_NAME = re.compile(r"^(?:%s)(?:\.[A-Za-z_]\w*)+(?::[A-Za-z_][\w.]*)?$" % "|".join(PACKAGES))


def module_file(name: str, root: Path = REPO) -> Path | None:
    """The file of module ``name`` under ``root`` (``a/b.py`` or ``a/b/__init__.py``), or None."""
    base = root.joinpath(*name.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _with_parents(name: str) -> list:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@functools.lru_cache(maxsize=None)
def _parse(path: Path, root: Path, stamp: tuple) -> tuple:
    """Names a file imports or names in full (``stamp``: its mtime and size, so an edit re-reads it)."""
    rel = path.relative_to(root).with_suffix("").parts
    pkg = list(rel[:-1])       # the package a relative import starts from (an __init__'s own)
    names, strings = [], []
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = pkg[:len(pkg) - node.level + 1] if node.level else []
            mod = ".".join(base + (node.module.split(".") if node.module else []))
            names += [mod] + [f"{mod}.{a.name}" for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAME.match(node.value):
            strings.append(node.value.partition(":")[0])
    return tuple(names), tuple(strings)


def imports(name: str, root: Path = REPO, strings: bool = True) -> set:
    """Modules of :data:`PACKAGES` that module ``name`` imports directly (parent packages included);
    with ``strings``, also the ones its string constants name.

    Raises
    ------
    ModuleNotFoundError
        If ``name`` is not a module under ``root``.
    """
    path = module_file(name, root)
    if path is None:
        raise ModuleNotFoundError(f"{name!r} is not a module under {root}: give a dotted name of a "
                                  f"module of {', '.join(PACKAGES)} (e.g. tb.verify)")
    found, named = _parse(path, root, _stamp(path))
    out = set()
    for n in found + (named if strings else ()):
        for m in _with_parents(n):
            if m.split(".")[0] in PACKAGES and module_file(m, root) is not None:
                out.add(m)
    return out


def _stamp(path: Path) -> tuple:
    st = path.stat()
    return st.st_mtime_ns, st.st_size


#: ``(modules, root, menus) -> (closure, stamps of its files)`` of this process.
_CLOSURES = {}


def closure(*modules: str, root: Path = REPO, menus: tuple = ()) -> tuple:
    """Repository-relative paths of the files the ``modules`` import transitively (their own files
    and their packages' ``__init__.py`` included), sorted.

    Parameters
    ----------
    modules : str
        Dotted module names (``"tb.verify"``, ``"flows.power.run"``); ``"pkg.mod:attr"`` and
        ``"tb.verify --flag"`` (a ``python -m`` command line) name the module ``pkg.mod``/``tb.verify``.
    root : Path
        Repository root.
    menus : tuple of str
        Modules whose string constants are a menu rather than dependencies (``"hw.designs"``: the
        registry names every generator, a job builds one): their files and ``import`` statements
        count, the modules their strings name do not. The caller passes the one it uses in
        ``modules``.

    Raises
    ------
    ModuleNotFoundError
        If a module of ``modules`` is not a module under ``root``.
    """
    root = Path(root)
    memo = (modules, root, tuple(menus))
    if memo in _CLOSURES:       # still valid while none of its files changed
        files, stamps = _CLOSURES[memo]
        try:
            if [_stamp(root / f) for f in files] == stamps:
                return files
        except FileNotFoundError:
            pass
    todo = [m for name in modules for m in _with_parents(name.split()[0].partition(":")[0])]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += sorted(imports(name, root, strings=name not in menus) - seen)
    files = tuple(sorted(str(module_file(m, root).relative_to(root)) for m in seen))
    _CLOSURES[memo] = files, [_stamp(root / f) for f in files]
    return files
