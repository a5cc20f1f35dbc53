"""Reports generated from measured metrics: the cross-width QoR report, its plots and verdicts.

They read ``metrics.json`` files (and the shape catalog of :mod:`perf.shapes`); they never run the
flow. Layer: above :mod:`flows.synth`, below :mod:`flows.sweep`.
"""
