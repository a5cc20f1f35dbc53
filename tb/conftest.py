"""Test ordering for the CI run (``pytest -n 2``), and the run's measurements and functional coverage
(:mod:`tb.coverage`: a fresh folder per session, merged from every process) in its summary.

pytest-xdist hands tests to its workers in collection order, so a long simulation collected last
would run alone at the end. The longest ones (the D = 128 unit's Verilator build and runs, the BF16
bank, the slice with real units, the D = 64 unit) are moved to the front, and the real-tile RTL runs
that reuse those builds to the back, so that they do not wait on a build folder's lock
(tb/sim.py) while the other worker idles. The order of everything else is unchanged. A fragment
that matches no test of its file (a renamed test) is reported as a warning, not silently ignored.
"""

import warnings

import pytest

from tb import coverage

#: Node-id fragments of the longest tests, longest first (each with the file that holds it).
LONG_FIRST = ("tb/mu/test_matrix_unit.py::test_matrix_unit[w128",
              "tb/fp/test_bf16_mul.py::test_bf16_mul_all_variants",
              "tb/slice/test_slice.py::test_mu_ragged_stalls",
              "tb/mu/test_matrix_unit.py::test_matrix_unit[w64",
              "tb/mu/test_matrix_unit.py::test_matrix_unit[w32")
#: Node-id fragments of tests that reuse the builds above (run them last).
REUSE_LAST = ("tb/tiles/test_regression.py::test_rtl_replay[",)


def _rank(item) -> int:
    for i, frag in enumerate(LONG_FIRST):
        if frag in item.nodeid:
            return i
    if any(frag in item.nodeid and "smoke" not in item.nodeid for frag in REUSE_LAST):
        return len(LONG_FIRST) + 1
    return len(LONG_FIRST)


def pytest_collection_modifyitems(config, items):
    items.sort(key=_rank)   # stable: ties keep the collection order
    if any("::" in str(a) for a in config.args) or config.option.keyword:
        return   # tests picked by node id or -k: a fragment matching none of them is expected
    files = {item.nodeid.split("::")[0] for item in items}
    for frag in LONG_FIRST + REUSE_LAST:
        if frag.split("::")[0] in files and not any(frag in item.nodeid for item in items):
            warnings.warn_explicit(
                f"no collected test matches {frag!r} (renamed?); the CI order no longer moves it",
                pytest.PytestWarning, __file__, 0)


def pytest_configure(config):
    """The controller (not an xdist worker) starts a fresh coverage folder, inherited by the
    workers and the simulations it starts (``TB_COVERAGE_DIR``)."""
    if not hasattr(config, "workerinput"):
        coverage.new_session()


def pytest_sessionfinish(session):
    coverage.flush()   # points hit in this process (simulations flush their own)


def pytest_terminal_summary(terminalreporter):
    """Print every ``record_property("measured ...", value)`` of the passed tests (benchmarks
    printed by tests, e.g. the BF16 checking rate; pytest hides a passing test's output)."""
    lines = [f"{name}: {value}" for rep in terminalreporter.stats.get("passed", [])
             for name, value in getattr(rep, "user_properties", ()) if name.startswith("measured")]
    if lines:
        terminalreporter.write_sep("-", "measurements")
        for line in lines:
            terminalreporter.write_line(line)
    counts = coverage.merge()
    if counts:
        terminalreporter.write_sep("-", "functional coverage (python -m tb.coverage)")
        for line in coverage.summary(counts):
            terminalreporter.write_line(line)
