"""The physical-design tools (Debian packages) and their versions; a clear error when one is missing.

Install them with ``apt-get install qflow graywolf qrouter magic netgen-lvs opensta
qflow-tech-osu018`` (``.ci/run`` does).
"""

import shutil
import subprocess
from pathlib import Path

__all__ = ["ToolError", "TOOLS", "TECH", "require", "versions"]

#: The OSU 0.18 um technology files of qflow (``qflow-tech-osu018``).
TECH = Path("/usr/share/qflow/tech/osu018")
#: Executable -> Debian package that provides it.
TOOLS = {"qflow": "qflow", "graywolf": "graywolf", "qrouter": "qrouter", "magic": "magic",
         "netgen-lvs": "netgen-lvs", "sta": "opensta"}


class ToolError(RuntimeError):
    """A tool is missing or failed; the message names the package or the log."""


def require(tech=TECH) -> None:
    """Raise :class:`ToolError` naming the Debian packages to install if any tool is missing."""
    missing = sorted({pkg for exe, pkg in TOOLS.items() if not shutil.which(exe)})
    if not (Path(tech) / "osu018_stdcells.lef").is_file():
        missing.append("qflow-tech-osu018")
    if missing:
        raise ToolError("place and route needs the Debian packages " + " ".join(missing)
                        + f": run `apt-get install {' '.join(missing)}` (as root; .ci/run does it)")


def _first_line(cmd) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, input="")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    lines = [ln.strip() for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    return lines[0] if lines else "unknown"


def versions() -> dict:
    """``{package: version}`` from dpkg (what the reports record)."""
    out = {}
    for pkg in sorted(set(TOOLS.values()) | {"qflow-tech-osu018"}):
        v = _first_line(["dpkg-query", "-W", "-f=${Version}", pkg])
        out[pkg] = v
    return out
