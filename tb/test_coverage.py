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


def test_nvfp4_scale_spread_is_declared_unreachable_from_the_scale_range():
    """The reason given for NVFP4's spread point holds: the UE4M3 scale exponents (from the format's
    own decode of all 256 codes) cannot put two blocks of a beat more than the window apart."""
    import numpy as np

    from hw.formats import get_block_format
    from tb.coverage import POINTS, WINDOW_FRAC_BITS

    m, e, nan = get_block_format("nvfp4").scale_split(np.arange(256))
    span = 2 * (int(e[~nan].max()) - int(e[~nan].min()))      # x + w exponents, extremes to extremes
    assert span <= WINDOW_FRAC_BITS
    assert POINTS["block.nvfp4.scale_spread"][2] is not None
    assert POINTS["block.mxfp8_e4m3.scale_spread"][2] is None    # E8M0 spans 254 binades
