"""The one floating-point format table, shared by the generators (hw) and the references (tb).

Every format the project touches is one row of :data:`FORMATS` (:class:`FloatFormat`, or
:class:`IntFormat` for the integers; the row types live in :mod:`hw.format_types`). A row gives the
field widths and its rules (:class:`Specials`: which codes are Inf/NaN and whether exponent field 0
holds zero and subnormals; :class:`Overflow`: what encoding a too-large value gives), from which the
generators take their constants, and numpy helpers that the testbenches use as references:

* :meth:`FloatFormat.decode`: codes -> exact float64 values (NaN as ``nan``),
* :meth:`FloatFormat.encode`: float32 values -> codes, round to nearest even (E8M0: ties away),
* :meth:`FloatFormat.classify`: codes -> one of :data:`CLASSES` per element,
* :meth:`FloatFormat.fields`: codes -> (sign, exponent field, mantissa field).

Rows with ``matrix=True`` are the matrix unit's element formats (:data:`MATRIX_FORMATS`, in table
order); the registry, the generators, the bit-true model, the quantizer and the tile corpus all read
that tuple, so a new element format is one row here.

``tb/test_formats.py`` proves decode and encode bit-for-bit equal to ``ml_dtypes`` on every code of
every format of 16 bits or fewer, and on float32 inputs around every rounding boundary.

Format rules (OCP 8-bit FP v1.0, OCP MX v1.0, IEEE 754):

========== ==== ==== ======= ======================= ==================== ===================== ======
name       bits bias max     infinities              NaN codes            overflow on encode    matrix
========== ==== ==== ======= ======================= ==================== ===================== ======
fp8_e4m3   8    7    448     none                    S.1111.111           NaN                   yes
fp8_e5m2   8    15   57344   S.11111.00              S.11111.xx, xx != 0  +-Inf                 yes
fp4_e2m1   4    1    6       none                    none                 saturate to +-6       yes
fp6_e3m2   6    3    28      none                    none                 saturate to +-28      yes
fp6_e2m3   6    1    7.5     none                    none                 saturate to +-7.5     yes
bf16       16   127  ~3.4e38 S.11111111.0000000      exp all ones, m != 0 +-Inf                 no
fp32       32   127  ~3.4e38 IEEE                    IEEE                 +-Inf                 no
e8m0       8    127  2^127   none (unsigned, no 0)   0xFF                 NaN                   no
========== ==== ==== ======= ======================= ==================== ===================== ======

The formats without Inf or NaN (E2M1, E3M2, E2M3: OCP MX element formats) saturate on encode: a
value beyond the largest finite, and +-Inf, give the largest finite of that sign. This is the
conversion OCP MX v1.0 prescribes for them and what ``ml_dtypes`` (the oracle) does; NaN has no code
and is an error. All of them keep subnormals (exponent field 0).

The block-scaled formats (OCP MX ``mxfp8_e4m3`` .. ``mxfp4_e2m1``, NVIDIA ``nvfp4``) are
:class:`BlockFormat` rows of :data:`BLOCK_FORMATS`: each names its element format (a row above), its
block size and its scale format (E8M0, or UE4M3 for NVFP4), with the scale decode rules and the
width rule (D a multiple of B). They are not in :data:`MATRIX_FORMATS` (they are not element formats);
``MatrixUnit(fmt=...)`` composes the block-scale axis into the one unit for them (:mod:`hw.mu.scales`).
"""

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .format_types import CLASSES, FloatFormat, IntFormat, Overflow, ScaleFormat, Specials

__all__ = ["FloatFormat", "IntFormat", "FORMATS", "CLASSES", "get_format", "MATRIX_FORMATS", "Specials",
           "Overflow", "BlockFormat", "BLOCK_FORMATS", "ScaleFormat", "SCALE_FORMATS", "get_block_format",
           "check_block_width"]

