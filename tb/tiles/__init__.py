"""Real model tiles: all-MiniLM-L6-v2 matmuls, quantized, cut for a unit of width D, replayed.

=================== =========================================================================
module              holds
=================== =========================================================================
``minilm``          locate/validate/load the packaged model; numpy forward pass; matmul capture
``reference``       a second, differently written float64 forward pass (the cross-check)
``quant``           per-tensor amax quantization to the matrix element formats (hw/formats.py codes)
``corpus``          the run plan, tile cutting and padding, npz tile files, manifest, validation
``exact``           an independent exact model of the numerics contract (finite operands)
``replay``          one run through ``tb/mu/model.py`` (+ RTL via ``rtl``); errors and costs
``rtl``             the adapter to the matrix unit's cocotb replay harness (``tb.mu.replay``)
``report``          ``reports/regression.md`` and ``reports/padding.md``
``quant_block``     block-scaled quantization: OCP MX conversion, NVFP4 two-level scaling
``block_tiles``     block-scaled tile runs, replayed beat by beat through ``tb/mu/model_block.py``
``block_report``    ``reports/block_scaled.md`` (window study, op classes, forward-pass fidelity)
=================== =========================================================================

Commands: ``python -m tb.tiles build`` (cut the corpus into ``build/tiles/``), ``python -m tb.tiles
report [--quick] [--rtl]`` (reports/regression.md), ``python -m tb.tiles padding``
(reports/padding.md), ``python -m tb.tiles block`` (reports/block_scaled.md). Tests: ``pytest
tb/tiles`` (``-m quick`` for the CI subset of the regression).
"""
