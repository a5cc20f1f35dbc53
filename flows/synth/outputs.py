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

__all__ = ["write_reports", "summarize", "sta_defaults", "add_macros", "LOG_KEEP_BYTES"]

LOG_KEEP_BYTES = 2_000_000


def sta_defaults(lib) -> dict:
    """The STA's assumptions, written into ``metrics.json`` and ``timing.txt``."""
    if lib.generic:
        return {"note": "generic library: 1 unit of delay per gate, no slews or loads"}
    return {"input_slew_ps": round(lib.default_input_slew() * lib.time_ps, 1),
            "output_load_pf": round(lib.default_output_load() * lib.cap_pf, 5),
            "wire_cap_per_fanout_pf": 0.0,
            "clock": "ideal (arrival 0, slew = input slew)",
            "inputs": "arrive at 0 ps", "outputs": "end at their arrival (no output delay)",
            "loads": "nets over their driver's liberty max_capacitance are buffered with real cells "
                     "(area counted, levels on the paths); delay beyond a table is extrapolated "
                     "linearly from its last segment"}


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


def write_reports(m: dict, s, outdir: Path, work: Path, variant: str, flow: str, lib, sta_def) -> None:
    """Write the report files of one run (``s``: the flow's synthesis result) into ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "synth_stat.txt").write_text(s.stat_text)
    head = [f"# {variant}: static timing of the Yosys-mapped netlist ({flow})",
            f"# liberty {lib.name} ({lib.path}); " + ", ".join(f"{k} {v}" for k, v in sta_def.items()),
            "# Yosys-only: no placement, no routing, no wire load.", ""]
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


def summarize(m, worst, outdir) -> str:
    """One screen: area, GE, cells, critical path, fmax, runtime, and (last) where the reports are."""
    lib = m["flow__liberty"]
    d, f, seq = m[K.CP_PS], m[K.FMAX], m[K.SEQ]
    if lib["ge_cell"] is None:   # generic library: areas are gate equivalents already
        area_row = f"  area        {m[K.GE]:.1f} GE (generic gates, NAND2 = 1); sequential {seq:.1f} GE"
    else:
        area_row = (f"  area        {m[K.AREA]:.1f} um^2 = {m[K.GE]:.1f} GE ({lib['ge_cell']} = "
                    f"{lib['ge_area_um2']} um^2); sequential {seq:.1f} um^2")
    rows = [
        f"== {m['variant']}  ({m['flow__mode']}, {lib['name']})",
        area_row,
        f"  cells       {m[K.CELLS]}",
        (f"  critical    {d:.1f} ps, {m[K.CP_LV]} levels ({worst.kind}: {worst.start} -> {worst.end})"
         if d is not None else
         f"  critical    {m[K.CP_LV]} levels (generic library: no delay)"),
        f"  fmax        {f:.1f} MHz" if f else "  fmax        n/a",
        f"  logic depth {m[K.DEPTH]} generic levels (Yosys ltp)",
        f"  runtime     {m[K.RUNTIME]:.1f} s (yosys {m[K.YOSYS_TIME]:.1f} s"
        f"{', cached' if m[K.CACHE_HIT] else ''}), peak memory {m[K.MEMORY]:.0f} MB",
    ]
    blocks = {k[len(K.BLOCK_AREA):]: v for k, v in m.items() if k.startswith(K.BLOCK_AREA)}
    if blocks:
        rows.append("  blocks      " + ", ".join(f"{k} {v:.0f}" for k, v in blocks.items()))
    for mac in m.get(K.MACROS, []):
        rows.append(f"  macro       {mac['module']} x{mac['instances']}: {mac['area_um2']:.0f} um^2 "
                    f"NOT in the area above ({mac['model']})")
    if K.CP_PS_TOP_OWN in m:
        rows.append(f"  top's own   {m[K.CP_PS_TOP_OWN]:.1f} ps, {m[K.CP_LV_TOP_OWN]} levels (blocks' "
                    "internal reg->reg left out; timing.txt)")
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
