"""The row types of the format table (:mod:`hw.formats`): what a format *is*, apart from which
formats exist.

* :class:`Specials` and :class:`Overflow`: a format's special-value rule and its overflow rule;
* :class:`FloatFormat`: a floating-point format (field widths, bias, rules, ``ml_dtypes`` oracle) with
  the generators' constants and the numpy decode/encode/classify the testbenches use;
* :class:`IntFormat`: a two's-complement integer format, the one-binade case of a float;
* :class:`ScaleFormat`: an 8-bit block-scale code (E8M0, UE4M3).

The rows themselves (``FORMATS``, ``SCALE_FORMATS``, ``BLOCK_FORMATS``) and the lookups are in
:mod:`hw.formats`, the one table every generator and reference reads.
"""

import enum
from dataclasses import dataclass

import numpy as np

__all__ = ["CLASSES", "Specials", "Overflow", "FloatFormat", "IntFormat", "ScaleFormat"]

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
