"""The CI-budget tool (``tb/ci_budget.py``): which builds it counts, and its estimate's arithmetic."""

import pytest

from hw.designs import get_design
from tb import ci_budget
from tb.mu.harness import unit_params


def _variant(u):
    return get_design("mu").variant(unit_params(u["width"], u["fmt"], u["rows"], None, u["tree"],
                                                u["acc"], u["guard_bits"], u.get("loop")))


@pytest.mark.quick
def test_quick_units_are_distinct_and_leave_d128_to_the_full_set():
    """Each quick-set unit configuration is built once; no D = 128 unit is built in the quick set
    (its cold builds took minutes of CI's budget), and the full set's D = 128 builds, Dadda and
    word-level tree, are offered with ``include_full``."""
    quick = [_variant(u) for _, u in ci_budget.quick_units()]
    assert len(quick) == len(set(quick)), sorted(quick)
    assert not [v for v in quick if v.startswith("mu-w128-")], sorted(quick)
    full = {_variant(u) for _, u in ci_budget.quick_units(include_full=True)}
    assert {"mu-w128-fp8_e4m3-r16", "mu-w128-fp8_e4m3-r16-s3-twords-xacc"} <= full, sorted(full)
    # the two-cycle accumulate loop: one quick build (E4M3), the others in the full set
    assert "mu-w8-fp8_e4m3-l2" in quick and "mu-w8-fp8_e5m2-r3-l2" in full, sorted(quick)


@pytest.mark.quick
def test_estimate_adds_the_cold_extra_per_worker(tmp_path):
    """600 s warm wall + (100 - 10 + 50 - 5) s of extra build time over 2 workers = 667.5 s."""
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest" time="600.0" tests="2">'
                     '<testcase classname="a" name="b" time="1.0"/></testsuite></testsuites>')
    builds = [{"name": "a", "cold_s": 100.0, "warm_s": 10.0},
              {"name": "b", "cold_s": 50.0, "warm_s": 5.0}]
    est = ci_budget.estimate(junit, builds, workers=2)
    assert est["warm_wall_s"] == 600.0 and est["build_extra_s"] == 135.0
    assert est["cold_wall_s"] == pytest.approx(667.5)


@pytest.mark.quick
def test_every_real_tile_rtl_run_in_ci_shares_a_quick_build():
    """The real-tile runs CI sends through the RTL (and their D = 8 smoke runs) add no build of their
    own: each runs on a unit the quick matrix-unit tests build, in the recommended mode."""
    from hw.mu.numerics import default_acc
    from tb.tiles import corpus, rtl

    quick = {_variant(u) for _, u in ci_budget.quick_units()}
    for s in corpus.rtl_quick() + corpus.smoke():
        rows, suffix, tree = rtl.unit_for(s.width, s.fmt)
        u = {"width": s.width, "fmt": s.fmt, "rows": rows, "tree": tree, "acc": default_acc(s.fmt),
             "guard_bits": None}
        assert suffix == "" and _variant(u) in quick, (corpus._run_id(s), _variant(u))
