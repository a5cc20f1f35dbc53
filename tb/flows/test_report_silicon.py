"""Equal silicon in decode and prefill (flows.report.silicon) on synthetic points with known ratios."""

from pathlib import Path

from flows.metric_keys import AREA, FMAX
from flows.report.common import Point
from flows.report.silicon import equal_silicon_rows, regime_perf, regimes_section


def _grid(area_per_mac: float, fmax=100.0, fmt="fp8_e4m3"):
    """Points whose area is exactly ``area_per_mac * D^2`` at one fmax: per mm^2 the widths differ only
    by how busy the contract keeps them."""
    return {(d, fmt): Point(f"mu-w{d}", "mu", {}, {AREA: area_per_mac * d * d, FMAX: fmax}, Path("."))
            for d in (32, 64, 128)}


def test_prefill_levels_the_widths_decode_does_not():
    perf = regime_perf(_grid(1000.0))
    llama = {(r, n): v for (r, n, f, m), v in perf.items() if m == "Llama-3.1-8B"}
    # decode at batch 1: a tile per D cycles serves one row, so MACs/s/mm^2 halve with each doubling
    dec = llama[("decode", 1)]
    assert 1.9 < dec[64] / dec[128] < 2.1
    # prefill of 4096 tokens: every tile serves 4096 rows, Llama's sizes are multiples of 128
    pre = llama[("prefill", 4096)]
    assert abs(pre[64] / pre[128] - 1) < 0.01
    # the absolute value: D^2 MACs per cycle at 100 MHz over D^2 * 1000 um^2 = 1e5 GMAC/s/mm^2 * util
    assert abs(pre[64] - 100e6 / (1000e-6)) / pre[64] < 0.01


def test_claim_rows_per_mode_and_regime():
    grids = {"fp32": _grid(1000.0), "exact": _grid(1000.0, fmax=400.0)}
    rows = equal_silicon_rows(grids)
    assert len(rows) == 2 * 2 * 2                     # two claims x two modes x decode/prefill
    dec = [r for r in rows if "64 beat 128" in r[0] and "decode" in r[0]]
    assert all(r[2] == "agree" for r in dec)
    pre = [r for r in rows if "64 beat 128" in r[0] and "prefill" in r[0]]
    assert len(pre) == 2

    def gmean(row):
        return float(row[1].split("geometric mean 64/128 = ")[1].split(",")[0])

    # decode at batch 1 and 8 leaves D = 128 idle about half of each tile (ratio ~2); prefill reuses
    # every tile over >= 512 rows, so only padding and the M = 1 LM head keep 64 ahead
    assert all(gmean(p) < 1.5 < 1.9 < gmean(d) for p, d in zip(pre, dec, strict=True))
    text = "\n".join(regimes_section(grids))
    assert "| exact | prefill 4096 | fp8_e4m3 |" in text
