"""IEEE bfloat16 multiplier generator: unpack -> exact raw product -> round/pack.

Semantics (the contract ``tb/fp/bf16_ref.py`` models in integers)
----------------------------------------------------------------
* IEEE 754 multiplication on bfloat16, round to nearest, ties to even.
* ``subnormals=True``: gradual underflow, subnormal inputs and results.
  ``subnormals=False``: subnormal inputs are read as zeros of their sign, and a result whose exact
  magnitude is below 2^-126 becomes a zero of its sign (flush before rounding).
* Overflow gives +-Inf; Inf x 0 gives NaN; every NaN result is the canonical 0x7FC0; the sign of
  zeros and infinities is the XOR of the operand signs.

Architectures (same results bit for bit; ``make prove DESIGN=bf16_mul`` proves it):

* ``behavioral``: the 8x8 significand product is written with ``*``.
* ``booth4``: the product comes from :class:`hw.fp.booth.Booth4Multiplier` (radix-4 Booth,
  Dadda tree, prefix adder), and the datapath after it is its own
  (:mod:`hw.fp.round_product`): beside the multiplier, the exponent, one combined
  normalize/denormalize shift amount and both rounding windows' sticky bits are computed from the
  operands (leading zeros of a subnormal operand, trailing zeros of both); after it, one shift,
  both windows rounded in parallel and a choice by the product's top bit. No leading-zero count,
  shift amount or exponent subtraction waits for the product (only the shift itself does).

Pipelining: ``stages=0`` is combinational with ports ``a``, ``b``, ``p``. ``stages=N > 0`` has stream
ports ``i`` (payload ``a`` in bits 15:0, ``b`` in bits 31:16) and ``o`` (payload ``p``), one transfer
per cycle at full throughput, latency :attr:`Bf16Multiplier.latency` = N cycles. With ``cuts="auto"``
registers go where :data:`hw.pipeline.BF16_MUL` says: in this order of preference after the rounder
(``OUTPUT``), on the raw product record (``RAW``) and on the inputs (``INPUT``); stages beyond three
are extra output registers for retiming. ``cuts`` may instead name the N positions (:data:`CUTS`, in
datapath order, joined by ``+``, e.g. ``"tree1+out"``):

========  ==========================================================================================
``in``    the operands
``pp``    the Booth partial-product columns (``booth4``: after the recoding, before the Dadda tree)
``treeI`` the columns after Dadda stage ``I`` (``booth4``: ``tree1``, ``tree2``)
``rows``  the tree's two rows, before the final adder (``booth4``)
``raw``   the raw product record, before rounding
``out``   the rounded product (may repeat: extra registers for retiming)
========  ==========================================================================================

The exponent, shift, sticky and flag fields computed beside the significand product are delayed
through the same stages as a cut inside the tree. All stages stall
together: a stage loads when it is empty or the next one loads, so ``i.ready`` is
``o.ready`` or-ed with "some stage is empty" (a combinational path from ``o.ready`` to ``i.ready``;
``o.valid`` never depends on ``o.ready``).
"""

from dataclasses import dataclass
from typing import ClassVar

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..formats import FloatFormat, get_format
from ..hier import BlockParams
from ..pipeline import BF16_MUL, Cut
from .booth import Booth4Multiplier, tree_levels
from .round import RoundPack
from .round_product import ProductRoundPack, product_fields, product_layout, shift_width
from .unpack import Unpack, raw_layout, unpack_exp_width

__all__ = ["Bf16Multiplier", "Bf16MulParams", "RawMultiply", "product_rounder", "ARCHS", "CUTS",
           "parse_cuts", "cut_names", "placements"]

ARCHS = ("behavioral", "booth4")
BF16 = get_format("bf16")
#: Level of the last Booth tree cut (``rows``) in the BF16 significand multiplier.
_ROWS = tree_levels(BF16.man_bits + 1, BF16.man_bits + 1)
#: Register positions of an explicit placement, input to output (see the module docstring).
CUTS = ("in", "pp", *(f"tree{i}" for i in range(1, _ROWS)), "rows", "raw", "out")
#: Positions inside the Booth multiplier, with their tree level (:class:`Booth4Multiplier` cuts).
_TREE_LEVEL = {"pp": 0, **{f"tree{i}": i for i in range(1, _ROWS)}, "rows": _ROWS}
_AUTO_NAME = {Cut.INPUT: "in", Cut.RAW: "raw", Cut.OUTPUT: "out"}


