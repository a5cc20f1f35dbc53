"""Hierarchical place and route: the repeated block laid out once as a hard macro, the top level
placed and routed around its copies.

For a design whose top instantiates one block type (``bf16_bank``: N multipliers; ``mu``: D
columns), :func:`run_pnr_hier`

1. synthesizes the top with the block as a black box, and finds the block inputs the top ties to a
   constant in every copy (the block is then laid out with those ties inside it: a wrapper module
   ``<block>_hard``; the library has no tie cell for the top to drive them with);
2. synthesizes that block flat, places and routes it with qflow on metal1-4 (metal5-6 stay free for
   the top over it, see :mod:`flows.pnr.top`) with its pins moved to its upper edge between
   placement and routing (:func:`flows.pnr.abstract.plan_pins`), and runs qflow's DRC and (its
   clock routed) LVS on it;
3. writes the block's LEF abstract (:func:`flows.pnr.abstract.lef_abstract`) and its liberty timing
   model measured by OpenSTA on the routed block with its parasitics
   (:func:`flows.pnr.charlib.block_liberty`);
4. floorplans the top (:mod:`flows.pnr.top`): the D macros FIXED in a row, the top's own cells
   (repaired: the drive repair's buffer trees included) in rows above them, placed by our own
   quadratic placer (:mod:`flows.pnr.place`: graywolf cannot place around fixed macros); rebuilds
   the repair's buffer trees by where their sinks landed (:mod:`flows.pnr.repeat`: each buffer
   over neighbouring sinks, repeater chains where the trunk to them is long, instead of buffers
   whose sinks lie at both ends of the row), places it again, and routes it with qrouter;
5. extracts the routed top (:func:`flows.pnr.extract.extract`), times it with OpenSTA (the cells'
   liberty, the block's model, the top's SPEF) with and without wires, and checks it in magic with
   the block's real layout (:func:`flows.pnr.top.check_script`: DRC and signal connectivity).

Laid out so: the BF16 bank (209 top cells) and the matrix unit (E2M1 D = 8: 5,312 top cells of
control, feed registers and buffers, 5,641 nets, routed with no failed net, DRC-clean, every signal
pin on its net).

The timing is the top's paths with the blocks as timing models: paths into a block end at its
input's setup requirement, paths out of it start at its clock-to-output delay, both measured with
the block's own routed wires; the block's internal reg-to-reg paths are the block run's own
post-route numbers, reported next to it.
"""

import dataclasses
import datetime
import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

from .. import metric_keys as K
from ..paths import USER_PNR
from ..synth.outputs import sta_defaults
from ..synth.repair import REPAIR_PREFIX, repair_buffer
from .abstract import core_box, lef_abstract, plan_pins
from .charlib import block_liberty
from .defdb import Def
from .extract import extract
from .flow import DEFAULT_STEP_TIMEOUT_S, WORK, _check_util, _lib_of, _no_fill, check_step_timeout
from .layout import lef_sizes, read_def
from .netlist import physical
from .opensta import run_opensta
from .parasitics import read_rc, write_spef
from .place import place_cells
from .qflow import StepTimeout, _run_limited, run_qflow, stage1_failed, tech_lef
from .repeat import rebuffer
from .tools import ToolError, require, versions
from .top import (
    check_script,
    floorplan,
    macro_pin_x,
    port_slots,
    read_check,
    top_def,
    top_route_script,
)
from .wires import ROW_LAYER, lef_layers, repeater_spacing

__all__ = ["run_pnr_hier", "tie_offs", "unread_outputs", "wrapper_verilog"]


def tie_offs(top_module: dict, block: str) -> dict:
    """``{(port, bit): "0" | "1"}``: the block inputs the top ties to the same constant in every
    instance of ``block``.

    Raises
    ------
    ToolError
        An input tied to a constant in some instances only, or to different constants.
    """
    seen, n = {}, 0
    for c in top_module["cells"].values():
        if c["type"] != block:
            continue
        n += 1
        for p, bits in c["connections"].items():
            for i, b in enumerate(bits):
                seen.setdefault((p, i), []).append(b if isinstance(b, str) else None)
    ties = {}
    for key, vals in seen.items():
        consts = set(vals) - {None}
        if not consts:
            continue
        if len(consts) > 1 or None in vals or len(vals) != n:
            raise ToolError(f"the top ties {block} input {key[0]}[{key[1]}] to a constant in some instances "
                            "only (or to different ones): each copy would need its own layout")
        ties[key] = consts.pop()
    return ties


