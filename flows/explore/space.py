"""The search space of a design-space exploration, read from the design registry (:mod:`hw.designs`).

Every option of the design becomes a dimension: a closed set of choices (``choices`` in the
registry, on/off options, powers of two) is categorical; an open integer (``integer >= lo``) is an
integer range ``[lo, default + INT_SPAN]``. :data:`DEFAULT_FIXED` pins the options a search does
not vary by default (the width and format the issue compares at, the numerics contract of the
baseline); a small space file narrows or widens it::

    # space.toml (or the same keys in JSON)
    fixed = {width = 32, fmt = "fp8_e4m3"}       # options held at one value
    [choices]                                    # options searched over these values
    stages = [1, 2, 3, 4]
    tree = ["dadda", "words"]
    [constraints]                                # optional budgets (feasible = all met)
    max_area_um2 = 2.5e7
    max_delay_ps = 30000

Options named in neither table keep their default space; ``fixed`` wins over ``choices``.

Some options only make sense for some values of others (:data:`CONDITIONAL`): the BF16
multiplier's register placement ``cuts`` must place exactly ``stages`` registers, and only
``booth4`` has positions inside the Booth tree. Such an option is suggested after the ones it
depends on, from the values valid for them (by default all of :func:`hw.fp.bf16_mul.placements`;
a ``choices`` list is intersected with those, and the first valid value, e.g. ``auto``, is kept
when nothing else is left), as an Optuna parameter named after them
(``cuts[arch=booth4,stages=2]``), so each parameter has a fixed distribution and TPE models each
context on its own.
"""

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hw.designs import OptionError, get_design, on_off

__all__ = ["Space", "Dim", "load_space", "DEFAULT_FIXED", "INT_SPAN", "CONSTRAINTS", "SpaceError"]

#: Options a search holds fixed unless a space file says otherwise: the matrix unit at D = 32 E4M3
#: (wider units cost minutes per verification build); the exact mode's guard bits (they set the
#: longest accumulation the unit supports, which a quick regression cannot tell apart); the BF16
#: multiplier's subnormal support (flush-to-zero is another numerics contract than the baseline's).
DEFAULT_FIXED = {
    "mu": {"width": 32, "fmt": "fp8_e4m3", "guard_bits": 16},
    "bf16_mul": {"subnormals": True},
}
#: Upper end of an open integer option's default range: ``default + INT_SPAN``.
INT_SPAN = 4
#: Budgets a space file may set: name -> the objective value it bounds (see :mod:`.objectives`).
CONSTRAINTS = {"max_area_um2": "area_um2", "max_delay_ps": "delay"}


def _bf16_placements(arch, stages) -> tuple:
    from hw.fp.bf16_mul import placements

    return placements(arch, stages)


def _mu_loops(acc) -> tuple:
    return (1, 2) if acc == "fp32" else (1,)   # the two-cycle loop is an fp32-mode option


#: design -> option -> (the options it depends on, ``f(*their values) -> valid values``, the
#: default first).
CONDITIONAL = {"bf16_mul": {"cuts": (("arch", "stages"), _bf16_placements)},
               "mu": {"loop": (("acc",), _mu_loops)}}


class SpaceError(ValueError):
    """A space file or a search request is wrong; the message says what and how to fix it."""


@dataclass(frozen=True)
class Dim:
    """One searched option: ``values`` (categorical) or the inclusive integer range ``lo..hi``.

    A conditional dimension (``parents`` not empty) takes, given its parents' values ``p``, the
    values ``valid(*p)`` (restricted to ``values`` when those are given).
    """

    name: str
    values: tuple = ()
    lo: int | None = None
    hi: int | None = None
    parents: tuple = ()
    valid: object = None

    def choices(self, chosen: dict) -> tuple:
        """The values open given the already ``chosen`` options (a conditional dimension's)."""
        if not self.parents:
            return self.values
        ok = self.valid(*(chosen[p] for p in self.parents))
        vals = tuple(v for v in ok if not self.values or v in self.values)
        return vals or tuple(ok[:1])   # none of the given values is valid here: the first valid one

    def suggest(self, trial, chosen: dict | None = None):
        if self.parents:
            ctx = ",".join(f"{p}={_fmt(chosen[p])}" for p in self.parents)
            return trial.suggest_categorical(f"{self.name}[{ctx}]", list(self.choices(chosen)))
        if self.values:
            return trial.suggest_categorical(self.name, list(self.values))
        return trial.suggest_int(self.name, self.lo, self.hi)

    def describe(self) -> str:
        if self.parents:
            given = "{" + ", ".join(map(_fmt, self.values)) + "} " if self.values else ""
            return f"{given}valid for {', '.join(self.parents)}"
        if self.values:
            return "{" + ", ".join(map(_fmt, self.values)) + "}"
        return f"[{self.lo}, {self.hi}]"

    def span(self) -> tuple:
        """Every value a plain dimension can take."""
        return self.values or tuple(range(self.lo, self.hi + 1))


def _fmt(v) -> str:
    return ("on" if v else "off") if isinstance(v, bool) else str(v)


