"""Verilator ``--lint-only -Wall`` on every generated variant of the registered designs.

Add a design by appending ``(design, options)`` pairs to :data:`LINT_CASES`.

Waivers (rules switched off, each a property of Amaranth's Verilog backend, i.e. of Yosys's
``write_verilog``, not of the designs; functional bugs are caught by the simulations and proofs):

* ``DECLFILENAME``: one generated file holds several modules, so its name cannot match them all.
* ``PROCASSINIT``: Amaranth writes every register's init value both as the declaration's initial
  value and in its reset branch, on purpose (simulation starts from the init value).
* ``UNUSEDSIGNAL``: Yosys names every intermediate expression (``$12``) and every submodule port
  wire; a slice of a wider intermediate (``(sig << lz)[:16]`` of a 47-bit shift) leaves unused bits.
* ``WIDTHEXPAND`` / ``WIDTHTRUNC``: Yosys relies on Verilog's context-determined expression widths
  (``$signed(a) + b`` zero/sign-extends implicitly; ``!x`` is its reduce-NOR of a multi-bit x).
  RTLIL cells have explicit widths, so the extension is the intended one.

Everything else ``-Wall`` reports (latches, multiple drivers, combinational loops, blocking
assignments in sequential logic, incomplete cases, ...) fails the test.
"""

import subprocess

import pytest

from hw.designs import get_design
from tb.sim import BUILD, verilator_env

WAIVED = ("DECLFILENAME", "PROCASSINIT", "UNUSEDSIGNAL", "WIDTHEXPAND", "WIDTHTRUNC")

#: (design, options) of every variant to lint
LINT_CASES = (
    [("bf16_mul", {"arch": a, "stages": s, "subnormals": sub})
     for a in ("behavioral", "booth4") for s in (0, 1, 2, 3, 4) for sub in (True, False)]
    + [("bf16_bank", {"arch": a, "stages": s, "subnormals": True, "lanes": 2})
       for a in ("behavioral", "booth4") for s in (0, 2)]
    # matrix unit: every format at D = 8..32, plus rows / stage extremes and the word-level tree.
    # D = 64 and 128 are left out: Verilator flattens the unit, and -Wall lint of D = 128 took
    # > 7 GB and minutes per variant (see docs/mu_interface.md, Known limits). Every block is the
    # same generator code at every width.
    + [("mu", {"width": w, "fmt": f}) for w in (8, 16, 32)
       for f in ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1")]
    + [("mu", {"width": 8, "fmt": "fp8_e5m2", "rows": 3, "stages": 0}),
       ("mu", {"width": 16, "fmt": "fp4_e2m1", "rows": 4, "stages": 10}),
       ("mu", {"width": 16, "fmt": "fp8_e5m2", "rows": 2, "stages": 5, "tree": "words"})]
)


def _id(case):
    design, opts = case
    d = get_design(design)
    return d.variant(d.params(opts))


@pytest.mark.quick
@pytest.mark.parametrize("case", LINT_CASES, ids=_id)
def test_verilator_lint(case):
    design, opts = case
    d = get_design(design)
    net = d.emit(opts)
    out = BUILD.parent / "lint" / f"{d.variant(d.params(opts))}.v"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(net.verilog)
    verilator_env()
    cmd = ["verilator", "--lint-only", "-Wall", *(f"-Wno-{w}" for w in WAIVED),
           "--top-module", net.top, str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    msgs = [ln for ln in proc.stderr.splitlines() if ln.startswith("%")]
    assert proc.returncode == 0 and not msgs, "\n".join(msgs[:30]) or proc.stderr[-3000:]
