"""``python -m tb.verify``: the bit-exact quick regression of one design configuration.

The verification gate of the design-space search (``python -m flows explore``) calls this as a
subprocess, so that ``flows`` never imports ``tb``. It builds the candidate exactly as given (its own
width, stages, tree, accumulate mode ...) with Verilator and runs the existing cocotb testbench:

``mu``
    ``tb.mu.mu_cocotb``: random dot products, adversarial cases, four stall patterns (random and
    bursty pauses on ``w``, ``x`` and ``y``) and the full-rate throughput test, each result
    checked bit for bit against the numerics model (:mod:`tb.mu.model`).
``bf16_mul``
    ``tb.fp.bf16_mul_cocotb`` on a bank of the one variant: the boundary sweep (every mantissa pair
    at boundary exponents), random and special pairs, and a run with random valid gaps and backpressure,
    checked bit for bit against :func:`tb.fp.bf16_ref.bf16_mul_ref`.

Exit status: 0 when every check passed, 1 when a check failed (the first line of stderr names the
failing test), 2 for a bad request or when the check could not run (a build error, a crash: the
traceback is on stderr), so that a crash is never taken for a verdict. Stdout carries one line
``VERIFY <json>`` (after the simulator's output): the design, its parameters, the tests run, the
verdict, the reason of a failure and the wall time.

Examples::

    python -m tb.verify --design mu --set width=32 --set stages=3
    python -m tb.verify --design bf16_mul --set arch=booth4 --set stages=2 --effort smoke
"""

import argparse
import json
import os
import sys
import time
import traceback

from hw.designs import OptionError, get_design
from hw.formats import BLOCK_FORMATS

__all__ = ["verify", "main", "EFFORTS", "MU_TESTS", "MU_BLOCK_TESTS", "mu_tests", "TESTS", "CHECKERS"]

#: The matrix unit's quick regression (the CORE set of ``tb/mu/test_matrix_unit.py``).
MU_TESTS = ("random_dots", "adversarial", "stalls", "throughput")
#: The same checks for a unit on a block-scaled format (``tb/mu/mu_cocotb.py``: random and
#: adversarial block dots against the block model, with stalls and backpressure).
MU_BLOCK_TESTS = ("block_dots", "block_backpressure")


def mu_tests(params: dict) -> list:
    """The cocotb tests that verify a matrix unit with these parameters."""
    return list(MU_BLOCK_TESTS if params["fmt"] in BLOCK_FORMATS else MU_TESTS)
#: How much each effort checks: ``quick`` is the regression's own size; ``smoke`` is a small run for
#: the search's own tests (it still checks every result bit for bit).
EFFORTS = {
    "quick": {"mu_scale": 1.0, "bf16_lanes": 64, "bf16_boundary": 1, "bf16_random": 200_000,
              "bf16_stall_cycles": 5_000},
    "smoke": {"mu_scale": 0.5, "bf16_lanes": 4, "bf16_boundary": 0, "bf16_random": 2_000,
              "bf16_stall_cycles": 500},
}


def _verify_mu(params: dict, effort: dict, seed: int) -> tuple:
    from tb import sim
    from tb.mu.harness import SIM_BUILD_ARGS, SIM_HIER_BLOCKS, emit_params, unit_knobs

    unit = get_design("mu").typed(params)  # the one parameter value, every option included
    verilog, latency, variant, _ = emit_params(unit)
    knobs = {**unit_knobs(unit, latency), "MU_SEED": seed, "MU_SCALE": effort["mu_scale"]}
    sim.run(variant, verilog, get_design("mu").top_name, "tb.mu.mu_cocotb", env=knobs,
            testcase=mu_tests(params), hier_blocks=SIM_HIER_BLOCKS, build_args=SIM_BUILD_ARGS)
    return {"latency": latency}


