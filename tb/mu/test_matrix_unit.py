"""Thin pytest runners for the matrix unit's cocotb tests (tb/mu/mu_cocotb.py).

One Verilator build per (width, fmt, rows, acc) runs several cocotb tests, so that the ``quick`` set
fits the CI budget; ``full`` adds wider builds and every product at D = 64. The quick set runs mostly
the recommended ``exact`` accumulate mode, whose builds the real-tile runs share
(``tb/tiles/rtl.py`` ``UNITS``): every product at D = 8 in every format, dot products with stalls at
D = 8, 32, 64 and 128 (D = 32 E5M2 and FP6, D = 64 E4M3 and D = 128 on the word-level tree build,
``WORDS_BUILDS``), long cancelling accumulations and the overflow limit on a unit with 4 guard bits;
the ``fp32`` mode keeps its own quick builds (every product and dot products with stalls at D = 8
E4M3 and D = 16 E2M1, and its two-cycle loop) and runs at every other point in ``full``, as do the
Dadda builds at D = 128.
Bad-parameter and lint checks need no simulation.
"""

import pytest

from hw.designs import OptionError, get_design
from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS

from .harness import run_unit

CORE = ["random_dots", "adversarial", "stalls", "throughput"]
quick, full = pytest.mark.quick, pytest.mark.full

BUILDS = [
    pytest.param(8, "fp8_e4m3", 1, ["every_product"] + CORE, marks=quick, id="w8-e4m3"),
    pytest.param(8, "fp8_e5m2", 3, ["every_product"] + CORE, marks=full, id="w8-e5m2-r3"),
    pytest.param(8, "fp4_e2m1", 2, ["every_product"] + CORE, marks=full, id="w8-e2m1-r2"),
    pytest.param(16, "fp4_e2m1", 2, ["every_product"] + CORE, marks=full, id="w16-e2m1-r2"),
    # D >= 32: the column is a Verilator hierarchical block (tb/sim.py), so builds take minutes,
    # not hours; simulation speed falls with D^2 (bit-level netlist), so these use R = 16 rows,
    # which the real-tile runs (tb/tiles/rtl.py) share.
    # D = 32 E5M2 in CI on the word-level tree in the exact mode (WORDS_BUILDS), this one in full
    pytest.param(32, "fp8_e5m2", 16, CORE, marks=full, id="w32-e5m2-r16"),
    pytest.param(64, "fp4_e2m1", 16, CORE, marks=full, id="w64-e2m1-r16"),
    # the Dadda build at D = 128 is full (about 7 minutes to build cold on the CI machine); the
    # quick set runs D = 128 on the word-level tree (WORDS_BUILDS)
    pytest.param(128, "fp8_e4m3", 16, ["random_dots", "throughput"], marks=full,
                 id="w128-e4m3-r16"),
    # FP6 (OCP MX E3M2, E2M3) in the fp32 mode: every product at D = 8, dot products with stalls at
    # D = 8, 16, 32, 64 and 128, all full (the quick set runs FP6 in the exact mode: EXACT_BUILDS at
    # D = 8, WORDS_BUILDS at D = 32).
    pytest.param(8, "fp6_e3m2", 1, ["every_product"] + CORE, marks=full, id="w8-e3m2"),
    pytest.param(8, "fp6_e2m3", 3, ["every_product"] + CORE, marks=full, id="w8-e2m3-r3"),
    pytest.param(16, "fp6_e2m3", 2, CORE, marks=full, id="w16-e2m3-r2"),
    pytest.param(32, "fp6_e3m2", 16, CORE, marks=full, id="w32-e3m2-r16"),
    pytest.param(32, "fp6_e2m3", 16, CORE, marks=full, id="w32-e2m3-r16"),
    pytest.param(16, "fp8_e4m3", 2, CORE, marks=full, id="w16-e4m3-r2"),
    pytest.param(32, "fp4_e2m1", 1, CORE, marks=full, id="w32-e2m1"),
    pytest.param(64, "fp8_e4m3", 4, CORE, marks=full, id="w64-e4m3-r4"),
    pytest.param(64, "fp8_e5m2", 1, ["every_product"] + CORE, marks=full, id="w64-e5m2"),
    pytest.param(128, "fp8_e5m2", 2, CORE, marks=full, id="w128-e5m2-r2"),
    pytest.param(16, "fp6_e3m2", 2, CORE, marks=full, id="w16-e3m2-r2"),
    # integers in the fp32 mode (their real-tile smoke runs use the exact-mode D = 8 builds)
    pytest.param(8, "int8", 2, ["every_product"] + CORE, marks=full, id="w8-int8-r2"),
    pytest.param(8, "int4", 2, ["every_product"] + CORE, marks=full, id="w8-int4-r2"),
    pytest.param(64, "int4", 4, CORE, marks=full, id="w64-int4-r4"),
    pytest.param(64, "fp6_e3m2", 16, CORE, marks=full, id="w64-e3m2-r16"),
    pytest.param(64, "fp6_e2m3", 4, ["every_product"] + CORE, marks=full, id="w64-e2m3-r4"),
    pytest.param(128, "fp6_e3m2", 2, CORE, marks=full, id="w128-e3m2-r2"),
    pytest.param(128, "fp6_e2m3", 16, CORE, marks=full, id="w128-e2m3-r16"),
]


