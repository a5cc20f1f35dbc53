"""Liberty timing model of a routed block, measured with OpenSTA on its routed netlist and SPEF.

OpenSTA 2.0.17 has no ``write_timing_model``, so the model is measured: the block is timed with an
ideal clock of a long period (inputs arriving at 0 with the default slew, outputs required at the
period), and

- every data input gets a setup requirement: the period minus the slack of the worst path from it
  to a register (wire, logic and the flop's setup inside the block). A path that ends at a clock
  gate's latch (transparent while the clock is low, :mod:`hw.clock_gate`) goes on through it: the
  latch's D is checked against its opening edge, half a period after the clock's rise, which says
  nothing about when the input must arrive. So the block is timed again with the inputs arriving at
  that half period, every latch's data passing straight through (time borrowing), and such an
  input's requirement is the period minus the half period minus the slack of the latch's worst
  path onward (to the gate's AND, whose clock-gating check is at the next rise): a requirement the
  inputs reaching one latch share, the latest of them setting it;
- every output a clock-to-output delay: the period minus the slack of the worst register-to-output
  path, at two output loads (a two-point ``total_output_net_capacitance`` table), with the
  output's transition read from the same paths;
- every input-to-output path that meets no register a combinational arc with its delay (at the
  same two loads);
- every input pin the capacitance it presents: its net's routed wire capacitance plus the pins it
  drives inside the block.

What it leaves out: the arcs are the worst over rising and falling edges and over the input's
slew (measured at the default input slew only); hold checks are not modelled.
"""

import re
from dataclasses import dataclass
from pathlib import Path

from .macro_lib import liberty_head
from .opensta import run_script
from .parasitics import spef_caps

__all__ = ["block_liberty", "BlockArcs", "LOADS_PF"]

#: Output loads (pF) of the two-point delay tables.
LOADS_PF = (0.0, 0.05)


@dataclass
class BlockArcs:
    """What OpenSTA measured (ns): ``setup[input]``, ``clk2q[output][load]``,
    ``slew[output][load]``, ``comb[(input, output)][load]``, ``cap[input]`` (pF)."""

    setup: dict
    clk2q: dict
    slew: dict
    comb: dict
    cap: dict


def _measure(netlist_v, top, spef, liberty, inputs, outputs, clock, workdir: Path, load, period_ns, slew_ns):
    data = [p for p in inputs if p != clock]
    t = [f"read_liberty {liberty}", f"read_verilog {netlist_v}", f"link_design {top}", f"read_spef {spef}",
         f"create_clock -name clk -period {period_ns} [get_ports {clock}]" if clock
         else f"create_clock -name clk -period {period_ns}",
         f"set_clock_transition {slew_ns} [get_clocks clk]" if clock else "",
         f"set_input_delay 0 -clock clk [get_ports {{{' '.join(data)}}}]",
         "set_output_delay 0 -clock clk [all_outputs]",
         f"set_input_transition {slew_ns} [all_inputs]", f"set_load {load} [all_outputs]",
         "proc ends {from} { foreach pe [find_timing_paths -from $from -path_delay max -group_count 100000 "
         "-endpoint_count 1 -unique_paths_to_endpoint] { puts \"PATH [get_full_name [get_property $pe "
         "startpoint]] [get_full_name [get_property $pe endpoint]] [get_property $pe slack]\" } }"]
    t += [f"ends [get_ports {p}]" for p in data]
    if clock:
        t += [f"foreach pe [find_timing_paths -to [get_ports {p}] -path_delay max] {{ puts \"OUT {p} "
              f"[get_property $pe slack]\" }}" for p in outputs]
    t += [f"puts \"REPORT {p}\"\nreport_checks -to [get_ports {p}] -fields {{slew}} -digits 5"
          for p in outputs]
    if clock and data:      # the clock gates' latches, their data arriving at the half period
        t += [f"set_input_delay {period_ns / 2} -clock clk [get_ports {{{' '.join(data)}}}]",
              "foreach l [all_registers -level_sensitive] { set w \"\"; foreach pe [find_timing_paths "
              "-from $l -path_delay max] { set w [get_property $pe slack] }; puts \"LATCH [get_full_name "
              "$l] $w\" }"]
    t.append("exit")
    return run_script([x for x in t if x], workdir, top, name=f"measure_{load:g}", timeout_s=3600)


