"""The matrix unit's interface object (hw/mu/interface.py) and payload packing (hw/payload.py).

Bit positions are written out by hand from docs/mu_interface.md (x: codes, then swap, first, last,
row; y: FP32 codes, then row), so a change of layout fails here, not only in simulation.
"""

import pytest
from amaranth.hdl import Module, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from hw.formats import MATRIX_FORMATS
from hw.mu.interface import COUNTERS, MatrixUnitSignature, y_layout
from hw.mu.matrix_unit import MatrixUnit
from hw.payload import pack, unpack
from hw.slice.slice import Slice
from tb.slice.stub_unit import StubUnit

pytestmark = pytest.mark.quick


def _silent(c):
    c._MustUse__silence = True
    return c


def test_x_and_y_bit_positions():
    sig = MatrixUnitSignature(8, "fp8_e4m3", 4)
    data_bits = 0x0102030405060708
    word = sig.pack_x(data_bits, swap=1, first=0, last=1, row=3)
    assert word == data_bits | (1 << 64) | (1 << 66) | (3 << 67)
    assert sig.x_layout.size == 64 + 3 + 2
    y = (3 << 256) | (0xDEADBEEF << 32)
    assert sig.unpack_y(y) == (3, 0xDEADBEEF << 32)
    fp4 = MatrixUnitSignature(16, "fp4_e2m1", 1)
    assert fp4.pack_x(0xF, last=1) == 0xF | (1 << 66)   # D*b = 64; no row field at R = 1
    assert fp4.unpack_y(1 << 511) == (0, 1 << 511)
    assert y_layout(16, 1) == fp4.y_layout


def test_bad_payload_values_are_errors():
    sig = MatrixUnitSignature(8, "fp8_e4m3", 1)
    with pytest.raises(ValueError, match="no field \\['row'\\]"):
        sig.pack_x(0, row=1)
    with pytest.raises(ValueError, match="does not fit"):
        sig.pack_x(1 << 64)
    with pytest.raises(ValueError, match="does not fit"):
        MatrixUnitSignature(8, "fp8_e4m3", 3).pack_x(0, row=4)


def test_payload_helpers_nested_and_signed():
    lay = data.StructLayout({"a": 4, "b": signed(6), "c": data.ArrayLayout(3, 2)})
    word = pack(lay, a=9, b=-3, c=[5, 2])
    assert word == 9 | ((-3 & 0x3F) << 4) | (5 << 10) | (2 << 13)
    assert unpack(lay, word) == {"a": 9, "b": -3, "c": [5, 2]}
    with pytest.raises(ValueError, match="-33 does not fit"):
        pack(lay, b=-33)


@pytest.mark.parametrize("fmt", MATRIX_FORMATS)
def test_unit_and_stub_share_the_signature(fmt):
    sig = MatrixUnitSignature(8, fmt, 1)
    unit = _silent(MatrixUnit(width=8, fmt=fmt))
    stub = _silent(StubUnit(width=8, fmt=fmt))
    assert unit.signature == sig == stub.signature
    assert unit.signature != MatrixUnitSignature(8, fmt, 2)
    ports = [name for name, _ in unit.signature.members.items()]
    assert ports == ["w", "x", "y"] + [f"cnt_{c}" for c in COUNTERS]
    assert all(len(getattr(unit, f"cnt_{c}")) == 48 for c in COUNTERS)
    assert len(unit.w.payload) == 8 * sig.bits
    assert unit.y.payload.shape() == sig.y_layout


def test_exact_mode_signature():
    """The exact accumulate mode keeps every fp32 port and adds ``cnt_acc_overflow`` after them; the
    mode is part of the interface (the slice refuses units of the other mode)."""
    sig = MatrixUnitSignature(8, "fp8_e4m3", 2, "exact")
    unit = _silent(MatrixUnit(width=8, fmt="fp8_e4m3", rows=2, acc="exact"))
    stub = _silent(StubUnit(width=8, fmt="fp8_e4m3", acc="exact"))
    assert unit.signature == sig != MatrixUnitSignature(8, "fp8_e4m3", 2)
    assert stub.signature == MatrixUnitSignature(8, "fp8_e4m3", 1, "exact")
    assert [n for n, _ in sig.members.items()] == (
        ["w", "x", "y"] + [f"cnt_{c}" for c in COUNTERS] + ["cnt_acc_overflow"])
    assert sig.x_layout == MatrixUnitSignature(8, "fp8_e4m3", 2).x_layout
    with pytest.raises(ValueError, match="acc must be one of fp32, exact"):
        MatrixUnitSignature(8, "fp8_e4m3", 1, "bf16")
    with pytest.raises(TypeError, match="signature"):
        Slice(width=8, acc="exact",
              unit=lambda acc, **kw: _silent(MatrixUnit(acc="fp32", **kw)))


def test_signature_parameter_errors():
    with pytest.raises(ValueError, match="width must be a power of two in 8..128"):
        MatrixUnitSignature(12, "fp8_e4m3")
    with pytest.raises(ValueError, match="fmt must be one of"):
        MatrixUnitSignature(8, "fp16")
    with pytest.raises(TypeError, match="rows must be an integer"):
        MatrixUnitSignature(8, "fp8_e4m3", 1.0)


class _NarrowUnit(wiring.Component):
    """A unit with the wrong x payload (no flags): the slice must refuse it."""

    def __init__(self, *, width, fmt, rows, stages, acc, **_):
        self.params = None
        super().__init__({"w": In(stream.Signature(width * 8)), "x": In(stream.Signature(width * 8)),
                          "y": Out(stream.Signature(width * 32))})

    def elaborate(self, platform):
        return Module()


def test_slice_refuses_a_unit_with_another_interface():
    with pytest.raises(TypeError, match="must have the signature MatrixUnitSignature"):
        Slice(unit=_NarrowUnit)