EXACT_BUILDS = [
    pytest.param(8, "fp8_e4m3", 1, ["every_product", "long_accumulation"] + CORE, "exact", None,
                 marks=quick, id="w8-e4m3-xacc"),
    pytest.param(8, "fp8_e5m2", 3, ["every_product", "long_accumulation"] + CORE, "exact", None,
                 marks=quick, id="w8-e5m2-r3-xacc"),
    pytest.param(8, "fp4_e2m1", 2, ["every_product"] + CORE, "exact", None, marks=quick,
                 id="w8-e2m1-r2-xacc"),
    pytest.param(8, "fp6_e3m2", 1, ["every_product"] + CORE, "exact", None, marks=quick,
                 id="w8-e3m2-xacc"),
    pytest.param(8, "fp6_e2m3", 3, ["every_product"] + CORE, "exact", None, marks=quick,
                 id="w8-e2m3-r3-xacc"),
    pytest.param(8, "fp8_e4m3", 3, ["overflow_limit"], "exact", 4, marks=quick,
                 id="w8-e4m3-r3-xacc-g4"),
    pytest.param(16, "fp8_e4m3", 2, CORE, "exact", None, marks=full, id="w16-e4m3-r2-xacc"),
    pytest.param(16, "fp8_e5m2", 2, CORE, "exact", None, marks=full, id="w16-e5m2-r2-xacc"),
    pytest.param(16, "fp4_e2m1", 2, CORE, "exact", None, marks=full, id="w16-e2m1-r2-xacc"),
    pytest.param(16, "fp6_e3m2", 2, CORE, "exact", None, marks=full, id="w16-e3m2-r2-xacc"),
    pytest.param(16, "fp6_e2m3", 2, ["long_accumulation"] + CORE, "exact", None, marks=full,
                 id="w16-e2m3-r2-xacc"),
    # integers (two's complement, the exact mode is their mode): every product at D = 8 in the
    # quick set, D = 16..128 and the fp32 mode in full
    pytest.param(8, "int8", 1, ["every_product", "long_accumulation"] + CORE, "exact", None,
                 marks=quick, id="w8-int8-xacc"),
    pytest.param(8, "int4", 2, ["every_product", "long_accumulation"] + CORE, "exact", None,
                 marks=quick, id="w8-int4-r2-xacc"),
    pytest.param(16, "int8", 2, CORE, "exact", None, marks=full, id="w16-int8-r2-xacc"),
    pytest.param(32, "int8", 16, CORE, "exact", None, marks=full, id="w32-int8-r16-xacc"),
    pytest.param(32, "int4", 16, CORE, "exact", None, marks=full, id="w32-int4-r16-xacc"),
    pytest.param(64, "int8", 4, CORE, "exact", None, marks=full, id="w64-int8-r4-xacc"),
    # shared with the real-tile runs (tb/tiles/rtl.py UNITS; the D = 64 E2M1 runs are in CI, the
    # D = 32 E4M3 ones in full: the quick set has D = 32 on the word-level tree and the Dadda tree
    # in the exact mode at D = 8 and 64)
    pytest.param(32, "fp8_e4m3", 16, CORE, "exact", None, marks=full, id="w32-e4m3-r16-xacc"),
    pytest.param(64, "fp4_e2m1", 16, CORE, "exact", None, marks=quick, id="w64-e2m1-r16-xacc"),
    pytest.param(64, "fp8_e5m2", 16, CORE, "exact", None, marks=full, id="w64-e5m2-r16-xacc"),
    pytest.param(128, "fp4_e2m1", 16, ["random_dots", "throughput"], "exact", None, marks=full,
                 id="w128-e2m1-r16-xacc"),
]
# Block-scaled formats (OCP MX, NVFP4): random block dots with scales, extreme scales, stalls on
# every stream including ws. D = B has one block per beat (no window); the window's round-to-odd
# needs D >= 2B (NVFP4 at D = 32, MX at D = 64). Quick: the smallest build (NVFP4, D = 16); the MX
# builds (D >= 32, several minutes each) are in the full set.
BLOCK = ["block_dots", "block_backpressure"]
BLOCK_BUILDS = [
    pytest.param(32, "mxfp8_e4m3", 4, BLOCK, marks=full, id="w32-mxfp8_e4m3-r4"),
    pytest.param(32, "mxfp4_e2m1", 2, BLOCK, marks=full, id="w32-mxfp4_e2m1-r2"),
    pytest.param(16, "nvfp4", 2, BLOCK, marks=quick, id="w16-nvfp4-r2"),
    pytest.param(32, "nvfp4", 3, BLOCK, marks=full, id="w32-nvfp4-r3"),
    pytest.param(64, "mxfp4_e2m1", 2, BLOCK, marks=full, id="w64-mxfp4_e2m1-r2"),
    pytest.param(32, "mxfp8_e5m2", 2, BLOCK, marks=full, id="w32-mxfp8_e5m2-r2"),
    pytest.param(32, "mxfp6_e3m2", 2, BLOCK, marks=full, id="w32-mxfp6_e3m2-r2"),
    pytest.param(32, "mxfp6_e2m3", 2, BLOCK, marks=full, id="w32-mxfp6_e2m3-r2"),
]
# The word-level column tree (``tree=words``: computes the Dadda tree's function, proved in
# docs/verification.md; same latency and stream timing; builds and simulates far faster) carries
# the quick set's exact-mode units at D = 32 E5M2, E3M2 and E2M3 and D = 64 E4M3 (the fp32 mode of
# each, and D = 128, in full: the D = 128 build alone took about 3 min of a cold CI run). The
# real-tile runs at those points share these builds (tb/tiles/rtl.py, test_regression.py: every op
# at D = 32 E5M2 and D = 64 E4M3, one run each in FP6).
WORDS_BUILDS = [
    *[pytest.param(32, f, 16, CORE, acc, None, marks=quick if acc == "exact" else full,
                   id=f"w32-{f[4:]}-r16-twords" + ("-xacc" if acc == "exact" else ""))
      for f in ("fp8_e5m2", "fp6_e3m2", "fp6_e2m3") for acc in ("exact", "fp32")],
    pytest.param(128, "fp8_e4m3", 16, CORE, "fp32", None, marks=full, id="w128-e4m3-r16-twords"),
    # with the real tiles at D = 64 that use this build (test_regression.py)
    pytest.param(64, "fp8_e4m3", 16, CORE, "exact", None, marks=quick,
                 id="w64-e4m3-r16-twords-xacc"),
    pytest.param(128, "fp8_e4m3", 16, CORE, "exact", None, marks=full,
                 id="w128-e4m3-r16-twords-xacc"),
    pytest.param(128, "int8", 16, ["random_dots", "throughput"], "exact", None, marks=full,
                 id="w128-int8-r16-twords-xacc"),
    pytest.param(128, "int4", 16, ["random_dots", "throughput"], "exact", None, marks=full,
                 id="w128-int4-r16-twords-xacc"),
    # MX at D = 64: two blocks per beat, so scales spread over more binades than the window holds
    # and NaN scales (block_dots) reach the window. E4M3 in the quick set in the recommended mode
    # (the exact mode's window, hw/mu/window.py; the block real-tile regression shares the build),
    # the fp32 mode and the other MX element formats in the full set.
    pytest.param(64, "mxfp8_e4m3", 4, BLOCK, "exact", None, marks=quick,
                 id="w64-mxfp8_e4m3-r4-twords-xacc"),
    pytest.param(64, "mxfp8_e4m3", 4, ["block_dots"], "fp32", None, marks=full,
                 id="w64-mxfp8_e4m3-r4-twords"),
    pytest.param(32, "mxfp4_e2m1", 2, BLOCK, "exact", None, marks=full,
                 id="w32-mxfp4_e2m1-r2-twords-xacc"),
    pytest.param(128, "mxfp8_e5m2", 2, ["block_dots"], "exact", None, marks=full,
                 id="w128-mxfp8_e5m2-r2-twords-xacc"),
    *[pytest.param(64, f, 2, BLOCK, "fp32", None, marks=full, id=f"w64-{f}-r2-twords")
      for f in ("mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3")],
]
ALL_BUILDS = ([pytest.param(*p.values, "fp32", None, None, marks=p.marks, id=p.id)
               for p in BUILDS + BLOCK_BUILDS]
              + [pytest.param(*p.values, None, marks=p.marks, id=p.id) for p in EXACT_BUILDS]
              + [pytest.param(*p.values, "words", marks=p.marks, id=p.id) for p in WORDS_BUILDS])


