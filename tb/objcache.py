#!/usr/bin/env python3
"""Compiler wrapper that reuses Verilator's run-time objects across simulator builds.

Every Verilator build compiles the same run-time library sources (``verilated.cpp``,
``verilated_vpi.cpp``, ``verilated_threads.cpp``, ``verilated_dpi.cpp``; the measured cost per build
is in ``reports/ci_budget.md``) into its own folder. ``tb/sim.py`` sets Verilator's ``OBJCACHE``
make variable to this script, so make runs ``objcache.py c++ <flags> -c -o X.o <source>`` for every
object. For a source under the Verilator installation's ``include`` folder it keys the object on the
whole command line, the source's bytes and ``verilated_config.h`` (the Verilator version), and
copies the object and its dependency file from ``$HW_OBJCACHE_DIR`` when an earlier build compiled
the same thing; anything else (the design's own files) is compiled as given. Stdlib only; concurrent
builds are safe (the cache is written by atomic renames).
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path


def _parse(argv):
    """(output object, source) of a ``-c`` compile command, or None."""
    if "-c" not in argv:
        return None
    out = argv[argv.index("-o") + 1] if "-o" in argv[:-1] else None
    srcs = [a for a in argv if a.endswith((".cpp", ".cc", ".c")) and not a.startswith("-")]
    if len(srcs) != 1:
        return None
    src = srcs[0]
    return out or Path(src).with_suffix(".o").name, src


def main(argv) -> int:
    cache = os.environ.get("HW_OBJCACHE_DIR")
    root = os.environ.get("VERILATOR_ROOT")
    parsed = _parse(argv)
    if not (cache and root and parsed):
        return subprocess.call(argv)
    out, src = parsed
    include = Path(root).resolve() / "include"
    if include not in Path(src).resolve().parents:
        return subprocess.call(argv)
    h = hashlib.sha256("\0".join(argv).encode())
    h.update(Path(src).read_bytes())
    config = include / "verilated_config.h"
    if config.exists():
        h.update(config.read_bytes())
    key = Path(cache) / h.hexdigest()
    dep = Path(out).with_suffix(".d")
    if key.with_suffix(".o").exists():
        shutil.copyfile(key.with_suffix(".o"), out)
        if key.with_suffix(".d").exists():
            shutil.copyfile(key.with_suffix(".d"), dep)
        return 0
    rc = subprocess.call(argv)
    if rc == 0 and Path(out).exists():
        Path(cache).mkdir(parents=True, exist_ok=True)
        for have, suffix in ((dep, ".d"), (Path(out), ".o")):    # the object last: it marks a hit
            if have.exists():
                tmp = key.with_suffix(f"{suffix}.{os.getpid()}.tmp")
                shutil.copyfile(have, tmp)
                os.replace(tmp, key.with_suffix(suffix))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
