"""A bank of BF16 multipliers with a registered XOR reduction (hierarchical-flow test design).

``lanes`` multipliers, each placed with :func:`hw.hier.place` so the Verilog (and a hierarchical
synthesis) holds the multiplier module once. Inputs are registered, every lane's product goes into
a registered XOR tree, so each lane is observable at ``y`` and the multipliers sit between register
boundaries: the flat and hierarchical syntheses of this design must agree on area and on the
critical path through one multiplier.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .. import hier
from .bf16_mul import Bf16Multiplier

__all__ = ["Bf16Bank"]


class Bf16Bank(wiring.Component):
    """``lanes`` BF16 multipliers between input registers and a registered XOR of the products.

    Parameters
    ----------
    lanes : int
        Number of multipliers (>= 1).
    arch, stages, subnormals, cuts
        Passed to every :class:`~hw.fp.bf16_mul.Bf16Multiplier`; pipelined lanes run with
        ``i.valid`` and ``o.ready`` tied high.

    Members
    -------
    a, b : In(16 * lanes)
        Operands of lane ``k`` in bits ``16k + 15 .. 16k``.
    y : Out(16)
        XOR of all lanes' products, :attr:`latency` cycles after ``a``/``b``.
    """

    def __init__(self, lanes: int = 8, arch: str = "booth4", stages: int = 0, subnormals: bool = True,
                 cuts: str = "auto"):
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self._lanes = lanes
        proto = Bf16Multiplier(arch=arch, stages=stages, subnormals=subnormals, cuts=cuts)  # checks them
        proto._MustUse__silence = True  # only used for its checks and properties
        self._latency = proto.latency
        self._params = dict(arch=arch, stages=stages, subnormals=subnormals, cuts=cuts)
        super().__init__({"a": In(16 * lanes), "b": In(16 * lanes), "y": Out(16)})

    @property
    def lanes(self) -> int:
        return self._lanes

    @property
    def latency(self) -> int:
        """Cycles from ``a``/``b`` to ``y``: input register + multiplier stages + output register."""
        return 2 + self._latency

    def elaborate(self, platform):
        m = Module()
        a_q = Signal(16 * self._lanes, reset_less=True)
        b_q = Signal(16 * self._lanes, reset_less=True)
        m.d.sync += [a_q.eq(self.a), b_q.eq(self.b)]
        products = []
        for k in range(self._lanes):
            mul = Bf16Multiplier(**self._params)
            hier.place(m, f"lane{k}", mul)
            a, b = a_q[16 * k:16 * k + 16], b_q[16 * k:16 * k + 16]
            if mul.stages == 0:
                m.d.comb += [mul.a.eq(a), mul.b.eq(b)]
                p = mul.p
            else:
                m.d.comb += [mul.i.payload.eq(Cat(a, b)), mul.i.valid.eq(1), mul.o.ready.eq(1)]
                p = mul.o.payload
            products.append(p)
        while len(products) > 1:  # balanced XOR tree
            products = [products[j] ^ products[j + 1] if j + 1 < len(products) else products[j]
                        for j in range(0, len(products), 2)]
        m.d.sync += self.y.eq(products[0])
        return m