def _verify_bf16(params: dict, effort: dict, seed: int) -> tuple:
    from hw import hier
    from tb import sim
    from tb.fp.bf16_simtop import Bf16SimTop

    group = (params["arch"], params["stages"], params["subnormals"], params["cuts"])
    lanes = effort["bf16_lanes"]
    top = Bf16SimTop(lanes=lanes, groups=(group,))
    net = hier.emit(top, "bf16_simtop")
    name = f"verify-{get_design('bf16_mul').variant(params)}-l{lanes}"
    env = {"BF16_GROUPS": json.dumps([list(group)]), "BF16_LANES": lanes,
           "BF16_LATENCIES": json.dumps([top.latency(0)]), "BF16_BOUNDARY": effort["bf16_boundary"],
           "BF16_RANDOM": effort["bf16_random"], "BF16_STALL_CYCLES": effort["bf16_stall_cycles"],
           "BF16_SEED": seed}
    sim.run(name, net.verilog, "bf16_simtop", "tb.fp.bf16_mul_cocotb", env=env,
            hier_blocks=net.blocks(), build_args=sim.LONG_SIM_BUILD_ARGS)
    return {"latency": top.latency(0), "lanes": lanes}


#: Design name -> checker ``(parsed params, effort dict, seed) -> extra info`` (raises
#: ``AssertionError`` on a mismatch).
CHECKERS = {"mu": _verify_mu, "bf16_mul": _verify_bf16}
#: The cocotb tests each checker runs.
TESTS = {"mu": list(MU_TESTS), "bf16_mul": ["full_rate", "stalls"]}


def verify(design: str, given: dict, effort: str = "quick", seed: int = 1) -> dict:
    """Build one configuration and run its bit-exact quick regression.

    Parameters
    ----------
    design : str
        ``mu`` or ``bf16_mul``.
    given : dict
        Option values (strings as on the command line, or parsed values); the rest are defaults.
    effort : {"quick", "smoke"}
        See :data:`EFFORTS`.
    seed : int
        Seed of the random stimulus.

    Returns
    -------
    dict
        ``design``, ``params`` (all parsed options), ``tests``, ``passed`` (bool), ``reason`` (None,
        or the first line of the failure) and ``wall_s``.

    Raises
    ------
    hw.designs.OptionError
        An unknown design or option, or a bad value, or a design without a checker here.
    """
    if design not in CHECKERS:
        raise OptionError(f"no verification for design {design!r}; designs: {', '.join(CHECKERS)}")
    if effort not in EFFORTS:
        raise OptionError(f"unknown effort {effort!r}; choose one of: {', '.join(EFFORTS)}")
    params = get_design(design).params(given)
    t0 = time.monotonic()
    tests = mu_tests(params) if design == "mu" else TESTS[design]
    out = {"design": design, "params": params, "effort": effort, "seed": seed, "tests": tests,
           "passed": False, "reason": None}
    try:
        out.update(passed=True, **CHECKERS[design](params, EFFORTS[effort], seed))
    except AssertionError as e:
        out["reason"] = (str(e).splitlines() or ["assertion failed"])[0][:500]
    out["wall_s"] = round(time.monotonic() - t0, 1)
    return out


def _parse_sets(items) -> dict:
    given = {}
    for it in items or []:
        k, sep, v = it.partition("=")
        if not sep or not k:
            raise OptionError(f"--set {it!r}: expected key=value (e.g. --set stages=3)")
        given[k.strip()] = v.strip()
    return given


def main(argv=None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(prog="python -m tb.verify", description=__doc__.splitlines()[0])
    p.add_argument("--design", required=True, help=f"one of: {', '.join(CHECKERS)}")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="design option (repeatable), e.g. --set width=32 --set stages=3")
    p.add_argument("--effort", default="quick", choices=sorted(EFFORTS))
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    # A command, not a pytest test: inherited from a pytest parent, this variable would make
    # cocotb's runner exit on the first failed test instead of returning the verdict.
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    try:
        res = verify(a.design, _parse_sets(a.set), a.effort, a.seed)
    except OptionError as e:
        print(f"python -m tb.verify: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a build error or a crash is no verdict: say so, with the traceback
        traceback.print_exc()
        print(f"python -m tb.verify: error: the check could not run: {type(e).__name__}: {e}",
              file=sys.stderr)
        return 2
    if not res["passed"]:
        print(f"python -m tb.verify: FAILED: {res['reason']}", file=sys.stderr)
    print("VERIFY " + json.dumps(res, sort_keys=True, default=str))
    return 0 if res["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
