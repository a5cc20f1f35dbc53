"""Testbench library shared by every cocotb testbench: one clocked loop with one clock-edge rule
(:mod:`tb.lib.clocked`), stream sources and sinks (:mod:`tb.lib.stream`) and their pause generators
(:mod:`tb.lib.pause`)."""
