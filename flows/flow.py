"""One QoR run of a registered design: generate, synthesize (flat or by blocks), time, report.

:func:`run` is what ``make synth`` calls. Outputs go to ``reports/qor/<variant>/`` where the variant
is ``Design.variant(params)`` plus the library's short name (``bf16_mul-booth4-s0-osu018``):

``metrics.json``
    METRICS2.1 metrics and provenance (:mod:`flows.metrics`).
``synth_stat.txt``
    Yosys ``stat -liberty`` (per block with instance counts in the hierarchical flow).
``timing.txt``
    The worst path cell by cell with arrival times, and the STA's assumptions.
``yosys.log``
    The Yosys log (kept whole up to 2 MB, else its head and tail; the full log stays in ``build/``).

``flow="auto"`` synthesizes flat when the design has no marked blocks, else by blocks.
"""

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import metrics as M
from .hier import models_json, own_area, synth_hier
from .liberty import NO_LIBERTY_NOTE, find_liberty, generic_library, load
from .sta import Sta
from .synth import run_yosys

__all__ = ["run", "RunOutput", "REPORTS", "BUILD", "resolve_library", "LOG_KEEP_BYTES"]

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports" / "qor"
BUILD = REPO / "build" / "qor"
LOG_KEEP_BYTES = 2_000_000


@dataclass
class RunOutput:
    """Result of :func:`run`: the metrics and where the reports went."""

    metrics: dict
    outdir: Path
    summary: str
    worst: object


def resolve_library(liberty=None, log=print):
    """The :class:`flows.liberty.Library` to use (generic fallback announced on ``log``)."""
    path = find_liberty(liberty)
    if path is None:
        log(NO_LIBERTY_NOTE)
        return generic_library()
    return load(path)


def _sta_defaults(lib):
    if lib.generic:
        return {"note": "generic library: 1 unit of delay per gate, no slews or loads"}
    return {"input_slew_ps": round(lib.default_input_slew() * lib.time_ps, 1),
            "output_load_pf": round(lib.default_output_load() * lib.cap_pf, 5),
            "wire_cap_per_fanout_pf": 0.0,
            "clock": "ideal (arrival 0, slew = input slew)",
            "inputs": "arrive at 0 ps", "outputs": "end at their arrival (no output delay)"}


def _copy_log(src: Path, dst: Path):
    data = src.read_bytes() if src.exists() else b""
    if len(data) <= LOG_KEEP_BYTES:
        dst.write_bytes(data)
        return ""
    half = LOG_KEEP_BYTES // 2
    note = (f"\n\n[... {len(data) - 2 * half} bytes cut: the log was {len(data)} bytes; this file keeps "
            f"its first and last {half} bytes; the full log is {src} ...]\n\n").encode()
    dst.write_bytes(data[:half] + note + data[-half:])
    return f"yosys.log truncated to head and tail ({len(data)} bytes in full at {src})"