def unread_outputs(top_module: dict, block: str, ports: dict) -> set:
    """The output ports of ``block`` that nothing in the top reads, in any instance (``ports``: the
    block's ``{port: {"direction", "bits"}}``)."""
    readers = {}
    for c in top_module["cells"].values():
        for p, bits in c["connections"].items():
            if c["type"] != block or ports.get(p, {}).get("direction") != "output":
                for b in bits:
                    readers[b] = True
    for d in top_module["ports"].values():
        if d["direction"] == "output":
            for b in d["bits"]:
                readers[b] = True
    used = {p for c in top_module["cells"].values() if c["type"] == block
            for p, bits in c["connections"].items() if any(b in readers for b in bits)}
    return {p for p, d in ports.items() if d["direction"] == "output"} - used


def wrapper_verilog(block: str, ports: dict, ties: dict, drop=()) -> tuple:
    """``(name, Verilog)`` of a module that instantiates ``block`` with the ``ties`` inside and the
    output ports ``drop`` left unconnected (``ports``: the block's ``{port: {"direction", "bits"}}``)."""
    name = f"{block}_hard"
    decl, conn, keep = [], [], []
    for p, d in ports.items():
        if p in drop:
            continue
        width = len(d["bits"])
        tied = {i: ties[(p, i)] for i in range(width) if (p, i) in ties}
        rng = f"[{width - 1}:0] " if width > 1 else ""
        if len(tied) == width:
            bits = "".join(tied[i] for i in reversed(range(width)))
            conn.append(f".{p}({width}'b{bits})")
            continue
        if tied:
            raise ToolError(f"block {block} port {p}: {len(tied)} of its {width} bits tied in the top; tie "
                            "all of a port's bits or none")
        decl.append(f"  {d['direction']} {rng}{p};")
        conn.append(f".{p}({p})")
        keep.append(p)
    text = (f"module {name} ({', '.join(keep)});\n" + "\n".join(decl) +
            f"\n  {block} core ({', '.join(conn)});\nendmodule\n")
    return name, text


def _retype(top_module: dict, block: str, name: str, ties: dict, drop=()) -> dict:
    """The top with its ``block`` instances as ``name`` instances, the tied and ``drop`` pins left out."""
    cells = {}
    for k, c in top_module["cells"].items():
        if c["type"] == block:
            tied_ports = {p for p, _ in ties} | set(drop)
            kept = {p: b for p, b in c["connections"].items() if p not in tied_ports}
            c = {**c, "type": name, "connections": kept}
        cells[k] = c
    return {**top_module, "cells": cells}


def _qrouter(script: str, workdir: Path, design: str, timeout_s: float) -> tuple:
    """Run qrouter on ``script`` in ``workdir``: (nets left unrouted, nets its first stage left,
    seconds)."""
    (workdir / "route.tcl").write_text(script)
    t0 = time.monotonic()
    try:
        rc = _run_limited(["qrouter", "-nog", "-s", "route.tcl"], workdir, workdir / "route.log", timeout_s)
    except subprocess.TimeoutExpired:
        raise StepTimeout(f"qrouter on the top {design} did not finish within {timeout_s:g} s (log "
                          f"{workdir / 'route.log'})", "top_route", timeout_s, {}, {}) from None
    log = (workdir / "route.log").read_text(errors="replace")
    m = re.findall(r"Final: (No failed routes!|Failed net routes: (\d+))", log)
    if rc != 0 or not m or not (workdir / f"{design}_route.def").is_file():
        raise ToolError(f"qrouter failed on the top {design} (exit {rc}; log {workdir / 'route.log'})")
    failed = 0 if m[-1][0].startswith("No") else int(m[-1][1])
    return failed, stage1_failed(log), round(time.monotonic() - t0, 2)


def _top_nets(ph) -> list:
    """Connections per net of a physical netlist (ports count as one each)."""
    count = {}
    for _, _, pins in ph.cells:
        for n in pins.values():
            count[n] = count.get(n, 0) + 1
    for p in ph.inputs + ph.outputs:
        count[p] = count.get(p, 0) + 1
    return list(count.values())


