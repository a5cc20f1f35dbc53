"""The matrix unit's interface as one object: its ports, payload layouts and counters.

:class:`MatrixUnitSignature` is the source of truth for ``docs/mu_interface.md``: the unit
(:class:`hw.mu.matrix_unit.MatrixUnit`), the slice that drives units (:class:`hw.slice.slice.Slice`),
stand-in units and the testbenches all take the layouts and counter names from it, and host code
packs and unpacks payload integers through it (:meth:`MatrixUnitSignature.pack_x`,
:meth:`MatrixUnitSignature.unpack_y`).
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..formats import BLOCK_FORMATS, MATRIX_FORMATS, get_block_format, get_format
from ..payload import pack, unpack
from .numerics import ACC_MODES, MU_WIDTHS

__all__ = ["MatrixUnitSignature", "y_layout", "COUNTERS", "EXACT_COUNTERS", "COUNTER_BITS",
           "ACC_MODES"]

#: Width of every counter port.
COUNTER_BITS = 48
#: Event counters, in port order; port ``cnt_<name>`` (exact definitions in docs/mu_interface.md).
COUNTERS = ("cycles", "w_beats", "x_beats", "y_beats", "stall_tile", "stall_x", "stall_y", "macs")
#: Counters only the ``exact`` accumulate mode has, after :data:`COUNTERS`: results of accumulations
#: longer than the accumulator's range (their values are NaN).
EXACT_COUNTERS = ("acc_overflow",)


def _check_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")


def _row_field(rows: int) -> dict:
    # no row field at R = 1: a zero-width field would still add a wire to the Verilog
    return {"row": (rows - 1).bit_length()} if rows > 1 else {}


def y_layout(width: int, rows: int) -> data.StructLayout:
    """The ``y`` payload of a D-wide unit with R rows (it does not depend on the element format):
    ``data`` (D FP32 codes, y[j] at ``[j*32 +: 32]``), then ``row`` (only if R > 1)."""
    return data.StructLayout({"data": width * 32, **_row_field(rows)})


class MatrixUnitSignature(wiring.Signature):
    """Ports of a D x D matrix unit with element format ``fmt`` and R accumulator rows.

    Seen from the unit (a component with this signature):

    Parameters
    ----------
    width : int
        D, a power of two from 8 to 128.
    fmt : str
        Element format of ``w`` and ``x``, one of :data:`hw.formats.MATRIX_FORMATS`, or a
        block-scaled format (:data:`hw.formats.BLOCK_FORMATS`; D must be a multiple of its B and
        ``acc`` must be ``fp32``).
    rows : int
        R >= 1.
    acc : str
        Accumulate mode, one of :data:`ACC_MODES`; ``exact`` adds the :data:`EXACT_COUNTERS` ports.

    Members
    -------
    w : In(stream.Signature(w_layout))
        Weight rows: W[k, 0..D-1], element j at ``[j*b +: b]``.
    ws : In(stream.Signature(ws_layout))
        Block-scaled formats only: weight-scale rows, D/B beats per tile.
    x : In(stream.Signature(x_layout))
        Activation rows with flags ``swap``, ``first``, ``last`` and the row index.
    y : Out(stream.Signature(y_layout))
        FP32 result rows with the row index.
    cnt_cycles, cnt_w_beats, ... : Out(COUNTER_BITS)
        One port per name of :attr:`counters`.

    Raises
    ------
    TypeError
        A parameter of the wrong type.
    ValueError
        A parameter out of range; the message names the parameter, the value and what is allowed.
    """

    def __init__(self, width: int, fmt: str, rows: int = 1, acc: str = "fp32"):
        _check_int("width", width)
        if width not in MU_WIDTHS:
            raise ValueError(f"width must be a power of two in 8..128 "
                             f"({', '.join(map(str, MU_WIDTHS))}), not {width}")
        if not isinstance(fmt, str):
            raise TypeError(f"fmt must be a format name (one of {', '.join(MATRIX_FORMATS)}), "
                            f"not {fmt!r}")
        if fmt not in MATRIX_FORMATS and fmt not in BLOCK_FORMATS:
            raise ValueError(f"fmt must be one of {', '.join(MATRIX_FORMATS + tuple(BLOCK_FORMATS))}, "
                             f"not {fmt!r}")
        self._block = get_block_format(fmt) if fmt in BLOCK_FORMATS else None
        if self._block is not None:
            self._block.check_width(width)
        _check_int("rows", rows)
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows}")
        if acc not in ACC_MODES:
            raise ValueError(f"acc must be one of {', '.join(ACC_MODES)}, not {acc!r}")
        self._width, self._fmt, self._rows, self._acc = width, fmt, rows, acc
        super().__init__({
            "w": In(stream.Signature(self.w_layout)),
            "x": In(stream.Signature(self.x_layout)),
            **({"ws": In(stream.Signature(self.ws_layout))} if self._block is not None else {}),
            "y": Out(stream.Signature(self.y_layout)),
            **{name: Out(COUNTER_BITS) for name in self.counter_ports},
        })

    @property
    def width(self) -> int:
        return self._width

    @property
    def fmt(self) -> str:
        return self._fmt

    @property
    def rows(self) -> int:
        return self._rows

    @property
    def acc(self) -> str:
        return self._acc

    @property
    def block(self):
        """The :class:`hw.formats.BlockFormat` of a block-scaled ``fmt``, else None."""
        return self._block

    @property
    def blocks(self) -> int:
        """Scale blocks per row, D / B (0 for a per-tensor format)."""
        return 0 if self._block is None else self._width // self._block.block

    @property
    def element(self) -> str:
        """The element format's name (``fmt`` itself for a per-tensor format)."""
        return self._fmt if self._block is None else self._block.element

    @property
    def bits(self) -> int:
        """Bits per element, b."""
        return get_format(self.element).bits

    @property
    def row_bits(self) -> int:
        """Bits of the row index in ``x`` and ``y`` (``ceil(log2 R)``; 0 for R = 1)."""
        return (self._rows - 1).bit_length()

    @property
    def w_layout(self):
        """``w`` payload: D elements of b bits, element j at ``[j*b +: b]``."""
        return unsigned(self._width * self.bits)

    @property
    def x_layout(self) -> data.StructLayout:
        """``x`` payload, least significant first: ``data`` (D elements of b bits), ``swap``,
        ``first``, ``last``, ``row`` (only if R > 1); a block-scaled format has ``scales`` (D/B codes of 8
        bits, block i's at ``[8*i +: 8]`` of the field) between ``data`` and ``swap``."""
        scales = {"scales": 8 * self.blocks} if self._block is not None else {}
        return data.StructLayout({"data": self._width * self.bits, **scales, "swap": 1, "first": 1,
                                  "last": 1, **_row_field(self._rows)})

    @property
    def ws_layout(self):
        """``ws`` payload (block-scaled formats only): D weight-scale codes of 8 bits, column j's at
        ``[j*8 +: 8]``; beat i of a tile scales rows ``iB .. iB+B-1``."""
        return unsigned(8 * self._width)

    @property
    def y_layout(self) -> data.StructLayout:
        """``y`` payload: :func:`y_layout`."""
        return y_layout(self._width, self._rows)

    counter_bits = COUNTER_BITS

    @property
    def counters(self) -> tuple:
        """Counter names in port order: :data:`COUNTERS`, then :data:`EXACT_COUNTERS` in the
        ``exact`` mode."""
        return COUNTERS + (EXACT_COUNTERS if self._acc == "exact" else ())

    @property
    def counter_ports(self) -> tuple:
        """Port names of the counters, ``cnt_<name>`` in :attr:`counters` order."""
        return tuple(f"cnt_{name}" for name in self.counters)

    def pack_x(self, data: int, *, swap=0, first=0, last=0, row=0, scales=0) -> int:
        """The ``x__payload`` integer of one beat (``data`` already packed, element k at
        ``[k*b +: b]``; ``scales`` packed, block i's code at ``[8*i +: 8]``, block-scaled formats
        only; ``row`` must be 0 when R = 1).

        Raises
        ------
        ValueError
            A value that does not fit its field, or a nonzero row at R = 1.
        """
        flags = dict(data=data, swap=int(swap), first=int(first), last=int(last))
        if self._block is not None or int(scales):
            flags["scales"] = int(scales)
        if self._rows > 1 or int(row):
            flags["row"] = int(row)
        return pack(self.x_layout, **flags)

    def unpack_y(self, payload: int) -> tuple:
        """``(row, data)`` of a ``y__payload`` integer (``data``: D FP32 codes as one integer;
        ``row`` 0 when R = 1)."""
        f = unpack(self.y_layout, payload)
        return f.get("row", 0), f["data"]

    def __eq__(self, other):
        return (type(other) is type(self) and (self._width, self._fmt, self._rows, self._acc)
                == (other._width, other._fmt, other._rows, other._acc))

    def __hash__(self):
        return hash((type(self), self._width, self._fmt, self._rows, self._acc))

    def __repr__(self):
        return (f"MatrixUnitSignature(width={self._width}, fmt={self._fmt!r}, rows={self._rows}, "
                f"acc={self._acc!r})")
