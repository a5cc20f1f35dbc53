"""The BF16 multiplier's register placement (``cuts``): parsing, and every position checked bit
for bit in simulation.

The simulated check is the regression of ``test_bf16_mul.py`` (boundary sweep, random and special
pairs at full rate, random stalls, the exact latency) on a sim top holding one group per placement:
each position alone, positions stacked inside the Booth tree (the fields computed beside the
multiplier must be delayed with the product), every position at once, and a flush-to-zero variant.
The reference is :func:`tb.fp.bf16_ref.bf16_mul_ref` (integer model, itself checked against
ml_dtypes in ``test_bf16_ref.py``), never the design.
"""

import json

import pytest

from hw import hier
from hw.designs import get_design
from hw.fp.bf16_mul import CUTS, Bf16Multiplier, cut_names, parse_cuts, placements
from hw.pipeline import BF16_MUL, Cut
from tb import sim
from tb.fp.bf16_simtop import Bf16SimTop

#: One group per placement (arch, stages, subnormals, cuts).
GROUPS = tuple(("booth4", 1, True, c) for c in CUTS) + (
    ("booth4", 3, True, "pp+tree2+rows"),
    ("booth4", len(CUTS), True, "+".join(CUTS)),
    ("booth4", 2, False, "tree1+raw"),
    ("behavioral", 2, True, "in+raw"),
)


def test_parse_cuts_normalizes_and_refuses():
    assert parse_cuts("out+tree1") == "tree1+out"
    assert parse_cuts(" auto ") == "auto"
    assert parse_cuts("out+raw+out") == "raw+out+out"
    with pytest.raises(ValueError, match="unknown position 'tree9'"):
        parse_cuts("tree9+out")
    with pytest.raises(ValueError, match="raw given twice"):
        parse_cuts("raw+raw")


def test_cut_names_auto_is_the_default_placement_and_counts_must_match():
    names = {"in": Cut.INPUT, "raw": Cut.RAW, "out": Cut.OUTPUT}   # the auto placement's positions
    for s in range(6):
        assert [names[n] for n in cut_names("booth4", s, "auto")] == list(BF16_MUL.plan(s))
    with pytest.raises(ValueError, match="places 2 register.*stages=3"):
        Bf16Multiplier("booth4", 3, True, "raw+out")
    with pytest.raises(ValueError, match="inside the Booth tree"):
        Bf16Multiplier("behavioral", 1, True, "pp")
    m = Bf16Multiplier("booth4", 2, True, "out+pp")
    m._MustUse__silence = True   # only its placement is read
    assert m.cut_names == ("pp", "out")


def test_placements_enumerate_distinct_valid_choices():
    for arch in ("booth4", "behavioral"):
        for s in range(4):
            ps = placements(arch, s)
            assert ps[0] == "auto" and len(set(ps)) == len(ps)
            for p in ps[1:]:
                assert len(cut_names(arch, s, p)) == s
    # booth4, one register: any of the seven positions; two: C(6, 2) = 15 pairs of the six positions
    # besides out, 6 of them with out, and out+out
    assert len(placements("booth4", 1)) == 1 + len(CUTS)
    assert len(placements("booth4", 2)) == 1 + 15 + 6 + 1


def test_registry_option_names_the_variant_and_keeps_the_default_name():
    d = get_design("bf16_mul")
    assert d.variant(d.params({"stages": "2"})) == "bf16_mul-booth4-s2"
    assert d.variant(d.params({"stages": "2", "cuts": "out+tree1"})) == "bf16_mul-booth4-s2-cut_tree1_out"
    net = hier.emit(Bf16Multiplier("booth4", 2, True, "tree1+out"), "top")
    assert "tree1_q" in net.verilog and "side0_q" in net.verilog


@pytest.mark.full
def test_every_placement_bit_exact():
    """Every position, alone and stacked: >= 2M boundary + 200k random + special products each,
    and random stalls, bit for bit and at the placement's latency."""
    lanes = 8
    top = Bf16SimTop(lanes=lanes, groups=GROUPS)
    net = hier.emit(top, "bf16_simtop")
    env = {"BF16_GROUPS": json.dumps([list(g) for g in top.groups]), "BF16_LANES": lanes,
           "BF16_LATENCIES": json.dumps([top.latency(g) for g in range(len(top.groups))]),
           "BF16_BOUNDARY": 1, "BF16_RANDOM": 200_000, "BF16_STALL_CYCLES": 5_000}
    sim.run("bf16_mul-placements", net.verilog, "bf16_simtop", "tb.fp.bf16_mul_cocotb", env=env,
            hier_blocks=net.blocks(), build_args=sim.LONG_SIM_BUILD_ARGS)
