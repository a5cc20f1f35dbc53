"""Fixed-point widths of the matrix unit's exact dot product, derived from the format table.

An element of format ``f`` is ``sig * 2**(e - m)`` with ``sig`` an ``m + 1``-bit integer (hidden bit
included, 0 for subnormals) and ``e`` in ``[f.emin, f.emax]``. A product of two elements is
``(sig_a * sig_b) * 2**(e_a + e_b - 2m)``: an integer of at most ``2m + 2`` bits shifted left by
``(e_a - emin) + (e_b - emin)`` above the fixed LSB ``2**(2 emin - 2m)``. Every product, and so every
D-term sum, is an exact integer multiple of that LSB; :class:`DotWidths` gives the widths.

An integer format (:class:`hw.formats.IntFormat`: INT8, INT4) is the case of one binade: ``m = b - 1``,
``e = emin = emax = m``, so an element is its two's-complement integer (``|n| <= 2**(b-1)``), the
shift is 0, the LSB is ``2**0`` and a product's magnitude is at most ``2**(2b-2)``: ``2b - 1`` bits.
"""

from dataclasses import dataclass

from ..formats import BLOCK_FORMATS, MATRIX_FORMATS, FloatFormat, get_format

__all__ = ["DotWidths", "dot_widths", "MU_WIDTHS", "ACC_MODES", "GUARD_BITS", "EXACT_SPAN_MAX",
           "scale_span", "exact_allowed", "default_acc", "DEFAULT_STAGES", "default_stages"]

#: Every width D a matrix unit can be generated at.
MU_WIDTHS = (8, 16, 32, 64, 128)
#: Accumulate modes of the matrix unit (docs/numerics.md): ``fp32`` rounds to FP32 on every beat,
#: ``exact`` accumulates exactly and rounds each K-long dot product once.
ACC_MODES = ("fp32", "exact")
#: Default guard bits of the ``exact`` mode: an accumulation may be up to 2**16 beats long.
GUARD_BITS = 16
#: Largest span (binades) of a block term's scale exponent ``e(sx) + e(sw)`` that the ``exact`` mode
#: takes: UE4M3's is 28; E8M0's, 508, would need an accumulator of 550+ bits per row and column.
EXACT_SPAN_MAX = 64


def scale_span(fmt: str) -> int:
    """Binades spanned by the scale exponent ``e(sx) + e(sw)`` of block-scaled ``fmt``'s block terms
    (0 for a per-tensor element format)."""
    b = BLOCK_FORMATS.get(fmt)
    if b is None:
        return 0
    lo, hi = b.scale_format.exp_range
    return 2 * (hi - lo)


def exact_allowed(fmt: str) -> bool:
    """Whether ``fmt`` has the ``exact`` accumulate mode: every format. A block-scaled format whose
    :func:`scale_span` is at most :data:`EXACT_SPAN_MAX` (NVFP4) sums on one fixed-point grid; one
    beyond it (OCP MX) in a window anchored at its largest term (:mod:`hw.mu.window`)."""
    return fmt in MATRIX_FORMATS or fmt in BLOCK_FORMATS


def default_acc(fmt: str) -> str:
    """The recommended accumulate mode of ``fmt``, the registry's default (``make synth``, the slice,
    the energy flow): ``exact`` (one rounding per dot product, and a per-beat loop that is one
    carry-save add, so it also clocks faster) wherever :func:`exact_allowed`, else ``fp32``."""
    return "exact" if exact_allowed(fmt) else "fp32"


#: The generator's usual column pipeline stages: the recommended unit's wherever
#: :func:`default_stages` names no other.
DEFAULT_STAGES = 2