def parse_cuts(text: str) -> str:
    """Normalize a placement: ``"auto"``, or :data:`CUTS` names joined by ``+``, sorted input to
    output (only ``out`` may repeat).

    Raises
    ------
    ValueError
        For an unknown or repeated position, naming the valid ones.
    """
    text = str(text).strip()
    if text == "auto":
        return text
    names = [t.strip() for t in text.split("+")]
    bad = [t for t in names if t not in CUTS]
    if bad or not names:
        raise ValueError(f"cuts {text!r}: unknown position {', '.join(map(repr, bad)) or '(empty)'}; "
                         f"give 'auto' or positions from {', '.join(CUTS)} joined by '+' "
                         "(e.g. 'tree1+out')")
    rep = sorted({t for t in names if t != "out" and names.count(t) > 1})
    if rep:
        raise ValueError(f"cuts {text!r}: {', '.join(rep)} given twice; only 'out' may repeat")
    return "+".join(sorted(names, key=CUTS.index))


def cut_names(arch: str, stages: int, cuts: str) -> tuple:
    """Register positions (:data:`CUTS` names, input to output) of a multiplier configuration.

    Raises
    ------
    ValueError
        If an explicit ``cuts`` does not place exactly ``stages`` registers, or places one inside
        the Booth tree of the ``behavioral`` architecture.
    """
    if cuts == "auto":
        return tuple(_AUTO_NAME[c] for c in BF16_MUL.plan(stages))
    names = tuple(parse_cuts(cuts).split("+"))
    if len(names) != stages:
        raise ValueError(f"cuts {cuts!r} places {len(names)} register(s) but stages={stages}: give "
                         f"stages={len(names)}, or cuts=auto")
    inner = [t for t in names if t in _TREE_LEVEL]
    if inner and arch != "booth4":
        raise ValueError(f"cuts {cuts!r}: {', '.join(inner)} are inside the Booth tree; use "
                         "arch=booth4, or only in, raw and out")
    return names


def placements(arch: str, stages: int) -> tuple:
    """Every explicit placement of ``stages`` registers for ``arch`` (``"auto"`` first): each
    position at most once, ``out`` any number of times."""
    from itertools import combinations

    pos = [c for c in CUTS if c != "out" and (arch == "booth4" or c not in _TREE_LEVEL)]
    out = ["auto"]
    for n_out in range(stages, -1, -1):
        for rest in combinations(pos, stages - n_out):
            out.append("+".join(list(rest) + ["out"] * n_out))
    return tuple(out) if stages else ("auto",)


@dataclass(frozen=True)
class Bf16MulParams(BlockParams):
    """Everything that changes a :class:`Bf16Multiplier`'s logic (and its module name)."""

    MODULE: ClassVar[str] = "bf16_mul_{arch}_s{stages}{subnormals}{cuts}"
    TAGS: ClassVar[dict] = {"subnormals": lambda v: "" if v else "_ftz",
                            "cuts": lambda v: "" if v == "auto" else "_" + v.replace("+", "_")}
    arch: str
    stages: int
    subnormals: bool
    cuts: str = "auto"


def product_rounder(mul: "RawMultiply") -> wiring.Component:
    """The rounder that packs ``mul``'s raw product into its format: :class:`ProductRoundPack`
    (the product-specific path) for ``booth4``, the general :class:`RoundPack` otherwise."""
    kind = ProductRoundPack if mul.arch == "booth4" else RoundPack
    return kind(mul.fmt, sig_width=len(mul.raw.sig), exp_width=len(mul.raw.exp),
                subnormals=mul.subnormals)


