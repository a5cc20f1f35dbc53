"""The synthesis flow: Yosys runs, liberty, static timing, hierarchical composition, metrics.

:mod:`~flows.synth.yosys` (one Yosys run, cached by content), :mod:`~flows.synth.liberty`,
:mod:`~flows.synth.repair` (buffers on nets over their driver's liberty limit),
:mod:`~flows.synth.sta`, :mod:`~flows.synth.hier` (block by block), :mod:`~flows.synth.metrics`,
:mod:`~flows.synth.outputs` (report files) and :mod:`~flows.synth.flow` (one QoR run of a
registered design or of user Verilog). Layer: the lowest one; imports only ``hw`` and
:mod:`flows.metric_keys` / :mod:`flows.paths`.
"""
