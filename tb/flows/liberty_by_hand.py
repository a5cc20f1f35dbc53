"""The liberty read by hand, for tests that work energy out from the tables themselves.

The numbers come from the tables as ``liberty-parser`` returns them, with this module's own
interpolation (numpy), never through :mod:`flows.power.libpower` or :mod:`flows.power.energy`, so a
test comparing the energy flow against them checks it against an independent reading.
"""

import numpy as np

from tb.flows import OSU

__all__ = ["V", "PERIOD", "raw", "at", "transitions"]

V = 1.8           # OSU 0.18 um nom_voltage (V); pF x V^2 = pJ
PERIOD = 10.0     # ns, for the leakage time


def raw(cell_name):
    """(input pin caps, {(pin, related): {"rise_power"/"fall_power": (i1, i2, values)}}, leakage)."""
    from liberty.parser import parse_liberty

    lib = parse_liberty(OSU.read_text())
    cell = lib.get_group("cell", cell_name)
    caps, power = {}, {}
    for p in cell.get_groups("pin"):
        name = str(p.args[0])
        if str(p["direction"]) == "input":
            caps[name] = float(p["capacitance"])
        for ig in p.get_groups("internal_power"):
            rel = str(ig["related_pin"]).strip('"') if "related_pin" in ig else None
            d = {}
            for k in ("rise_power", "fall_power"):
                g = ig.get_group(k)
                i2 = g.get_array("index_2")[0] if "index_2" in g else None
                d[k] = (g.get_array("index_1")[0], i2, g.get_array("values"))
            power[(name, rel)] = d
    return caps, power, float(cell["cell_leakage_power"])


def at(tab, load, slew):
    """A table at (load, slew): 2-D tables are (load, slew); 1-D passive tables are slew only."""
    i1, i2, v = tab
    if i2 is None:
        return float(np.interp(slew, i1, np.ravel(v)))
    along = np.array([np.interp(slew, i2, v[k]) for k in range(len(i1))])
    return float(np.interp(load, i1, along))


def transitions(cell_name):
    """{(output pin, related pin): {"rise_transition"/"fall_transition": (i1, i2, values)}}."""
    from liberty.parser import parse_liberty

    cell = parse_liberty(OSU.read_text()).get_group("cell", cell_name)
    out = {}
    for p in cell.get_groups("pin"):
        for tg in p.get_groups("timing"):
            rel = str(tg["related_pin"]).strip('"')
            out[(str(p.args[0]), rel)] = {
                k: (g.get_array("index_1")[0], g.get_array("index_2")[0], g.get_array("values"))
                for k in ("rise_transition", "fall_transition") for g in [tg.get_group(k)]}
    return out