def _synthesize(netlist, block: str, lib, work: Path) -> SimpleNamespace:
    """The top (block as a black box, repaired) and the block (with the top's ties, flat, repaired),
    the block's timing model and the top's pre-route critical path with it."""
    from ..synth.blockmodel import extract_model
    from ..synth.repair import repair, write_repaired
    from ..synth.sta import Sta
    from ..synth.yosys import run_yosys
    from .flow import _block_verilog

    top = netlist.top
    rt = run_yosys(netlist.modules[top].verilog, top, work / "synth-top", lib,
                   children={block: netlist.modules[block].verilog})
    ties = tie_offs(rt.netlist, block)
    name, text = _block_verilog(netlist, block)
    own = netlist.modules[block]   # its own logic only, children as black boxes: the ports, cheaply
    ports = run_yosys(own.verilog, block, work / "synth-block-ports", lib,
                      children={c: netlist.modules[c].verilog for c in own.children}).netlist["ports"]
    bports = {p: {"direction": d["direction"], "bits": d["bits"]} for p, d in ports.items()}
    unread = unread_outputs(rt.netlist, block, bports)
    hard, wtext = wrapper_verilog(name, bports, ties, unread)
    rb = run_yosys(text + "\n" + wtext, hard, work / "synth-block", lib)
    bmapped, _ = repair(lib, rb.netlist)
    write_repaired(rb.workdir, hard, bmapped)
    model, bworst = extract_model(Sta(lib, bmapped), hard)
    tmod, trep = repair(lib, _retype(rt.netlist, block, hard, ties, unread), models={hard: model})
    pre = Sta(lib, tmod, models={hard: model}).run()
    return SimpleNamespace(top=top, hard=hard, bmapped=bmapped, bworst=bworst, tmod=tmod, trep=trep, pre=pre,
                           ties=ties, unread=sorted(unread), model=model)


def _harden(s, lib, work: Path, outdir: Path, *, util, fast, groute, route_clock, checks, timeout_s, reuse,
            log) -> SimpleNamespace:
    """The block placed (pins planned), routed on metal1-4, checked, abstracted and modelled."""
    hard = s.hard
    ph = physical(s.bmapped, hard)
    clocks = ph.clock_inputs()
    layout = work / "block" / "layout"
    q = run_qflow(ph, work / "block", density=util, fast=fast, groute=groute, cleanup=False, checks=checks,
                  lvs=route_clock, ignore=() if route_clock else clocks, extra_vars={"route_layers": 4},
                  timeout_s=timeout_s, reuse=reuse, log=log,
                  after_place=lambda _: plan_pins([layout / f"{hard}.def", layout / f"{hard}_unroute.def"]))
    if q.failed_routes:
        raise ToolError(f"qrouter left {q.failed_routes} net(s) of block {hard} unrouted (log "
                        f"{q.project / 'log' / 'route.log'}): lower its utilization (UTIL=)")
    if checks and (q.drc_errors or q.lvs_match is False):
        lvs = "not run" if q.lvs_match is None else "match" if q.lvs_match else "mismatch"
        raise ToolError(f"block {hard}: DRC {q.drc_errors} error(s), LVS {lvs} (logs in {q.project / 'log'})")
    tech_text = tech_lef().read_text()
    d = Def.read(q.routed_def)
    lef = outdir / f"{hard}.lef"
    lef.write_text(lef_abstract(d, hard, ph.inputs, ph.outputs, tech_text))
    rc = read_rc(q.rc.read_text())
    named = {n.name for n in rc}
    missing = [n for n, c in d.nets.items() if len(c) > 1 and n not in named and n not in q.ignored]
    if missing:   # its model would time them without wire
        raise ToolError(f"qrouter's RC file of block {hard} lacks {len(missing)} routed net(s), e.g. "
                        f"{missing[:3]} ({q.rc}): the block's model would time them without wires")
    spef = outdir / f"{hard}.spef"
    spef.write_text(write_spef(rc, hard))
    net = outdir / f"{hard}.routed.v"
    net.write_text(_no_fill(q.netlist_v.read_text()))
    defaults = sta_defaults(lib)
    caps = {(c, p): v * lib.cap_pf for c, cell in lib.cells.items() for p, v in cell.inputs.items()}
    t = time.monotonic()
    text, _ = block_liberty(net, hard, spef, lib.path, caps, ph.inputs, ph.outputs,
                            clocks[0] if clocks else None, work / "charlib",
                            slew_ps=defaults["input_slew_ps"])
    (outdir / f"{hard}.lib").write_text(text)
    model_s = round(time.monotonic() - t, 2)
    sta = run_opensta(lib.path, net, hard, outdir / "sta_block", period_ps=s.bworst.delay_ps,
                      inputs=ph.inputs, clocks=clocks, spef=spef, input_slew_ps=defaults["input_slew_ps"],
                      output_load_pf=defaults["output_load_pf"])
    sizes = lef_sizes(tech_text)
    wire = read_def(q.routed_def.read_text(), sizes).wirelength
    strip = round(d.die[3] - core_box(d, tech_text)[3], 3)   # above its cells: its pins' wires
    return SimpleNamespace(q=q, ph=ph, clocks=clocks, die=d.die, strip=strip, lef=lef,
                           lib=outdir / f"{hard}.lib", sta=sta,
                           wirelength=wire, seconds={**{f"block_{k}": v for k, v in q.seconds.items()},
                                                     "block_model": model_s})


