"""A stand-in matrix unit for the slice's dataflow tests: the unit's stream contract, integer numerics.

It follows the handshake and tile rules of ``docs/mu_interface.md`` (two tile buffers,
``w.ready = !pending | swap_fire``, a ``swap`` beat waits for a pending tile, one ``y`` row per
``last`` beat, rows in ``x`` order) but computes ``y[j] = sum_k x[k] * W[k, j]`` on the raw codes as
unsigned integers, accumulated modulo 2**32. It builds in seconds at any width, so the slice's
sequencing (tiles, groups, K accumulation, ragged edges, stalls) can be checked bit-exactly against
:func:`stub_reference` independently of the real unit's floating-point datapath. ``rows`` must be 1.
Its ports are the unit's own (:class:`hw.mu.interface.MatrixUnitSignature`); the counters read 0.
A block-scaled stub also takes the ``ws`` stream under the unit's rules (a tile is complete when its
D ``w`` and D/B ``ws`` beats are in, each stream's ``ready`` is ``!complete | swap_fire``) and adds
``sum_i (xs[i] + 1) * (ws[i, j] + 1)`` over the beat's blocks i, so a scale row delivered to the
wrong tile, unit or column changes the result, and so does a scale code past K the slice did not
zero (weight or activation: the ``+ 1`` keeps either from being cancelled by the other's zero).
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
        self.width, self.bits, self.blocks = width, sig.bits, sig.blocks
        self.params = StubUnitParams(type(self).__name__.lower(), width, fmt, rows, stages, acc)
        super().__init__(sig)

    @property
    def latency(self) -> int:
        return 1

    def _load(self, m, stream, n, name):
        """A tile buffer of ``n`` beats of ``stream``: (loading rows, active rows, pending, last
        beat fires now); ``stream.ready`` is driven by the caller."""
        rb = len(stream.payload)
        load = [Signal(rb, name=f"{name}load{k}") for k in range(n)]
        act = [Signal(rb, name=f"{name}act{k}") for k in range(n)]
        lc = Signal(range(n + 1), name=f"{name}lc")
        pending = Signal(name=f"{name}pending")
        fire = stream.valid & stream.ready
        with m.If(fire):
            for k in range(n):
                with m.If(lc == k):
                    m.d.sync += load[k].eq(stream.payload)
            with m.If(lc == n - 1):
                m.d.sync += [lc.eq(0), pending.eq(1)]
            with m.Else():
                m.d.sync += lc.eq(lc + 1)
        return load, act, pending, fire & (lc == n - 1)

    def elaborate(self, platform):
        m = Module()
        D, b, nb = self.width, self.bits, self.blocks
        bufs = [(self.w, *self._load(m, self.w, D, ""))]
        if nb:
            bufs.append((self.ws, *self._load(m, self.ws, nb, "s")))
        complete = Cat(*(p for _, _, _, p, _ in bufs)).all()
        acc = Signal(32 * D)
        swap = self.x.payload.swap
        swap_fire = Signal()
        m.d.comb += [
            self.x.ready.eq(Mux(swap, complete, 1) & (~self.y.valid | self.y.ready)),
            swap_fire.eq(self.x.valid & self.x.ready & swap),
        ]
        for stream, _, _, pending, _ in bufs:
            m.d.comb += stream.ready.eq(~pending | swap_fire)
        with m.If(self.y.ready):
            m.d.sync += self.y.valid.eq(0)
        with m.If(swap_fire):
            for _, load, act, pending, last in bufs:
                m.d.sync += [a.eq(ld) for a, ld in zip(act, load, strict=True)]
                with m.If(~last):
                    m.d.sync += pending.eq(0)
        # (x, its code width, the operand rows, the offset added to both) of the dot product:
        # elements, then scales
        terms = [(self.x.payload.data, b, bufs[0][1], bufs[0][2], 0)]
        if nb:
            terms.append((self.x.payload.scales, 8, bufs[1][1], bufs[1][2], 1))
        with m.If(self.x.valid & self.x.ready):
            new = []
            for j in range(D):
                s = 0
                for xv, cb, load, act, off in terms:
                    for k in range(len(load)):
                        wkj = Mux(swap, load[k], act[k])[j * cb:(j + 1) * cb]
                        xk = xv[k * cb:(k + 1) * cb]
                        s = s + ((xk + off) * (wkj + off) if off else xk * wkj)
                new.append((Mux(self.x.payload.first, 0, acc[32 * j:32 * j + 32]) + s)[:32])
            m.d.sync += acc.eq(Cat(*new))
            with m.If(self.x.payload.last):
                m.d.sync += [self.y.valid.eq(1), self.y.payload.data.eq(Cat(*new))]
        return m


def stub_reference(x: np.ndarray, w: np.ndarray, xs: np.ndarray | None = None,
                   ws: np.ndarray | None = None) -> np.ndarray:
    """What the slice computes with stub units: ``(x @ W [+ (xs + 1) @ (ws + 1)]) mod 2**32`` on the
    codes (K order free; ``xs`` ``[M, Kp/B]`` and ``ws`` ``[Kp/B, N]`` the scale codes of a
    block-scaled format over the padded K, zero past K as the slice pads them)."""
    y = x.astype(np.uint64) @ w.astype(np.uint64)
    if xs is not None:
        y = y + (xs.astype(np.uint64) + 1) @ (ws.astype(np.uint64) + 1)
    return y % (1 << 32)