@dataclass(frozen=True)
class Space:
    """A design's search space.

    Parameters
    ----------
    design : str
        Registry name (``mu``, ``bf16_mul``).
    fixed : dict
        Options held at one (parsed) value.
    dims : tuple of Dim
        Searched options.
    constraints : dict
        Budgets, keys of :data:`CONSTRAINTS`.
    """

    design: str
    fixed: dict
    dims: tuple
    constraints: dict = field(default_factory=dict)

    def suggest(self, trial) -> dict:
        """Ask ``trial`` (an Optuna trial) for a value of every dimension; return the full parsed
        option set (defaults, overlaid by ``fixed``, overlaid by the suggestions)."""
        given = self.baseline()   # the defaults: context of a conditional dimension's parents
        for d in self.dims:   # conditional dimensions come after their parents
            given[d.name] = d.suggest(trial, given)
        return self.params(given)

    def params(self, given: dict) -> dict:
        """All options of the design with ``given`` overlaid (validated by the registry)."""
        return get_design(self.design).params({k: _to_text(v) for k, v in given.items()})

    def baseline(self) -> dict:
        """The registry's default configuration with ``fixed`` overlaid (``make synth``'s default
        at the fixed width and format)."""
        return self.params(self.fixed)

    def configs(self) -> list:
        """Every configuration of the space (full parsed option sets), the plain dimensions'
        combinations in order, each with every valid value of its conditional dimensions."""
        from itertools import product

        plain = [d for d in self.dims if not d.parents]
        out = []
        for combo in product(*(d.span() for d in plain)):
            partial = [{**self.baseline(), **{d.name: v for d, v in zip(plain, combo, strict=True)}}]
            for d in self.dims:
                if d.parents:
                    partial = [{**c, d.name: v} for c in partial for v in d.choices(c)]
            out += [self.params(c) for c in partial]
        return out

    def size(self) -> int:
        """Number of configurations (:meth:`configs`)."""
        return len(self.configs())

    def describe(self) -> dict:
        """Plain dict for reports and the study's attributes."""
        return {"design": self.design, "fixed": {k: _fmt(v) for k, v in self.fixed.items()},
                "dims": {d.name: d.describe() for d in self.dims}, "constraints": dict(self.constraints)}


def _to_text(v):
    """A value as the registry's parsers take it (they parse strings; on/off for booleans)."""
    if isinstance(v, bool):
        return "on" if v else "off"
    return v if isinstance(v, str) else str(v)


def _default_dim(opt) -> Dim | None:
    """The registry's own space of one option, or None when it has none to search (a None default)."""
    if opt.choices is not None:
        return Dim(opt.name, tuple(opt.choices))
    if opt.parse is on_off:
        return Dim(opt.name, (True, False))
    m = re.fullmatch(r"power of two in \[(\d+), (\d+)\]", getattr(opt.parse, "__name__", ""))
    if m:
        lo, hi = int(m[1]), int(m[2])
        return Dim(opt.name, tuple(1 << k for k in range(lo.bit_length() - 1, hi.bit_length())))
    m = re.fullmatch(r"integer >= (-?\d+)", getattr(opt.parse, "__name__", ""))
    if m and isinstance(opt.default, int):
        lo = int(m[1])
        return Dim(opt.name, lo=lo, hi=max(lo, opt.default) + INT_SPAN)
    return None


def _read(path: Path) -> dict:
    try:
        text = path.read_text()
    except OSError as e:
        raise SpaceError(f"cannot read space file {path}: {e}") from None
    try:
        return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise SpaceError(f"space file {path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: "
                         f"{e}") from None


def load_space(design: str, path: str | Path | None = None) -> Space:
    """The default space of ``design``, narrowed by the space file at ``path`` (TOML or JSON).

    Raises
    ------
    SpaceError
        Unknown keys, options or constraints, bad values, or an empty space.
    hw.designs.OptionError
        An unknown design.
    """
    d = get_design(design)
    opts = {o.name: o for o in d.options}
    spec = _read(Path(path)) if path else {}
    unknown = set(spec) - {"fixed", "choices", "constraints"}
    if unknown:
        raise SpaceError(f"space file {path}: unknown keys {sorted(unknown)}; "
                         "allowed: fixed, choices, constraints")
    fixed_given = dict(DEFAULT_FIXED.get(design, {}))
    choices = dict(spec.get("choices", {}))
    for k in choices:   # a choice in the file frees an option the defaults fix
        fixed_given.pop(k, None)
    fixed_given.update(spec.get("fixed", {}))
    for k in list(fixed_given) + list(choices):
        if k not in opts:
            raise SpaceError(f"space file {path}: {design} has no option {k!r}; options: {', '.join(opts)}")
    cond = CONDITIONAL.get(design, {})
    try:
        fixed = {k: d.params({k: _to_text(v)})[k] for k, v in fixed_given.items()}
        dims = []
        for name, opt in opts.items():
            if name in fixed:
                continue
            vals = ()
            if name in choices:
                vals = choices[name]
                if not isinstance(vals, list) or not vals:
                    raise SpaceError(f"space file {path}: choices.{name} must be a non-empty list")
                vals = tuple(d.params({name: _to_text(v)})[name] for v in vals)
            if name in cond:
                dims.append(Dim(name, vals, parents=cond[name][0], valid=cond[name][1]))
            elif vals:
                dims.append(Dim(name, vals))
            else:
                dim = _default_dim(opt)
                if dim is not None:
                    dims.append(dim)
    except OptionError as e:
        raise SpaceError(f"space file {path}: {e}") from None
    dims = [x for x in dims if not x.parents] + [x for x in dims if x.parents]
    cons = dict(spec.get("constraints", {}))
    for k, v in cons.items():
        if k not in CONSTRAINTS:
            raise SpaceError(f"space file {path}: unknown constraint {k!r}; "
                             f"allowed: {', '.join(CONSTRAINTS)}")
        if not isinstance(v, (int, float)) or v <= 0:
            raise SpaceError(f"space file {path}: constraint {k} must be a positive number, not {v!r}")
    space = Space(design, fixed, tuple(dims), cons)
    if not dims or space.size() == 1:
        raise SpaceError(f"the {design} space has no dimension left to search (all options fixed)")
    return space
