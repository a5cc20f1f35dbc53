"""One QoR run: generate (or read) the Verilog, synthesize flat or by blocks, time it, write reports.

:func:`run` takes a registered design (``make synth DESIGN=...``); :func:`run_verilog` takes any
user Verilog (``make synth VERILOG=... TOP=...``). Both go through the same Yosys script, liberty,
STA and metrics, and write one folder per variant:

``metrics.json``
    METRICS2.1 metrics and provenance (:mod:`flows.synth.metrics`, names in :mod:`flows.metric_keys`).
``synth_stat.txt``
    Yosys ``stat -liberty`` (per block with instance counts in the hierarchical flow).
``timing.txt``
    The QoR summary (area by block, MAC rates, slack against ``CLOCK_PS``, the worst path cell by
    cell across the hierarchy), then the STA's own path reports and assumptions.
``yosys.log``
    The Yosys log (kept whole up to 2 MB, else its head and tail; the full log stays in ``build/``).

The folder is ``build/reports/qor/<variant>/`` (git-ignored) unless a caller asks for another
``reports_dir`` (``reports/qor`` to publish) or an exact ``outdir``. The variant of a registered
design is ``Design.variant(params)`` plus the library's short name (``bf16_mul-booth4-s0-osu018``);
``flow="auto"`` synthesizes flat when the design has no marked blocks, else by blocks. The folder
is the variant plus ``-flat`` / ``-hier`` when the flow is not the one ``auto`` picks and
``-clk<ps>`` with a clock target (:func:`run_name`), so runs that can differ never share a folder.
"""

import hashlib
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import metric_keys as K
from ..paths import BUILD, USER_QOR
from . import metrics as M
from .hier import clock_gates, own_area, synth_hier
from .liberty import NO_LIBERTY_NOTE, find_liberty, generic_library, load
from .outputs import add_macros, compare_flows, compare_target, sta_defaults, summarize, write_reports
from .repair import DEFAULT_DRIVE_LIMIT, check_drive_limit, repair, within_tables, write_repaired
from .sta import Sta
from .wholepath import Row, whole_path
from .yosys import SynthError, run_yosys

__all__ = ["run", "run_verilog", "RunOutput", "resolve_library", "check_clock", "read_verilog", "WORK",
           "run_name", "netlist_sha"]

#: Work directories of the flow runs (one per variant).
WORK = BUILD / "qor"


@dataclass
class RunOutput:
    """Result of :func:`run`: the metrics, where the reports went, and the mapped netlist.

    Attributes
    ----------
    metrics : dict
        What ``metrics.json`` holds.
    outdir : Path
        The report folder.
    summary : str
        The screen summary (its last line names ``outdir``).
    worst : flows.synth.sta.Result
        The worst path.
    netlist_json : Path or None
        The mapped netlist of a flat run after drive repair (Yosys ``write_json`` layout).
    path : list of flows.synth.wholepath.Row
        The worst path cell by cell from launch to capture, across the hierarchy.
    work : Path or None
        The run's work directory (``flat/`` or ``hier/<block>/`` below it hold the repaired
        netlists, ``repaired.json``).
    """

    metrics: dict
    outdir: Path
    summary: str
    worst: object
    netlist_json: Path | None = None
    path: list = field(default_factory=list)
    work: Path | None = None


@dataclass
class _Synthesized:
    """What a flat or hierarchical synthesis produced, before metrics."""

    area: float
    seq: float
    cells: int
    worst: object
    ltp: int | None
    stat_text: str
    yosys_s: float
    peak_mb: float
    cached: bool
    logs: list
    timing_extra: str = ""
    notes: list = field(default_factory=list)
    block_areas: dict = field(default_factory=dict)
    hier: object = None
    netlist_json: Path | None = None
    repair: dict = field(default_factory=dict)
    path: list = field(default_factory=list)     # flows.synth.wholepath.Row, launch to capture
    gates: tuple = (0, 0.0)                      # clock gates and their area (hier.clock_gates)


def resolve_library(liberty=None, log=print):
    """The :class:`flows.synth.liberty.Library` to use (generic fallback announced on ``log``)."""
    path = find_liberty(liberty)
    if path is None:
        log(NO_LIBERTY_NOTE)
        return generic_library()
    return load(path)