@pytest.mark.parametrize("width,fmt,rows,tests,acc,guard_bits,tree", ALL_BUILDS)
def test_matrix_unit(width, fmt, rows, tests, acc, guard_bits, tree):
    run_unit(width, fmt, rows, tests, acc=acc, guard_bits=guard_bits, tree=tree)


#: Clock-gated units (hw/clock_gate.py: weight and scale buffer rows, tree stages and, in the exact
#: mode, the accumulator's rows and drain clocked through latch-and-AND gates of liberty cells,
#: simulated with the cells' models): the same tests, bit-exact. With ``isolate`` also operand
#: isolation in the lanes (a zero product hands the tree +0 whatever the signs): ``every_product``
#: sends every code pair, signed zeros, Inf x 0 and NaN included, through lane, tree and accumulator.
GATED_BUILDS = [
    pytest.param(8, "fp8_e4m3", 2, ["every_product"] + CORE, "exact", False, marks=quick,
                 id="w8-e4m3-r2-xacc-cg"),
    pytest.param(8, "fp8_e5m2", 2, ["every_product"] + CORE, "exact", True, marks=quick,
                 id="w8-e5m2-r2-xacc-cg-oi"),
    pytest.param(8, "fp4_e2m1", 2, ["every_product"] + CORE, "fp32", True, marks=full, id="w8-e2m1-r2-cg-oi"),
    pytest.param(16, "nvfp4", 2, BLOCK, "exact", False, marks=full, id="w16-nvfp4-r2-xacc-cg"),
    pytest.param(16, "nvfp4", 2, BLOCK, "exact", True, marks=full, id="w16-nvfp4-r2-xacc-cg-oi"),
    pytest.param(32, "fp8_e4m3", 3, CORE, "fp32", False, marks=full, id="w32-e4m3-r3-cg"),
    pytest.param(32, "fp8_e4m3", 2, CORE, "exact", True, marks=full, id="w32-e4m3-r2-xacc-cg-oi"),
    pytest.param(32, "mxfp8_e4m3", 2, BLOCK, "exact", False, marks=full, id="w32-mxfp8_e4m3-r2-xacc-cg"),
]