class RawMultiply(wiring.Component):
    """Unpack two codes of ``fmt`` and form their exact product as a raw-float record.

    The product significand is ``2 * (man_bits + 1)`` bits (exact, no sticky) and its exponent
    ``ea + eb + 1`` (the record's MSB has weight 2^1 in ``1.x * 1.y``).

    Parameters
    ----------
    arch : str
        ``"behavioral"`` or ``"booth4"``: how the significand product is built.
    subnormals : bool
        Subnormal inputs kept (True) or read as zeros (False).
    fmt : FloatFormat
        Operand format (default BF16).
    cuts : tuple of int
        ``booth4`` only: tree levels of :class:`hw.fp.booth.Booth4Multiplier` holding a pipeline
        register (default none: combinational). The fields computed beside the multiplier are
        delayed through the same registers.

    Members
    -------
    a, b : In(fmt.bits)
    en : In(len(cuts))
        Load enable of each register (only when ``cuts`` is not empty).
    raw : Out(raw_layout(2 * (fmt.man_bits + 1), unpack_exp_width(fmt) + 1))
        For ``booth4``: a :func:`hw.fp.round_product.product_layout` record for
        :class:`hw.fp.round_product.ProductRoundPack` instead, with the same ``sig`` and the
        exponent values computed here from the operands, beside the multiplier: the biased field
        ``exp``, the normalize/denormalize ``shift`` (from the subnormal operand's leading-zero
        count) and the ``sticky`` bits of both rounding windows (from the operands' trailing
        zeros). A product of two subnormals (below 2^(2 emin), a zero in every mode after
        rounding) is flagged ``is_zero``, so at most one operand has leading zeros.
    """

    def __init__(self, *, arch: str, subnormals: bool, fmt=BF16, cuts: tuple = ()):
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {', '.join(ARCHS)}, not {arch!r}")
        if cuts and arch != "booth4":
            raise ValueError(f"only the booth4 architecture has tree cuts, not {arch!r}")
        self._arch, self._subnormals, self._fmt = arch, bool(subnormals), fmt
        self._cuts = tuple(cuts)
        sw = 2 * (fmt.man_bits + 1)
        ew = unpack_exp_width(fmt) + 1  # +1: sum of two exponents
        if arch == "booth4":
            # biased exponent field of the product, in [2 emin + 1 - man_bits, 2 emax + 1] + bias
            layout = product_layout(sw, ew - 1, shift_width(fmt, self._subnormals))
        else:
            layout = raw_layout(sw, ew)
        sig = {"a": In(fmt.bits), "b": In(fmt.bits), "raw": Out(layout)}
        if self._cuts:
            sig["en"] = In(len(self._cuts))
        super().__init__(sig)

    @property
    def arch(self) -> str:
        return self._arch

    @property
    def fmt(self) -> FloatFormat:
        return self._fmt

    @property
    def subnormals(self) -> bool:
        return self._subnormals

    def elaborate(self, platform):
        m = Module()
        f = self._fmt
        m.submodules.ua = ua = Unpack(f, subnormals=self._subnormals)
        m.submodules.ub = ub = Unpack(f, subnormals=self._subnormals)
        m.d.comb += [ua.code.eq(self.a), ub.code.eq(self.b)]
        x, y = ua.raw, ub.raw
        # with tree cuts, every field but the product is formed here and delayed to ``raw`` below
        out = Signal(self.raw.shape(), name="raw_early") if self._cuts else self.raw
        nan = x.is_nan | y.is_nan | (x.is_inf & y.is_zero) | (x.is_zero & y.is_inf)
        inf = (x.is_inf | y.is_inf) & ~nan
        zero = x.is_zero | y.is_zero
        m.d.comb += [
            out.is_nan.eq(nan),
            out.is_inf.eq(inf),
            out.sign.eq(x.sign ^ y.sign),
        ]
        if self._arch == "behavioral":
            m.d.comb += [
                out.is_zero.eq(zero & ~nan & ~inf),
                out.exp.eq(x.exp + y.exp + 1),
                out.sig.eq(x.sig * y.sig),
            ]
            return m
        early = product_fields(m, self.a, self.b, f, self._subnormals, exp_width=len(out.exp))
        if self._subnormals:
            zero = zero | early["tiny"]
            m.d.comb += [out.shift.eq(early["shift"]), out.sticky.eq(early["sticky"])]
        m.d.comb += [out.is_zero.eq(zero & ~nan & ~inf), out.exp.eq(early["exp"])]
        n = f.man_bits + 1
        m.submodules.sigmul = mul = Booth4Multiplier(n, n, cuts=self._cuts)
        m.d.comb += [mul.a.eq(x.sig), mul.b.eq(y.sig), self.raw.sig.eq(mul.p)]
        if self._cuts:
            m.d.comb += mul.en.eq(self.en)
            side = [name for name in self.raw.shape().members if name != "sig"]
            value = Cat(*(out[name] for name in side))
            for j in range(len(self._cuts)):
                reg = Signal(len(value), name=f"side{j}_q", reset_less=True)
                with m.If(self.en[j]):
                    m.d.sync += reg.eq(value)
                value = reg
            at = 0
            for name in side:
                w = len(Value.cast(out[name]))
                m.d.comb += self.raw[name].eq(value[at:at + w])
                at += w
        return m


