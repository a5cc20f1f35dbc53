"""Energy of the mapped netlist from a gate-level simulation of a real workload (``make power``).

Layers (each imports only those before it):

:mod:`flows.power.libpower`
    The liberty's energy data (internal-power tables, leakage, flops, units), read with the same
    parser and table reader as :mod:`flows.synth.liberty`.
:mod:`flows.power.netlist`
    Flattening of the hierarchical flow's per-block netlists, with optional column sampling.
:mod:`flows.power.sim`
    Zero-delay cycle-based gate simulation with per-net toggle counts (glitches not counted).
:mod:`flows.power.energy`
    Internal + switching + leakage energy from toggles, loads, slews and the liberty.
:mod:`flows.power.run`, :mod:`flows.power.cli`
    One run (synthesis, stimulus from ``python -m tb.power_stim`` as a subprocess, simulation checked
    against the bit-true model, energy) and ``python -m flows power``.
:mod:`flows.power.summary`
    ``reports/power/summary.md`` from the committed runs.
"""