@pytest.mark.parametrize("width,fmt,rows,tests,acc,isolate", GATED_BUILDS)
def test_gated_unit(width, fmt, rows, tests, acc, isolate):
    run_unit(width, fmt, rows, tests, acc=acc, gate=True, isolate=isolate,
             stages=4 if fmt in ("nvfp4", "mxfp8_e4m3") and acc == "exact" else None)


#: NVFP4 in the exact mode (block terms in one fixed-point grid, docs/numerics.md 7.5): (D, R,
#: stages). The third stage is a register on the scaled block terms, 4 is the study's (the fourth
#: inside the trees); D = 16 has one block per beat, D >= 32 compress two or more shifted terms.
NVFP4_EXACT = [pytest.param(16, 2, 4, marks=quick, id="w16-r2-s4"),
               pytest.param(32, 3, 2, marks=full, id="w32-r3-s2"),
               pytest.param(32, 3, 3, marks=full, id="w32-r3-s3"),
               pytest.param(64, 2, 4, marks=full, id="w64-r2-s4")]


@pytest.mark.parametrize("width,rows,stages", NVFP4_EXACT)
def test_nvfp4_exact(width, rows, stages):
    run_unit(width, "nvfp4", rows, BLOCK, acc="exact", stages=stages)


# The fp32 accumulate loop over two cycles (loop = 2): the same bit-exact tests plus the interlock's
# row sequences (rows in turn, repeated rows, a repeat across a tile edge; with pauses on w, x and
# y) and its cycle counts against perf.contract, at R = 1 (every beat repeats its row) and R = 3.
LOOP_TESTS = ["loop_rows"] + CORE
LOOP_BUILDS = [
    pytest.param(8, "fp8_e4m3", 1, ["every_product"] + LOOP_TESTS, marks=quick, id="w8-e4m3-loop2"),
    pytest.param(8, "fp8_e5m2", 3, LOOP_TESTS, marks=full, id="w8-e5m2-r3-loop2"),
    pytest.param(32, "fp8_e4m3", 3, LOOP_TESTS, marks=full, id="w32-e4m3-r3-loop2"),
    # the block scale is an axis of the same unit: its accumulate loop over two cycles too
    pytest.param(16, "nvfp4", 1, BLOCK, marks=quick, id="w16-nvfp4-loop2"),
    pytest.param(64, "mxfp8_e4m3", 3, BLOCK, marks=full, id="w64-mxfp8_e4m3-r3-loop2"),
]