def check_clock(clock_ps):
    """``clock_ps`` as a float, or None; a clear ``ValueError`` unless it is a positive number.

    Checked before Yosys runs, whose ABC would otherwise fail with an unrelated message.
    """
    if clock_ps is None or clock_ps == "":
        return None
    try:
        v = float(clock_ps)
    except (TypeError, ValueError):
        raise ValueError(f"CLOCK_PS must be a positive number of picoseconds, not {clock_ps!r} "
                         "(e.g. CLOCK_PS=5000)") from None
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"CLOCK_PS must be a positive number of picoseconds, not {clock_ps!r} "
                         "(e.g. CLOCK_PS=5000)")
    return v


def run_name(variant, flow, default_flow, clock_ps, drive_limit=DEFAULT_DRIVE_LIMIT) -> str:
    """The report folder's name: ``variant`` plus every run option that changes the result and is
    not the default (the flow when it is not what ``auto`` picks, ``-clk<ps>`` for a target period,
    ``-<limit>`` for a drive limit other than ``liberty``).

    The library and the generator options are in ``variant`` already, so a default run keeps the
    variant's name and no two runs that can differ share a folder.
    """
    return (variant + ("" if flow == default_flow else f"-{flow}")
            + (f"-clk{float(clock_ps):g}" if clock_ps else "")
            + ("" if drive_limit == DEFAULT_DRIVE_LIMIT else f"-{drive_limit}"))


def _dirs(name, outdir, reports_dir):
    """(report folder, private work folder) of one run named ``name`` (:func:`run_name`)."""
    if outdir:
        outdir = Path(outdir)
        # a private work directory per report directory, so concurrent runs never share one
        tag = hashlib.sha256(str(outdir.resolve()).encode()).hexdigest()[:10]
        return outdir, WORK / "by-outdir" / f"{name}-{tag}"
    return Path(reports_dir or USER_QOR) / name, WORK / name


def _flat(verilog, top, work, lib, booth, clock_ps, limit_mb, sv=False, drive_limit=DEFAULT_DRIVE_LIMIT
          ) -> _Synthesized:
    """One Yosys run of the whole design, timed flat (``sv``: read as SystemVerilog)."""
    r = run_yosys(verilog, top, work / "flat", lib, booth=booth, clock_ps=clock_ps, limit_mb=limit_mb,
                  sv=sv)
    netlist, rep = repair(lib, r.netlist, within_tables=within_tables(drive_limit))
    path = write_repaired(r.workdir, top, netlist)
    area, seq, cells = own_area(lib, netlist)
    worst = Sta(lib, netlist).run()
    return _Synthesized(area, seq, cells, worst, r.ltp_levels,
                        r.stat_text + "\n" + rep.line() + "\n", r.runtime_s, r.peak_mb, r.cached, [r.log],
                        notes=[] if lib.generic else [rep.line()], netlist_json=path,
                        repair={"nets": rep.nets, "buffers": rep.buffers, "area": rep.area,
                                "cell": rep.cell, "max_levels": rep.max_levels,
                                **_limit_key(drive_limit)},
                        path=[Row("", st.point, st.net, st.incr_ps) for st in worst.steps]
                        + ([Row("", f"setup of {worst.end}", "", worst.setup_ps)] if worst.setup_ps else []),
                        gates=clock_gates(lib, netlist))


def _limit_key(drive_limit) -> dict:
    """The drive limit for ``flow__drive_repair`` (only when it is not the default, so the default
    run's metrics read as before)."""
    return {} if drive_limit == DEFAULT_DRIVE_LIMIT else {"limit": drive_limit}


