"""Block module names (hw/hier.py): derived from each block's parameters, and proved unambiguous.

Every registered design that places blocks is emitted with ``check_same=True``: each repeated
placement is re-generated and must be identical to the first one under its name. The names
themselves are compared with hand-written ones (the flows and reports key on them), and a
deliberately mis-named block must be caught.
"""

import functools
import gc
import warnings
from dataclasses import dataclass
from typing import ClassVar

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw import hier
from hw.designs import get_design
from hw.formats import MATRIX_FORMATS
from hw.hier import BlockParams

pytestmark = pytest.mark.quick

#: (design, options) emitted with the identical-block check: the unit at D = 8 and 16 in every
#: matrix format, a pipelined / multi-row / word-tree unit, the slice and the BF16 bank.
CHECKED = (
    [("mu", {"width": w, "fmt": f}) for w in (8, 16) for f in MATRIX_FORMATS]
    + [("mu", {"width": 8, "fmt": MATRIX_FORMATS[0], "rows": 3, "stages": 5, "tree": "words"}),
       ("slice", {}),
       ("slice", {"rows": 2, "spad_macro": False}),
       ("bf16_bank", {"lanes": 4, "stages": 2}),
       ("bf16_bank", {"lanes": 2, "arch": "behavioral", "subnormals": False}),
       ("mu", {"width": 8, "fmt": "fp8_e5m2", "rows": 3, "acc": "exact"}),
       ("mu", {"width": 8, "fmt": "fp4_e2m1", "stages": 0, "acc": "exact", "guard_bits": 4}),
       ("slice", {"acc": "exact"})]
)


def _id(case):
    design, opts = case
    d = get_design(design)
    return d.variant(d.params(opts))


@functools.cache
def _checked_netlist(i: int):
    design, opts = CHECKED[i]
    d = get_design(design)
    return hier.emit(d.build(opts), d.top_name, check_same=True)


def test_same_name_same_block():
    """Within each design (``check_same``) and across all of them: one name, one Verilog text."""
    seen = {}
    for i, (design, opts) in enumerate(CHECKED):
        net = _checked_netlist(i)
        assert net.blocks(), f"{design} places no blocks: nothing was checked"
        for name in net.blocks():
            text = net.modules[name].verilog
            assert seen.setdefault(name, (text, _id((design, opts))))[0] == text, (
                f"{name} differs between {seen[name][1]} and {_id((design, opts))}")
    assert {n for n in seen if n.startswith("mu_col_")} >= {
        f"mu_col_w{w}_{f}_r1_s2" for w in (8, 16) for f in MATRIX_FORMATS}


def test_names_of_the_unit_blocks():
    """The derived names are the documented ones (flows/report/qor.py keys on their prefixes)."""
    def blocks(design, opts):
        return set(_checked_netlist(CHECKED.index((design, opts))).blocks())

    assert blocks("mu", {"width": 8, "fmt": "fp8_e4m3"}) == {
        "mu_lane_fp8_e4m3", "mu_wbuf_w8_b8", "mu_tree_w8_fp8_e4m3_s2", "mu_acc_w8_fp8_e4m3_r1_s2",
        "mu_col_w8_fp8_e4m3_r1_s2"}
    assert blocks(*CHECKED[len(MATRIX_FORMATS) * 2]) == {
        "mu_lane_fp8_e4m3", "mu_wbuf_w8_b8", "mu_tree_w8_fp8_e4m3_s5_twords",
        "mu_acc_w8_fp8_e4m3_r3_s5", "mu_col_w8_fp8_e4m3_r3_s5_twords"}
    assert {"mu_w8_fp8_e4m3_r1_s2", "spad_sram_512x256_2r1w", "fp32_add"} <= blocks("slice", {})
    assert blocks("bf16_bank", {"lanes": 2, "arch": "behavioral", "subnormals": False}) == {
        "bf16_mul_behavioral_s0_ftz"}
    assert blocks("mu", {"width": 8, "fmt": "fp4_e2m1", "stages": 0, "acc": "exact",
                         "guard_bits": 4}) == {
        "mu_lane_fp4_e2m1", "mu_wbuf_w8_b4", "mu_tree_w8_fp4_e2m1_s0_cs",
        "mu_xacc_w8_fp4_e2m1_r1_g4_c8_d5_n", "mu_col_w8_fp4_e2m1_r1_s0_xacc_g4"}
    assert "mu_w8_fp8_e4m3_r1_s2_xacc" in blocks("slice", {"acc": "exact"})


class _Scaled(wiring.Component):
    """A toy block whose ``gain`` changes its logic; ``named_gain`` says whether its params
    (and so its module name) include it."""

    a: In(8)
    y: Out(12)

    def __init__(self, gain: int, named_gain: bool = True):
        self._gain = gain
        self.params = (_ScaledParams(gain) if named_gain else _ScaledForgetful())
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.y.eq(self.a * self._gain)
        return m


@dataclass(frozen=True)
class _ScaledParams(BlockParams):
    MODULE: ClassVar[str] = "scaled_g{gain}"
    gain: int


@dataclass(frozen=True)
class _ScaledForgetful(BlockParams):
    MODULE: ClassVar[str] = "scaled"   # the gain is left out of the name: a bug


class _Top(wiring.Component):
    a: In(8)
    y0: Out(12)
    y1: Out(12)

    def __init__(self, blocks):
        self._blocks = blocks
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        for i, blk in enumerate(self._blocks):
            hier.place(m, f"b{i}", blk)
            m.d.comb += [blk.a.eq(self.a), getattr(self, f"y{i}").eq(blk.y)]
        return m


def test_misnamed_blocks_are_caught():
    """Two different blocks under one name: an error with the check, silently wrong without it."""
    ok = hier.emit(_Top([_Scaled(3), _Scaled(5)]), "top", check_same=True)
    assert set(ok.blocks()) == {"scaled_g3", "scaled_g5"}
    with pytest.raises(ValueError, match="two different blocks were both named 'scaled'"):
        hier.emit(_Top([_Scaled(3, named_gain=False), _Scaled(5, named_gain=False)]), "top",
                  check_same=True)
    _collect_abandoned()
    wrong = hier.emit(_Top([_Scaled(3, named_gain=False), _Scaled(5, named_gain=False)]), "top")
    assert wrong.blocks() == ("scaled",)   # one module for two blocks: what the check prevents


def test_name_template_must_name_every_parameter():
    @dataclass(frozen=True)
    class Partial(BlockParams):
        MODULE: ClassVar[str] = "blk_w{width}"
        width: int
        depth: int

    with pytest.raises(TypeError, match=r"must name every field exactly once: missing \['depth'\]"):
        _ = Partial(8, 2).module_name


def test_place_needs_params_or_a_name():
    class Bare(wiring.Component):
        a: In(1)

        def elaborate(self, platform):
            return Module()

    class Top(wiring.Component):
        def elaborate(self, platform):
            m = Module()
            hier.place(m, "b", Bare())
            return m

    with pytest.raises(TypeError, match="has no BlockParams 'params'"):
        hier.emit(Top({}), "top")
    _collect_abandoned()


def _collect_abandoned():
    """Drop the parts of a design whose elaboration failed on purpose, without Amaranth's
    'created but never used' warnings."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*created but never used")
        gc.collect()