@pytest.mark.parametrize("width,fmt,rows,tests", LOOP_BUILDS)
def test_matrix_unit_loop(width, fmt, rows, tests):
    run_unit(width, fmt, rows, tests, loop=2)


@quick
@pytest.mark.parametrize("given,match", [
    ({"width": "48"}, "power of two"),
    ({"width": "4"}, "power of two"),
    ({"width": "256"}, "power of two"),
    ({"width": "wide"}, "not an integer"),
    ({"fmt": "fp16"}, "fmt"),
    ({"rows": "0"}, "rows.*minimum"),
    ({"acc": "fp16"}, "acc.*allowed: fp32, exact"),
    ({"acc": "exact", "guard_bits": "0"}, "guard-bits.*minimum"),
    ({"loop": "0"}, "loop.*minimum"),
    # combinations: refused by the unit's parameter value when the registry parses the options
    ({"width": "16", "fmt": "mxfp8_e4m3"}, "multiple of 32"),
    ({"acc": "exact", "loop": "2"}, "loop must be one of"),
    ({"acc": "fp32", "guard_bits": "8"}, "guard_bits.*acc='exact'"),
    ({"width": "8", "stages": "9", "acc": "fp32"}, "stages must lie in 0..8"),
    ({"width": "8", "stages": "8"}, "stages must lie in 0..7 for width 8 and acc='exact'"),
])
def test_bad_parameters_registry(given, match):
    """The CLI/registry path (option text, as from the command line) names the option and what is
    allowed; a combination that does not exist is refused while the options are parsed, before any
    generator runs."""
    with pytest.raises(OptionError, match=match):
        get_design("mu").params(given)
    with pytest.raises(OptionError, match=match):
        get_design("mu").build(given)


