"""Verified design-space search: propose a configuration, verify it bit-exactly, synthesize it, keep
the Pareto front (``python -m flows explore``, ``make explore``).

:mod:`~flows.explore.space` (the search space from the design registry, narrowed by a file),
:mod:`~flows.explore.objectives` (area per MAC, delay, energy per MAC), :mod:`~flows.explore.jobs`
(the verification gate, synthesis and the energy run as cached sweep jobs),
:mod:`~flows.explore.study` (the Optuna study in a database, ask/tell),
:mod:`~flows.explore.front` (Pareto front, hypervolume), :mod:`~flows.explore.report` and
:mod:`~flows.explore.cli`. Layer: a command, above :mod:`flows.sweep`.
"""