def _rebuffer(s, b, lib, ph, placed, sizes, fp, msize, px, clocks):
    """:func:`flows.pnr.repeat.rebuffer` on the placed top: the cells' and the macros' pins where they
    are; the drive repair's own buffer at the repair's target load as the repeater (the trees are
    rebuilt of what they were built of), its segment for the row's wire and the heaviest column
    input every column pitch."""
    macro_at = {inst: x for inst, x, _ in fp.macros}
    bit_of = {name: key for key, name in b.ph.port_bits.items()}
    kind = {inst: typ for inst, typ, _ in ph.cells}

    def block_cap(pin):
        p, i = bit_of[pin]
        return s.model.in_cap.get(f"{p}[{i}]", s.model.in_cap.get(p, 0.0)) * lib.cap_pf

    def position(ref):
        inst, pin = ref
        if inst in macro_at:
            return macro_at[inst] + px.get(pin, msize[0] / 2)
        return placed[inst][0] + sizes[kind[inst]][0] / 2 if inst in placed else None

    rc = lef_layers(tech_lef().read_text())[ROW_LAYER]
    taps = [block_cap(p) for p in b.ph.inputs if p not in b.clocks]
    pitch = fp.macros[1][1] - fp.macros[0][1] if len(fp.macros) > 1 else msize[0]
    cell, target = repair_buffer(lib)   # the repair's own buffer, at its target load
    buf, bin_, out = cell.name, next(iter(cell.inputs)), cell.outputs[0]
    limit = target * lib.cap_pf
    seg = repeater_spacing(lib, rc, max(taps, default=0.0) / pitch, buffer=(buf, out, limit))
    hard = s.hard
    rb = rebuffer(
        ph.cells, is_repair=lambda i: ph.sources.get(i, "").startswith(REPAIR_PREFIX),
        outputs_of=lambda t: set(b.ph.outputs) if t == hard else set(lib.cell(t).outputs),
        clock_pins=lambda t: set(b.clocks) if t == hard else set(lib.cell(t).clock_pins),
        position=position,
        cap_of=lambda t, p: block_cap(p) if t == hard else lib.cell(t).inputs[p] * lib.cap_pf,
        driver_limit=lambda t, p: (None if t == hard
                                   else lib.drive_limit(t, p, within_tables=True) * lib.cap_pf),
        buffer=(buf, bin_, out, limit),
        seg_um=seg, wire_pf_um=rc.c_pf_um, keep=clocks)
    return rb, seg