@quick
def test_registry_default_is_the_recommended_mode():
    """``make synth`` (the registry's defaults) builds the ``exact`` unit in every format (OCP MX's is
    the window); ``loop = 2`` (an ``fp32``-mode option) gets ``fp32``; a mode given by name is
    kept."""
    d = get_design("mu")
    for fmt in MATRIX_FORMATS + tuple(BLOCK_FORMATS):
        assert d.params({"width": "32", "fmt": fmt})["acc"] == "exact", fmt
        assert d.params({"width": "32", "fmt": fmt, "acc": "fp32"})["acc"] == "fp32"
    assert d.params({"loop": "2"})["acc"] == "fp32"
    assert d.variant(d.params({})) == "mu-w64-fp8_e4m3-xacc"   # what `make synth` builds
    assert get_design("slice").params({})["acc"] == "exact"


@quick
def test_one_parameter_value():
    """The registry, the unit and the slice share one typed value: parsed options give the same
    ``MatrixUnitParams`` the unit holds, it is immutable, and the unit rebuilt from it is the same."""
    from dataclasses import FrozenInstanceError

    from hw.mu.matrix_unit import MatrixUnit, MatrixUnitParams

    d = get_design("mu")
    parsed = d.params({"width": "32", "fmt": "mxfp4_e2m1", "loop": "2", "tree": "words"})
    p = d.typed(parsed)
    assert isinstance(p, MatrixUnitParams) and p.options() == parsed
    unit = d.build(parsed)
    unit._MustUse__silence = True
    assert unit.params == p and MatrixUnit.from_params(p).params == p
    with pytest.raises(FrozenInstanceError):
        p.loop = 1


@quick
@pytest.mark.parametrize("kw,exc,match", [
    ({"width": 48}, ValueError, "width"),
    ({"width": 256}, ValueError, "width"),
    ({"width": 8.0}, TypeError, "width"),
    ({"fmt": "bf16"}, ValueError, "fmt"),
    ({"rows": 0}, ValueError, "rows"),
    ({"stages": -1}, ValueError, "stages"),
    ({"acc": "fp64"}, ValueError, "acc must be one of fp32, exact"),
    ({"acc": "exact", "guard_bits": 0}, ValueError, "guard_bits"),
    ({"guard_bits": 8}, ValueError, "guard_bits.*acc='exact'"),
    ({"acc": "exact", "guard_bits": 4.0}, TypeError, "guard_bits"),
    ({"loop": 3}, ValueError, "loop must be one of"),
    ({"loop": 2, "acc": "exact"}, ValueError, "loop.*acc='exact'"),
    ({"loop": 2.0}, TypeError, "loop"),
])
def test_bad_parameters_generator(kw, exc, match):
    """The generator itself raises a clear error too."""
    from hw.mu.matrix_unit import MatrixUnit

    args = {"width": 8, "fmt": "fp8_e4m3", "rows": 1} | kw
    with pytest.raises(exc, match=match):
        MatrixUnit(**args)


# Verilator -Wall lint of mu at every width lives in tb/test_lint.py (the lead's, with the waivers
# for Amaranth-generated idioms); plain -Wall reports WIDTHTRUNC/UNUSED on Amaranth's output.
