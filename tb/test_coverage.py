"""The coverage library: declared points, per-process files merged, the summary and the report."""

import json

import pytest

from tb import coverage
from tb.coverage_sample import _round_events

pytestmark = pytest.mark.quick


def test_merge_summary_report(tmp_path, monkeypatch):
    (tmp_path / "1.json").write_text(json.dumps({"protocol.stall_x": 3, "slice.ragged_k": 1}))
    (tmp_path / "2.json").write_text(json.dumps({"protocol.stall_x": 2, "gone.point": 5}))
    counts = coverage.merge(tmp_path)
    assert counts == {"protocol.stall_x": 5, "slice.ragged_k": 1}
    text = "\n".join(coverage.summary(counts))
    assert "protocol" in text and "not hit:" in text
    md = coverage.report_md(counts, "make test-full")
    assert "| `protocol.stall_x` | 5 |" in md
    assert "`overflow.fp32.inf` | cannot occur" in md          # unreachable, with its reason
    assert "- `protocol.stall_y`" in md                         # reachable and unhit: listed
    coverage.clear(tmp_path)
    assert not list(tmp_path.glob("*.json"))


def test_undeclared_point():
    with pytest.raises(KeyError, match="undeclared cover point"):
        coverage.hit("protocol.stal_x")


@pytest.mark.parametrize("n,e,want", [
    (1, 0, (False, False, False, False)),                  # exact
    ((1 << 24) + 1, 0, (True, True, False, False)),        # tie, kept even (2**24)
    ((1 << 24) + 3, 0, (True, False, True, False)),        # tie, odd: rounds up
    ((1 << 25) - 1, 0, (True, False, True, True)),         # tie rounds up into 2**25
    (-((1 << 25) - 1), 0, (True, False, True, True)),      # the same, negative
    ((1 << 26) - 1, 0, (True, False, False, True)),        # above the tie: up into 2**26
])
def test_round_events(n, e, want):
    """Against hand computation: 24 significant bits, ties to even."""
    assert _round_events(n, e) == want
