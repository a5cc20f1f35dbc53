"""One energy run: synthesize (hierarchical, as the QoR numbers), stimulate, simulate, check, sum.

Steps of :func:`run`:

1. :func:`flows.synth.flow.run` with ``flow="hier"`` gives the netlist of every block after the
   drive repair (the same cached Yosys runs, and the same netlists, whose area and timing the QoR
   reports give) and the unit's fmax.
2. The stimulus comes from the testbench side: ``python -m tb.power_stim`` runs as a subprocess
   (flows never imports tb) and writes the beats and the bit-true model's expected results.
3. :func:`flows.power.netlist.flatten` stitches the blocks (all columns, or ``sample`` of them) and
   :class:`flows.power.sim.GateSim` runs them: two reset cycles, then the ``w`` and ``x`` beats (and
   the ``ws`` beats of a block-scaled unit, whose netlist has that stream) sent as fast as the unit
   takes them (``valid`` whenever a beat is left), ``y__ready`` always 1. Every
   ``y`` beat is compared with the expected FP32 bits (only the kept columns when sampling), and
   the unit's ``cnt_macs`` with the beats sent.
4. :func:`flows.power.energy.compute` over the cycles after reset, up to the last result.
"""

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..paths import BUILD, REPO
from ..synth.flow import WORK, resolve_library
from ..synth.flow import run as synth_run
from .energy import Energy, compute, net_loads
from .libpower import load_power
from .netlist import flatten, sample_indices
from .sim import GateSim

__all__ = ["PowerRun", "run", "stimulus", "PowerError", "check_counts", "drive",
           "hier_modules", "port_caps", "power_library", "Simulated", "simulate"]


class PowerError(RuntimeError):
    """The gate-level run disagrees with the model, or the stimulus could not be produced."""


@dataclass
class PowerRun:
    """Result of :func:`run`."""

    variant: str
    workload: str
    energy: Energy
    meta: dict
    fmax_mhz: float
    sample: int | None
    columns: int
    checked_results: int
    toggles: int
    nets: int
    cells: int
    seconds: dict
    peak_mb: float
    area_um2: float


