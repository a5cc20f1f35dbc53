"""Hierarchical synthesis: each distinct block once, area by instance counts, timing by block models.

A generator marks repeated blocks with :func:`hw.hier.place`; :func:`hw.hier.emit` then yields one
Verilog module per distinct block and a manifest of instance counts. :func:`synth_hier` walks the
modules children first and synthesizes each one on its own, its child blocks kept as blackboxes
(``read_verilog -lib``), so the largest Yosys run is one block, not the whole design: this is what
makes a D=128 matrix unit fit in yowasp's 4 GiB.

Drive repair
    Each block's mapped netlist is repaired (:func:`flows.synth.repair.repair`, kept as
    ``repaired.json`` in the block's work directory) before its area is counted and its model
    extracted, with its children's models giving the loads of their input
    pins; the parent's repair then sees each child input as one sink of the child's (repaired)
    input capacitance, and the child's outputs start from its repaired netlist's timing.

Area
    ``sum over modules of own_area(module) x instances(module)``, where own area excludes child
    blocks; the per-block metric ``synth__design__instance__area__stdcell__<block>`` is the total
    area of all instances of that block (own logic), so the per-block values add up to the design.

Timing
    Each block gets an extracted timing model (:class:`flows.synth.blockmodel.BlockTiming`) from its own
    netlist: worst reg->reg inside, input bit -> register (setup included), clock -> output bit, and
    input bit -> output bit for combinational paths, each with its logic levels, and the capacitance
    of every input bit. In the parent the block is a macro cell: its input pins are end points adding
    ``in2reg``, its outputs start at ``reg2out`` and follow ``in2out`` from the inputs. Paths through
    block boundaries are therefore timed as flat STA would, up to the documented approximations
    (:mod:`flows.synth.blockmodel`): a block's output slew is the default input slew, and so is the
    slew its inputs are timed with; an output's delay follows the parent's load linearly above the
    load it was timed with inside the block (the slope of the cell driving it,
    ``BlockTiming.out_drive``; a lighter load keeps the block's figure); and an entry is the worst
    over its bit's rising and falling edges.
"""

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from hw.clock_gate import CLOCK_BUFFER, GATE_CELLS

from .blockmodel import BlockTiming, extract_model
from .repair import RepairReport, repair, write_repaired
from .sta import Sta, port_bits
from .yosys import run_yosys

__all__ = ["BlockReport", "HierReport", "synth_hier", "own_area", "clock_gates", "extract_model"]


def own_area(lib, module):
    """(area, sequential area, cell count) of a mapped module's own library cells."""
    area = seq = 0.0
    n = 0
    for c in module["cells"].values():
        cell = lib.cells.get(c["type"])
        if cell is None:
            continue
        n += 1
        area += cell.area
        if cell.is_seq:
            seq += cell.area
    return area, seq, n


#: Instance-name endings of a clock gate's cells (:mod:`hw.clock_gate` names them), by cell type.
_GATE_CELLS = {GATE_CELLS[0]: "_inv", GATE_CELLS[1]: "_latch", GATE_CELLS[2]: "_and", CLOCK_BUFFER: "_buf"}


def clock_gates(lib, module) -> tuple:
    """(clock gates, area of their cells and clock buffers) of a mapped module's own cells: the
    cells :mod:`hw.clock_gate` instantiates keep their instance names through synthesis; a gate
    has one latch."""
    n, area = 0, 0.0
    for name, c in module["cells"].items():
        end = _GATE_CELLS.get(c["type"])
        if end and name.endswith(end) and c["type"] in lib.cells:
            area += lib.cells[c["type"]].area
            n += c["type"] == GATE_CELLS[1]
    return n, area


@dataclass
class BlockReport:
    """One synthesized module of a hierarchical run."""

    name: str
    instances: int
    area: float          # own area of one instance (children excluded)
    seq_area: float
    cells: int
    runtime_s: float
    peak_mb: float
    cached: bool
    ltp: int | None
    worst: object        # flows.synth.sta.Result of the block with its children as macros
    model: BlockTiming
    stat_text: str
    log: Path
    children: dict = field(default_factory=dict)
    repair: RepairReport = field(default_factory=RepairReport)
    sta: object = None   # its flows.synth.sta.Sta (children as models), to trace paths through it
    gates: tuple = (0, 0.0)  # clock gates and their area (clock_gates), one instance


@dataclass
class HierReport:
    """Composition of a hierarchical run."""

    top: str
    blocks: dict         # name -> BlockReport, children first
    area: float
    seq_area: float
    cells: int
    worst: object        # flows.synth.sta.Result at the top (blocks as macros)
    runtime_s: float
    peak_mb: float
    top_own: object = None  # the top's own logic: worst path with the blocks' internal reg->reg left out
    gates: tuple = (0, 0.0)  # clock gates and their area, all instances


