"""pytest runner: every BF16 multiplier variant in one Verilator build, checked by cocotb.

The sim top (:class:`tb.fp.bf16_simtop.Bf16SimTop`) holds a bank of every variant; each
multiplier module is emitted once (``hw.hier``), so Verilator compiles it once. The cocotb module
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


def _run(name, lanes, groups, **knobs):
    top = Bf16SimTop(lanes=lanes, groups=groups)
    net = hier.emit(top, "bf16_simtop")
    env = {"BF16_GROUPS": json.dumps([list(g) for g in top.groups]), "BF16_LANES": lanes}
    env.update({f"BF16_{k.upper()}": int(v) for k, v in knobs.items()})
    # -fno-inline: keep each multiplier a C++ class shared by all its instances; inlined, the
    # 64-lane top becomes 175 MB of C++ (19 MB without inlining)
    sim.run(name, net.verilog, "bf16_simtop", "tb.fp.bf16_mul_cocotb", env=env,
            build_args=["-fno-inline"])


@pytest.mark.quick
def test_bf16_mul_all_variants():
    """>= 2M boundary products + 1M random + all special pairs for each of the 8 variants."""
    assert 16384 * len(EXPONENT_PAIRS) >= 2_000_000
    _run(f"bf16_mul-simtop-l{LANES}", LANES, DEFAULT_GROUPS,
         boundary=1, random=1_000_000, stall_cycles=20_000)


def test_simtop_emits_each_variant_once():
    net = hier.emit(Bf16SimTop(lanes=4), "bf16_simtop")
    counts = net.instance_counts()
    mods = [m for m in net.modules if m.startswith("bf16_mul_")]
    assert len(mods) == len(DEFAULT_GROUPS)
    assert all(counts[m] == 4 for m in mods)
