"""Blocks emitted once: one Verilog module per distinct repeated block.

Amaranth writes one Verilog module per submodule *instance*; a 128-column matrix unit would then
carry 128 copies of the column module, which Verilator compiles 128 times and Yosys synthesizes 128
times. A generator instead places a repeated block with :func:`place`::

    col = Column(fmt, 64, rows=1, stages=2)   # a wiring.Component: its ports are the wires
    hier.place(m, f"col{j}", col)             # module name from col.params: mu_col_w64_fp8_e4m3_r1_s2

Inside :func:`emit` (the CLI and the flows use it) the block becomes an ``Instance`` of that module
and its Verilog is generated once, however many times it is placed. Outside (the Amaranth simulator,
or a plain ``verilog.convert``), :func:`place` adds the component as an ordinary submodule, so the
design is the same either way.

**Module names are derived, not written.** A placed block carries ``params``, a frozen
:class:`BlockParams` dataclass holding every parameter that changes its logic, and the module name
is built from it by the class's ``MODULE`` template, which must name every field (checked), so a new
parameter cannot be left out of the name. ``emit(..., check_same=True)`` generates again every
placement built differently from the earlier ones under its name and fails if two different blocks
ended up under one name; the test suite runs it on every registered design
(``tb/test_hier_names.py``).

:func:`emit` returns a :class:`Netlist`: the Verilog of every module (blocks first, top last) and a
manifest of instance counts that the hierarchical synthesis flow (``flows``) composes from.
"""

import contextvars
import dataclasses
import re
import string
from dataclasses import dataclass, field
from typing import ClassVar

from amaranth.back import verilog
from amaranth.hdl import ClockSignal, Instance, ResetSignal
from amaranth.lib import wiring

from .clock_gate import CELLS

__all__ = ["place", "emit", "Netlist", "BlockModule", "BlockParams"]

_ACTIVE = contextvars.ContextVar("hw_hier_emitter", default=None)
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class BlockParams:
    """Base of a placed block's parameter record: a frozen dataclass whose fields are every
    parameter that changes the block's logic, and whose ``MODULE`` template names the module.

    Subclasses are ``@dataclass(frozen=True)``. ``MODULE`` is a :meth:`str.format` template with
    exactly one ``{field}`` per field; a field is written with ``str()`` unless ``TAGS`` maps its name
    to a function ``value -> text`` (e.g. ``""`` for a default value, which the name leaves out).

    Examples
    --------
    >>> @dataclass(frozen=True)
    ... class WbufParams(BlockParams):
    ...     MODULE: ClassVar[str] = "mu_wbuf_w{width}_b{bits}"
    ...     width: int
    ...     bits: int
    >>> WbufParams(8, 4).module_name
    'mu_wbuf_w8_b4'
    """

    MODULE: ClassVar[str] = ""
    TAGS: ClassVar[dict] = {}

    @property
    def module_name(self) -> str:
        """The Verilog module name: ``MODULE`` filled with every field.

        Raises
        ------
        TypeError
            If ``MODULE`` does not name every field exactly (a parameter missing from the name
            would let two different blocks share one module).
        """
        names = {f.name for f in dataclasses.fields(self)}
        used = {fld for _, fld, _, _ in string.Formatter().parse(self.MODULE) if fld is not None}
        if used != names:
            raise TypeError(f"{type(self).__name__}.MODULE must name every field exactly once: "
                            f"missing {sorted(names - used)}, unknown {sorted(used - names)}")
        text = {n: self.TAGS.get(n, str)(getattr(self, n)) for n in names}
        return self.MODULE.format(**text)


@dataclass
class BlockModule:
    """One distinct Verilog module of a hierarchical design.

    Attributes
    ----------
    name : str
        Verilog module name.
    verilog : str
        Its Verilog text (including Amaranth's own nested helper modules, prefixed by ``name``).
    children : dict[str, int]
        Block modules it instantiates directly, with instance counts.
    clocked : bool
        Whether it has ``clk``/``rst`` ports.
    """

    name: str
    verilog: str
    children: dict = field(default_factory=dict)
    clocked: bool = False


@dataclass
class Netlist:
    """Result of :func:`emit`.

    Attributes
    ----------
    top : str
        Top module name.
    modules : dict[str, BlockModule]
        Every marked block module plus the top, children before parents.
    """

    top: str
    modules: dict

    @property
    def verilog(self) -> str:
        """All modules in one Verilog text (children first)."""
        return "\n".join(m.verilog for m in self.modules.values())

    def blocks(self) -> tuple:
        """Names of the block modules (everything :func:`place` placed), children first."""
        return tuple(n for n in self.modules if n != self.top)

    def instance_counts(self) -> dict:
        """Total instances of each module in the flattened design (top counts 1)."""
        counts = {self.top: 1}
        for name in reversed(list(self.modules)):
            for child, n in self.modules[name].children.items():
                counts[child] = counts.get(child, 0) + n * counts.get(name, 0)
        return counts

    def manifest(self) -> dict:
        """JSON-ready description: modules, their direct children and total instance counts."""
        counts = self.instance_counts()
        return {
            "top": self.top,
            "modules": {
                n: {"children": m.children, "instances": counts.get(n, 0), "clocked": m.clocked}
                for n, m in self.modules.items()
            },
        }