_S, _O = Specials, Overflow
FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("fp8_e4m3", 4, 3, 7, True, _S.FN, _O.NAN, ml_dtypes.float8_e4m3fn, matrix=True),
        FloatFormat("fp8_e5m2", 5, 2, 15, True, _S.IEEE, _O.INF, ml_dtypes.float8_e5m2, matrix=True),
        FloatFormat("fp4_e2m1", 2, 1, 1, True, _S.NONE, _O.SATURATE, ml_dtypes.float4_e2m1fn,
                    matrix=True),
        FloatFormat("fp6_e3m2", 3, 2, 3, True, _S.NONE, _O.SATURATE, ml_dtypes.float6_e3m2fn,
                    matrix=True),
        FloatFormat("fp6_e2m3", 2, 3, 1, True, _S.NONE, _O.SATURATE, ml_dtypes.float6_e2m3fn,
                    matrix=True),
        IntFormat.row("int8", 8, np.int8),
        IntFormat.row("int4", 4, ml_dtypes.int4),
        FloatFormat("bf16", 8, 7, 127, True, _S.IEEE, _O.INF, ml_dtypes.bfloat16),
        FloatFormat("fp32", 8, 23, 127, True, _S.IEEE, _O.INF, np.float32),
        FloatFormat("e8m0", 8, 0, 127, False, _S.E8M0, _O.NAN, ml_dtypes.float8_e8m0fnu,
                    ties_away=True),
    )
}

#: Element formats a matrix unit accepts: the rows marked ``matrix``, in table order.
MATRIX_FORMATS = tuple(name for name, f in FORMATS.items() if f.matrix)


def get_format(name: str) -> FloatFormat:
    """Look a format up by name, with an error listing the known names."""
    try:
        return FORMATS[name]
    except KeyError:
        hint = " (a block-scaled format: use get_block_format)" if name in BLOCK_FORMATS else ""
        raise ValueError(f"unknown format {name!r}{hint}; known formats: {', '.join(FORMATS)}") from None


# --------------------------------------------------------------------------------------------------
# Block-scaled formats (OCP MX v1.0, NVFP4)
# --------------------------------------------------------------------------------------------------
#: Scale formats of the block-scaled rows: 8-bit codes, one row each. E8M0 (OCP MX): code ``c`` is
#: ``2^(c - 127)``, ``0xFF`` NaN; UE4M3 (NVFP4): the E4M3 value of the code, the sign bit set or the
#: E4M3 NaN pattern ``0x7F`` NaN.
SCALE_FORMATS: dict[str, ScaleFormat] = {
    f.name: f
    for f in (
        ScaleFormat("e8m0", exp_bits=8, man_bits=0, bias=127, subnormals=False, nan_codes=(0xFF,),
                    ml_dtype=ml_dtypes.float8_e8m0fnu),
        ScaleFormat("ue4m3", exp_bits=4, man_bits=3, bias=7, subnormals=True, nan_codes=(0x7F,),
                    ml_dtype=ml_dtypes.float8_e4m3fn),
    )
}


