"""The files and the screen summary of one flow run (:mod:`flows.synth.flow`).

:func:`write_reports` writes ``synth_stat.txt``, ``timing.txt``, ``yosys.log`` (whole up to
:data:`LOG_KEEP_BYTES`, else head and tail), ``block_models.json`` (hierarchical runs) and
``metrics.json``; :func:`summarize` is the screen summary, whose last lines say where they went.
"""

import json
from pathlib import Path

from .. import metric_keys as K
from .hier import models_json
from .liberty import NO_LIBERTY_NOTE
from .repair import DEFAULT_DRIVE_LIMIT, DRIVE_LIMITS, within_tables
from .wholepath import format_rows

__all__ = ["write_reports", "summarize", "sta_defaults", "add_macros", "LOG_KEEP_BYTES", "compare_flows",
           "FLOW_DIFFERENCE", "DEPTHS", "ABC_TARGET", "compare_target", "qor_lines", "path_lines"]

#: Why a flat and a hierarchical run of one variant differ.
FLOW_DIFFERENCE = ("the hierarchical flow maps each distinct block in its own Yosys/ABC run (no "
                   "optimization across block boundaries) and times the composition with block models "
                   "(worst bit of a bus, default input slew at a block's outputs); the flat flow maps "
                   "the whole design in one ABC run, which can share and remove logic across "
                   "boundaries, and times it cell by cell: two different netlists, each with its own "
                   "critical path")
#: What each depth figure counts.
DEPTHS = {
    "critical": "library cells after the launch flop on the worst timed path (after mapping and drive "
                "repair), the path the fmax comes from, listed below",
    "generic": "Yosys ltp: the longest chain of generic gates before technology mapping; in the "
               "hierarchical flow the deepest single block (blocks are synthesized separately)",
    "top_own": "the top's own logic with the blocks' internal reg->reg paths left out (paths into, "
               "out of and between blocks kept, block delays from their models)",
}
#: What CLOCK_PS does.
ABC_TARGET = ("CLOCK_PS is passed to ABC as its delay target (abc -D) and is the reference of the "
              "slack; whether it changed the mapping is told by the netlist hash against the run "
              "without it")

LOG_KEEP_BYTES = 2_000_000


def sta_defaults(lib, drive_limit=DEFAULT_DRIVE_LIMIT) -> dict:
    """The STA's assumptions, written into ``metrics.json`` and ``timing.txt`` (``drive_limit``: the
    drive repair's, :data:`flows.synth.repair.DRIVE_LIMITS`)."""
    if lib.generic:
        return {"note": "generic library: 1 unit of delay per gate, no slews or loads"}
    return {"input_slew_ps": round(lib.default_input_slew() * lib.time_ps, 1),
            "output_load_pf": round(lib.default_output_load() * lib.cap_pf, 5),
            "wire_cap_per_fanout_pf": 0.0,
            "clock": "ideal (arrival 0, slew = input slew)",
            "inputs": "arrive at 0 ps", "outputs": "end at their arrival (no output delay)",
            "loads": f"{DRIVE_LIMITS[drive_limit]} are buffered with real cells (area counted, "
                     "levels on the paths); delay beyond a table"
                     + ("'s slew axis" if within_tables(drive_limit) else "")
                     + " is extrapolated linearly from its last segment"}


def add_macros(m: dict, macros: list, module_names, block_areas: dict) -> None:
    """Add the black-box macros' modelled areas to the metrics ``m``.

    Raises
    ------
    ValueError
        A macro that is not a module of the netlist.
    """
    for mac in macros:
        if mac["module"] not in module_names:
            raise ValueError(f"macro {mac['module']} is not a module of the netlist")
        mac["synthesized_area_um2"] = round(block_areas.get(mac["module"], 0.0), 3)  # placeholder: 0
    macro_area = sum(mac["area_um2"] * mac["instances"] for mac in macros)
    m[K.MACRO_AREA] = round(macro_area, 1)
    m[K.AREA_WITH_MACROS] = round(m[K.AREA] + macro_area, 1)
    m[K.MACROS] = macros


