"""Registry of the generators the CLI and the flows know: name, options, top module, variant name.

Each :class:`Design` names a factory by import path (so importing the registry stays cheap) and
declares its options once; ``python -m hw gen``, ``make synth`` and the sweeps all read them here.
"""

import importlib
from dataclasses import dataclass, field, replace

from .formats import BLOCK_FORMATS, MATRIX_FORMATS
from .mu.numerics import ACC_MODES, DEFAULT_STAGES, GUARD_BITS, MU_WIDTHS, default_acc, default_stages

__all__ = ["Option", "Design", "DESIGNS", "get_design", "OptionError", "power_of_two", "MU_WIDTHS",
           "STUDY_WIDTHS", "ACC_MODES"]

#: The widths the cross-width study, the real-tile corpus and the reports compare.
STUDY_WIDTHS = (32, 64, 128)


class OptionError(ValueError):
    """A design option has a bad value; the message names the option, the value and what is allowed."""


def power_of_two(lo: int, hi: int):
    """Option parser for a power of two in ``[lo, hi]``."""

    def parse(text):
        try:
            v = int(text)
        except (TypeError, ValueError):
            raise ValueError(f"{text!r} is not an integer") from None
        if v < lo or v > hi or v & (v - 1):
            allowed = ", ".join(str(1 << k) for k in range(lo.bit_length() - 1, hi.bit_length()))
            raise ValueError(f"{v} is not a power of two in [{lo}, {hi}]; allowed: {allowed}")
        return v

    parse.__name__ = f"power of two in [{lo}, {hi}]"
    return parse


def int_at_least(lo: int):
    """Option parser for an integer >= ``lo``."""

    def parse(text):
        try:
            v = int(text)
        except (TypeError, ValueError):
            raise ValueError(f"{text!r} is not an integer") from None
        if v < lo:
            raise ValueError(f"{v} is below the minimum {lo}")
        return v

    parse.__name__ = f"integer >= {lo}"
    return parse


def on_off(text):
    """Option parser for a boolean given as on/off (also 1/0, true/false)."""
    t = str(text).lower()
    if t in ("on", "1", "true", "yes"):
        return True
    if t in ("off", "0", "false", "no"):
        return False
    raise ValueError(f"{text!r} is not on/off")


@dataclass(frozen=True)
class Option:
    """One generator option.

    Parameters
    ----------
    name : str
        Keyword argument of the generator (``width``); the CLI flag is ``--width`` and the make
        variable is the upper-case name (``WIDTH``).
    default : object
        Default value (already parsed).
    parse : callable
        str -> value; raises ``ValueError`` with a reason.
    choices : tuple or None
        Allowed values, if a closed set.
    help : str
        One line for ``--help``.
    tag : callable or None
        value -> short string for the variant name, or None to leave it out of the name.
    derive : callable or None
        The value when the option is not given, from the other options' parsed values (a dict);
        None: ``default``. ``default`` is then the usual value, shown in ``--help``.
    """

    name: str
    default: object
    parse: object = str
    choices: tuple | None = None
    help: str = ""
    tag: object = None
    derive: object = None

    def convert(self, text):
        if self.choices is not None and text not in self.choices:
            raise OptionError(f"--{self.name.replace('_', '-')}: invalid value {text!r}; "
                              f"allowed: {', '.join(map(str, self.choices))}")
        try:
            return self.parse(text) if isinstance(text, str) else text
        except ValueError as e:
            raise OptionError(f"--{self.name.replace('_', '-')}: {e}") from None


