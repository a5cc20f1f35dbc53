"""pytest runner: every BF16 multiplier variant in one Verilator build, checked by cocotb.

The sim top (:class:`tb.fp.bf16_simtop.Bf16SimTop`) holds a bank of every variant; each
multiplier module is emitted once (``hw.hier``) and built as a Verilator hierarchical block, so it
is Verilated and compiled once however many lanes there are. The cocotb module
``tb.fp.bf16_mul_cocotb`` runs the boundary sweep, random and special pairs at full throughput and a
random-stall test; it prints the measured checking rate (never asserted).
"""

import json

import pytest

from hw import hier
from tb import sim
from tb.fp.bf16_simtop import DEFAULT_GROUPS, Bf16SimTop
from tb.fp.bf16_vectors import EXPONENT_PAIRS

LANES = 64


def _run(name, lanes, groups, **knobs) -> list:
    """Build and run the sim top; return the measured checking rates (one dict per cocotb run)."""
    top = Bf16SimTop(lanes=lanes, groups=groups)
    net = hier.emit(top, "bf16_simtop")
    rates = sim.BUILD / name / "rates.jsonl"
    rates.parent.mkdir(parents=True, exist_ok=True)
    rates.unlink(missing_ok=True)
    env = {"BF16_GROUPS": json.dumps([list(g) for g in top.groups]), "BF16_LANES": lanes,
           "BF16_LATENCIES": json.dumps([top.latency(g) for g in range(len(top.groups))]),
           "BF16_RATE_OUT": rates}
    env.update({f"BF16_{k.upper()}": int(v) for k, v in knobs.items()})
    sim.run(name, net.verilog, "bf16_simtop", "tb.fp.bf16_mul_cocotb", env=env,
            hier_blocks=net.blocks(), build_args=sim.LONG_SIM_BUILD_ARGS)
    return [json.loads(line) for line in rates.read_text().splitlines()]


@pytest.mark.quick
def test_bf16_mul_all_variants(record_property):
    """>= 2M boundary products + 1M random + all special pairs for each of the 8 variants.

    The checking rate is reported (junit property ``measured ...`` and the run's summary), never
    asserted."""
    assert 16384 * len(EXPONENT_PAIRS) >= 2_000_000
    for r in _run(f"bf16_mul-simtop-l{LANES}", LANES, DEFAULT_GROUPS,
                  boundary=1, random=1_000_000, stall_cycles=20_000):
        record_property(f"measured BF16 checking rate ({r['run']})",
                        f"{r['products_per_s']:,.0f} products/s ({r['products']:,} products in "
                        f"{r['seconds']:.1f} s; {r['products_per_cpu_s']:,.0f} per CPU second)")


def test_simtop_emits_each_variant_once():
    net = hier.emit(Bf16SimTop(lanes=4), "bf16_simtop")
    counts = net.instance_counts()
    mods = [m for m in net.modules if m.startswith("bf16_mul_")]
    assert len(mods) == len(DEFAULT_GROUPS)
    assert all(counts[m] == 4 for m in mods)
    assert sorted(net.blocks()) == sorted(mods)
