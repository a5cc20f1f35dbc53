"""Liberty timing models of black-box macros, so OpenSTA times them as our STA does.

A black-box macro (the slice's modelled SRAM: an empty placeholder module whose area is modelled,
:mod:`hw.slice.scratchpad`) has no cells to time. Our STA times its pins as ideal registers
(:func:`flows.synth.hier._ideal_register_pins`): every input pin ends a path with setup 0, every
output pin starts one at clock-to-output 0 with the default input slew whatever it drives, and the
pins present no load. :func:`macro_liberty` states the same as one liberty cell per macro:

- a clock pin (:data:`flows.pnr.sta_netlist.MACRO_CLOCK_PIN`), which
  :func:`flows.pnr.sta_netlist.sta_verilog` connects to the clock of the module holding the macro
  (the placeholder itself has no clock port);
- on every input pin a ``setup_rising`` constraint of 0 and ``capacitance 0``;
- on every output pin a ``rising_edge`` arc of delay 0 whose transition is the default input slew;
- the modelled area.

OpenSTA then times the same path set as ours: the logic into and out of the macro. Neither timer
includes the macro's own access or setup time (no datasheet; :data:`hw.slice.scratchpad.SRAM_MODEL_NOTE`).
"""

from .sta_netlist import MACRO_CLOCK_PIN, StaNetlistError, ident

__all__ = ["macro_liberty", "liberty_head", "LIBRARY"]

#: The liberty library's name.
LIBRARY = "blackbox_macros"

_HEAD = """library ({name}) {{
  delay_model : table_lookup;
  time_unit : "1ns";
  voltage_unit : "1V";
  current_unit : "1uA";
  capacitive_load_unit (1, pf);
  leakage_power_unit : "1nW";
  pulling_resistance_unit : "1kohm";
  input_threshold_pct_rise : 50;
  input_threshold_pct_fall : 50;
  output_threshold_pct_rise : 50;
  output_threshold_pct_fall : 50;
  slew_lower_threshold_pct_rise : 20;
  slew_upper_threshold_pct_rise : 80;
  slew_lower_threshold_pct_fall : 20;
  slew_upper_threshold_pct_fall : 80;
"""

def liberty_head(name: str) -> str:
    """The opening of a liberty library of macro models (units ns, pF, kohm; 50% delay and 20-80%
    slew thresholds, as the OSU cells'); the caller writes its cells and closes it with ``}``."""
    return _HEAD.format(name=name)


_SETUP = ('direction : input; capacitance : 0;\n'
          '      timing () {{ related_pin : "{clk}"; timing_type : setup_rising;\n'
          '        rise_constraint (scalar) {{ values ("0"); }}\n'
          '        fall_constraint (scalar) {{ values ("0"); }} }}')

_LAUNCH = ('direction : output;\n'
           '      timing () {{ related_pin : "{clk}"; timing_type : rising_edge;\n'
           '        cell_rise (scalar) {{ values ("0"); }}\n'
           '        cell_fall (scalar) {{ values ("0"); }}\n'
           '        rise_transition (scalar) {{ values ("{slew:.6f}"); }}\n'
           '        fall_transition (scalar) {{ values ("{slew:.6f}"); }} }}')


def macro_liberty(modules: dict, macros, *, slew_ps: float) -> str:
    """A liberty library with one cell per black-box macro.

    Parameters
    ----------
    modules : dict
        ``{name: module}`` as :func:`flows.pnr.sta_netlist.read_repaired` returns them; each macro's
        ports (names, directions, widths) come from its placeholder module.
    macros : iterable of dict
        The run's macros as its ``metrics.json`` lists them (:data:`flows.metric_keys.MACROS`):
        ``module`` and ``area_um2``.
    slew_ps : float
        The transition the outputs launch with (our STA's default input slew).

    Raises
    ------
    StaNetlistError
        A macro that is not among ``modules``, a placeholder with cells (then it is not a black box),
        a port named like the clock pin, or a port that is neither an input nor an output.
    """
    if slew_ps <= 0:
        raise StaNetlistError(f"output slew {slew_ps} ps: it must be positive")
    text = [_HEAD.format(name=LIBRARY)]
    widths = set()
    cells = []
    for mac in macros:
        name = mac["module"]
        if name not in modules:
            raise StaNetlistError(f"macro {name} is not a module of the netlists "
                                  f"({', '.join(sorted(modules))}): synthesize the point again")
        m = modules[name]
        if m.get("cells"):
            raise StaNetlistError(f"macro {name} has {len(m['cells'])} cell(s): a black box is an empty "
                                  "placeholder; time the module as logic instead")
        pins = [f"    pin ({MACRO_CLOCK_PIN}) {{ direction : input; clock : true; capacitance : 0; }}"]
        for p, d in m["ports"].items():
            if ident(p) == MACRO_CLOCK_PIN:
                raise StaNetlistError(f"macro {name} has a port {p!r}, the name of the clock pin its "
                                      "timing model adds; rename the port")
            if d["direction"] not in ("input", "output"):
                raise StaNetlistError(f"macro {name}: port {p} is {d['direction']}; only inputs and "
                                      "outputs can be modelled")
            body = (_SETUP if d["direction"] == "input" else _LAUNCH).format(clk=MACRO_CLOCK_PIN,
                                                                            slew=slew_ps * 1e-3)
            w = len(d["bits"])
            if w > 1:
                widths.add(w)
                pins.append(f"    bus ({ident(p)}) {{ bus_type : bits{w}; {body} }}")
            else:
                pins.append(f"    pin ({ident(p)}) {{ {body} }}")
        cells.append(f"  cell ({ident(name)}) {{\n    area : {float(mac['area_um2']):.1f};\n"
                     "    dont_touch : true;\n    dont_use : true;\n" + "\n".join(pins) + "\n  }\n")
    for w in sorted(widths):
        text.append(f"  type (bits{w}) {{ base_type : array; data_type : bit; bit_width : {w}; "
                    f"bit_from : {w - 1}; bit_to : 0; downto : true; }}\n")
    return "".join(text + cells) + "}\n"