@dataclass(frozen=True)
class Design:
    """A generator known to the CLI and flows.

    Parameters
    ----------
    name : str
        Design name (``bf16_mul``); also the default top module name.
    factory : str
        ``"module.path:ClassName"`` of the ``wiring.Component`` generator.
    help : str
        One line for ``--help``.
    options : tuple of Option
    top : str or None
        Verilog top module name (defaults to ``name``).
    config : str or None
        ``"module.path:ClassName"`` of the design's typed parameter value (a frozen dataclass whose
        fields are the options and whose construction validates their combination), or None.
    """

    name: str
    factory: str
    help: str
    options: tuple = field(default_factory=tuple)
    top: str | None = None
    config: str | None = None

    @property
    def top_name(self) -> str:
        return self.top or self.name

    def params(self, given: dict | None = None) -> dict:
        """Defaults overlaid with ``given`` (strings are parsed); unknown keys are an error."""
        given = dict(given or {})
        known = {o.name: o for o in self.options}
        for k in given:
            if k not in known:
                raise OptionError(f"{self.name} has no option {k!r}; options: {', '.join(known) or 'none'}")
        parsed = {k: (o.convert(given[k]) if k in given else o.default) for k, o in known.items()}
        for _ in range(2):  # twice: a derived value may read another derived one (stages <- acc)
            for k, o in known.items():
                if o.derive is not None and k not in given:
                    parsed[k] = o.derive(parsed)
        self.typed(parsed)  # a combination that does not exist is refused here, with its reason
        return parsed

    def typed(self, params: dict):
        """The typed, validated parameter value of parsed ``params`` (:attr:`config`), or None for a
        design without one.

        Raises
        ------
        OptionError
            If the combination does not exist (the message names the option and what is allowed).
        """
        if self.config is None:
            return None
        mod, cls = self.config.split(":")
        try:
            return getattr(importlib.import_module(mod), cls)(**params)
        except (TypeError, ValueError) as e:
            raise OptionError(f"{self.name}: {e}") from None

    def variant(self, params: dict) -> str:
        """Name of this parameter set, e.g. ``bf16_mul-booth4-s0`` or ``mu-w64-fp8_e4m3``."""
        parts = [self.name]
        for o in self.options:
            if o.tag is not None:
                t = o.tag(params[o.name])
                if t:
                    parts.append(t)
        return "-".join(parts)

    def build(self, params: dict | None = None):
        """Construct the generator with parsed parameters."""
        parsed = self.params(params)
        mod, cls = self.factory.split(":")
        return getattr(importlib.import_module(mod), cls)(**parsed)

    def emit(self, params: dict | None = None, top: str | None = None):
        """Elaborate to a :class:`hw.hier.Netlist` (marked blocks emitted once)."""
        from . import hier

        return hier.emit(self.build(params), top or self.top_name)


def bf16_cuts(text):
    """Option parser for the BF16 multiplier's register placement (:func:`hw.fp.bf16_mul.parse_cuts`)."""
    from .fp.bf16_mul import parse_cuts

    return parse_cuts(text)


bf16_cuts.__name__ = "register placement"

_BF16_OPTIONS = (
    Option("arch", "booth4", choices=("behavioral", "booth4"),
           help="significand multiplier architecture", tag=lambda v: v),
    Option("stages", 0, int_at_least(0), help="pipeline stages (0: combinational ports a, b, p)",
           tag=lambda v: f"s{v}"),
    Option("subnormals", True, on_off, help="gradual underflow (on) or flush-to-zero (off)",
           tag=lambda v: "" if v else "ftz"),
    Option("cuts", "auto", bf16_cuts,
           help="register positions: auto, or `stages` of in,pp,tree1,tree2,rows,raw,out joined by +",
           tag=lambda v: "" if v == "auto" else "cut_" + v.replace("+", "_")),
)

