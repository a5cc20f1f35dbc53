"""Performance model shared by tb and flows: the unit's throughput contract (:mod:`perf.contract`)
and the model shapes it is applied to (:mod:`perf.shapes`).

Layering: ``hw`` <- ``perf`` <- ``tb``, ``flows``. Nothing here imports tb or flows.
"""
