"""Real model tiles: all-MiniLM-L6-v2 matmuls, quantized, cut for a unit of width D, replayed.

=================== =========================================================================
module              holds
=================== =========================================================================
``minilm``          locate/validate/load the packaged model; numpy forward pass; matmul capture
``reference``       a second, differently written float64 forward pass (the cross-check)
``quant``           quantization to hw/formats.py codes: per tensor (amax), per block (OCP MX, NVFP4)
``corpus``          the run plan (element and block-scaled formats as rows), tile cutting and
                    padding, npz tile files, manifest, validation
``exact``           an independent exact model of the numerics contract (finite operands)
``replay``          one run through ``tb/mu/model.py`` (+ RTL via ``rtl``); errors and costs
``rtl``             the adapter to the matrix unit's cocotb replay harness (``tb.mu.replay``)
``report``          ``reports/regression.md``, ``reports/padding.md``, ``reports/block_rtl.md``'s
                    generated section
``study``           ``reports/block_scaled.md`` (window study, op classes, forward-pass fidelity)
=================== =========================================================================

Commands: ``python -m tb.tiles build`` (cut the corpus into ``build/tiles/``), ``python -m tb.tiles
report [--quick] [--rtl]`` (reports/regression.md), ``python -m tb.tiles padding``
(reports/padding.md), ``python -m tb.tiles block`` (reports/block_scaled.md), ``python -m tb.tiles
block-rtl`` (reports/block_rtl.md). Tests: ``pytest tb/tiles`` (``-m quick`` for the CI subset of
the regression).
"""