def _lay_out_top(s, b, lib, work: Path, outdir: Path, *, top_util, gap, timeout_s,
                 rebuf=True) -> SimpleNamespace:
    """The top placed around the block's copies (placed, rebuffered by position with ``rebuf``, and
    placed again), routed (its clock nets left for a clock tree, the clock being ideal), extracted
    and timed."""
    top, hard = s.top, s.hard
    t = time.monotonic()
    tech_text = tech_lef().read_text()
    lef_text = b.lef.read_text()
    ph = physical(s.tmod, top, macros={hard: b.ph.port_bits}, drop_constants=True)
    clocks = ph.clock_inputs() or sorted({pins[c] for _, typ, pins in ph.cells if typ == hard
                                          for c in b.clocks if c in pins} & set(ph.inputs))
    sizes = lef_sizes(tech_text)
    msize = lef_sizes(lef_text)[hard]
    px = macro_pin_x(lef_text, hard)
    rb, seg = None, None
    for attempt in range(2 if rebuf else 1):
        macros = [(inst, pins) for inst, typ, pins in ph.cells if typ == hard]
        cells = [c for c in ph.cells if c[1] != hard]
        fp = floorplan([i for i, _ in macros], msize, sum(sizes[c][0] * sizes[c][1] for _, c, _ in cells),
                       util=top_util, gap=gap)
        anchors = {}
        for (_, pins), (_, x, y) in zip(macros, fp.macros, strict=True):
            for pin, n in pins.items():
                anchors.setdefault(n, []).append((x + px.get(pin, msize[0] / 2), y + msize[1]))
        placed = place_cells(cells, anchors, sizes, fp, ports=ph.inputs + ph.outputs)
        if rebuf and attempt == 0:
            rb, seg = _rebuffer(s, b, lib, ph, placed, sizes, fp, msize, px, clocks)
            ph = dataclasses.replace(ph, cells=rb.cells)
    # each port above what it connects to (placed cells' centres and macro pins)
    at = {n: [x for x, _ in xs] for n, xs in anchors.items()}
    for inst, cell, pins in cells:
        for n in pins.values():
            at.setdefault(n, []).append(placed[inst][0] + sizes[cell][0] / 2)
    want = {p: sum(at[p]) / len(at[p]) if at.get(p) else fp.width / 2 for p in ph.inputs + ph.outputs}
    tdir = work / "top"
    tdir.mkdir(parents=True, exist_ok=True)
    (tdir / f"{top}.def").write_text(top_def(top, fp, hard, placed, cells, macros, ph.inputs, ph.outputs,
                                             port_slots(want, fp)))
    ignore = tuple(clocks)   # left for a clock tree (route_clock: the block's clock only)
    place_s = round(time.monotonic() - t, 2)
    nets = sum(1 for c in _top_nets(ph) if c > 1)
    script = top_route_script(top, [tech_lef(), b.lef], fp, strip=b.strip, ignore=ignore,
                              give_up=max(20, nets // 10))
    failed, stage1, route_s = _qrouter(script, tdir, top, timeout_s)
    if failed:
        skipped = "no rip-up" in (tdir / "route.log").read_text(errors="replace")
        how = "; its first stage left more than a tenth of them: no rip-up pass was run" if skipped else ""
        raise ToolError(f"qrouter left {failed} of the top {top}'s {nets} nets unrouted (log "
                        f"{tdir / 'route.log'}{how}): lower the top's utilization (TOP_UTIL=, its "
                        f"{len(cells)} cells at {top_util:g} now) or space the macros (GAP=)")
    routed = Def.read(tdir / f"{top}_route.def")
    ex = extract(routed, tech_text, [lef_text], design=top)
    if ex.unattached:
        raise ToolError(f"the routed top leaves {len(ex.unattached)} pin(s) off their nets' wires, e.g. "
                        f"{ex.unattached[:3]} (DEF {tdir / f'{top}_route.def'})")
    spef = outdir / f"{top}.spef"
    spef.write_text(ex.spef)
    net = outdir / f"{top}.routed.v"
    net.write_text(ph.verilog())
    defaults = sta_defaults(lib)
    kw = dict(period_ps=s.pre.delay_ps, inputs=ph.inputs, clocks=clocks,
              input_slew_ps=defaults["input_slew_ps"], output_load_pf=defaults["output_load_pf"],
              extra_liberty=[b.lib])
    nowire = run_opensta(lib.path, net, top, outdir / "sta_nowire", **kw)
    post = run_opensta(lib.path, net, top, outdir / "sta_routed", spef=spef, **kw)
    (outdir / "timing_routed.txt").write_text(post.report)
    lay = read_def((tdir / f"{top}_route.def").read_text(), {**sizes, hard: msize})
    return SimpleNamespace(ph=ph, fp=fp, macros=macros, cells=cells, ignore=ignore, routed=routed, ex=ex,
                           rb=rb, seg=seg, stage1=stage1,
                           nowire=nowire, post=post, lay=lay, dir=tdir, failed=failed,
                           unrouted=[n for n in ex.unrouted if n not in ignore],
                           seconds={"top_place": place_s, "top_route": route_s})


def _check_top(s, b, t, work: Path, timeout_s):
    """magic's DRC and connectivity check of the routed top with the block's real layout."""
    cdir = work / "check"
    if cdir.exists():   # magic would load the last run's saved top and read the DEF into it again
        shutil.rmtree(cdir)
    cdir.mkdir(parents=True)
    (cdir / ".magicrc").write_text((b.q.project / "layout" / ".magicrc").read_text())
    routed = (t.dir / f"{s.top}_route.def").resolve()
    script = check_script(tech_lef(), b.q.project / "layout", s.hard, b.die, routed, s.top)
    (cdir / "check.tcl").write_text(script)
    rc = _run_limited(["magic", "-dnull", "-noconsole", "check.tcl"], cdir, cdir / "magic.log", timeout_s)
    spice = cdir / f"{s.top}.spice"
    if rc != 0 or not spice.is_file():
        raise ToolError(f"magic's check of the top failed (exit {rc}; log {cdir / 'magic.log'})")
    expected = {(inst, p): n for inst, _, pins in t.ph.cells for p, n in pins.items()
                if n not in t.ignore and len(t.routed.nets.get(n, ())) > 1}
    chk = read_check((cdir / "magic.log").read_text(errors="replace"), spice.read_text(), s.top, expected)
    if not chk.clean:
        raise ToolError(f"the routed top fails its check: DRC {chk.drc_errors} ({chk.drc_rules}), "
                        f"{len(chk.missing)} pin(s) missing, {len(chk.opens)} open net(s), {len(chk.shorts)} "
                        f"short(s) (e.g. {list(chk.shorts.items())[:2]}); log {cdir / 'magic.log'}")
    return chk


def run_pnr_hier(design, given=None, *, util=0.6, top_util=0.5, gap=0.0, fast=None, groute=True,
                 route_clock=True, rebuffer_top=True, checks=True, step_timeout_s=DEFAULT_STEP_TIMEOUT_S,
                 outdir=None, reuse=False, log=print) -> dict:
    """Place and route ``design`` hierarchically (see the module docstring); its metrics.

    Parameters
    ----------
    util : float
        The block's target utilization (qflow).
    top_util : float
        The top's cell rows' target utilization.
    gap : float
        Space between neighbouring macros (um; 0: abutted).
    route_clock : bool
        Route the block's clock net (off: left unrouted, the timing's clock being ideal either way,
        see :func:`flows.pnr.flow.run_pnr`, and the block's LVS, which needs every net routed, is not
        run; qrouter could not route the E4M3 D = 8 column's clock on metal1-4: it ripped the net up
        and could not restore it). The top's clock nets are never routed: with no clock tree the
        clock is ideal, and routed as one signal net to every flip-flop and macro, the matrix unit's
        clock met the same fate (E2M1 D = 8: the one net left after 13 minutes).
    rebuffer_top : bool
        Rebuild the top's buffer trees by position once its cells are placed, with repeater chains
        along the row (:mod:`flows.pnr.repeat`), and place it again (off: the drive repair's trees
        as synthesized, their buffers' sinks in netlist order).
    checks : bool
        qflow's DRC and LVS (with ``route_clock``) on the block and magic's check of the top.
    reuse : bool
        Keep the block's layout from an earlier run with the same settings and netlist
        (:func:`flows.pnr.qflow.run_qflow`); the top is laid out again.

    Raises
    ------
    flows.pnr.tools.ToolError
        The design's top holds no block or several block types, a tie-off the flow cannot lay out,
        a failed step, failed routes, or a failed check.
    ValueError
        A utilization, gap or time limit out of range.
    """
    from hw import hier
    from hw.designs import get_design

    from ..synth.metrics import git_revision

    t0 = time.monotonic()
    revision, started = git_revision(), datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    require()
    step_timeout_s = check_step_timeout(step_timeout_s)
    util = _check_util(util)
    if not 0.05 <= top_util <= 1:
        raise ValueError(f"the top's target utilization must be between 0.05 and 1, not {top_util!r} "
                         "(e.g. TOP_UTIL=0.5)")
    if gap < 0:
        raise ValueError(f"the gap between macros must be >= 0 um, not {gap!r} (e.g. GAP=0)")
    d = get_design(design)
    params = d.params(given or {})
    netlist = hier.emit(d.build(params), d.top_name)
    kids = dict(netlist.modules[netlist.top].children)
    if len(kids) != 1:
        raise ToolError(f"hierarchical place and route needs a top with one block type; {design}'s top "
                        f"{netlist.top} holds {len(kids)} ({', '.join(kids) or 'none'}): use make pnr "
                        "without HIER")
    block = next(iter(kids))
    lib = _lib_of(None)
    tag = (f"{d.variant(params)}-hier-{lib.short}-u{round(util * 100)}-t{round(top_util * 100)}"
           + (f"-g{gap:g}" if gap else "") + (f"-f{int(fast)}" if fast else "") + ("" if groute else "-ng")
           + ("" if route_clock else "-nclk") + ("-rb" if rebuffer_top else ""))
    work = WORK / tag
    outdir = Path(outdir) if outdir else USER_PNR / tag
    outdir.mkdir(parents=True, exist_ok=True)
    log(f"{tag}: hierarchical place and route, {kids[block]} x {block}")
    t = time.monotonic()
    s = _synthesize(netlist, block, lib, work)
    seconds = {"synthesis": round(time.monotonic() - t, 2)}
    log(f"  synthesis: top {len(s.tmod['cells'])} cells ({s.trep.line()}), block {s.hard} "
        f"{len(s.bmapped['cells'])} cells, {len(s.ties)} tied input bit(s); pre-route "
        f"{s.pre.delay_ps:.1f} ps")
    b = _harden(s, lib, work, outdir, util=util, fast=fast, groute=groute, route_clock=route_clock,
                checks=checks, timeout_s=step_timeout_s, reuse=reuse, log=log)
    tp = _lay_out_top(s, b, lib, work, outdir, top_util=top_util, gap=gap, timeout_s=step_timeout_s,
                      rebuf=rebuffer_top)
    seconds.update(b.seconds)
    seconds.update(tp.seconds)
    chk = None
    if checks:
        t = time.monotonic()
        chk = _check_top(s, b, tp, work, step_timeout_s)
        seconds["top_check"] = round(time.monotonic() - t, 2)
    m = _metrics(design, params, tag, s, b, tp, chk, util=util, top_util=top_util, gap=gap, seconds=seconds)
    m.update({"flow__git_revision": revision, "flow__date": started,
              "flow__runtime__seconds_total": round(time.monotonic() - t0, 1)})
    (outdir / "metrics.json").write_text(json.dumps(m, indent=2, sort_keys=True) + "\n")
    log(_summary(tag, s, b, tp, chk, m, outdir))
    return m


def _metrics(design, params, tag, s, b, t, chk, *, util, top_util, gap, seconds) -> dict:
    q, fp = b.q, t.fp
    return {
        "design": design, "variant": tag, "design__params": {k: str(v) for k, v in params.items()},
        "flow__hierarchical": True, "hier__block": s.hard, "hier__instances": len(t.macros),
        "hier__tied_input_bits": len(s.ties), "hier__unread_block_outputs": s.unread,
        "hier__block__cells": len(b.ph.cells), "hier__top__cells": len(t.cells),
        "hier__top__constant_outputs": sorted(t.ph.constant_outputs),
        "hier__block__die_width_um": round(b.die[2] - b.die[0], 2),
        "hier__block__die_height_um": round(b.die[3] - b.die[1], 2),
        "hier__block__wirelength_um": round(b.wirelength, 1), "hier__block__failed_stage1": q.failed_stage1,
        "hier__block__drc_errors": q.drc_errors, "hier__block__lvs_match": q.lvs_match,
        "hier__block__critical_path_ps_pre": round(s.bworst.delay_ps, 1),
        "hier__block__critical_path_ps_post": round(b.sta.critical_ps, 1),
        K.PNR_TARGET_UTIL: util, "hier__top__target_util": top_util, "hier__top__gap_um": gap,
        K.DIE_AREA: round(t.lay.die_area, 2), "hier__top__die_width_um": fp.width,
        "hier__top__die_height_um": fp.height, "hier__top__rows": len(fp.rows),
        K.ROUTE_WL: round(t.lay.wirelength, 1), K.ROUTE_VIAS: t.lay.vias, K.ROUTE_FAILED: t.failed,
        K.ROUTE_FAILED_STAGE1: t.stage1, K.ROUTE_NETS: t.lay.nets, K.ROUTE_SPEF_NETS: t.ex.nets,
        K.ROUTE_WIRE_CAP: round(t.ex.wire_cap_pf, 5),
        "route__qrouter__ignored_nets": list(t.ignore),
        "hier__top__rebuffer": ({"segment_um": t.seg, "nets": t.rb.nets, "repeaters": t.rb.added,
                                 "repair_buffers_removed": t.rb.removed} if t.rb else None),
        "route__timing__unrouted_nets_without_wires": len(t.unrouted),
        K.CP_PS: round(s.pre.delay_ps, 1), K.ROUTE_CP_PS_NOWIRE: round(t.nowire.critical_ps, 1),
        K.ROUTE_CP_PS: round(t.post.critical_ps, 1), K.ROUTE_WS: round(t.post.slack_ps, 1),
        K.ROUTE_FMAX: round(t.post.fmax_mhz, 2),
        "hier__top__drc_errors": chk.drc_errors if chk else None,
        "hier__top__min_area_patches": chk.min_area_patches if chk else None,
        "hier__top__connectivity": ({"pins": chk.pins, "missing": len(chk.missing), "opens": len(chk.opens),
                                     "shorts": len(chk.shorts)} if chk else None),
        "route__steps_seconds": seconds, "route__tools": versions(),
        "route__assumptions": {
            "clock": "ideal (no clock tree, zero skew); the top's clock nets are left unrouted",
            "blocks": "timing models measured by OpenSTA on the routed block with its parasitics (setup, "
                      "clock to output, combinational arcs; worst edge; default input slew); the top's "
                      "timing without wires keeps the blocks' routed models",
            "top_parasitics": "own extraction of the routed top DEF (qrouter's formulas, no coupling)",
            "power": "none at the top (the blocks have their own stripes; the top's cell rails are not "
                     "joined): the check compares signal connectivity only"}}


def _summary(tag, s, b, t, chk, m, outdir) -> str:
    q, fp = b.q, t.fp
    lvs = "not run" if q.lvs_match is None else "match" if q.lvs_match else "MISMATCH"
    check = "not run" if chk is None else (
        f"DRC {chk.drc_errors} ({chk.min_area_patches} min-area patches), {chk.pins} pins: "
        f"{len(chk.missing)} missing, {len(chk.opens)} open, {len(chk.shorts)} short")
    bw, bh = b.die[2] - b.die[0], b.die[3] - b.die[1]
    return "\n".join([
        f"== {tag}  (hierarchical: {len(t.macros)} x {s.hard} + {len(t.cells)} top cells)",
        f"  block       {bw:.1f} x {bh:.1f} um, {len(b.ph.cells)} cells, post-route "
        f"{b.sta.critical_ps:.1f} ps (pre {s.bworst.delay_ps:.1f}), DRC {q.drc_errors}, LVS {lvs}",
        f"  top         {fp.width:.1f} x {fp.height:.1f} um, {t.lay.wirelength:.0f} um wire, "
        f"{t.failed} failed nets, {t.ex.nets}/{t.lay.nets} nets extracted",
        "  rebuffered  " + (f"{t.rb.nets} nets: {t.rb.removed} repair buffers out, {t.rb.added} repeaters "
                            f"in (segment {t.seg:.0f} um)" if t.rb else "no (the repair's trees as built)"),
        f"  check       {check}",
        f"  critical    {t.post.critical_ps:.1f} ps post-route (pre-route {s.pre.delay_ps:.1f} ps, our "
        f"STA; top without wires {t.nowire.critical_ps:.1f} ps), fmax {t.post.fmax_mhz:.1f} MHz",
        f"  runtime     {m['flow__runtime__seconds_total']:.1f} s; reports {outdir}/"])