def block_liberty(netlist_v: Path, top: str, spef: Path, liberty, lib_caps: dict, inputs, outputs,
                  clock: str | None, workdir: Path, *, slew_ps: float, period_ps: float = 100_000.0):
    """Measure a routed block (:class:`BlockArcs`) and write its liberty model; ``(text, arcs)``.

    Parameters
    ----------
    lib_caps : dict
        ``{(cell, pin): pF}`` of the standard cells, for the input pin capacitances.
    clock : str or None
        The block's clock input (None: a combinational block).
    """
    period_ns, slew_ns = period_ps / 1e3, slew_ps / 1e3
    outset = set(outputs)
    a = BlockArcs({}, {o: {} for o in outputs}, {o: {} for o in outputs}, {}, {})
    for load in LOADS_PF:
        text = _measure(netlist_v, top, spef, liberty, inputs, outputs, clock, workdir, load, period_ns,
                        slew_ns)
        latch = dict(re.findall(r"^LATCH (\S+) ?(\S*)$", text, re.M))
        for start, end, slack in re.findall(r"^PATH (\S+) (\S+) (\S+)", text, re.M):
            delay = period_ns - float(slack)
            inst = end.rsplit("/", 1)[0]
            if inst in latch:
                if float(slack) < period_ns / 4:
                    raise ValueError(f"{top}: input {start} reaches latch {inst}, which is transparent "
                                     "while the clock is high; the block model handles only clock "
                                     "gates' latches (transparent while it is low)")
                if not latch[inst]:
                    continue                    # the latch drives no timed path
                delay = period_ns / 2 - float(latch[inst])
            if end in outset:
                arc = a.comb.setdefault((start, end), {})
                arc[load] = max(delay, arc.get(load, 0.0))
            elif load == LOADS_PF[0]:
                a.setup[start] = max(delay, a.setup.get(start, 0.0))
        for p, slack in re.findall(r"^OUT (\S+) (\S+)", text, re.M):
            a.clk2q[p][load] = max(period_ns - float(slack), a.clk2q[p].get(load, 0.0))
        for p, rep in re.findall(r"^REPORT (\S+)\n(.*?)(?=^REPORT |\Z)", text, re.M | re.S):
            m = re.search(rf"^\s+([\d.]+)\s+[\d.]+\s+[\d.]+ [\^v] {re.escape(p)} \(out\)", rep, re.M)
            a.slew[p][load] = float(m[1]) if m else slew_ns
    wire = spef_caps(Path(spef).read_text(), str(spef))
    sinks = {}
    for m in re.finditer(r"^\s*(\w+) (\w+) \((.*?)\);", Path(netlist_v).read_text(), re.M | re.S):
        for pin, net in re.findall(r"\.(\w+)\((\w+)\)", m[3]):
            sinks.setdefault(net, []).append((m[1], pin))
    a.cap = {p: wire.get(p, 0.0) + sum(lib_caps.get(s, 0.0) for s in sinks.get(p, ())) for p in inputs}
    return _write(top, a, inputs, outputs, clock), a


def _table(name, values):
    return f'        {name} (load2) {{ values ("{", ".join(f"{v:.5f}" for v in values)}"); }}'


def _write(top, a: BlockArcs, inputs, outputs, clock) -> str:
    loads = ", ".join(f"{x:g}" for x in LOADS_PF)
    out = [liberty_head(f"{top}_macro").rstrip("\n"),
           "  lu_table_template (load2) { variable_1 : total_output_net_capacitance; "
           f'index_1 ("{loads}"); }}',
           f"  cell ({top}) {{", "    area : 0;", "    interface_timing : true;"]
    for p in inputs:
        if p == clock:
            out.append(f"    pin ({p}) {{ direction : input; clock : true; capacitance : {a.cap[p]:.6f}; }}")
            continue
        out.append(f"    pin ({p}) {{ direction : input; capacitance : {a.cap[p]:.6f};")
        if p in a.setup and clock:
            out += [f'      timing () {{ related_pin : "{clock}"; timing_type : setup_rising;',
                    f'        rise_constraint (scalar) {{ values ("{a.setup[p]:.5f}"); }}',
                    f'        fall_constraint (scalar) {{ values ("{a.setup[p]:.5f}"); }} }}']
        out.append("    }")
    for p in outputs:
        out.append(f"    pin ({p}) {{ direction : output;")
        slews = [a.slew[p].get(x, 0.0) for x in LOADS_PF]
        arcs = ([(clock, "rising_edge", a.clk2q[p])] if clock and a.clk2q[p] else []) + \
            [(i, "combinational", d) for (i, o), d in sorted(a.comb.items()) if o == p]
        for rel, kind, d in arcs:
            vals = [d.get(x, 0.0) for x in LOADS_PF]
            out += [f'      timing () {{ related_pin : "{rel}"; timing_type : {kind};',
                    _table("cell_rise", vals), _table("cell_fall", vals),
                    _table("rise_transition", slews), _table("fall_transition", slews) + " }"]
        out.append("    }")
    out += ["  }", "}", ""]
    return "\n".join(out)