def _copy_log(src: Path, dst: Path) -> str:
    data = src.read_bytes() if src.exists() else b""
    if len(data) <= LOG_KEEP_BYTES:
        dst.write_bytes(data)
        return ""
    half = LOG_KEEP_BYTES // 2
    note = (f"\n\n[... {len(data) - 2 * half} bytes cut: the log was {len(data)} bytes; this file keeps "
            f"its first and last {half} bytes; the full log is {src} ...]\n\n").encode()
    dst.write_bytes(data[:half] + note + data[-half:])
    return f"yosys.log truncated to head and tail ({len(data)} bytes in full at {src})"


def path_lines(m, path) -> list:
    """The whole critical path, launch flop to capture flop, one row per cell (and its total)."""
    if not path:
        return []
    unit = "levels" if m[K.CP_PS] is None else "ps"
    total = sum(r.incr_ps for r in path)
    return (["  critical path, launch to capture across the hierarchy (block = instance path; "
             f"total {total:.1f} {unit}):"] + ["  " + ln for ln in format_rows(path, unit)])


def write_reports(m: dict, s, outdir: Path, work: Path, variant: str, flow: str, lib, sta_def) -> None:
    """Write the report files of one run (``s``: the flow's synthesis result) into ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "synth_stat.txt").write_text(s.stat_text)
    head = [f"# {m.get('flow__run', variant)}: static timing of the Yosys-mapped netlist ({flow})",
            f"# liberty {lib.name} ({lib.path}); " + ", ".join(f"{k} {v}" for k, v in sta_def.items()),
            "# Yosys-only: no placement, no routing, no wire load.", "", "QoR summary:"]
    head += qor_lines(m, s.worst, s.path) + path_lines(m, s.path) + ["", ""]
    (outdir / "timing.txt").write_text("\n".join(head) + s.worst.format() + "\n"
                                       + ("\n" + s.timing_extra + "\n" if s.timing_extra else ""))
    if s.hier is not None:
        (outdir / "block_models.json").write_text(models_json(s.hier) + "\n")
        parts = []
        for lp in s.logs:
            text = lp.read_text(errors="replace") if lp.exists() else ""
            parts.append(f"######## {lp.parent.name}\n" + text)
        combined = work / "hier" / "yosys_all.log"
        combined.write_text("\n".join(parts))
        trunc = _copy_log(combined, outdir / "yosys.log")
    else:
        trunc = _copy_log(s.logs[0], outdir / "yosys.log")
    if trunc:
        m.setdefault("flow__notes", []).append(trunc)
    (outdir / "metrics.json").write_text(json.dumps(m, indent=2) + "\n")


def compare_flows(m: dict, twin: Path) -> None:
    """Add ``flow__other_flow`` to ``m`` when ``twin`` holds a run of the same variant, liberty and
    clock target in the other flow: its figures, the differences and :data:`FLOW_DIFFERENCE`."""
    f = Path(twin) / "metrics.json"
    try:
        o = json.loads(f.read_text())
    except (OSError, ValueError):
        return
    same = (o.get("variant") == m["variant"] and o.get("flow__mode") not in (None, m["flow__mode"])
            and o.get("flow__clock_period_ps") == m["flow__clock_period_ps"]
            and (o.get("flow__liberty") or {}).get("sha256") == m["flow__liberty"]["sha256"])
    if not same:
        return
    out = {"flow": o["flow__mode"], "folder": _rel(twin), "git_revision": o.get("flow__git_revision"),
           "date": o.get("flow__date"), "reason": FLOW_DIFFERENCE}
    for key, label in ((K.FMAX, "fmax_mhz"), (K.AREA, "area"), (K.CP_LV, "levels")):
        a, b = m.get(key), o.get(key)
        out[label] = b
        if a is not None and b:
            out[label + "_diff_pct"] = round(100 * (a / b - 1), 1)
    m["flow__other_flow"] = out


def compare_target(m: dict, untargeted: Path) -> None:
    """Add ``flow__clock_target_effect`` to ``m``: whether its mapped netlist is the one the run
    without ``CLOCK_PS`` in ``untargeted`` produced (same variant, flow and liberty), by hash."""
    try:
        o = json.loads((Path(untargeted) / "metrics.json").read_text())
    except (OSError, ValueError):
        o = {}
    same_run = (o.get("variant") == m["variant"] and o.get("flow__mode") == m["flow__mode"]
                and not o.get("flow__clock_period_ps") and K.NETLIST_SHA in o
                and (o.get("flow__liberty") or {}).get("sha256") == m["flow__liberty"]["sha256"])
    m["flow__clock_target_effect"] = (
        {"folder": _rel(untargeted), "netlist_changed": o[K.NETLIST_SHA] != m[K.NETLIST_SHA]}
        if same_run else {"folder": _rel(untargeted), "netlist_changed": None})


def _target_line(m: dict) -> str:
    e = m.get("flow__clock_target_effect")
    if not e:
        return ABC_TARGET
    if e["netlist_changed"] is None:
        return (f"{ABC_TARGET}: run it without CLOCK_PS (to {e['folder']}) to compare "
                f"{K.NETLIST_SHA}")
    if e["netlist_changed"]:
        return f"{ABC_TARGET}: the target changed the mapped netlist (against {e['folder']})"
    return (f"{ABC_TARGET}: the mapped netlist is identical to the one without a target "
            f"({e['folder']}), so here CLOCK_PS only sets the slack reference")


def _mm2(um2) -> str:
    return f"{um2 / 1e6:.4g} mm^2"


def _ends(worst, path) -> str:
    """Start and end of the worst path: the whole path's first and last rows when there is one."""
    if not path:
        return f"{worst.start} -> {worst.end}"
    first, last = path[0], path[-1]
    return (f"{first.block + ': ' if first.block else ''}{first.point} -> "
            f"{last.block + ': ' if last.block else ''}{last.point}")


