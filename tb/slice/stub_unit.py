"""A stand-in matrix unit for the slice's dataflow tests: the unit's stream contract, integer numerics.

It follows the handshake and tile rules of ``docs/mu_interface.md`` (two tile buffers,
``w.ready = !pending | swap_fire``, a ``swap`` beat waits for a pending tile, one ``y`` row per
``last`` beat, rows in ``x`` order) but computes ``y[j] = sum_k x[k] * W[k, j]`` on the raw codes as
unsigned integers, accumulated modulo 2**32. It builds in seconds at any width, so the slice's
sequencing (tiles, groups, K accumulation, ragged edges, stalls) can be checked bit-exactly against
:func:`stub_reference` independently of the real unit's floating-point datapath. ``rows`` must be 1.
Its ports are the unit's own (:class:`hw.mu.interface.MatrixUnitSignature`); the counters read 0.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from hw.hier import BlockParams
from hw.mu.interface import MatrixUnitSignature

__all__ = ["StubUnit", "stub_reference"]


@dataclass(frozen=True)
class StubUnitParams(BlockParams):
    """Names the stub's module like the unit's (``stubunit_w{D}_{fmt}_r1_s{stages}``, ``_xacc`` for
    the ``exact`` mode's ports)."""

    MODULE: ClassVar[str] = "{kind}_w{width}_{fmt}_r{rows}_s{stages}{acc}"
    TAGS: ClassVar[dict] = {"acc": lambda v: "" if v == "fp32" else "_xacc"}
    kind: str
    width: int
    fmt: str
    rows: int
    stages: int
    acc: str = "fp32"


class StubUnit(wiring.Component):
    """Integer stand-in for :class:`hw.mu.matrix_unit.MatrixUnit` (same ports, same tile rules).

    Parameters
    ----------
    width, fmt, rows, stages, acc :
        As the matrix unit; ``rows`` must be 1, ``stages`` is ignored (latency 1) and ``acc`` only
        sets the ports (the numerics stay integer).
    tree, guard_bits, loop :
        The matrix unit's other options (:meth:`hw.mu.matrix_unit.MatrixUnitParams.options`, what
        the slice passes its unit factory); they do not apply to the stub.
    """

    def __init__(self, *, width: int, fmt: str, rows: int = 1, stages: int = 0, acc: str = "fp32",
                 tree: str = "dadda", guard_bits: int = 16, loop: int = 1):
        if rows != 1:
            raise ValueError(f"the stub unit supports rows=1 only, not {rows!r}")
        sig = MatrixUnitSignature(width, fmt, rows, acc)
        self.width, self.bits = width, sig.bits
        self.params = StubUnitParams(type(self).__name__.lower(), width, fmt, rows, stages, acc)
        super().__init__(sig)

    @property
    def latency(self) -> int:
        return 1

    def elaborate(self, platform):
        m = Module()
        D, b = self.width, self.bits
        load = [Signal(D * b, name=f"load{k}") for k in range(D)]
        act = [Signal(D * b, name=f"act{k}") for k in range(D)]
        lc = Signal(range(D + 1))
        pending = Signal()
        acc = Signal(32 * D)
        swap = self.x.payload.swap
        swap_fire = Signal()
        m.d.comb += [
            self.x.ready.eq(Mux(swap, pending, 1) & (~self.y.valid | self.y.ready)),
            swap_fire.eq(self.x.valid & self.x.ready & swap),
            self.w.ready.eq(~pending | swap_fire),
        ]
        with m.If(self.y.ready):
            m.d.sync += self.y.valid.eq(0)
        with m.If(self.w.valid & self.w.ready):
            for k in range(D):
                with m.If(lc == k):
                    m.d.sync += load[k].eq(self.w.payload)
            with m.If(lc == D - 1):
                m.d.sync += [lc.eq(0), pending.eq(1)]
            with m.Else():
                m.d.sync += lc.eq(lc + 1)
        with m.If(swap_fire):
            m.d.sync += [a.eq(ld) for a, ld in zip(act, load, strict=True)]
            with m.If(~(self.w.valid & self.w.ready & (lc == D - 1))):
                m.d.sync += pending.eq(0)
        with m.If(self.x.valid & self.x.ready):
            new = []
            for j in range(D):
                s = 0
                for k in range(D):
                    wkj = Mux(swap, load[k], act[k])[j * b:(j + 1) * b]
                    s = s + self.x.payload.data[k * b:(k + 1) * b] * wkj
                new.append((Mux(self.x.payload.first, 0, acc[32 * j:32 * j + 32]) + s)[:32])
            m.d.sync += acc.eq(Cat(*new))
            with m.If(self.x.payload.last):
                m.d.sync += [self.y.valid.eq(1), self.y.payload.data.eq(Cat(*new))]
        return m


def stub_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """What the slice computes with stub units: ``(x @ W) mod 2**32`` on the codes (K order free)."""
    return (x.astype(np.uint64) @ w.astype(np.uint64)) % (1 << 32)
