"""Sweeps: many cached, independent jobs on a local pool or a Ray cluster.

:mod:`~flows.sweep.runner` (jobs, cache, retries), :mod:`~flows.sweep.executors` (where jobs run),
:mod:`~flows.sweep.synth_jobs` (one flow run per design variant), :mod:`~flows.sweep.cli`
(``python -m flows sweep``) and :mod:`~flows.sweep.qor` (``make qor``: the width x format sweep,
then the report). Layer: above :mod:`flows.synth` and :mod:`flows.report`.
"""