def _by_blocks(netlist, lib, work, booth, clock_ps, limit_mb, log, macros, drive_limit=DEFAULT_DRIVE_LIMIT
               ) -> _Synthesized:
    """Each distinct block once (:func:`flows.synth.hier.synth_hier`), composed; per-block areas,
    statistics and timing sections for the reports."""
    h = synth_hier(netlist, lib, work / "hier", booth=booth, clock_ps=clock_ps, limit_mb=limit_mb,
                   log=log, macros=macros, within_tables=within_tables(drive_limit))
    block_areas = {b.name: b.area * b.instances for b in h.blocks.values() if b.name != h.top}
    block_areas[h.top] = h.blocks[h.top].area
    stat_text = "\n".join(
        f"==== {b.name}: {b.instances} instance(s) x {b.area:.1f} um^2 own area "
        f"(children: {', '.join(f'{c} x{n}' for c, n in b.children.items()) or 'none'})\n{b.stat_text}"
        for b in h.blocks.values())
    stat_text += f"\n==== composed: {h.area:.1f} um^2 total = sum(own area x instances), {h.cells} cells\n"
    notes = ["logic_depth__generic is the deepest single block (blocks synthesized separately)"]
    no_ltp = [b.name for b in h.blocks.values() if b.ltp is None and b.cells]
    if no_ltp:
        notes.append(f"no generic logic depth for {', '.join(no_ltp)}: Yosys's recursive ltp "
                     "exhausted the WebAssembly call stack (run repeated without it)")
    blocks = list(h.blocks.values())
    rep = {"nets": sum(b.repair.nets * max(b.instances, 1) for b in blocks),
           "buffers": sum(b.repair.buffers * max(b.instances, 1) for b in blocks),
           "area": sum(b.repair.area * max(b.instances, 1) for b in blocks),
           "cell": next((b.repair.cell for b in blocks if b.repair.cell), ""),
           "max_levels": max((b.repair.max_levels for b in blocks), default=0),
           **_limit_key(drive_limit)}
    if not lib.generic:
        notes.append(f"drive repair: {rep['nets']} net(s) over their driver's limit buffered with "
                     f"{rep['buffers']} {rep['cell'] or 'buffers'} ({rep['area']:.1f} um^2, counted in "
                     "the area; all instances)")
    timing_extra = "\n\n".join(
        [f"---- top {h.top}: its own logic (the blocks' internal reg->reg paths left out; "
         f"paths through and between blocks kept)\n{h.top_own.format()}"] +
        [f"---- block {b.name} (standalone, children as models)\n{b.worst.format()}"
         for b in h.blocks.values() if b.name != h.top])
    return _Synthesized(h.area, h.seq_area, h.cells, h.worst,
                        max((b.ltp for b in h.blocks.values() if b.ltp is not None), default=None),
                        stat_text, h.runtime_s, h.peak_mb, all(b.cached for b in h.blocks.values()),
                        [b.log for b in h.blocks.values()], timing_extra, notes, block_areas, h,
                        repair=rep, path=whole_path(h), gates=h.gates)