class Bf16Multiplier(wiring.Component):
    """IEEE bfloat16 multiplier (see the module docstring for the exact semantics).

    Parameters
    ----------
    arch : str
        ``"behavioral"`` or ``"booth4"``.
    stages : int
        Pipeline stages, >= 0.
    subnormals : bool
        Gradual underflow (True) or flush-to-zero of inputs and results (False).
    cuts : str
        Where the ``stages`` registers go: ``"auto"`` (the default placement), or ``stages``
        positions of :data:`CUTS` joined by ``+`` (see the module docstring).

    Members
    -------
    a, b : In(16)
        Operands (``stages == 0`` only).
    p : Out(16)
        Product (``stages == 0`` only).
    i : In(stream.Signature(32))
        Operands, ``a`` in bits 15:0 and ``b`` in 31:16 (``stages > 0`` only).
    o : Out(stream.Signature(16))
        Products in order (``stages > 0`` only).

    Raises
    ------
    ValueError
        For an unknown ``arch``, a negative ``stages`` or a ``cuts`` that does not fit them.
    """

    def __init__(self, arch: str = "booth4", stages: int = 0, subnormals: bool = True,
                 cuts: str = "auto"):
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {', '.join(ARCHS)}, not {arch!r}")
        if not isinstance(stages, int) or isinstance(stages, bool) or stages < 0:
            raise ValueError(f"stages must be an integer >= 0, not {stages!r}")
        if not isinstance(subnormals, bool):
            raise TypeError(f"subnormals must be True or False, not {subnormals!r}")
        cuts = parse_cuts(cuts)
        self._names = cut_names(arch, stages, cuts)
        self._arch, self._stages, self._subnormals, self._cuts = arch, stages, subnormals, cuts
        self.params = Bf16MulParams(arch, stages, subnormals, cuts)
        if stages == 0:
            sig = {"a": In(16), "b": In(16), "p": Out(16)}
        else:
            sig = {"i": In(stream.Signature(32)), "o": Out(stream.Signature(16))}
        super().__init__(sig)

    @property
    def arch(self) -> str:
        return self._arch

    @property
    def stages(self) -> int:
        return self._stages

    @property
    def subnormals(self) -> bool:
        return self._subnormals

    @property
    def cuts(self) -> str:
        """The placement as given (``"auto"`` or the normalized positions)."""
        return self._cuts

    @property
    def cut_names(self) -> tuple:
        """Where the registers are: :data:`CUTS` names, input to output, one per stage."""
        return self._names

    @property
    def latency(self) -> int:
        """Cycles from an accepted input to its product on ``o`` (= ``stages``; 0: combinational)."""
        return self._stages

    def elaborate(self, platform):
        m = Module()
        names = self._names
        tree = tuple(_TREE_LEVEL[t] for t in names if t in _TREE_LEVEL)
        m.submodules.mul = mul = RawMultiply(arch=self._arch, subnormals=self._subnormals, cuts=tree)
        m.submodules.rnd = rnd = product_rounder(mul)
        if self._stages == 0:
            m.d.comb += [mul.a.eq(self.a), mul.b.eq(self.b), rnd.raw.eq(mul.raw),
                         self.p.eq(rnd.code)]
            return m

        n = len(names)
        valid = [Signal(name=f"valid{k}") for k in range(n)]
        ready_in = [Signal(name=f"load{k}") for k in range(n)] + [self.o.ready]
        for k in range(n):
            # stage k loads (takes the previous stage's data) when empty or when stage k+1 loads
            m.d.comb += ready_in[k].eq(~valid[k] | ready_in[k + 1])
        m.d.comb += self.i.ready.eq(ready_in[0])

        k = 0
        prev_valid = self.i.valid

        def register(value, shape, name):
            nonlocal k, prev_valid
            reg = Signal(shape, name=name, reset_less=True)
            with m.If(ready_in[k]):
                m.d.sync += [reg.eq(value), valid[k].eq(prev_valid)]
            prev_valid = valid[k]
            k += 1
            return reg

        ab = self.i.payload
        if "in" in names:
            ab = register(ab, 32, "ab_q")
        m.d.comb += [mul.a.eq(ab[:16]), mul.b.eq(ab[16:])]
        for j in range(len(tree)):  # the registers inside the multiplier: their valid bits here
            m.d.comb += mul.en[j].eq(ready_in[k])
            with m.If(ready_in[k]):
                m.d.sync += valid[k].eq(prev_valid)
            prev_valid = valid[k]
            k += 1
        raw = mul.raw
        if "raw" in names:
            raw = register(raw, mul.raw.shape(), "raw_q")
        m.d.comb += rnd.raw.eq(raw)
        p = rnd.code
        for j in range(names.count("out")):
            p = register(p, 16, f"p_q{j}")
        m.d.comb += [self.o.payload.eq(p), self.o.valid.eq(prev_valid)]
        assert k == n
        return m