def run(design_name, given=None, *, liberty=None, clock_ps=None, flow="auto", booth=False,
        outdir=None, log=print, limit_mb=None, lib=None) -> RunOutput:
    """Synthesize and time one design variant and write its reports.

    Parameters
    ----------
    design_name : str
        A name from :data:`hw.designs.DESIGNS`.
    given : dict or None
        Generator options (strings or values), e.g. ``{"arch": "booth4", "stages": "0"}``.
    liberty : str or None
        Liberty path (else ``LIBERTY``, ``PDK_ROOT``, the OSU default, the generic library).
    clock_ps : float or None
        Target period passed to ``abc -D``.
    flow : str
        ``"flat"``, ``"hier"`` or ``"auto"``.
    booth : bool
        Use Yosys's own ``synth -booth`` (variant gets ``-ysbooth``).
    outdir : Path or None
        Report directory (default ``reports/qor/<variant>``).
    lib : flows.liberty.Library or None
        An already loaded library (overrides ``liberty``).

    Raises
    ------
    hw.designs.OptionError, flows.liberty.LibertyError, flows.synth.SynthError
        With messages naming the problem.
    """
    from hw.designs import get_design

    t0 = time.monotonic()
    design = get_design(design_name)
    params = design.params(given or {})
    lib = lib or resolve_library(liberty, log)
    variant = design.variant(params) + ("-ysbooth" if booth else "") + "-" + lib.short
    if outdir:
        outdir = Path(outdir)
        # a private work directory per report directory, so concurrent runs never share one
        tag = hashlib.sha256(str(outdir.resolve()).encode()).hexdigest()[:10]
        work = BUILD / "by-outdir" / f"{variant}-{tag}"
    else:
        outdir = REPORTS / variant
        work = BUILD / variant
    from hw import hier

    component = design.build(params)
    netlist = hier.emit(component, design.top_name)
    # black boxes (e.g. the slice's SRAM) carry a modelled area instead of a synthesized one
    macros = component.macros() if hasattr(component, "macros") else []
    if flow == "auto":
        flow = "hier" if len(netlist.modules) > 1 else "flat"
    if flow not in ("flat", "hier"):
        raise ValueError(f"flow must be flat, hier or auto, not {flow!r}")
    if flow == "flat" and macros:
        # flattened, the black box's placeholder (outputs tied to 0) would let Yosys remove the
        # logic behind it while its modelled area is still added
        raise ValueError(f"{variant} has black-box macros ({', '.join(m['module'] for m in macros)}); "
                         "they need the hierarchical flow: use FLOW=hier (or auto)")
    log(f"{variant}: {flow} synthesis of {len(netlist.modules)} module(s) with {lib.name}"
        + (f", target {clock_ps} ps" if clock_ps else ""))
    block_areas = {}
    notes = []
    if flow == "flat":
        r = run_yosys(netlist.verilog, netlist.top, work / "flat", lib, booth=booth, clock_ps=clock_ps,
                       limit_mb=limit_mb)
        area, seq, cells = own_area(lib, r.netlist)
        worst = Sta(lib, r.netlist).run()
        stat_text, ltp, ysec, peak, cached, logs = r.stat_text, r.ltp_levels, r.runtime_s, r.peak_mb, \
            r.cached, [r.log]
        timing_extra = ""
    else:
        h = synth_hier(netlist, lib, work / "hier", booth=booth, clock_ps=clock_ps, limit_mb=limit_mb,
                       log=log, macros={mac["module"] for mac in macros})
        area, seq, cells, worst = h.area, h.seq_area, h.cells, h.worst
        for b in h.blocks.values():
            if b.name != h.top:
                block_areas[b.name] = b.area * b.instances
        block_areas[h.top] = h.blocks[h.top].area
        stat_text = "\n".join(
            f"==== {b.name}: {b.instances} instance(s) x {b.area:.1f} um^2 own area "
            f"(children: {', '.join(f'{c} x{n}' for c, n in b.children.items()) or 'none'})\n{b.stat_text}"
            for b in h.blocks.values())
        stat_text += (f"\n==== composed: {area:.1f} um^2 total = sum(own area x instances), {cells} cells\n")
        ltp = max((b.ltp for b in h.blocks.values() if b.ltp is not None), default=None)
        notes.append("logic_depth__generic is the deepest single block (blocks synthesized separately)")
        no_ltp = [b.name for b in h.blocks.values() if b.ltp is None and b.cells]
        if no_ltp:
            notes.append(f"no generic logic depth for {', '.join(no_ltp)}: Yosys's recursive ltp "
                         "exhausted the WebAssembly call stack (run repeated without it)")
        ysec, peak = h.runtime_s, h.peak_mb
        cached = all(b.cached for b in h.blocks.values())
        logs = [b.log for b in h.blocks.values()]
        timing_extra = "\n\n".join(
            [f"---- top {h.top}: its own logic (the blocks' internal reg->reg paths left out; "
             f"paths through and between blocks kept)\n{h.top_own.format()}"] +
            [f"---- block {b.name} (standalone, children as models)\n{b.worst.format()}"
             for b in h.blocks.values() if b.name != h.top])
    sta_def = _sta_defaults(lib)
    runtime = time.monotonic() - t0
    m = M.build(design=design_name, variant=variant, params=params, lib=lib, area=area, seq_area=seq,
                cells=cells, worst=worst, ltp=ltp, runtime_s=runtime, peak_mb=peak, flow=flow,
                block_areas=block_areas, clock_ps=clock_ps, booth=booth, cached=cached,
                sta_defaults=sta_def)
    m["synth__runtime__yosys_seconds"] = round(ysec, 2)
    if flow == "hier" and h.top_own is not None and not lib.generic:
        m["synth__timing__critical_path__delay_ps__top_own"] = round(h.top_own.delay_ps, 1)
        m["synth__timing__critical_path__levels__top_own"] = h.top_own.levels
    if macros:
        for mac in macros:
            if mac["module"] not in netlist.modules:
                raise ValueError(f"macro {mac['module']} is not a module of the netlist")
            own = block_areas.get(mac["module"], 0.0)
            mac["synthesized_area_um2"] = round(own, 3)   # the placeholder: 0 (an empty module)
        macro_area = sum(mac["area_um2"] * mac["instances"] for mac in macros)
        m["synth__design__instance__area__macros"] = round(macro_area, 1)
        m["synth__design__instance__area__stdcell_plus_macros"] = round(area + macro_area, 1)
        m["synth__design__macros"] = macros
    if notes:
        m["flow__notes"] = notes
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "synth_stat.txt").write_text(stat_text)
    head = [f"# {variant}: static timing of the Yosys-mapped netlist ({flow})",
            f"# liberty {lib.name} ({lib.path}); " + ", ".join(f"{k} {v}" for k, v in sta_def.items()),
            "# Yosys-only: no placement, no routing, no wire load.", ""]
    (outdir / "timing.txt").write_text("\n".join(head) + worst.format() + "\n"
                                       + ("\n" + timing_extra + "\n" if timing_extra else ""))
    if flow == "hier":
        (outdir / "block_models.json").write_text(models_json(h) + "\n")
        parts = []
        for lp in logs:
            text = lp.read_text(errors="replace") if lp.exists() else ""
            parts.append(f"######## {lp.parent.name}\n" + text)
        combined = work / "hier" / "yosys_all.log"
        combined.write_text("\n".join(parts))
        trunc = _copy_log(combined, outdir / "yosys.log")
    else:
        trunc = _copy_log(logs[0], outdir / "yosys.log")
    if trunc:
        m.setdefault("flow__notes", []).append(trunc)
    (outdir / "metrics.json").write_text(json.dumps(m, indent=2) + "\n")
    summary = summarize(m, worst, outdir)
    log(summary)
    return RunOutput(m, outdir, summary, worst)