def netlist_sha(work: Path, flow: str) -> str:
    """sha256 (16 hex digits) of the mapped netlists of a run (every block's, by name, if hier)."""
    h = hashlib.sha256()
    for f in sorted((work / flow).glob("mapped.json" if flow == "flat" else "*/mapped.json")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _finish(s: _Synthesized, *, design, variant, params, lib, flow, clock_ps, booth, outdir, work, t0,
            macros=(), module_names=(), log=print, name=None, twin=None, untargeted=None,
            drive_limit=DEFAULT_DRIVE_LIMIT) -> RunOutput:
    """Metrics of a synthesized design, its report files and summary (``name``: the run's folder
    name, :func:`run_name`; ``twin``: the folder of the same run in the other flow, compared with
    when it holds metrics; ``untargeted``: the folder of the run without ``clock_ps``, whose
    netlist hash tells whether the target changed the mapping)."""
    sta_def = sta_defaults(lib, drive_limit)
    m = M.build(design=design, variant=variant, params=params, lib=lib, area=s.area, seq_area=s.seq,
                cells=s.cells, worst=s.worst, ltp=s.ltp, runtime_s=time.monotonic() - t0,
                peak_mb=s.peak_mb, flow=flow, block_areas=s.block_areas, clock_ps=clock_ps, booth=booth,
                cached=s.cached, sta_defaults=sta_def, yosys_s=s.yosys_s, hier=s.hier, repair=s.repair,
                gates=s.gates)
    m["flow__run"] = name or variant
    m[K.NETLIST_SHA] = netlist_sha(work, flow)
    M.add_rates(m, design, params)
    M.add_slack(m, clock_ps)
    if s.hier is not None:
        m["design__blocks"] = {b.name: {"instances": b.instances, "area_per_instance": round(b.area, 3)}
                               for b in s.hier.blocks.values()}
    if macros:
        add_macros(m, macros, module_names, s.block_areas)
    if s.notes:
        m["flow__notes"] = list(s.notes)
    if twin is not None:
        compare_flows(m, twin)
    if clock_ps and untargeted is not None:
        compare_target(m, untargeted)
    write_reports(m, s, outdir, work, variant, flow, lib, sta_def)
    summary = summarize(m, s.worst, outdir, s.path)
    log(summary)
    return RunOutput(m, outdir, summary, s.worst, s.netlist_json, s.path, work)


def _acc_line(params) -> str:
    """What the default accumulate mode of a matrix-unit variant is and why (one line)."""
    from hw.mu.numerics import default_stages
    from hw.mu.window import windowed
    if params["acc"] == "exact":
        window = (" (OCP MX: exact sums in a window anchored at the largest term, "
                  "docs/numerics.md 7.7)" if windowed(params.get("fmt")) else "")
        rec = default_stages(params["width"], params["fmt"], "exact")
        stages = (f"{rec} column stages, the recommended unit" if params["stages"] == rec else
                  f"{params['stages']} column stages (the recommended unit has {rec})")
        return (f"accumulate exact, {stages} (the default: one FP32 rounding per dot "
                f"product){window}; ACC=fp32 rounds every beat")
    return f"accumulate fp32 (one rounding per beat): the default for {params['fmt']} with LOOP=2"


def run(design_name, given=None, *, liberty=None, clock_ps=None, flow="auto", booth=False,
        outdir=None, reports_dir=None, log=print, limit_mb=None, lib=None, drive_limit=None) -> RunOutput:
    """Synthesize and time one registered design variant and write its reports.

    Parameters
    ----------
    design_name : str
        A name from :data:`hw.designs.DESIGNS`.
    given : dict or None
        Generator options (strings or values), e.g. ``{"arch": "booth4", "stages": "0"}``.
    liberty : str or None
        Liberty path (else ``LIBERTY``, ``PDK_ROOT``, the OSU default, the generic library).
    clock_ps : float or None
        Target period passed to ``abc -D`` (checked by :func:`check_clock`).
    flow : str
        ``"flat"``, ``"hier"`` or ``"auto"``.
    booth : bool
        Use Yosys's own ``synth -booth`` (variant gets ``-ysbooth``).
    outdir : Path or None
        Exact report folder (overrides ``reports_dir``).
    reports_dir : Path or None
        Parent of the ``<variant>`` report folder (default ``build/reports/qor``; the committed
        ``reports/qor`` to publish).
    lib : flows.synth.liberty.Library or None
        An already loaded library (overrides ``liberty``).
    drive_limit : str or None
        The drive repair's limit, :data:`flows.synth.repair.DRIVE_LIMITS` (None: ``liberty``;
        ``tables`` adds ``-tables`` to the report folder's name).

    Raises
    ------
    hw.designs.OptionError, flows.synth.liberty.LibertyError, flows.synth.yosys.SynthError
        With messages naming the problem.
    ValueError
        A bad ``clock_ps``, ``flow`` or ``drive_limit``.
    """
    from hw import hier
    from hw.designs import get_design

    t0 = time.monotonic()
    clock_ps = check_clock(clock_ps)
    drive_limit = check_drive_limit(drive_limit)
    if flow not in ("flat", "hier", "auto"):
        raise ValueError(f"flow must be flat, hier or auto, not {flow!r}")
    design = get_design(design_name)
    params = design.params(given or {})
    lib = lib or resolve_library(liberty, log)
    variant = design.variant(params) + ("-ysbooth" if booth else "") + "-" + lib.short
    component = design.build(params)
    netlist = hier.emit(component, design.top_name)
    # black boxes (e.g. the slice's SRAM) carry a modelled area instead of a synthesized one
    macros = component.macros() if hasattr(component, "macros") else []
    default_flow = "hier" if len(netlist.modules) > 1 else "flat"
    flow = default_flow if flow == "auto" else flow
    name = run_name(variant, flow, default_flow, clock_ps, drive_limit)
    explicit = outdir is not None
    outdir, work = _dirs(name, outdir, reports_dir)
    if flow == "flat" and macros:
        # flattened, the black box's placeholder (outputs tied to 0) would let Yosys remove the
        # logic behind it while its modelled area is still added
        raise ValueError(f"{variant} has black-box macros ({', '.join(m['module'] for m in macros)}); "
                         "they need the hierarchical flow: use FLOW=hier (or auto)")
    log(f"{name}: {flow} synthesis of {len(netlist.modules)} module(s) with {lib.name}"
        + (f", target {clock_ps} ps" if clock_ps else ""))
    if "acc" in params and "acc" not in (given or {}):
        log(f"{name}: {_acc_line(params)}")
    if flow == "flat":
        s = _flat(netlist.verilog, netlist.top, work, lib, booth, clock_ps, limit_mb,
                  drive_limit=drive_limit)
    else:
        s = _by_blocks(netlist, lib, work, booth, clock_ps, limit_mb, log,
                       {mac["module"] for mac in macros}, drive_limit)
    other = "hier" if flow == "flat" else "flat"
    twin = None if explicit or (other == "hier" and default_flow == "flat") else \
        outdir.parent / run_name(variant, other, default_flow, clock_ps, drive_limit)
    return _finish(s, design=design_name, variant=variant, params=params, lib=lib, flow=flow,
                   clock_ps=clock_ps, booth=booth, outdir=outdir, work=work, t0=t0, macros=macros,
                   module_names=set(netlist.modules), log=log, name=name, twin=twin,
                   untargeted=None if explicit else
                   outdir.parent / run_name(variant, flow, default_flow, None, drive_limit),
                   drive_limit=drive_limit)


def read_verilog(files, top: str) -> tuple:
    """Read user Verilog files for :func:`run_verilog`: ``(text, content hash)``.

    Raises
    ------
    ValueError
        No file given, a file missing or empty, or no ``module <top>`` in any of them.
    """
    if not files:
        raise ValueError("no Verilog given: pass --verilog FILE (repeatable) or VERILOG=file.v")
    if not top:
        raise ValueError("user Verilog needs its top module: set TOP=name (--top name)")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", top):
        raise ValueError(f"TOP must be the name of a Verilog module, not {top!r} (e.g. TOP=my_adder)")
    texts = []
    for f in files:
        p = Path(f)
        if not p.is_file():
            raise ValueError(f"Verilog file {f}: no such file")
        text = p.read_text(errors="replace")
        if not re.search(r"\bmodule\b", text):
            raise ValueError(f"Verilog file {f} holds no module (empty design)")
        texts.append(f"// ---- {p.name}\n{text}\n")
    names = ", ".join(str(f) for f in files)
    if not any(re.search(rf"\bmodule\s+(\\)?{re.escape(top)}\b", t) for t in texts):
        raise ValueError(f"top module {top!r} not found in {names}; set TOP (--top) to one of its "
                         "modules")
    text = "".join(texts)
    return text, hashlib.sha256(text.encode()).hexdigest()[:8]


def run_verilog(files, top: str, *, liberty=None, clock_ps=None, booth=False, outdir=None,
                reports_dir=None, log=print, limit_mb=None, lib=None, drive_limit=None) -> RunOutput:
    """Synthesize and time user Verilog with the same library, STA and metrics as :func:`run`.

    The files (``.sv`` or plain Verilog) are read with Yosys's SystemVerilog front end
    (``read_verilog -sv``) and synthesized flat. Its variant (the report folder's name) is
    ``<top>-<first 8 hex digits of the sha256 of the files>-<library>``, so a changed file gets a
    new folder. Parameters are those of :func:`run`; ``files`` is a list of Verilog paths and
    ``top`` the module to synthesize.

    Raises
    ------
    ValueError
        A missing or empty file, a top that none of the files defines, a synthesized design with
        no cells, or a bad ``clock_ps`` or ``drive_limit``.
    flows.synth.yosys.SynthError
        Yosys rejected the Verilog (the message names the top, the files and the log).
    """
    t0 = time.monotonic()
    clock_ps = check_clock(clock_ps)
    drive_limit = check_drive_limit(drive_limit)
    text, digest = read_verilog(files, top)
    lib = lib or resolve_library(liberty, log)
    variant = f"{top}-{digest}{'-ysbooth' if booth else ''}-{lib.short}"
    name = run_name(variant, "flat", "flat", clock_ps, drive_limit)
    outdir_given = outdir is not None
    outdir, work = _dirs(name, outdir, reports_dir)
    names = ", ".join(str(f) for f in files)
    log(f"{name}: flat synthesis of {top} from {names} with {lib.name}"
        + (f", target {clock_ps} ps" if clock_ps else ""))
    try:
        s = _flat(text, top, work, lib, booth, clock_ps, limit_mb, sv=True, drive_limit=drive_limit)
    except SynthError as e:
        raise SynthError(f"synthesis of top {top!r} from {names} failed: {e}") from None
    if s.cells == 0:
        raise ValueError(f"top {top!r} from {names} has no cells after synthesis (an empty module, "
                         "or logic that drives no output)")
    params = {"verilog": [str(f) for f in files], "top": top, "sha256_8": digest}
    return _finish(s, design=top, variant=variant, params=params, lib=lib, flow="flat", clock_ps=clock_ps,
                   booth=booth, outdir=outdir, work=work, t0=t0, log=log, name=name,
                   untargeted=None if outdir_given else
                   outdir.parent / run_name(variant, "flat", "flat", None, drive_limit),
                   drive_limit=drive_limit)