def qor_lines(m, worst, path=()) -> list:
    """The QoR at a glance: area (mm^2) by block, MAC rates, critical path, slack, depths."""
    lib = m["flow__liberty"]
    d, f, seq = m[K.CP_PS], m[K.FMAX], m[K.SEQ]
    generic = lib["ge_cell"] is None
    if generic:   # generic library: areas are gate equivalents already
        rows = [f"  area        {m[K.GE]:.1f} GE (generic gates, NAND2 = 1); sequential {seq:.1f} GE"]
    else:
        rows = [f"  area        {_mm2(m[K.AREA])} ({m[K.AREA]:.1f} um^2 = {m[K.GE]:.1f} GE, "
                f"{lib['ge_cell']} = {lib['ge_area_um2']} um^2); sequential {_mm2(seq)}"]
    blocks = m.get("design__blocks", {})
    if blocks and not generic:
        rows.append("  by block    own logic of one instance x instances = total (children counted in "
                    "their own rows)")
        for b, info in sorted(blocks.items(),
                              key=lambda kv: -kv[1]["area_per_instance"] * max(kv[1]["instances"], 1)):
            n, a = max(info["instances"], 1), info["area_per_instance"]
            rows.append(f"    {b:<32} {n:>5} x {_mm2(a):>14} = {_mm2(a * n):>12} "
                        f"({100 * a * n / m[K.AREA]:.1f}%)")
    if m.get(K.CLOCK_GATES):
        rows.append(f"  clock gates {m[K.CLOCK_GATES]} (latch-based, hw/clock_gate.py), "
                    f"{_mm2(m[K.CLOCK_GATE_AREA])} with their clock buffers "
                    f"({100 * m[K.CLOCK_GATE_AREA] / m[K.AREA]:.1f}% of the area)")
    if K.MACS in m:
        unit = "GE" if generic else "um^2"
        rate = (f"; peak {m[K.PEAK_GMACS]:.3g} GMAC/s at fmax" if K.PEAK_GMACS in m else "")
        rows.append(f"  MACs        {m[K.MACS]} per cycle; {m[K.AREA_PER_MAC]:.1f} {unit} "
                    f"({m[K.AREA_PER_MAC] / 1e6:.4g} mm^2) per MAC{rate}")
    rows += [
        (f"  critical    {d:.1f} ps, {m[K.CP_LV]} levels ({worst.kind}: {_ends(worst, path)})"
         if d is not None else
         f"  critical    {m[K.CP_LV]} levels (generic library: no delay)"),
        f"  fmax        {f:.1f} MHz" if f else "  fmax        n/a",
    ]
    if m.get("flow__clock_period_ps"):
        c = m["flow__clock_period_ps"]
        rows.append(f"  clock       target {c:g} ps: " + (
            f"slack {m[K.SETUP_WS]:+.1f} ps, {m[K.SETUP_STATUS]}" if K.SETUP_WS in m
            else "no slack (generic library: no delays)"))
        rows.append(f"              ({_target_line(m)})")
    rows.append(f"  logic depth {m[K.CP_LV]} levels on the critical path: {DEPTHS['critical']}")
    rows.append(f"              {m[K.DEPTH]} generic levels: {DEPTHS['generic']}")
    if K.CP_PS_TOP_OWN in m:
        rows.append(f"  top's own   {m[K.CP_PS_TOP_OWN]:.1f} ps, {m[K.CP_LV_TOP_OWN]} levels: "
                    f"{DEPTHS['top_own']}")
    o = m.get("flow__other_flow")
    if o:
        diffs = ", ".join(f"{lbl} {o[k + '_diff_pct']:+.1f}%" for k, lbl in
                          (("fmax_mhz", "fmax"), ("area", "area"), ("levels", "levels"))
                          if k + "_diff_pct" in o)
        rows.append(f"  vs {o['flow']:<8} this {m['flow__mode']} run against the {o['flow']} run in "
                    f"{o['folder']} (fmax {o['fmax_mhz']} MHz, area {o['area']}): {diffs}")
        rows.append(f"              why: {o['reason']}")
    return rows


