"""Payload integers <-> field values, through an Amaranth layout (for testbenches and host code).

A port's bits are what its ``data.Layout`` says: these helpers read field offsets and widths from
the layout itself, so a testbench never repeats a bit position. Values are plain Python integers
(``x__payload`` as a simulator returns it). Nested layouts take and give nested dicts (struct) or
lists (array).

Examples
--------
>>> from amaranth.lib import data
>>> lay = data.StructLayout({"addr": 8, "beats": 4})
>>> pack(lay, addr=3, beats=2)
515
>>> unpack(lay, 515)
{'addr': 3, 'beats': 2}
"""

from amaranth.hdl import Shape
from amaranth.lib import data

__all__ = ["pack", "unpack"]


def _width(shape) -> int:
    return Shape.cast(shape).width


def _pack(shape, value, path: str) -> int:
    if isinstance(shape, data.ArrayLayout):
        if len(value) != shape.length:
            raise ValueError(f"{path}: {shape.length} elements expected, not {len(value)}")
        w = _width(shape.elem_shape)
        return sum(_pack(shape.elem_shape, v, f"{path}[{i}]") << (i * w) for i, v in enumerate(value))
    if isinstance(shape, data.Layout):
        if not isinstance(value, dict):
            raise TypeError(f"{path}: a dict of fields expected, not {value!r}")
        names = {name for name, _ in shape}
        extra = set(value) - names
        if extra:
            raise ValueError(f"{path}: no field {sorted(extra)}; fields: {', '.join(sorted(names))}")
        word = 0
        for name, fld in shape:
            word |= _pack(fld.shape, value.get(name, 0), f"{path}.{name}") << fld.offset
        return word
    s = Shape.cast(shape)
    v = int(value)
    lo, hi = (-(1 << (s.width - 1)), 1 << (s.width - 1)) if s.signed else (0, 1 << s.width)
    if s.width and not lo <= v < hi or not s.width and v != 0:
        raise ValueError(f"{path}: {v} does not fit {s}")
    return v & ((1 << s.width) - 1)


def pack(layout, /, **fields) -> int:
    """The payload integer of ``layout`` with the given field values (missing fields are 0).

    Raises
    ------
    ValueError
        A field that does not exist or a value that does not fit its field.
    """
    return _pack(layout, fields, type(layout).__name__)


def unpack(layout, value: int):
    """Field values of the payload integer ``value`` of ``layout``: a dict (struct), a list
    (array) or an int (plain shape; signed shapes give negative values)."""
    value = int(value)
    if isinstance(layout, data.ArrayLayout):
        w = _width(layout.elem_shape)
        return [unpack(layout.elem_shape, value >> (i * w)) for i in range(layout.length)]
    if isinstance(layout, data.Layout):
        return {name: unpack(fld.shape, value >> fld.offset) for name, fld in layout}
    s = Shape.cast(layout)
    v = value & ((1 << s.width) - 1)
    return v - (1 << s.width) if s.signed and s.width and v >> (s.width - 1) else v
