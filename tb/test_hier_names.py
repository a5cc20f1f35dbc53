"""Block module names (hw/hier.py): derived from each block's parameters, and proved unambiguous.

Every registered design that places blocks is emitted with ``check_same=True``: each repeated
placement is re-generated and must be identical to the first one under its name, and one name has
one Verilog text across all the designs emitted. The matrix unit is emitted in the option
combinations its registry entry allows (every pair of option values in the quick set, every
combination in the full one), each at the smallest width it builds with. The names
themselves are compared with hand-written ones (the flows and reports key on them), and a
deliberately mis-named block must be caught.
"""

import functools
import gc
import hashlib
import itertools
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

#: (design, options) emitted with the identical-block check besides the unit's option combinations
#: (:func:`unit_combinations`): the unit at D = 8 and 16, units with other stages, rows and guard
#: bits, the slice and the BF16 bank.
CHECKED = (
    [("mu", {"width": 8, "fmt": MATRIX_FORMATS[0], "acc": "fp32"})]
    + [("mu", {"width": 16, "fmt": MATRIX_FORMATS[0], "acc": "fp32"})]
    + [("mu", {"width": 8, "fmt": MATRIX_FORMATS[0], "rows": 3, "stages": 5, "tree": "words",
               "acc": "fp32"}),
       ("slice", {"acc": "fp32"}),
       ("slice", {"rows": 2, "spad_macro": False, "acc": "fp32"}),
       ("bf16_bank", {"lanes": 4, "stages": 2}),
       ("bf16_bank", {"lanes": 2, "arch": "behavioral", "subnormals": False}),
       ("mu", {"width": 8, "fmt": "fp4_e2m1", "stages": 0, "acc": "exact", "guard_bits": 4}),
       ("slice", {"acc": "exact"})]
)
#: Integer options of the unit checked at their default and the next value (the others stay at
#: their default here; ``CHECKED`` varies them).
STEPPED = ("rows", "loop")


def _widths(design: str) -> list:
    """Every width the registry's ``width`` option accepts, smallest first."""
    opt = next(o for o in get_design(design).options if o.name == "width")
    out = []
    for k in range(16):
        try:
            out.append(opt.convert(str(1 << k)))
        except ValueError:
            continue
    return out


@functools.cache
def unit_combinations() -> tuple:
    """Every combination of the unit's options the registry allows, each at the smallest width it
    builds with: every value of each closed option (formats, block-scaled ones included, tree,
    accumulate mode) and each :data:`STEPPED` option at its default and one above.

    Returns
    -------
    tuple
        ``(accepted, refused, axes)``: option dicts that build; ``(options, reason)`` of the
        combinations refused at every width; ``{option: values}`` crossed.
    """
    d = get_design("mu")
    axes = {o.name: tuple(o.choices) if o.choices else (o.default, o.default + 1)
            for o in d.options if o.choices or o.name in STEPPED}
    accepted, refused = [], []
    with warnings.catch_warnings():     # units built only to see whether they are refused
        warnings.filterwarnings("ignore", message=".*created but never used")
        for values in itertools.product(*axes.values()):
            opts = dict(zip(axes, values, strict=True))
            reasons = []
            for w in _widths("mu"):
                try:
                    d.build(dict(opts, width=w))
                except ValueError as e:
                    reasons.append(str(e))
                    continue
                accepted.append(dict(opts, width=w))
                break
            else:
                refused.append((opts, reasons[-1]))     # at the largest width: not a width limit
        gc.collect()
    return tuple(accepted), tuple(refused), axes


def pairwise(combos, axes) -> list:
    """A subset of ``combos`` holding every pair of option values that some combination holds
    (greedy: each step takes the first combination covering the most pairs still missing)."""
    def pairs(c):
        return {((a, c[a]), (b, c[b])) for a, b in itertools.combinations(axes, 2)}

    todo = set().union(*(pairs(c) for c in combos))
    chosen = []
    while todo:
        best = max(combos, key=lambda c: len(pairs(c) & todo))
        chosen.append(best)
        todo -= pairs(best)
    return chosen


def quick_combinations() -> list:
    """The quick set of the unit's combinations: every pair of option values among those built at
    the smallest width (:func:`pairwise`), plus one combination for each value that needs a larger
    width (a block-scaled format)."""
    accepted, _, axes = unit_combinations()
    smallest = min(c["width"] for c in accepted)
    chosen = pairwise([c for c in accepted if c["width"] == smallest], axes)
    for name, values in axes.items():
        for v in values:
            if not any(c[name] == v for c in chosen):
                chosen.append(next(c for c in accepted if c[name] == v))
    return chosen


def _id(case):
    design, opts = case
    d = get_design(design)
    return d.variant(d.params(opts))