def default_stages(width: int, fmt: str, acc: str) -> int:
    """Column pipeline stages of the recommended unit of ``(width, fmt, acc)``, the registry's default
    when ``stages`` is not given: in the ``exact`` mode the fewest that meet its clock goals (measured
    in ``reports/acc_clock_speed.md`` and ``reports/qor_comparison.md``), else
    :data:`DEFAULT_STAGES` (the ``fp32`` mode's single-cycle accumulate loop sets its clock whatever
    the stages).

    * ``exact``, a block-scaled format: 4. The first two go after the block trees and on the scaled
      block terms (OCP MX: the block-sum adder's stage and the window's input register), the third
      and fourth inside the trees. With 2 or 3 the activation register -> lanes -> the trees' first
      segment is one cycle: at D = 32, 6,101 ps for MXFP8 E4M3 and 5,816 ps for NVFP4 at both, 4,715
      and 4,346 ps with 4 (synthesized with the OSU 0.18 um liberty, our STA).
    * ``exact``, E4M3 at D = 128: 3 (with 2, activation register -> lanes -> the first tree segment
      is the longest path, ``reports/acc_clock_speed.md``).
    """
    if acc == "exact" and fmt in BLOCK_FORMATS:
        return 4
    if acc == "exact" and (fmt, width) == ("fp8_e4m3", 128):
        return 3
    return DEFAULT_STAGES


@dataclass(frozen=True)
class DotWidths:
    """Exact fixed-point widths of a D-term dot product of ``fmt`` elements.

    Attributes
    ----------
    fmt : FloatFormat
    width : int
        D, the number of terms.
    sig_bits : int
        ``m + 1``: element significand with the hidden bit.
    prod_sig_bits : int
        ``2m + 2``: bits of ``sig_a * sig_b`` (``2b - 1`` for a b-bit integer format).
    shift_max : int
        ``2 (emax - emin)``: largest left shift of a product significand above the LSB.
    lsb_exp : int
        ``2 emin - 2m``: weight exponent of the LSB of every product and of the sum.
    prod_bits : int
        P = ``2 (emax - emin) + 2m + 2``: a product magnitude is below ``2**P`` LSBs.
    sum_bits : int
        W = ``P + log2(D) + 1``: two's-complement bits of the exact sum.
    """

    fmt: FloatFormat
    width: int

    @property
    def sig_bits(self) -> int:
        return self.fmt.man_bits + 1  # hidden bit + stored mantissa

    @property
    def prod_sig_bits(self) -> int:
        if self.fmt.is_integer:  # |product| <= 2**(2b-2): (-2**(b-1))**2 is the largest
            return 2 * self.sig_bits - 1
        return 2 * self.sig_bits  # (m+1) x (m+1) multiply

    @property
    def ones_complement(self) -> bool:
        """Lanes hand the tree a negative product as the ones' complement of its magnitude and the
        tree adds the sign at the LSB (sign-magnitude floats); an integer format's lane hands over
        the two's-complement product itself (:mod:`hw.mu.lane`, :mod:`hw.mu.tree`)."""
        return not self.fmt.is_integer

    @property
    def shift_max(self) -> int:
        return 2 * (self.fmt.emax - self.fmt.emin)  # both exponents at emax

    @property
    def lsb_exp(self) -> int:
        return 2 * (self.fmt.emin - self.fmt.man_bits)  # min subnormal squared

    @property
    def prod_bits(self) -> int:
        return self.prod_sig_bits + self.shift_max  # largest significand at the largest shift

    @property
    def log2_width(self) -> int:
        return self.width.bit_length() - 1

    @property
    def sum_bits(self) -> int:
        return self.prod_bits + self.log2_width + 1  # D terms below 2^P each, plus a sign bit

    @property
    def sum_msb_exp(self) -> int:
        """Weight exponent of the top magnitude bit of the sum (bit ``W - 2``)."""
        return self.lsb_exp + self.sum_bits - 2


def dot_widths(fmt, width: int) -> DotWidths:
    """Widths for ``fmt`` (a name or a :class:`FloatFormat` among ``MATRIX_FORMATS``) and D terms.

    Raises
    ------
    ValueError
        If the format is not a matrix element format.
    """
    f = get_format(fmt) if isinstance(fmt, str) else fmt
    if not isinstance(f, FloatFormat) or f.name not in MATRIX_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(MATRIX_FORMATS)}, not {fmt!r}")
    return DotWidths(f, width)
