"""Synthesis, timing, QoR reports and sweeps (``python -m flows``).

Layers, from the bottom (a module imports only its own layer or lower ones; ``tb/test_layers.py``
checks it):

0. :mod:`flows.metric_keys` (METRICS2.1 names) and :mod:`flows.paths` (where files go);
1. :mod:`flows.synth`: the flow itself (Yosys, liberty, STA, hierarchy, metrics, one QoR run);
2. :mod:`flows.report`: documents generated from measured metrics (never runs the flow);
3. :mod:`flows.sweep`: cached job sweeps, and ``make qor`` (sweep, then report);
4. commands: :mod:`flows.gate`, :mod:`flows.bf16_compare`, :mod:`flows.prove`,
   :mod:`flows.bench_mu` and ``flows/__main__.py``.

``flows`` imports ``hw`` and ``perf``, never ``tb``.
"""