def summarize(m, worst, outdir, path=()) -> str:
    """One screen: :func:`qor_lines` and the whole critical path (:func:`path_lines`) with run time,
    macros, caveats and (last) where the reports are."""
    lib = m["flow__liberty"]
    rows = [f"== {m.get('flow__run', m['variant'])}  ({m['flow__mode']}, {lib['name']})"]
    rows += qor_lines(m, worst, path) + path_lines(m, path)
    rows.append(f"  runtime     {m[K.RUNTIME]:.1f} s (yosys {m[K.YOSYS_TIME]:.1f} s"
                f"{', cached' if m[K.CACHE_HIT] else ''}), peak memory {m[K.MEMORY]:.0f} MB")
    for mac in m.get(K.MACROS, []):
        rows.append(f"  macro       {mac['module']} x{mac['instances']}: {mac['area_um2']:.0f} um^2 "
                    f"NOT in the area above ({mac['model']})")
    if K.MACRO_AREA in m:
        rows.append(f"  with macros {m[K.AREA_WITH_MACROS]:.1f} um^2 (standard cells + modelled macros)")
    rows.append("  (Yosys-only numbers: no placement, routing or wire load)")
    if lib["ge_cell"] is None:
        rows.append("  " + NO_LIBERTY_NOTE)
    rows.append(f"  reports     {_rel(outdir)}/{{metrics.json,synth_stat.txt,timing.txt,yosys.log}}")
    return "\n".join(rows)


def _rel(p):
    try:
        return str(Path(p).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)
