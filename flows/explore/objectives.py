"""What a search minimizes: objective values computed from a synthesis run's ``metrics.json``.

``area_per_mac``
    Standard-cell area (um^2) divided by the multiply(-accumulate)s the design completes per clock
    cycle at full rate: ``D * D`` for the matrix unit (one ``x`` beat per cycle, ``perf.contract``),
    1 for the BF16 multiplier (one product per cycle).
``delay``
    Critical-path delay (ps) of the NLDM STA: the clock period the design can run at.
``energy_per_mac``
    Energy (pJ) per useful MAC of the matrix unit on a workload, from the gate-level energy flow
    (:mod:`flows.power`: the hierarchical netlist simulated on the stimulus of ``tb.power_stim``,
    every result checked against the bit-true model, ``sample`` columns simulated and scaled); see
    :data:`ENERGY`. The flow drives the matrix unit only.

The figure of merit of the reports is ``area_per_mac * delay`` (area x delay per MAC, um^2 x ns).
"""

from .. import metric_keys as mk
from ..synth.metrics import macs_per_cycle as synth_macs

__all__ = ["OBJECTIVES", "ObjectiveError", "check_objectives", "macs_per_cycle", "objective_values",
           "area_delay", "ENERGY", "ENERGY_DESIGNS"]

#: Objective name -> unit, all minimized.
OBJECTIVES = {"area_per_mac": "um^2", "delay": "ps", "energy_per_mac": "pJ"}
#: Defaults of the energy run behind ``energy_per_mac``: random operands (no tile corpus values
#: needed; the tile shapes still come from the corpus), two tile runs, two sampled columns.
ENERGY = {"workload": "random", "runs": 2, "sample": 2}
#: Designs the energy flow can drive.
ENERGY_DESIGNS = ("mu",)


class ObjectiveError(ValueError):
    """An objective is unknown or cannot be computed; the message names the fix."""


def check_objectives(names, design: str = "mu") -> list:
    """Validate a list of objective names (two or three, known, computable for ``design``);
    return it."""
    names = list(names)
    for n in names:
        if n not in OBJECTIVES:
            raise ObjectiveError(f"unknown objective {n!r}; choose from: {', '.join(OBJECTIVES)}")
    if len(set(names)) != len(names) or len(names) < 2:
        raise ObjectiveError(f"give two or three different objectives, not {','.join(names)} "
                             "(e.g. --objectives area_per_mac,delay)")
    if "energy_per_mac" in names and design not in ENERGY_DESIGNS:
        raise ObjectiveError(f"energy_per_mac: the energy flow (flows/power) drives "
                             f"{', '.join(ENERGY_DESIGNS)} only, not {design}; search {design} on "
                             "area_per_mac,delay")
    return names


def macs_per_cycle(design: str, params: dict) -> int:
    """Multiply(-accumulate)s per cycle at full rate (see the module docstring)."""
    macs = synth_macs(design, params)
    if macs is None:
        raise ObjectiveError(f"no MAC rate known for design {design!r} (flows/synth/metrics.py)")
    return macs


def objective_values(names, design: str, params: dict, metrics: dict, energy: dict | None = None) -> dict:
    """``area_um2``, ``area_per_mac`` and ``delay`` from a run's metrics, and ``energy_per_mac`` from
    an energy run's record (``pj_per_useful_mac``) when given (every objective ``names`` asks for is
    among them).

    Raises
    ------
    ObjectiveError
        If the run has no area or no delay in ps (the generic library counts levels only).
    """
    area, delay = metrics.get(mk.AREA), metrics.get(mk.CP_PS)
    if area is None or delay is None:
        raise ObjectiveError(f"metrics have no area or ps delay ({mk.AREA}={area}, {mk.CP_PS}={delay}); "
                             "synthesize with a real liberty (apt-get install qflow-tech-osu018)")
    out = {"area_um2": float(area), "area_per_mac": float(area) / macs_per_cycle(design, params),
           "delay": float(delay)}
    if energy is not None:
        out["energy_per_mac"] = float(energy["pj_per_useful_mac"])
    missing = [n for n in names if n not in out]
    if missing:
        raise ObjectiveError(f"objectives {missing} are not computed from the metrics")
    return out


def area_delay(values: dict) -> float:
    """Area x delay per MAC in um^2 x ns."""
    return values["area_per_mac"] * values["delay"] / 1000.0
