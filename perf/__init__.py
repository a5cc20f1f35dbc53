"""Performance model shared by tb and flows: model shapes and the unit's throughput contract.

Layering: ``hw`` <- ``perf`` <- ``tb``, ``flows``. Nothing here imports tb or flows.
"""