def summarize(m, worst, outdir) -> str:
    """One screen: area, GE, cells, critical path, fmax, runtime, where the reports are."""
    lib = m["flow__liberty"]
    d = m["synth__timing__critical_path__delay_ps"]
    f = m["synth__timing__fmax_mhz"]
    seq = m["synth__design__instance__area__sequential"]
    if lib["ge_cell"] is None:   # generic library: areas are gate equivalents already
        area_row = (f"  area        {m['synth__design__instance__area__ge']:.1f} GE (generic gates, "
                    f"NAND2 = 1); sequential {seq:.1f} GE")
    else:
        area_row = (f"  area        {m['synth__design__instance__area__stdcell']:.1f} um^2 = "
                    f"{m['synth__design__instance__area__ge']:.1f} GE ({lib['ge_cell']} = "
                    f"{lib['ge_area_um2']} um^2); sequential {seq:.1f} um^2")
    rows = [
        f"== {m['variant']}  ({m['flow__mode']}, {lib['name']})",
        area_row,
        f"  cells       {m['synth__design__instance__count__stdcell']}",
        (f"  critical    {d:.1f} ps, {m['synth__timing__critical_path__levels']} levels "
         f"({worst.kind}: {worst.start} -> {worst.end})" if d is not None else
         f"  critical    {m['synth__timing__critical_path__levels']} levels (generic library: "
         "no delay)"),
        f"  fmax        {f:.1f} MHz" if f else "  fmax        n/a",
        f"  logic depth {m['synth__timing__logic_depth__generic']} generic levels (Yosys ltp)",
        f"  runtime     {m['flow__runtime__seconds']:.1f} s (yosys {m['synth__runtime__yosys_seconds']:.1f} s"
        f"{', cached' if m['flow__cache__hit'] else ''}), peak memory {m['flow__memory__peak_mb']:.0f} MB",
    ]
    blocks = {k.rsplit("__", 1)[1]: v for k, v in m.items()
              if k.startswith("synth__design__instance__area__stdcell__")}
    if blocks:
        rows.append("  blocks      " + ", ".join(f"{k} {v:.0f}" for k, v in blocks.items()))
    for mac in m.get("synth__design__macros", []):
        rows.append(f"  macro       {mac['module']} x{mac['instances']}: {mac['area_um2']:.0f} um^2 "
                    f"NOT in the area above ({mac['model']})")
    if "synth__timing__critical_path__delay_ps__top_own" in m:
        rows.append(f"  top's own   {m['synth__timing__critical_path__delay_ps__top_own']:.1f} ps, "
                    f"{m['synth__timing__critical_path__levels__top_own']} levels (blocks' internal "
                    "reg->reg left out; timing.txt)")
    if "synth__design__instance__area__macros" in m:
        rows.append(f"  with macros {m['synth__design__instance__area__stdcell_plus_macros']:.1f} um^2 "
                    "(standard cells + modelled macros)")
    rows.append(f"  reports     {_rel(outdir)}/{{metrics.json,synth_stat.txt,timing.txt,yosys.log}}")
    rows.append("  (Yosys-only numbers: no placement, routing or wire load)")
    if lib["ge_cell"] is None:
        rows.append("  " + NO_LIBERTY_NOTE)
    return "\n".join(rows)


def _rel(p):
    try:
        return str(Path(p).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use python -m flows")
