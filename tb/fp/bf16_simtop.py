"""Simulation-only top: banks of every BF16 multiplier variant on one wide bus (one Verilator build).

Each *group* is one variant ``(arch, stages, subnormals[, cuts])`` replicated over ``lanes`` multipliers
placed with :func:`hw.hier.place`, so the Verilog holds each variant's module once and Verilator
compiles it once. Every group sees the same operands: lane ``k`` reads ``ab[32k+31:32k]`` as an
:data:`OPERANDS` payload (the multiplier's stream payload: ``a`` then ``b``, least significant
first), which the testbench packs through the same layout. Pipelined groups share ``in_valid`` and
``out_ready``.

At every rising edge the top registers a monitor word ``mon`` (fields least-significant first):

* the products of every group, ``16 * lanes`` bits each (combinational groups: for the operands
  present before the edge; pipelined groups: ``o.payload`` before the edge);
* per pipelined group, an ``in_fire`` bit (``in_valid & i.ready``), an ``out_fire`` bit
  (``o.valid & out_ready``) and a ``split`` bit (lanes disagree on ``i.ready`` or ``o.valid``,
  which must never happen).

A testbench that writes the inputs and reads ``mon`` once per cycle (at the falling edge) thus
sees, one cycle later, exactly what happened at the edge, with a single read per cycle.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw import hier
from hw.fp.bf16_mul import Bf16Multiplier

__all__ = ["Bf16SimTop", "DEFAULT_GROUPS", "OPERANDS"]

#: One lane's operands: the payload of :class:`hw.fp.bf16_mul.Bf16Multiplier`'s ``i`` stream
#: (``a`` in bits 15:0, ``b`` in bits 31:16), also the combinational variant's ``a``/``b`` ports.
OPERANDS = data.StructLayout({"a": 16, "b": 16})

#: (arch, stages, subnormals) of every variant the regression checks in one build: all four
#: combinational ones, and pipelined ones covering each arch, each subnormals setting and the
#: three register placements (1: out; 2: raw + out; 3: in + raw + out).
DEFAULT_GROUPS = (
    ("behavioral", 0, True), ("behavioral", 0, False), ("booth4", 0, True), ("booth4", 0, False),
    ("behavioral", 2, True), ("behavioral", 1, False), ("booth4", 3, True), ("booth4", 2, False),
)


class Bf16SimTop(wiring.Component):
    """Banks of BF16 multiplier variants with a registered monitor (simulation only).

    Parameters
    ----------
    lanes : int
        Multipliers per group (products per group per cycle).
    groups : tuple of (str, int, bool) or (str, int, bool, str)
        ``(arch, stages, subnormals)`` per group, optionally with the register placement ``cuts``
        (default ``"auto"``); :attr:`groups` holds all four.

    Members
    -------
    ab : In(32 * lanes)
    in_valid, out_ready : In(1)
    mon : Out(16 * lanes * len(groups) + 3 * (number of pipelined groups))
    """

    def __init__(self, lanes: int = 64, groups=DEFAULT_GROUPS):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self._lanes = lanes
        self._groups = tuple((str(g[0]), int(g[1]), bool(g[2]), str(g[3]) if len(g) > 3 else "auto")
                             for g in groups)
        npiped = sum(1 for g in self._groups if g[1] > 0)
        super().__init__({
            "ab": In(32 * lanes),
            "in_valid": In(1),
            "out_ready": In(1),
            "mon": Out(16 * lanes * len(self._groups) + 3 * npiped),
        })

    @property
    def groups(self) -> tuple:
        return self._groups

    @property
    def lanes(self) -> int:
        return self._lanes

    def latency(self, group: int) -> int:
        """Pipeline latency of a group's multiplier (read from the multiplier itself)."""
        arch, stages, sub, cuts = self._groups[group]
        mul = Bf16Multiplier(arch=arch, stages=stages, subnormals=sub, cuts=cuts)
        mul._MustUse__silence = True
        return mul.latency

    def elaborate(self, platform):
        m = Module()
        products, flags = [], []
        for g, (arch, stages, sub, cuts) in enumerate(self._groups):
            readies, valids, outs = [], [], []
            for k in range(self._lanes):
                mul = Bf16Multiplier(arch=arch, stages=stages, subnormals=sub, cuts=cuts)
                hier.place(m, f"g{g}_lane{k}", mul)
                ab = data.View(OPERANDS, self.ab[32 * k:32 * k + 32])
                if stages == 0:
                    m.d.comb += [mul.a.eq(ab.a), mul.b.eq(ab.b)]
                    outs.append(mul.p)
                else:
                    m.d.comb += [mul.i.payload.eq(ab), mul.i.valid.eq(self.in_valid),
                                 mul.o.ready.eq(self.out_ready)]
                    readies.append(mul.i.ready)
                    valids.append(mul.o.valid)
                    outs.append(mul.o.payload)
            products.append(Cat(*outs))
            if stages:
                r, v = Cat(*readies), Cat(*valids)
                flags += [self.in_valid & r.all(), v.all() & self.out_ready,
                          (r.any() & ~r.all()) | (v.any() & ~v.all())]
        mon = Signal(len(self.mon), reset_less=True)
        m.d.sync += mon.eq(Cat(*products, *flags))
        m.d.comb += self.mon.eq(mon)
        return m
