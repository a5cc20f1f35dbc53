"""Build-and-run glue shared by the pytest runner, the replay API and the benchmark.

:func:`emit_unit` generates the Verilog of ``mu`` through the design registry and reads the
generator's ``latency`` property; :func:`run_unit` builds it with Verilator (tb/sim.py) and runs
cocotb tests of ``tb.mu.mu_cocotb`` against it, passing the parameters as environment knobs.
"""

from __future__ import annotations

import functools
import time

from hw import hier
from hw.designs import get_design
from hw.mu.matrix_unit import MatrixUnit, MatrixUnitParams
from tb import sim

__all__ = ["emit_unit", "emit_params", "run_unit", "unit_params", "unit_knobs", "SIM_HIER_BLOCKS",
           "SIM_BUILD_ARGS"]

#: Verilog modules Verilator builds once as hierarchical blocks (tb/sim.py): the column
#: (``hw.mu.column.Column``, placed D times). Without it a D=32 build takes 15+ minutes.
SIM_HIER_BLOCKS = ("mu_col_*",)
#: Verilator options of every matrix-unit build (tb/sim.py explains them).
SIM_BUILD_ARGS = sim.FAST_BUILD_ARGS


def unit_params(width: int, fmt: str, rows: int = 1, stages: int | None = None,
                tree: str | None = None, acc: str | None = None,
                guard_bits: int | None = None, loop: int | None = None, gate: bool = False,
                isolate: bool = False) -> dict:
    """Parsed ``mu`` parameters (``stages``, ``tree``, ``guard_bits``, ``loop``: None for the
    design's default; ``acc`` None is ``fp32``, the mode the model and the testbench default to,
    where the registry's default is the recommended mode, :func:`hw.mu.numerics.default_acc`;
    ``gate``: clock gates; ``isolate``: operand isolation in the lanes).

    Raises
    ------
    OptionError
        Naming a bad parameter.
    """
    given = {"width": width, "fmt": fmt, "rows": rows}
    if stages is not None:
        given["stages"] = stages
    if tree is not None:
        given["tree"] = tree
    given["acc"] = "fp32" if acc is None else acc
    if guard_bits is not None:
        given["guard_bits"] = guard_bits
    if loop is not None:
        given["loop"] = loop
    if gate:
        given["gate"] = True
    if isolate:
        given["isolate"] = True
    return get_design("mu").params(given)


def unit_knobs(params: MatrixUnitParams, latency: int) -> dict:
    """The environment knobs by which ``tb.mu.mu_cocotb`` learns the unit it drives: its parameter
    value and its latency (the generator's property)."""
    return {"MU_WIDTH": params.width, "MU_FMT": params.fmt, "MU_ROWS": params.rows,
            "MU_LATENCY": latency, "MU_ACC": params.acc, "MU_GUARD_BITS": params.guard_bits,
            "MU_LOOP": params.loop}


@functools.lru_cache(maxsize=8)
def emit_params(params: MatrixUnitParams):
    """Verilog text, latency, variant name and generation seconds of the unit of one parameter
    value (cached per process)."""
    design = get_design("mu")
    t0 = time.perf_counter()
    unit = MatrixUnit.from_params(params)
    latency = unit.latency          # the generator's property, never a number of our own
    verilog = hier.emit(unit, design.top_name).verilog  # == design.emit(params), built once
    return verilog, latency, design.variant(params.options()), time.perf_counter() - t0


def emit_unit(width: int, fmt: str, rows: int = 1, stages: int | None = None,
              tree: str | None = None, acc: str | None = None, guard_bits: int | None = None,
              loop: int | None = None):
    """Verilog text, latency, variant name and generation seconds of one unit (cached per process).

    Parameters
    ----------
    width, fmt, rows, stages :
        Unit parameters (``stages`` None: the design's default).
    tree : str or None
        Column tree architecture (:data:`hw.mu.tree.TREE_ARCHS`; None: the design's default, the
        bit-level Dadda tree that synthesis maps).
    acc, guard_bits : str or None, int or None
        Accumulate mode (None: ``fp32``, as :func:`unit_params`) and the ``exact`` mode's guard bits
        (None: the design's default).
    loop : int or None
        The ``fp32`` accumulate loop's cycles (None: the design's default).

    Returns
    -------
    tuple
        ``(verilog, latency, variant, seconds)``.
    """
    return emit_params(get_design("mu").typed(unit_params(width, fmt, rows, stages, tree, acc,
                                                          guard_bits, loop)))


def run_unit(width: int, fmt: str, rows: int = 1, testcases=None, *, stages: int | None = None,
             acc: str | None = None, guard_bits: int | None = None, env: dict | None = None,
             suffix: str = "", tree: str | None = None, flat: bool = False,
             loop: int | None = None, gate: bool = False, isolate: bool = False) -> dict:
    """Build the unit and run cocotb tests from ``tb.mu.mu_cocotb``.

    Parameters
    ----------
    testcases : str or list of str, optional
        cocotb test names (default: all).
    acc, guard_bits : str or None, int or None
        Accumulate mode (None: ``fp32``, as :func:`unit_params`) and the ``exact`` mode's guard bits
        (None: the design's default); passed to the tests as ``MU_ACC`` and ``MU_GUARD_BITS``.
    loop : int or None
        The ``fp32`` accumulate loop's cycles (None: the design's default); passed as ``MU_LOOP``.
    env : dict, optional
        Extra knobs (``MU_SEED``, ``MU_SCALE``, ...).
    suffix : str
        Appended to the build folder name (separate folders for separate consumers).
    tree : str or None
        Column tree architecture (None: the design's default, the Dadda tree synthesis maps;
        ``words``: the word-level tree proved to compute the same function, ``docs/verification.md``).
    flat : bool
        One flat Verilator model instead of hierarchical columns (longer build, faster simulation;
        its build folder gets ``-flat``).
    gate : bool
        Clock-gated weight buffers (:mod:`hw.clock_gate`): the same function, so the same tests.
    isolate : bool
        Operand isolation in the lanes (:class:`hw.mu.lane.Lane`): the same function.

    Returns
    -------
    dict
        ``variant``, ``latency``, ``emit_s``, ``wall_s`` and the JUnit ``results`` path.

    Raises
    ------
    AssertionError
        If a cocotb test failed (tb/sim.py names it and keeps the waveform).
    """
    params = get_design("mu").typed(unit_params(width, fmt, rows, stages, tree=tree, acc=acc,
                                                guard_bits=guard_bits, loop=loop, gate=gate,
                                                isolate=isolate))
    verilog, latency, variant, emit_s = emit_params(params)
    knobs = unit_knobs(params, latency)
    knobs.update(env or {})
    t0 = time.perf_counter()
    xml = sim.run(variant + suffix + ("-flat" if flat else ""), verilog, get_design("mu").top_name,
                  "tb.mu.mu_cocotb", env=knobs, testcase=testcases,
                  hier_blocks=() if flat else SIM_HIER_BLOCKS, build_args=SIM_BUILD_ARGS)
    return {"variant": variant, "latency": latency, "emit_s": emit_s,
            "wall_s": time.perf_counter() - t0, "results": xml}