def stimulus(width, fmt, rows, workload, runs, out: Path, acc="fp32", guard_bits=16) -> dict:
    """Write the stimulus file via ``python -m tb.power_stim`` (always afresh: it depends on the
    testbench's model and tile corpus, which flows cannot see); returns its meta. The expected
    results follow the unit's accumulate mode ``acc`` (and ``guard_bits`` in the exact mode)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + f".tmp{os.getpid()}.npz")
    cmd = [sys.executable, "-m", "tb.power_stim", "--width", str(width), "--fmt", fmt, "--rows",
           str(rows), "--workload", workload, "--runs", str(runs), "--acc", acc,
           "--guard-bits", str(guard_bits), "-o", str(tmp)]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
    if r.returncode != 0:
        raise PowerError(f"stimulus generation failed ({' '.join(cmd[1:])}): {r.stderr.strip()}")
    tmp.replace(out)
    with np.load(out) as z:
        return json.loads(str(z["meta"]))


def hier_modules(variant) -> dict:
    """Every block's netlist after the drive repair (``repaired.json``): the netlist whose area and
    timing the QoR reports give."""
    hier = WORK / variant / "hier"
    mods = {}
    for d in sorted(hier.iterdir()):
        if (d / "mapped.json").is_file():
            f = d / "repaired.json"
            if not f.is_file():
                raise PowerError(f"{f} is missing (the synthesis of {variant} stopped before its "
                                 f"drive repair); run `make synth` for this variant again")
            mods[d.name] = json.loads(f.read_text())["modules"][d.name]
    return mods


def port_caps(mods, lib, plib, wire_caps=None):
    """``port_caps`` for sampling (:func:`flows.power.netlist.flatten`): the load each input bit
    presents inside a replaced instance (its cells' pins, and its wires when ``wire_caps`` has the
    module's)."""
    cache = {}

    def caps(mod, port):
        if mod not in cache:
            wires = {k: v for k, v in wire_caps.items() if k == mod} if wire_caps is not None else None
            f = flatten(mods, mod, plib.cells, wire_caps=wires)
            cache[mod] = (f, net_loads(f, lib, output_load=0.0))
        f, load = cache[mod]
        return load[f.ports[port][1]]
    return caps


def drive(sim, flat, stim, check_cols, width, max_cycles):
    """Reset, then send every beat (``ws`` too when the netlist has that stream); returns the
    number of results checked."""
    p = {k: v[1] for k, v in flat.ports.items()}
    w, x, y = stim["w"], stim["x"], stim["y"]
    streams = [("w", w), ("x", x)]
    if "ws__valid" in p:
        streams.insert(1, ("ws", stim.get("ws", np.zeros((0, width), np.uint8))))
    elif len(stim.get("ws", ())):
        raise PowerError("the stimulus has ws beats (a block-scaled format) but the netlist has no "
                         "ws stream")
    for name in [f"{s}__valid" for s, _ in streams] + ["y__ready", "rst"]:
        sim.vals[p[name]] = 0
    sim.vals[p["rst"]] = 1
    for _ in range(2):
        sim.settle()
        sim.clock()
    sim.vals[p["rst"]] = 0
    sim.vals[p["y__ready"]] = 1
    sent = {s: 0 for s, _ in streams}
    iy, ny = 0, len(y)
    sel = np.concatenate([np.arange(c * 32, c * 32 + 32) for c in check_cols])
    ynets = p["y__payload"][sel]
    expect = y.view(np.uint8).reshape(ny, width, 4)
    sim.start_counting()
    for cyc in range(max_cycles):
        for s, beats in streams:
            i, pay = sent[s], p[f"{s}__payload"]
            sim.vals[p[f"{s}__valid"]] = i < len(beats)
            if i < len(beats):
                sim.vals[pay] = np.unpackbits(beats[i], bitorder="little")[:len(pay)]
        sim.settle()
        if sim.vals[p["y__valid"]][0]:
            if iy >= ny:
                raise PowerError(f"cycle {cyc}: the netlist emitted more results than the model ({ny})")
            got = sim.vals[ynets]
            want = np.unpackbits(expect[iy][check_cols].reshape(-1), bitorder="little")
            if not np.array_equal(got, want):
                bad = sorted({int(check_cols[i // 32]) for i in np.nonzero(got != want)[0]})
                raise PowerError(f"result {iy}: the gate-level netlist differs from the bit-true "
                                 f"model in column(s) {bad}")
            iy += 1
        for s, _ in streams:
            sent[s] += int(sim.vals[p[f"{s}__valid"]][0] & sim.vals[p[f"{s}__ready"]][0])
        if iy == ny:
            break
        sim.clock()
    else:
        taken = ", ".join(f"{sent[s]}/{len(b)} {s} beats" for s, b in streams)
        raise PowerError(f"after {max_cycles} cycles only {iy} of {ny} results came out "
                         f"({taken} taken)")
    if sent.get("ws", 0) != len(stim.get("ws", ())):
        raise PowerError(f"the netlist took {sent.get('ws', 0)} ws beats, the stimulus has "
                         f"{len(stim.get('ws', ()))}")
    nx = len(x)
    macs = sim.get_bits(p["cnt_macs"])
    if macs != nx * width * width:
        raise PowerError(f"the netlist's cnt_macs is {macs}, expected {nx * width * width} "
                         f"({nx} x beats of {width}x{width} MACs)")
    return iy


def check_counts(width, runs, sample=None, what="SAMPLE (--sample)"):
    """A clear ``ValueError`` unless ``runs`` >= 1 and ``sample`` is None or a column count in 1..width.

    Checked before anything is synthesized or simulated, so a bad count is never run silently.
    """
    try:
        width = int(width)
    except (TypeError, ValueError):
        raise ValueError(f"WIDTH (--width) must be a whole number, not {width!r}") from None
    if not isinstance(runs, int) or runs < 1:
        raise ValueError(f"--runs must be a whole number of tile runs >= 1, not {runs!r}")
    if sample is None:
        return
    if not isinstance(sample, int) or not 1 <= sample <= width:
        raise ValueError(f"{what} must be a number of columns from 1 to {width} (the unit's width "
                         f"D = {width}), not {sample!r}; leave it out to simulate every column")


def power_library(liberty=None):
    """``(lib, plib)``: the timing and the energy view of the liberty (``liberty`` or the default).

    Raises
    ------
    PowerError
        The library has no energy data (the generic fallback).
    """
    lib = resolve_library(liberty, log=lambda s: None)
    if lib.generic:
        raise PowerError("energy needs a liberty with internal_power tables and leakage; install the "
                         "OSU 0.18 um library (apt-get install qflow-tech-osu018) or pass "
                         "LIBERTY=/path/to/cells.lib")
    return lib, load_power(lib.path)


@dataclass
class Simulated:
    """What :func:`simulate` leaves: the flattened netlist, the simulator after the counted cycles,
    the stimulus' metadata, the columns simulated and the results checked."""

    flat: object
    sim: GateSim
    meta: dict
    cols: np.ndarray
    checked: int


def simulate(mods, block, params: dict, workload, runs, sample, lib, plib, wire_caps=None, t=None,
             log=print, label="") -> Simulated:
    """The matrix unit ``mods["mu"]`` (Yosys JSON modules, the column module ``block``) simulated gate
    by gate on the stimulus of ``workload`` (``runs`` tile runs, from the generator ``params``), with
    ``sample`` columns kept (None: all) and each module's wires ``wire_caps`` (None: pins only); every
    result checked against the bit-true model. ``t`` (a dict) gets the times of the steps."""
    t = {} if t is None else t
    width, fmt = int(params["width"]), params["fmt"]
    rows, acc = int(params.get("rows", 1)), str(params.get("acc", "fp32"))
    guard = int(params.get("guard_bits", 16))
    stim_path = BUILD / "power" / "stim" / f"{workload}-w{width}-{fmt}-r{rows}-{acc}-n{runs}.npz"
    meta = stimulus(width, fmt, rows, workload, runs, stim_path, acc, guard)
    with np.load(stim_path) as z:
        stim = {k: z[k] for k in ("w", "ws", "x", "y") if k in z.files}
    t["stimulus"] = time.monotonic()
    samp = (block, sample) if sample and sample < width else None
    flat = flatten(mods, "mu", plib.cells, sample=samp, wire_caps=wire_caps,
                   port_caps=port_caps(mods, lib, plib, wire_caps))
    sim = GateSim(flat, plib)
    t["build"] = time.monotonic()
    cols = np.asarray(sample_indices(width, sample if samp else width))
    log(f"{label} {workload}: {sum(len(g['weight']) for g in flat.groups.values())} cells, "
        f"{flat.n_nets} nets, depth {sim.depth}; {meta['w_beats']} w / {meta['x_beats']} x beats, "
        f"{len(cols)} of {width} columns simulated")
    max_cycles = 4 * (meta["w_beats"] + meta.get("ws_beats", 0) + meta["x_beats"]) + 100
    checked = drive(sim, flat, stim, cols, width, max_cycles)
    t["sim"] = time.monotonic()
    return Simulated(flat, sim, meta, cols, checked)


def run(width=8, fmt="fp8_e4m3", workload="tiles", runs=8, sample=None, params=None, log=print,
        liberty=None) -> PowerRun:
    """Energy of the matrix unit ``mu`` (``width``, ``fmt``, other generator ``params``) on
    ``workload`` over ``runs`` tile runs; ``sample`` columns kept (None: all).

    Raises
    ------
    PowerError
        If the netlist's results differ from the bit-true model or the stimulus fails.
    ValueError
        ``runs`` below 1 or ``sample`` outside 1..``width`` (:func:`check_counts`).
    """
    check_counts(width, runs, sample)
    t = {"start": time.monotonic()}
    given = dict(params or {}, width=str(width), fmt=fmt)
    syn = synth_run("mu", given, flow="hier", log=lambda s: None, liberty=liberty)
    m = syn.metrics
    variant = m["variant"]
    lib, plib = power_library(liberty)
    t["synth"] = time.monotonic()
    mods = hier_modules(variant)
    col = next(n for n in mods if n.startswith("mu_col"))
    s = simulate(mods, col, {k: str(v) for k, v in m["design__params"].items()} | {"width": str(width),
                 "fmt": fmt}, workload, runs, sample, lib, plib, t=t, log=log, label=variant)
    flat, sim, meta, cols, checked = s.flat, s.sim, s.meta, s.cols, s.checked
    samp = cols.size < width
    fmax = float(m["synth__timing__fmax_mhz"])
    en = compute(flat, sim, lib, plib, 1e3 / fmax)
    t["energy"] = time.monotonic()
    secs = {k: round(t[k] - t[p], 2) for p, k in zip(list(t)[:-1], list(t)[1:], strict=True)}
    secs["total"] = round(t["energy"] - t["start"], 2)
    peak = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    ncell = sum(len(g["weight"]) for g in flat.groups.values())
    return PowerRun(variant, workload, en, meta, fmax, sample if samp else None, width, checked,
                    int(sim.toggles.sum()), flat.n_nets, ncell, secs, peak,
                    float(m["synth__design__instance__area__stdcell"]))
