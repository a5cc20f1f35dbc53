"""The energy flow end to end on the D = 8 matrix unit: the gate-level netlist reproduces the bit-true
model's results (checked inside :func:`flows.power.run.run`, which raises otherwise), the energy adds
up, and sampled columns compose to the all-column figure."""

import pytest

from flows.power.run import run
from tb.flows import needs_osu


@needs_osu
@pytest.mark.quick
def test_d8_one_real_tile_run_flat():
    r = run(8, "fp8_e4m3", "tiles", runs=1, log=lambda s: None)
    assert r.checked_results == r.meta["results"] >= 1
    e = r.energy
    parts = sum(sum(d.values()) for d in e.by_block.values())
    assert parts == pytest.approx(e.total, rel=1e-9)
    assert e.cycles >= r.meta["w_beats"]          # one weight row per cycle at most
    assert e.internal > 0 and e.switching > 0 and 0 < e.leakage < 0.01 * e.total
    # every flop's clock pin and the clock net are paid every cycle: a floor independent of data
    assert e.by_block["clock"]["switching"] > 0


@needs_osu
@pytest.mark.full
def test_d8_composed_within_5_percent_and_zeros_cost_less():
    flat = run(8, "fp8_e4m3", "tiles", runs=2, log=lambda s: None)
    composed = run(8, "fp8_e4m3", "tiles", runs=2, sample=2, log=lambda s: None)
    assert abs(composed.energy.total / flat.energy.total - 1) < 0.05
    zeros = run(8, "fp8_e4m3", "zeros", runs=2, log=lambda s: None)
    assert zeros.energy.cycles == flat.energy.cycles
    assert zeros.energy.dynamic < flat.energy.dynamic
