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

import re
import subprocess

import pytest

from hw.clock_gate import with_cell_models
from hw.designs import MU_WIDTHS, get_design
from hw.formats import MATRIX_FORMATS, get_format
from tb.sim import BUILD, verilator_env

WAIVED = ("DECLFILENAME", "PROCASSINIT", "UNUSEDSIGNAL", "WIDTHEXPAND", "WIDTHTRUNC")

#: (design, options) of every variant to lint
LINT_CASES = (
    [("bf16_mul", {"arch": a, "stages": s, "subnormals": sub})
     for a in ("behavioral", "booth4") for s in (0, 1, 2, 3, 4) for sub in (True, False)]
    + [("bf16_bank", {"arch": a, "stages": s, "subnormals": True, "lanes": 2})
       for a in ("behavioral", "booth4") for s in (0, 2)]
    # matrix unit: every format at every width (D = 8..32 whole, 64 and 128 block by block,
    # :data:`BY_BLOCK`; :func:`_marks` says which are quick), plus rows / stage extremes and the
    # word-level tree.
    + [("mu", {"width": w, "fmt": f, "acc": "fp32"}) for w in MU_WIDTHS for f in MATRIX_FORMATS]
    + [("mu", {"width": 8, "fmt": "fp8_e5m2", "rows": 3, "stages": 0, "acc": "fp32"}),
       ("mu", {"width": 16, "fmt": "fp4_e2m1", "rows": 4, "stages": 10, "acc": "fp32"}),
       ("mu", {"width": 16, "fmt": "fp8_e5m2", "rows": 2, "stages": 5, "tree": "words", "acc": "fp32"})]
    # the exact accumulate mode in every format at D = 8, with rows and without the input register
    + [("mu", {"width": 8, "fmt": f, "acc": "exact"}) for f in MATRIX_FORMATS]
    + [("mu", {"width": 8, "fmt": "fp8_e5m2", "rows": 3, "stages": 0, "acc": "exact"}),
       ("mu", {"width": 32, "fmt": "fp8_e4m3", "rows": 2, "acc": "exact", "guard_bits": 20})]
    # the fp32 accumulate loop over two cycles, with one row (interlock on every beat) and three
    + [("mu", {"width": 8, "fmt": "fp8_e4m3", "acc": "fp32", "loop": 2}),
       ("mu", {"width": 8, "fmt": "fp8_e5m2", "rows": 3, "stages": 0, "acc": "fp32", "loop": 2})]
)


#: Widths linted one block module at a time: Verilator flattens the whole unit for lint, and -Wall
#: lint of a flat D = 128 unit took > 7 GB and minutes per variant (flat D = 32: about 70 CPU
#: seconds, by block: 4). Each distinct module (``hw.hier`` blocks: the column, lane, tree,
#: accumulator, weight buffer, and the top) is linted as its own top with its child blocks replaced
#: by port-only stubs, so every line of the design is linted once.
BY_BLOCK = (32, 64, 128)

_PORT_RE = re.compile(r"^\s*(input|output)\b[^;]*;", re.M)


def _stub(block) -> str:
    """A port-only module with ``block``'s header and ports (outputs tied to 0)."""
    text = block.verilog
    start = text.index(f"module {block.name}(")
    body = text[start:text.index("endmodule", start)]
    header = body[:body.index(";") + 1]
    ports = [m.group(0).strip() for m in _PORT_RE.finditer(body)]
    outs = [p.rstrip(";").split()[-1] for p in ports if p.startswith("output")]
    return "\n".join([header, *ports, *(f"  assign {o} = '0;" for o in outs), "endmodule", ""])


def _lint_units(net, by_block: bool) -> list:
    """(top module, Verilog text) pairs to lint: the whole netlist, or each module with stubs."""
    if not by_block:
        return [(net.top, with_cell_models(net.verilog))]
    return [(name, with_cell_models(block.verilog + "\n"
                                    + "".join(_stub(net.modules[c]) for c in block.children)))
            for name, block in net.modules.items()]


def _id(case):
    design, opts = case
    d = get_design(design)
    return d.variant(d.params(opts))


def _first_per_rule() -> tuple:
    first = {}
    for name in MATRIX_FORMATS:
        first.setdefault(get_format(name).specials, name)
    return tuple(first.values())


#: Formats linted above D = 8 in the quick set: the first matrix format of each special-value rule
#: (the blocks' code differs between formats only by the rule and the field widths, and every
#: format's field widths are linted at D = 8); the others are ``full``. Above the first width linted
#: block by block (D = 32) the quick set lints E4M3 at the widest D only (each rule's code is linted
#: whole at D = 16 and block by block at D = 32; a wider D changes only the widths).
WIDE_QUICK_FORMATS = _first_per_rule()
WIDEST_QUICK_FORMAT = "fp8_e4m3"


def _marks(case):
    design, opts = case
    wide = design == "mu" and opts.get("width", 8) > MU_WIDTHS[0]
    if design == "mu" and opts.get("acc") == "exact" and not get_format(opts["fmt"]).has_nan:
        return [pytest.mark.full]   # quick: the exact mode in the formats with specials (E4M3, E5M2)
    if design == "mu" and opts.get("width", 8) > BY_BLOCK[0] and (
            opts["fmt"] != WIDEST_QUICK_FORMAT or opts["width"] != BY_BLOCK[-1]):
        return [pytest.mark.full]
    return [pytest.mark.full] if wide and opts["fmt"] not in WIDE_QUICK_FORMATS else []


@pytest.mark.quick
@pytest.mark.parametrize("case", [pytest.param(c, id=_id(c), marks=_marks(c)) for c in LINT_CASES])
def test_verilator_lint(case):
    design, opts = case
    d = get_design(design)
    net = d.emit(opts)
    variant = d.variant(d.params(opts))
    by_block = design == "mu" and opts.get("width") in BY_BLOCK
    verilator_env()
    for top, text in _lint_units(net, by_block):
        out = BUILD.parent / "lint" / (f"{variant}.{top}.v" if by_block else f"{variant}.v")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        cmd = ["verilator", "--lint-only", "-Wall", *(f"-Wno-{w}" for w in WAIVED),
               "--top-module", top, str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        msgs = [ln for ln in proc.stderr.splitlines() if ln.startswith("%")]
        assert proc.returncode == 0 and not msgs, (f"{top}: " + "\n".join(msgs[:30])
                                                   or proc.stderr[-3000:])


def test_block_lint_sees_every_module_and_catches_a_bad_one():
    """The by-block lint covers each module once, its stubs satisfy the parent, and a defect in a
    real block (the lane's ``nan`` output left undriven) fails -Wall."""
    net = get_design("mu").emit({"width": 8, "fmt": "fp8_e4m3"})
    units = _lint_units(net, True)
    assert [t for t, _ in units] == list(net.modules)
    verilator_env()
    col = next(n for n in net.modules if n.startswith("mu_col_"))
    lane = next(c for c in net.modules[col].children if c.startswith("mu_lane_"))
    good = dict(units)[lane]
    bad = re.sub(r"^\s*assign nan = .*$", "", good, count=1, flags=re.M)
    assert bad != good
    for top, text, ok in [(col, dict(units)[col], True), (lane, good, True), (lane, bad, False)]:
        out = BUILD.parent / "lint" / f"selftest.{top}.{ok}.{len(text)}.v"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        proc = subprocess.run(["verilator", "--lint-only", "-Wall",
                               *(f"-Wno-{w}" for w in WAIVED), "--top-module", top, str(out)],
                              capture_output=True, text=True)
        assert (proc.returncode == 0) == ok, proc.stderr[-2000:]
