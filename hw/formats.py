"""The one floating-point format table, shared by the generators (hw) and the references (tb).

Every format the project touches is one :class:`FloatFormat` row of :data:`FORMATS`. A row gives the
field widths and special-value rules that the generators turn into constants, and numpy helpers that
the testbenches use as references:

* :meth:`FloatFormat.decode`: codes -> exact float64 values (NaN as ``nan``),
* :meth:`FloatFormat.encode`: float32 values -> codes, round to nearest even (E8M0: ties away),
* :meth:`FloatFormat.classify`: codes -> one of :data:`CLASSES` per element,
* :meth:`FloatFormat.fields`: codes -> (sign, exponent field, mantissa field).

``tb/test_formats.py`` proves decode and encode bit-for-bit equal to ``ml_dtypes`` on every code of
every format of 16 bits or fewer, and on float32 inputs around every rounding boundary.

Format rules (OCP 8-bit FP v1.0, OCP MX v1.0, IEEE 754):

========== ==== ==== ======= ======================= ==================== =====================
name       bits bias max     infinities              NaN codes            overflow on encode
========== ==== ==== ======= ======================= ==================== =====================
fp8_e4m3   8    7    448     none                    S.1111.111           NaN
fp8_e5m2   8    15   57344   S.11111.00              S.11111.xx, xx != 0  +-Inf
fp4_e2m1   4    1    6       none                    none                 saturate to +-6
bf16       16   127  ~3.4e38 S.11111111.0000000      exp all ones, m != 0 +-Inf
fp32       32   127  ~3.4e38 IEEE                    IEEE                 +-Inf
e8m0       8    127  2^127   none (unsigned, no 0)   0xFF                 NaN
========== ==== ==== ======= ======================= ==================== =====================
"""

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["FloatFormat", "FORMATS", "CLASSES", "get_format", "MATRIX_FORMATS"]

#: Classes returned by :meth:`FloatFormat.classify`, as small integers in this order.
CLASSES = ("zero", "subnormal", "normal", "inf", "nan")
ZERO, SUBNORMAL, NORMAL, INF, NAN = range(len(CLASSES))


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
    specials : str
        ``"ieee"`` (all-ones exponent: Inf if mantissa 0 else NaN), ``"fn"`` (no Inf; only the
        all-ones code is NaN), ``"none"`` (every code is finite), ``"e8m0"`` (0xFF is NaN, no zero,
        no subnormals).
    overflow : str
        What :meth:`encode` gives for a value above the largest finite: ``"inf"``, ``"nan"`` or
        ``"saturate"``.
    ml_dtype : type or None
        The ``ml_dtypes`` / numpy type with the same encoding (the test oracle).
    """

    name: str
    exp_bits: int
    man_bits: int
    bias: int
    signed: bool
    specials: str
    overflow: str
    ml_dtype: type | None

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
        return self.specials != "e8m0"

    @property
    def has_inf(self) -> bool:
        return self.specials == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.specials in ("ieee", "fn", "e8m0")

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal (also the scale of subnormals)."""
        return (1 if self.has_subnormals else 0) - self.bias

    @property
    def max_code(self) -> int:
        """Magnitude code (sign cleared) of the largest finite value."""
        if self.specials == "ieee":
            return ((self.exp_max_field - 1) << self.man_bits) | ((1 << self.man_bits) - 1)
        if self.specials in ("fn", "e8m0"):
            return (1 << (self.exp_bits + self.man_bits)) - 2
        return (1 << (self.exp_bits + self.man_bits)) - 1

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
        if self.specials == "ieee":
            return (self.exp_max_field << self.man_bits) | (1 << (self.man_bits - 1))
        if self.specials == "fn":
            return (1 << (self.exp_bits + self.man_bits)) - 1
        if self.specials == "e8m0":
            return 0xFF
        return None

    @property
    def inf_code(self) -> int | None:
        """The +Inf code, or None."""
        return self.exp_max_field << self.man_bits if self.has_inf else None

    @property
    def sign_bit(self) -> int:
        return (1 << (self.bits - 1)) if self.signed else 0

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
        top = exp == self.exp_max_field
        if self.specials == "ieee":
            cls[top & (man == 0)] = INF
            cls[top & (man != 0)] = NAN
        elif self.specials in ("fn", "e8m0"):
            cls[top & (man == (1 << self.man_bits) - 1)] = NAN
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

        Rounds to nearest, ties to even (E8M0 rounds ties away from zero, as ``ml_dtypes``);
        out-of-range values follow :attr:`overflow`; subnormals are produced where the format has
        them, and values below the smallest subnormal round to (signed) zero.

        Raises
        ------
        ValueError
            For NaN into a format without NaN (E2M1), or a negative/zero value into E8M0 is
            *not* an error: it gives the NaN code as ``ml_dtypes`` does.
        """
        x = np.asarray(values, dtype=np.float32)
        if self.name == "fp32":
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
        if self.specials == "e8m0":
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
        if self.overflow == "inf":
            mag = np.where(over, self.inf_code, mag)
        elif self.overflow == "nan":
            mag = np.where(over, self.nan_code, mag)
        else:
            mag = np.where(over, self.max_code, mag)
        if self.specials == "e8m0":
            mag = np.where(sig == 0, 0, np.maximum(mag, 0))  # no zero: clamp to 2^-127
            bad = is_nan | (sign == 1) | ((e32 == 0) & (m32 == 0))
            return np.where(bad, self.nan_code, mag).astype(np.int64)
        if is_nan.any():
            if self.nan_code is None:
                raise ValueError(f"{self.name} has no NaN: cannot encode NaN inputs; "
                                 "clean the data or pick a format with NaN")
            mag = np.where(is_nan, self.nan_code, mag)
        return ((sign << (self.bits - 1)) | mag).astype(np.int64)

    def to_ml(self, codes) -> np.ndarray:
        """View codes as the ``ml_dtypes`` array (for cross-checks)."""
        storage = np.uint16 if self.bits == 16 else (np.uint32 if self.bits == 32 else np.uint8)
        return self._codes(codes).astype(storage).view(self.ml_dtype)


FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("fp8_e4m3", 4, 3, 7, True, "fn", "nan", ml_dtypes.float8_e4m3fn),
        FloatFormat("fp8_e5m2", 5, 2, 15, True, "ieee", "inf", ml_dtypes.float8_e5m2),
        FloatFormat("fp4_e2m1", 2, 1, 1, True, "none", "saturate", ml_dtypes.float4_e2m1fn),
        FloatFormat("bf16", 8, 7, 127, True, "ieee", "inf", ml_dtypes.bfloat16),
        FloatFormat("fp32", 8, 23, 127, True, "ieee", "inf", np.float32),
        FloatFormat("e8m0", 8, 0, 127, False, "e8m0", "nan", ml_dtypes.float8_e8m0fnu),
    )
}

#: Element formats a matrix unit accepts.
MATRIX_FORMATS = ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1")


def get_format(name: str) -> FloatFormat:
    """Look a format up by name, with an error listing the known names."""
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r}; known formats: {', '.join(FORMATS)}") from None