def _ideal_register_pins(model: BlockTiming, sta: Sta) -> BlockTiming:
    """Time a black-box macro's pins as ideal registers: inputs end paths (setup 0), outputs start
    them (clock to output 0). Used for modelled SRAMs, so the logic paths to and from them are timed
    in the parent; the SRAM's own access and setup times are not."""
    for pname in sta.inputs:
        if pname not in model.clock_ports:
            model.in2reg[pname] = [0.0, 0]
    for pname, bits in sta.outputs.items():
        for bn in port_bits(pname, bits):
            model.reg2out[bn] = [0.0, 0]
    return model


def synth_hier(netlist, lib, workroot: Path, *, booth=False, clock_ps=None, limit_mb=None,
               sta_opts=None, log=print, macros=(), within_tables=False) -> HierReport:
    """Synthesize every distinct module of ``netlist`` once and compose area and timing.

    Parameters
    ----------
    netlist : hw.hier.Netlist
    lib : flows.synth.liberty.Library
    workroot : Path
        One work directory per module is made below it.
    sta_opts : dict or None
        Extra keyword arguments for :class:`flows.synth.sta.Sta` (input_slew, output_load, wire cap).
    macros : iterable of str
        Black-box modules (empty placeholders whose area is modelled elsewhere); their pins are
        timed as ideal registers in the parent (:func:`_ideal_register_pins`).
    within_tables : bool
        The drive repair's ``tables`` limit (:func:`flows.synth.repair.repair`), also on the
        blocks' outputs in their parents (:func:`flows.synth.blockmodel.extract_model`).
    """
    counts = netlist.instance_counts()
    models = {}
    blocks = {}
    sta_opts = sta_opts or {}
    root = Path(workroot)
    if root.is_dir():  # a block of an earlier version of the design: its netlists would mix in
        for d in root.iterdir():
            if d.is_dir() and d.name not in netlist.modules:
                shutil.rmtree(d)
    for name, bm in netlist.modules.items():
        kids = {c: netlist.modules[c].verilog for c in bm.children}
        log(f"  block {name}: {counts.get(name, 0)} instance(s), children "
            f"{', '.join(f'{c} x{n}' for c, n in bm.children.items()) or 'none'}")
        r = run_yosys(bm.verilog, name, Path(workroot) / name, lib, booth=booth, clock_ps=clock_ps,
                       children=kids, limit_mb=limit_mb)
        kid_models = {c: models[c] for c in bm.children}
        mapped, rep = repair(lib, r.netlist, models=kid_models, output_load=sta_opts.get("output_load"),
                             wire_cap_per_fanout=sta_opts.get("wire_cap_per_fanout", 0.0),
                             within_tables=within_tables)
        write_repaired(r.workdir, name, mapped)
        area, seq, ncells = own_area(lib, mapped)
        sta = Sta(lib, mapped, models=kid_models, **sta_opts)
        if name == netlist.top:
            model = BlockTiming(name)
            worst = sta.run()
            own_models = {c: BlockTiming.from_json(dict(models[c].to_json(), reg2reg=[0.0, 0]))
                          for c in bm.children}
            top_own = Sta(lib, mapped, models=own_models, **sta_opts).run()
        else:
            model, worst = extract_model(sta, name, within_tables)
            if name in macros:
                model = _ideal_register_pins(model, sta)
        models[name] = model
        blocks[name] = BlockReport(name, counts.get(name, 0), area, seq, ncells, r.runtime_s, r.peak_mb,
                                   r.cached, r.ltp_levels, worst, model,
                                   r.stat_text + "\n" + rep.line() + "\n", r.log, dict(bm.children), rep,
                                   sta, clock_gates(lib, mapped))
    total = sum(b.area * b.instances for b in blocks.values())
    seq = sum(b.seq_area * b.instances for b in blocks.values())
    cells = sum(b.cells * b.instances for b in blocks.values())
    gates = (sum(b.gates[0] * b.instances for b in blocks.values()),
             sum(b.gates[1] * b.instances for b in blocks.values()))
    return HierReport(netlist.top, blocks, total, seq, cells, blocks[netlist.top].worst,
                      sum(b.runtime_s for b in blocks.values()),
                      max(b.peak_mb for b in blocks.values()), top_own, gates)


def models_json(report: HierReport) -> str:
    """All block timing models as JSON (written next to the reports for inspection)."""
    return json.dumps({n: b.model.to_json() for n, b in report.blocks.items() if n != report.top},
                      indent=1)