#: The matrix unit's options (:class:`hw.mu.matrix_unit.MatrixUnitParams` validates their
#: combinations); the slice takes the same ones for its units.
_MU_OPTIONS = (
    Option("width", 64, power_of_two(MU_WIDTHS[0], MU_WIDTHS[-1]),
           help="D: array width (power of two, 8..128)", tag=lambda v: f"w{v}"),
    Option("fmt", "fp8_e4m3", choices=MATRIX_FORMATS + tuple(BLOCK_FORMATS),
           help="element format (per-tensor, or block-scaled: OCP MX, NVFP4)", tag=lambda v: v),
    Option("rows", 1, int_at_least(1), help="accumulator rows (batch rows)",
           tag=lambda v: "" if v == 1 else f"r{v}"),
    Option("stages", DEFAULT_STAGES, int_at_least(0),
           help="extra pipeline stages in the column (default: the recommended unit's, 2; 4 for a "
                "block-scaled format and 3 for E4M3 at D = 128 in the exact mode)",
           tag=lambda v: "" if v == DEFAULT_STAGES else f"s{v}",
           derive=lambda p: default_stages(p["width"], p["fmt"], p["acc"])),
    Option("tree", "dadda", choices=("dadda", "words"),
           help="column sum: bit-level Dadda tree (synthesis) or word adders (fast Verilator)",
           tag=lambda v: "" if v == "dadda" else f"t{v}"),
    Option("acc", "exact", choices=ACC_MODES,
           help="accumulate: exact (one rounding per dot product, the default; OCP MX sums in a "
                "window anchored at the largest term) or fp32 (one rounding per beat; the default "
                "with loop 2)",
           tag=lambda v: "" if v == "fp32" else "xacc",
           derive=lambda p: "fp32" if p["loop"] != 1 else default_acc(p["fmt"])),
    Option("guard_bits", GUARD_BITS, int_at_least(1),
           help="exact mode: accumulations up to 2**guard_bits beats long",
           tag=lambda v: "" if v == GUARD_BITS else f"g{v}"),
    Option("loop", 1, int_at_least(1),
           help="fp32 mode: accumulate loop over 1 or 2 cycles (2: shorter critical path, "
                "a beat of the same row as the previous one waits a cycle)",
           tag=lambda v: "" if v == 1 else f"l{v}"),
    Option("gate", False, on_off,
           help="clock gates of liberty cells (inverter, latch, AND) on every register group that "
                "loads only in some cycles: buffer rows, pipeline cuts, accumulator, skid registers, "
                "counters (docs/mu_interface.md, Clock gating)",
           tag=lambda v: "cg" if v else ""),
    Option("isolate", False, on_off,
           help="operand isolation: a zero product (zero weight or activation) hands the column "
                "tree +0 whatever the operands' signs, so zero lanes hold the tree's inputs",
           tag=lambda v: "oi" if v else ""),
)
_MU = {o.name: o for o in _MU_OPTIONS}

DESIGNS: dict[str, Design] = {
    d.name: d
    for d in (
        Design("bf16_mul", "hw.fp.bf16_mul:Bf16Multiplier", "IEEE bfloat16 multiplier", _BF16_OPTIONS),
        Design("bf16_bank", "hw.fp.bf16_bank:Bf16Bank",
               "N BF16 multipliers with a registered reduction (hierarchical flow validation)",
               _BF16_OPTIONS + (Option("lanes", 8, power_of_two(1, 64), help="multipliers",
                                       tag=lambda v: f"n{v}"),)),
        Design("mu", "hw.mu.matrix_unit:MatrixUnit", "DxD FP8/FP6/FP4 matrix unit with FP32 accumulation",
               _MU_OPTIONS, config="hw.mu.matrix_unit:MatrixUnitParams"),
        Design("slice", "hw.slice.slice:Slice",
               "matrix units + scratchpad + HBM feed port, run by matmul commands", (
                   Option("units", 2, int_at_least(1), help="matrix units (1..64)",
                          tag=lambda v: f"u{v}"),
                   replace(_MU["width"], default=8, help="D: each unit's width"),
                   _MU["fmt"],
                   Option("spad_bytes", 16384, int_at_least(1),
                          help="scratchpad bytes (words of 4*D bytes)", tag=lambda v: f"sp{v}"),
                   Option("feed_bytes", None, int_at_least(1),
                          help="B: HBM read-data bytes per beat (default: what the units consume)",
                          tag=lambda v: "" if v is None else f"f{v}"),
                   *(replace(_MU[n], help=f"the units' option: {_MU[n].help}")
                     for n in ("rows", "stages", "acc", "tree", "guard_bits", "loop")),
                   Option("spad_macro", True, on_off,
                          help="scratchpad as a black-box SRAM placeholder (on; area modelled) or a "
                               "behavioral memory (off)", tag=lambda v: "" if v else "mem"),
               )),
    )
}


def get_design(name: str) -> Design:
    """Look a design up, with an error listing the known designs."""
    try:
        return DESIGNS[name]
    except KeyError:
        raise OptionError(f"unknown design {name!r}; designs: {', '.join(DESIGNS)}") from None