def _state(component) -> tuple:
    """How ``component`` was built: its class and the repr of its attributes other than its ports
    (an attribute without a faithful repr only makes two alike blocks look different)."""
    ports = set(component.signature.members.keys())
    attrs = sorted((k, repr(v)) for k, v in vars(component).items()
                   if k not in ports and not k.startswith("_MustUse__"))
    return (type(component).__module__, type(component).__qualname__, tuple(attrs))


class _Emitter:
    def __init__(self):
        self.modules: dict[str, BlockModule] = {}
        self.stack: list[dict] = []
        self.states: dict[str, set] = {}   # module name -> build states seen (check_same)

    def convert(self, component, name):
        self.stack.append({})
        token = _ACTIVE.set(self)
        try:
            text = verilog.convert(component, name=name, platform=CELLS, emit_src=False)
        finally:
            _ACTIVE.reset(token)
            children = self.stack.pop()
        clocked = bool(re.search(rf"module {re.escape(name)}\s*\([^;]*\bclk\b", text, re.S))
        self.modules[name] = BlockModule(name, text, children, clocked)
        return self.modules[name]


def place(m, name: str, component: wiring.Component, *, module: str | None = None):
    """Add ``component`` to module ``m`` as submodule ``name``, emitted once as one module.

    Parameters
    ----------
    m : amaranth.hdl.Module
        Parent module being elaborated.
    name : str
        Submodule (instance) name.
    component : wiring.Component
        The block; its port signals are the wires the parent connects to.
    module : str, optional
        Verilog module name shared by every identical block. Default: derived from the block's
        ``params`` (:attr:`BlockParams.module_name`); give it only for blocks without one (tests).
        It must encode every parameter that changes the block's logic.

    Raises
    ------
    TypeError
        If ``module`` is not given and ``component`` has no :class:`BlockParams` ``params``.
    ValueError
        If the name is not a valid Verilog identifier, or (with ``check_same``) names two
        different blocks.
    """
    if module is None:
        params = getattr(component, "params", None)
        if not isinstance(params, BlockParams):
            raise TypeError(f"{type(component).__name__} has no BlockParams 'params' to name its "
                            f"module; give it one (see hw.hier.BlockParams) or pass module=")
        module = params.module_name
    if not _NAME_RE.match(module):
        raise ValueError(f"block module name must be a plain Verilog identifier, not {module!r}")
    emitter = _ACTIVE.get()
    if emitter is None:
        m.submodules[name] = component
        return
    check = _CHECK_SAME.get()
    state = _state(component) if check else None
    if module not in emitter.modules:
        emitter.convert(component, module)
        emitter.states[module] = {state}
    elif check and state not in emitter.states.setdefault(module, set()):
        # a block built differently from every earlier one under this name: its Verilog must
        # still be the same (blocks built alike elaborate alike, so those are not re-generated)
        first = emitter.modules[module]
        if _Emitter().convert(component, module).verilog != first.verilog:
            raise ValueError(f"two different blocks were both named {module!r}; the module "
                             f"name must encode every parameter that changes the block's logic")
        emitter.states[module].add(state)
    component._MustUse__silence = True  # replaced by an Instance: never elaborated here
    counts = emitter.stack[-1]
    counts[module] = counts.get(module, 0) + 1
    ports = {}
    for path, member, value in component.signature.flatten(component):
        pname = "__".join(str(p) for p in path)
        ports[("i_" if member.flow == wiring.In else "o_") + pname] = value
    if emitter.modules[module].clocked:
        ports["i_clk"] = ClockSignal()
        ports["i_rst"] = ResetSignal()
    m.submodules[name] = Instance(module, **ports)


#: Whether :func:`place` proves every placement under one module name identical (``emit``'s
#: ``check_same``).
_CHECK_SAME = contextvars.ContextVar("hw_hier_check_same", default=False)


def emit(component: wiring.Component, name: str, *, check_same: bool = False) -> Netlist:
    """Generate Verilog for ``component`` as top module ``name``, each marked block once.

    Parameters
    ----------
    component : wiring.Component
        The top-level design.
    name : str
        Top module name.
    check_same : bool
        Prove that every block placed under one module name has the same Verilog: each placement
        built differently (another class or other attribute values) from the ones already seen
        under its name is generated again and compared (the test suite turns it on for every
        registered design).

    Raises
    ------
    ValueError
        With ``check_same``, if two different blocks were given one module name.
    """
    emitter = _Emitter()
    token = _CHECK_SAME.set(check_same)
    try:
        emitter.convert(component, name)
    finally:
        _CHECK_SAME.reset(token)
    return Netlist(name, emitter.modules)
