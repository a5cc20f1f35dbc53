"""The bit-sliced evaluator against Python integers on random inputs (signed and unsigned adds,
subtraction, logic, reductions, slices and concatenations) and its errors."""

import numpy as np
import pytest
from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tb.lib.bitslice import evaluate, pack_planes, unpack_planes


class _Mix(wiring.Component):
    def __init__(self):
        super().__init__({"a": In(signed(9)), "b": In(7), "add": Out(signed(11)), "sub": Out(12),
                          "lg": Out(7), "red": Out(2), "cat": Out(8)})

    def elaborate(self, platform):
        m = Module()
        t = Signal(signed(10))
        m.d.comb += [t.eq(self.a + self.b), self.add.eq(t),
                     self.sub.eq(self.b - self.a),
                     self.lg.eq((self.a[:7] & ~self.b) | (self.a[2:9] ^ self.b)),
                     self.red.eq(Cat(self.b.any(), self.b.all())),
                     self.cat.eq(Cat(self.b[4:], self.a[-1], self.b[:4]))]
        return m


def _wrap(v, bits):
    return v & ((1 << bits) - 1)


def test_against_integers():
    rng = np.random.default_rng(1)
    n = 64 * 40
    a = rng.integers(-256, 256, n)
    b = rng.integers(0, 128, n)
    b[:64] = 127                       # every bit set: the all-reduction
    got = evaluate(_Mix(), {"a": pack_planes(_wrap(a, 9).astype(np.uint64), 9),
                            "b": pack_planes(b.astype(np.uint64), 7)},
                   ("add", "sub", "lg", "red", "cat"))
    got = {k: unpack_planes(v).astype(np.int64) for k, v in got.items()}
    au = _wrap(a, 9)
    assert (got["add"] == _wrap(a + b, 11)).all()
    assert (got["sub"] == _wrap(b - a, 12)).all()
    assert (got["lg"] == ((au & 0x7F & ~b) | ((au >> 2) ^ b)) & 0x7F).all()
    assert (got["red"] == (b != 0) + 2 * (b == 127)).all()
    assert (got["cat"] == (b >> 4) | ((au >> 8) << 3) | ((b & 15) << 4)).all()


def test_pack_roundtrip_and_errors():
    v = np.arange(128, dtype=np.uint64) * np.uint64(0x0101010101)
    assert (unpack_planes(pack_planes(v, 64)) == v).all()
    with pytest.raises(ValueError, match="multiple of 64"):
        pack_planes(np.arange(10, dtype=np.uint64), 4)

    class Reg(wiring.Component):
        def __init__(self):
            super().__init__({"a": In(1), "q": Out(1)})

        def elaborate(self, platform):
            m = Module()
            m.d.sync += self.q.eq(self.a)
            return m

    with pytest.raises(ValueError, match="without pipeline registers"):
        evaluate(Reg(), {"a": pack_planes(np.zeros(64, np.uint64), 1)}, ("q",))
