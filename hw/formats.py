"""The one floating-point format table, shared by the generators (hw) and the references (tb).

Every format the project touches is one :class:`FloatFormat` row of :data:`FORMATS`. A row gives the
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

import enum
from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["FloatFormat", "FORMATS", "CLASSES", "get_format", "MATRIX_FORMATS", "Specials", "Overflow",
           "BlockFormat", "BLOCK_FORMATS", "ScaleFormat", "SCALE_FORMATS", "get_block_format",
           "check_block_width"]

#: Classes returned by :meth:`FloatFormat.classify`, as small integers in this order.
CLASSES = ("zero", "subnormal", "normal", "inf", "nan")
ZERO, SUBNORMAL, NORMAL, INF, NAN = range(len(CLASSES))


class Specials(enum.Enum):
    """Special-value rule of a format: its Inf and NaN codes and what exponent field 0 holds.

    ======= ============================ ============================== ======================
    member  Inf codes                    NaN codes                      exponent field 0
    ======= ============================ ============================== ======================
    IEEE    all-ones exponent, m == 0    all-ones exponent, m != 0      zero and subnormals
    FN      none                         all-ones exponent and m        zero and subnormals
    NONE    none                         none                           zero and subnormals
    E8M0    none                         all-ones exponent (0xFF)       2^-bias (no zero)
    ======= ============================ ============================== ======================

    Each member's value is ``(has_inf, has_nan, nan_when_man_ones, has_zero)``; the attributes of
    the same names are read from it, so no caller compares rule names.
    """

    IEEE = (True, True, False, True)
    FN = (False, True, True, True)
    NONE = (False, False, False, True)
    E8M0 = (False, True, True, False)

    def __init__(self, has_inf, has_nan, nan_when_man_ones, has_zero):
        self.has_inf = has_inf
        self.has_nan = has_nan
        #: NaN is the all-ones mantissa under the all-ones exponent (else any non-zero mantissa)
        self.nan_when_man_ones = nan_when_man_ones
        #: exponent field 0 holds zero and the subnormals (else the smallest power of two)
        self.has_zero = has_zero

    def reserved_codes(self, man_bits: int) -> int:
        """How many magnitude codes at the top of the range are Inf/NaN, not finite values."""
        if not self.has_nan:
            return 0
        return 1 if self.nan_when_man_ones else 1 << man_bits  # one code, or the whole top binade

    def flags(self, exp_ones, man_zero, man_nonzero, man_ones):
        """``(is_inf, is_nan)`` of codes from their field tests, or None for a class the rule lacks.

        Works on numpy boolean arrays (:meth:`FloatFormat.classify`) and on Amaranth values (the
        generators' decode, :func:`hw.fp.unpack.decode_fields`) alike. ``man_nonzero`` is passed
        beside ``man_zero`` because hardware callers spell "mantissa not zero" in the form their
        netlist was built with (``~(m == 0)`` or ``m != 0``).
        """
        inf = exp_ones & man_zero if self.has_inf else None
        if not self.has_nan:
            return inf, None
        return inf, exp_ones & (man_ones if self.nan_when_man_ones else man_nonzero)


class Overflow(enum.Enum):
    """What :meth:`FloatFormat.encode` (and a rounder into the format) gives for a magnitude above
    the largest finite: ``INF`` +-Inf, ``NAN`` the NaN code, ``SATURATE`` the largest finite with the
    value's sign."""

    INF = "inf"
    NAN = "nan"
    SATURATE = "saturate"


@dataclass(frozen=True)
class FloatFormat:
    """One floating-point format.

    Parameters
    ----------
    name : str
        Name used on the command line and in reports (``fp8_e4m3``).
    exp_bits, man_bits : int
        Exponent and mantissa (stored fraction) field widths.
    bias : int
        Exponent bias.
    signed : bool
        Whether a sign bit is present (E8M0 has none).
    specials : Specials
        Which codes are Inf/NaN and what exponent field 0 holds.
    overflow : Overflow
        What :meth:`encode` gives for a value above the largest finite.
    ml_dtype : type or None
        The ``ml_dtypes`` / numpy type with the same encoding (the test oracle).
    ties_away : bool
        :meth:`encode` rounds ties away from zero (E8M0, as ``ml_dtypes``) instead of to even.
    matrix : bool
        The matrix unit takes this format as its element format (:data:`MATRIX_FORMATS`).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    signed: bool
    specials: Specials
    overflow: Overflow
    ml_dtype: type | None
    ties_away: bool = False
    matrix: bool = False

    def __post_init__(self):
        if not isinstance(self.specials, Specials) or not isinstance(self.overflow, Overflow):
            raise TypeError(f"{self.name}: specials must be a Specials and overflow an Overflow member, "
                            f"not {self.specials!r} and {self.overflow!r}")
        if self.overflow is Overflow.INF and not self.specials.has_inf \
                or self.overflow is Overflow.NAN and not self.specials.has_nan:
            raise ValueError(f"{self.name}: overflow {self.overflow.name} needs a format with that code; "
                             f"{self.specials.name} has none (use Overflow.SATURATE)")

    # -- widths and constants used by generators -------------------------------------------------
    @property
    def bits(self) -> int:
        """Total width of a code."""
        return int(self.signed) + self.exp_bits + self.man_bits

    @property
    def exp_max_field(self) -> int:
        """All-ones exponent field."""
        return (1 << self.exp_bits) - 1

    @property
    def has_subnormals(self) -> bool:
        """Exponent field 0 encodes subnormals (and zero)."""
        return self.specials.has_zero

    @property
    def has_inf(self) -> bool:
        return self.specials.has_inf

    @property
    def has_nan(self) -> bool:
        return self.specials.has_nan

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal (also the scale of subnormals)."""
        return (1 if self.has_subnormals else 0) - self.bias

    @property
    def max_code(self) -> int:
        """Magnitude code (sign cleared) of the largest finite value."""
        return (1 << (self.exp_bits + self.man_bits)) - 1 - self.specials.reserved_codes(self.man_bits)

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest finite value."""
        return (self.max_code >> self.man_bits) - self.bias

    @property
    def max_finite(self) -> float:
        return float(self.decode(np.array([self.max_code]))[0])

    @property
    def nan_code(self) -> int | None:
        """The canonical (positive, quiet) NaN code, or None."""
        if not self.has_nan:
            return None
        if self.specials.nan_when_man_ones:
            return (1 << (self.exp_bits + self.man_bits)) - 1
        return (self.exp_max_field << self.man_bits) | (1 << (self.man_bits - 1))

    @property
    def inf_code(self) -> int | None:
        """The +Inf code, or None."""
        return self.exp_max_field << self.man_bits if self.has_inf else None

    @property
    def overflow_code(self) -> int:
        """Magnitude code :meth:`encode` gives above the largest finite (sign added unless NaN)."""
        return {Overflow.INF: self.inf_code, Overflow.NAN: self.nan_code,
                Overflow.SATURATE: self.max_code}[self.overflow]

    @property
    def sign_bit(self) -> int:
        return (1 << (self.bits - 1)) if self.signed else 0

    @property
    def is_integer(self) -> bool:
        """A two's-complement integer row (:class:`IntFormat`), not a floating-point one."""
        return False

    @property
    def lsb(self) -> int:
        """Exponent of the smallest step of the format: every finite value is an integer multiple
        of ``2**lsb`` (the smallest subnormal; 0 for an integer format)."""
        return self.emin - self.man_bits

    @property
    def is_binary32(self) -> bool:
        """The format is IEEE binary32 itself (float32 inputs encode to their own bits)."""
        return (self.exp_bits, self.man_bits, self.bias, self.specials) == (8, 23, 127, Specials.IEEE)

    # -- numpy helpers ---------------------------------------------------------------------------
    def _codes(self, codes) -> np.ndarray:
        c = np.asarray(codes)
        if c.dtype.kind not in "ui":
            raise TypeError(f"{self.name} codes must be an integer array, not {c.dtype}")
        c = c.astype(np.int64)
        if c.size and (c.min() < 0 or c.max() >= (1 << self.bits)):
            raise ValueError(f"{self.name} codes must lie in [0, {(1 << self.bits) - 1}]")
        return c

    def fields(self, codes):
        """Split codes into (sign, exponent field, mantissa field) int64 arrays."""
        c = self._codes(codes)
        man = c & ((1 << self.man_bits) - 1)
        exp = (c >> self.man_bits) & self.exp_max_field
        sign = (c >> (self.bits - 1)) & 1 if self.signed else np.zeros_like(c)
        return sign, exp, man

    def classify(self, codes) -> np.ndarray:
        """Class of each code as an index into :data:`CLASSES`."""
        sign, exp, man = self.fields(codes)
        cls = np.full(exp.shape, NORMAL, dtype=np.int8)
        if self.has_subnormals:
            cls[(exp == 0) & (man == 0)] = ZERO
            cls[(exp == 0) & (man != 0)] = SUBNORMAL
        inf, nan = self.specials.flags(exp == self.exp_max_field, man == 0, man != 0,
                                       man == (1 << self.man_bits) - 1)
        if inf is not None:
            cls[inf] = INF
        if nan is not None:
            cls[nan] = NAN
        return cls

    def decode(self, codes) -> np.ndarray:
        """Exact float64 value of each code (NaN codes give ``nan``, Inf codes ``+-inf``)."""
        sign, exp, man = self.fields(codes)
        cls = self.classify(codes)
        implicit = np.where((exp == 0) & self.has_subnormals, 0, 1 << self.man_bits)
        scale = np.maximum(exp, 1 if self.has_subnormals else 0) - self.bias - self.man_bits
        mag = np.ldexp((implicit + man).astype(np.float64), scale.astype(np.int64))
        mag = np.where(cls == INF, np.inf, mag)
        mag = np.where(cls == NAN, np.nan, mag)
        return np.where(sign == 1, -mag, mag)

    def encode(self, values) -> np.ndarray:
        """Encode float32 values (others are first cast to float32) into codes.

        Rounds to nearest, ties to even (ties away from zero if :attr:`ties_away`); out-of-range
        values and +-Inf follow :attr:`overflow`; subnormals are produced where the format has them,
        and values below the smallest subnormal round to (signed) zero. A format without zero
        (E8M0) gives its NaN code for zero, negative and NaN inputs, as ``ml_dtypes`` does.

        Raises
        ------
        ValueError
            For NaN into a format without NaN (E2M1, E3M2, E2M3).
        """
        x = np.asarray(values, dtype=np.float32)
        if self.is_binary32:
            return x.view(np.uint32).astype(np.int64)
        bits = x.view(np.uint32).astype(np.int64)
        sign = (bits >> 31) & 1
        e32 = (bits >> 23) & 0xFF
        m32 = bits & 0x7FFFFF
        is_nan = (e32 == 0xFF) & (m32 != 0)
        is_inf = (e32 == 0xFF) & (m32 == 0)
        sig = np.where(e32 == 0, m32, m32 | (1 << 23))
        e_lsb = np.maximum(e32, 1) - 127 - 23  # value = sig * 2^e_lsb
        msb = np.zeros_like(sig)
        nz = sig > 0
        msb[nz] = np.floor(np.log2(sig[nz].astype(np.float64))).astype(np.int64)
        # guard against log2 rounding up exactly below a power of two
        msb = np.where(nz & ((1 << np.clip(msb, 0, 40)) > sig), msb - 1, msb)
        te = np.maximum(msb + e_lsb, self.emin)  # exponent of the result's quantum grid
        shift = np.clip(te - self.man_bits - e_lsb, -40, 26)
        q = np.where(shift <= 0, sig << np.clip(-shift, 0, 40), sig >> np.clip(shift, 0, 40))
        sh = np.clip(shift, 1, 40)
        rem = sig & ((1 << sh) - 1)
        half = 1 << (sh - 1)
        if self.ties_away:
            up = rem >= half
        else:
            up = (rem > half) | ((rem == half) & ((q & 1) == 1))
        q = q + np.where((shift > 0) & up, 1, 0)
        carry = q >> (self.man_bits + 1)
        q = np.where(carry > 0, q >> 1, q)
        te = te + carry
        normal = q >= (1 << self.man_bits)
        if self.has_subnormals:
            exp_f = np.where(normal, te + self.bias, 0)
        else:
            exp_f = te + self.bias
        man_f = q & ((1 << self.man_bits) - 1)
        mag = (exp_f << self.man_bits) | man_f
        mag = np.where(sig == 0, 0, mag)
        over = (mag > self.max_code) | is_inf
        mag = np.where(over, self.overflow_code, mag)
        if not self.specials.has_zero:
            mag = np.where(sig == 0, 0, np.maximum(mag, 0))  # no zero: clamp to 2^-bias
            bad = is_nan | (sign == 1) | ((e32 == 0) & (m32 == 0))
            return np.where(bad, self.nan_code, mag).astype(np.int64)
        if is_nan.any():
            if self.nan_code is None:
                raise ValueError(f"{self.name} has no NaN: cannot encode NaN inputs; "
                                 "clean the data or pick a format with NaN")
            mag = np.where(is_nan, self.nan_code, mag)
        return ((sign << (self.bits - 1)) | mag).astype(np.int64)

    def negate(self, codes) -> np.ndarray:
        """Codes of the negated values (the sign bit flipped)."""
        return self._codes(codes) ^ self.sign_bit

    def integers(self, codes) -> np.ndarray:
        """Exact signed integers ``n`` with value ``n * 2**lsb`` per code (0 for Inf and NaN codes)."""
        sign, exp, man = self.fields(codes)
        cls = self.classify(codes)
        hidden = np.where((exp == 0) & self.has_subnormals, 0, 1 << self.man_bits)
        mag = (hidden + man) << np.maximum(exp - 1 if self.has_subnormals else exp, 0)
        finite = (cls != INF) & (cls != NAN)
        return np.where(finite, np.where(sign == 1, -mag, mag), 0).astype(np.int64)

    def to_ml(self, codes) -> np.ndarray:
        """View codes as the ``ml_dtypes`` array (for cross-checks; sub-byte formats in a byte)."""
        storage = np.uint16 if self.bits == 16 else (np.uint32 if self.bits == 32 else np.uint8)
        return self._codes(codes).astype(storage).view(self.ml_dtype)


@dataclass(frozen=True)
class IntFormat(FloatFormat):
    """A two's-complement integer element format (INT8, INT4): every code is a finite integer.

    As a row of the table it is the fixed-point corner of a float: no exponent field, one binade,
    so the value of a code is its integer ``n = sig * 2**(e - man_bits)`` with ``e = emin = emax =
    man_bits`` and ``|n| <= 2**(bits-1)``; the generators' widths (:mod:`hw.mu.numerics`) follow from
    that. The encoding differs from a sign-magnitude float: ``fields`` gives (sign bit, 0, the low
    bits), and :meth:`integers` / :meth:`decode` read the code as two's complement. No Inf, NaN or
    subnormals; :meth:`encode` rounds to nearest, ties to even, and saturates to
    ``[-2**(bits-1), 2**(bits-1) - 1]`` (NaN is an error). Build rows with :meth:`row`.
    """

    @classmethod
    def row(cls, name: str, bits: int, ml_dtype, *, matrix: bool = True) -> "IntFormat":
        """An integer row of ``bits`` bits (``ml_dtype``: the numpy / ``ml_dtypes`` integer type)."""
        return cls(name, 0, bits - 1, 2 - bits, True, Specials.NONE, Overflow.SATURATE, ml_dtype,
                   matrix=matrix)

    @property
    def is_integer(self) -> bool:
        return True

    @property
    def emin(self) -> int:
        return self.man_bits

    @property
    def emax(self) -> int:
        return self.man_bits

    @property
    def has_subnormals(self) -> bool:
        return False

    @property
    def max_code(self) -> int:
        return (1 << self.man_bits) - 1

    @property
    def min_int(self) -> int:
        """The most negative value, ``-2**(bits-1)`` (its magnitude is one above :attr:`max_finite`)."""
        return -(1 << self.man_bits)

    def integers(self, codes) -> np.ndarray:
        c = self._codes(codes)
        return np.where(c >= 1 << self.man_bits, c - (1 << self.bits), c).astype(np.int64)

    def negate(self, codes) -> np.ndarray:
        """Codes of the negated values (two's complement).

        Raises
        ------
        ValueError
            For the most negative code, whose negation is out of range.
        """
        n = self.integers(codes)
        if (n == self.min_int).any():
            raise ValueError(f"{self.name}: {self.min_int} has no negation in range; "
                             "leave the most negative code out")
        return (-n) & ((1 << self.bits) - 1)

    def classify(self, codes) -> np.ndarray:
        return np.where(self._codes(codes) == 0, ZERO, NORMAL).astype(np.int8)

    def decode(self, codes) -> np.ndarray:
        return self.integers(codes).astype(np.float64)

    def encode(self, values) -> np.ndarray:
        x = np.asarray(values, dtype=np.float32).astype(np.float64)
        if np.isnan(x).any():
            raise ValueError(f"{self.name} has no NaN: cannot encode NaN inputs; "
                             "clean the data or pick a format with NaN")
        n = np.clip(np.rint(x), self.min_int, self.max_code).astype(np.int64)  # rint: ties to even
        return n & ((1 << self.bits) - 1)

    def to_ml(self, codes) -> np.ndarray:
        """View codes as the numpy / ``ml_dtypes`` integer array (INT4 in the low half of a byte)."""
        return self._codes(codes).astype(np.uint8).view(self.ml_dtype)


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
@dataclass(frozen=True)
class ScaleFormat:
    """An 8-bit block-scale code: above the fields, bits that must be 0 (else the code is NaN); an
    unsigned exponent field of ``exp_bits``; a mantissa field of ``man_bits`` (bits 0..).

    The value of a code is ``m * 2**e``: ``m`` the integer significand (the mantissa field with an
    implicit 1 above it, which is 0 for an exponent field of 0 when the format has subnormals) and
    ``e = max(E, 1 if subnormals else E) - bias - man_bits`` for the exponent field ``E``. Codes in
    ``nan_codes`` are NaN too.

    Parameters
    ----------
    name : str
    exp_bits, man_bits : int
    bias : int
    subnormals : bool
    nan_codes : tuple of int
    ml_dtype : type or None
        The ``ml_dtypes`` type whose codes have these values where the bits above the fields are 0
        (the test oracle).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    subnormals: bool
    nan_codes: tuple = ()
    ml_dtype: type | None = None

    bits = 8

    @property
    def sig_bits(self) -> int:
        """Bits of the integer significand ``m``."""
        return self.man_bits + 1

    @property
    def exp_range(self) -> tuple:
        """``(smallest, largest)`` exponent ``e`` of a code that is not NaN."""
        _, e, nan = self.split(np.arange(1 << self.bits))
        return int(e[~nan].min()), int(e[~nan].max())

    def split(self, codes: np.ndarray):
        """Codes (int64 in [0, 255]) -> ``(m, e, nan)``; NaN codes give ``m = e = 0``."""
        c = codes.astype(np.int64)
        nan = (c >> (self.exp_bits + self.man_bits)) != 0
        for n in self.nan_codes:
            nan = nan | (c == n)
        exp, man = (c >> self.man_bits) & ((1 << self.exp_bits) - 1), c & ((1 << self.man_bits) - 1)
        hidden = (exp != 0) if self.subnormals else np.ones_like(exp, dtype=bool)
        m = man | (hidden.astype(np.int64) << self.man_bits)
        e = (np.maximum(exp, 1) if self.subnormals else exp) - self.bias - self.man_bits
        return np.where(nan, 0, m), np.where(nan, 0, e), nan


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