@dataclass(frozen=True)
class BlockFormat:
    """One block-scaled format: element codes sharing one scale code per block of ``block`` elements.

    The value of element ``k`` of block ``i`` is ``scale(sc_i) * element(c_k)`` (times the per-tensor
    FP32 scale for NVFP4, which is applied outside the matrix unit). Blocks run along K, the
    reduction dimension of a matrix product. The bit-true contract of the unit on these formats is
    ``docs/numerics.md`` section 7; the ports are in ``docs/mu_interface.md``.

    Scale rules (every scale code is 8 bits):

    * ``e8m0`` (OCP MX): code ``c`` is ``2^(c - 127)``; ``0xFF`` is NaN. No zero, no sign.
    * ``ue4m3`` (NVFP4): the E4M3 value of the code (``fp8_e4m3`` row: zero, subnormals, largest
      448); a code with the sign bit set, or the E4M3 NaN pattern ``0x7F``, is NaN.

    A NaN scale makes its whole block NaN.

    Parameters
    ----------
    name : str
        Name used on the command line and in reports (``mxfp8_e4m3``).
    element : str
        Element format: a :data:`MATRIX_FORMATS` row.
    block : int
        Elements per scale (B).
    scale : str
        Scale format, one of :data:`SCALE_FORMATS`.
    tensor_scale : bool
        The format also carries one FP32 scale per tensor (NVFP4).
    """

    name: str
    element: str
    block: int
    scale: str
    tensor_scale: bool = False

    def __post_init__(self):
        if self.element not in MATRIX_FORMATS:
            raise ValueError(f"{self.name}: element must be one of {', '.join(MATRIX_FORMATS)}, "
                             f"not {self.element!r}")
        if self.scale not in SCALE_FORMATS:
            raise ValueError(f"{self.name}: scale must be one of {', '.join(SCALE_FORMATS)}, "
                             f"not {self.scale!r}")

    @property
    def element_format(self) -> FloatFormat:
        return FORMATS[self.element]

    @property
    def scale_format(self) -> ScaleFormat:
        return SCALE_FORMATS[self.scale]

    @property
    def bits(self) -> int:
        """Element width b (the scale codes are 8 bits each)."""
        return self.element_format.bits

    scale_bits = 8

    def scale_split(self, codes):
        """Scale codes -> ``(m, e, nan)`` int64/bool arrays with value ``m * 2**e`` where not NaN.

        ``m`` is the integer significand (E8M0: 1; UE4M3: 0..15, with the implicit bit for
        normals) and ``e`` the power of two of its unit. NaN codes give ``m = e = 0``.

        Raises
        ------
        ValueError
            For codes outside ``[0, 255]``.
        """
        c = np.asarray(codes)
        if c.dtype.kind not in "ui":
            raise TypeError(f"{self.name} scale codes must be an integer array, not {c.dtype}")
        c = c.astype(np.int64)
        if c.size and (c.min() < 0 or c.max() > 0xFF):
            raise ValueError(f"{self.name} scale codes must lie in [0, 255]")
        return self.scale_format.split(c)

    def scale_decode(self, codes) -> np.ndarray:
        """Exact float64 value of scale codes (NaN codes give ``nan``)."""
        m, e, nan = self.scale_split(codes)
        return np.where(nan, np.nan, np.ldexp(m.astype(np.float64), e))

    def check_width(self, width: int) -> int:
        """Check that a unit of ``width`` (D) lanes holds whole blocks; return D / B.

        Raises
        ------
        ValueError
            If D is not a positive multiple of B, naming the widths that work.
        """
        if not isinstance(width, int) or width < self.block or width % self.block:
            raise ValueError(f"{self.name} has blocks of {self.block} elements along K, so the unit "
                             f"width D must be a multiple of {self.block} (D = {self.block}, "
                             f"{2 * self.block}, ...), not {width!r}; pick such a width or a "
                             f"per-tensor format ({', '.join(MATRIX_FORMATS)})")
        return width // self.block


#: The block-scaled formats: OCP MX v1.0 (B = 32, E8M0 scales) and NVFP4 (B = 16, UE4M3 scales
#: plus a per-tensor FP32 scale). The matrix unit composes its block-scale blocks in for them
#: (:mod:`hw.mu.scales`).
BLOCK_FORMATS: dict[str, BlockFormat] = {
    b.name: b
    for b in (
        BlockFormat("mxfp8_e4m3", "fp8_e4m3", 32, "e8m0"),
        BlockFormat("mxfp8_e5m2", "fp8_e5m2", 32, "e8m0"),
        BlockFormat("mxfp6_e3m2", "fp6_e3m2", 32, "e8m0"),
        BlockFormat("mxfp6_e2m3", "fp6_e2m3", 32, "e8m0"),
        BlockFormat("mxfp4_e2m1", "fp4_e2m1", 32, "e8m0"),
        BlockFormat("nvfp4", "fp4_e2m1", 16, "ue4m3", tensor_scale=True),
    )
}


def get_block_format(name: str) -> BlockFormat:
    """Look a block-scaled format up by name, with an error listing the known names."""
    try:
        return BLOCK_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown block-scaled format {name!r}; known: {', '.join(BLOCK_FORMATS)} "
                         f"(per-tensor element formats: {', '.join(MATRIX_FORMATS)})") from None


def check_block_width(fmt: str, width: int) -> int:
    """D / B for block-scaled format ``fmt`` on a unit of width D (see :meth:`BlockFormat.check_width`)."""
    return get_block_format(fmt).check_width(width)