@functools.cache
def _emitted(design: str, opts: tuple) -> dict:
    """``{block module name: sha256 of its Verilog}`` of one design emitted with ``check_same``."""
    d = get_design(design)
    net = hier.emit(d.build(dict(opts)), d.top_name, check_same=True)
    assert net.blocks(), f"{design} places no blocks: nothing was checked"
    return {n: hashlib.sha256(net.modules[n].verilog.encode()).hexdigest() for n in net.blocks()}


def _check_same_across(cases) -> set:
    """Emit every case (each checked within itself) and check that one block name has one Verilog
    text across all of them; returns the block names seen."""
    seen = {}
    for design, opts in cases:
        for name, digest in _emitted(design, tuple(sorted(opts.items()))).items():
            assert seen.setdefault(name, (digest, _id((design, opts))))[0] == digest, (
                f"{name} differs between {seen[name][1]} and {_id((design, opts))}")
    return set(seen)


def test_unit_combinations_come_from_the_registry():
    """Every value of every crossed option builds in some combination, at a small width; every
    refusal names the option it refuses."""
    accepted, refused, axes = unit_combinations()
    for name, values in axes.items():
        for v in values:
            assert any(c[name] == v for c in accepted), f"no combination builds {name}={v!r}"
    assert {"fmt", "tree", "acc", "rows", "loop"} <= set(axes)
    assert max(c["width"] for c in accepted) <= 32
    for opts, reason in refused:
        assert any(name in reason for name in axes), (opts, reason)
    small = [c for c in accepted if c["width"] == 8]
    sub = pairwise(small, axes)
    for a, b in itertools.combinations(axes, 2):
        assert {(c[a], c[b]) for c in sub} == {(c[a], c[b]) for c in small}, (a, b)
    quick = quick_combinations()
    assert all(any(c[k] == v for c in quick) for k, vs in axes.items() for v in vs)
    assert len(sub) < len(small) and len(quick) < len(accepted)


def test_same_name_same_block():
    """Within each design (``check_same``) and across all of them: one name, one Verilog text. The
    unit is emitted in its quick set of option combinations (:func:`quick_combinations`)."""
    names = _check_same_across(list(CHECKED) + [("mu", c) for c in quick_combinations()])
    assert "mu_col_w16_fp8_e4m3_r1_s2" in names
    assert all(any(n.startswith(f"mu_col_w8_{f}_") for n in names) for f in MATRIX_FORMATS)


@pytest.mark.full
def test_same_name_same_block_in_every_combination():
    """As :func:`test_same_name_same_block`, over every option combination of the unit."""
    accepted, _, _ = unit_combinations()
    _check_same_across(list(CHECKED) + [("mu", c) for c in accepted])


def test_names_of_the_unit_blocks():
    """The derived names are the documented ones (flows/report/qor.py keys on their prefixes)."""
    def blocks(design, opts):
        return set(_emitted(design, tuple(sorted(opts.items()))))

    assert blocks("mu", {"width": 8, "fmt": "fp8_e4m3", "acc": "fp32"}) == {
        "mu_lane_fp8_e4m3", "mu_wbuf_w8_b8", "mu_tree_w8_fp8_e4m3_s2", "mu_acc_w8_fp8_e4m3_r1_s2",
        "mu_col_w8_fp8_e4m3_r1_s2"}
    assert blocks(*CHECKED[2]) == {
        "mu_lane_fp8_e4m3", "mu_wbuf_w8_b8", "mu_tree_w8_fp8_e4m3_s5_twords",
        "mu_acc_w8_fp8_e4m3_r3_s5", "mu_col_w8_fp8_e4m3_r3_s5_twords"}
    assert {"mu_w8_fp8_e4m3_r1_s2", "spad_sram_512x256_2r1w", "fp32_add_s4"} <= blocks(
        "slice", {"acc": "fp32"})
    assert blocks("bf16_bank", {"lanes": 2, "arch": "behavioral", "subnormals": False}) == {
        "bf16_mul_behavioral_s0_ftz"}
    assert blocks("mu", {"width": 8, "fmt": "fp4_e2m1", "stages": 0, "acc": "exact",
                         "guard_bits": 4}) == {
        "mu_lane_fp4_e2m1", "mu_wbuf_w8_b4", "mu_tree_w8_fp4_e2m1_s0_cs",
        "mu_xacc_w8_fp4_e2m1_r1_g4_c8_d5_n", "mu_col_w8_fp4_e2m1_r1_s0_xacc_g4"}
    assert "mu_w8_fp8_e4m3_r1_s2_xacc" in blocks("slice", {"acc": "exact"})
    assert blocks("slice", {}) == blocks("slice", {"acc": "exact"})  # the recommended mode by default


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
