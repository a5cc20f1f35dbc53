"""Blocks emitted once: one Verilog module per distinct repeated block.

Amaranth writes one Verilog module per submodule *instance*; a 128-column matrix unit would then
carry 128 copies of the column module, which Verilator compiles 128 times and Yosys synthesizes 128
times. A generator instead places a repeated block with :func:`place`::

    col = Column(width=64, fmt=fmt)          # a wiring.Component: its ports are the wires
    hier.place(m, f"col{j}", col, module="mu_col_w64_e4m3")

Inside :func:`emit` (the CLI and the flows use it) the block becomes an ``Instance`` of module
``module`` and its Verilog is generated once, however many times it is placed. Outside (the Amaranth
simulator, or a plain ``verilog.convert``), :func:`place` adds the component as an ordinary
submodule, so the design is the same either way.

:func:`emit` returns a :class:`Netlist`: the Verilog of every module (blocks first, top last) and a
manifest of instance counts that the hierarchical synthesis flow (``flows``) composes from.
"""

import contextvars
import re
from dataclasses import dataclass, field

from amaranth.back import verilog
from amaranth.hdl import ClockSignal, Instance, ResetSignal
from amaranth.lib import wiring

__all__ = ["place", "emit", "Netlist", "BlockModule"]

_ACTIVE = contextvars.ContextVar("hw_hier_emitter", default=None)
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


class _Emitter:
    def __init__(self):
        self.modules: dict[str, BlockModule] = {}
        self.stack: list[dict] = []

    def convert(self, component, name):
        self.stack.append({})
        token = _ACTIVE.set(self)
        try:
            text = verilog.convert(component, name=name, emit_src=False)
        finally:
            _ACTIVE.reset(token)
            children = self.stack.pop()
        clocked = bool(re.search(rf"module {re.escape(name)}\s*\([^;]*\bclk\b", text, re.S))
        self.modules[name] = BlockModule(name, text, children, clocked)
        return self.modules[name]


def place(m, name: str, component: wiring.Component, *, module: str):
    """Add ``component`` to module ``m`` as submodule ``name``, emitted once as ``module``.

    Parameters
    ----------
    m : amaranth.hdl.Module
        Parent module being elaborated.
    name : str
        Submodule (instance) name.
    component : wiring.Component
        The block; its port signals are the wires the parent connects to.
    module : str
        Verilog module name shared by every identical block. It must encode every parameter
        that changes the block's logic: two different blocks given one name is an error.

    Raises
    ------
    ValueError
        If ``module`` is not a valid Verilog identifier, or names two different blocks.
    """
    if not _NAME_RE.match(module):
        raise ValueError(f"block module name must be a plain Verilog identifier, not {module!r}")
    emitter = _ACTIVE.get()
    if emitter is None:
        m.submodules[name] = component
        return
    if module not in emitter.modules:
        emitter.convert(component, module)
    elif _CHECK_SAME.get():
        first = emitter.modules[module]
        if _Emitter().convert(component, module).verilog != first.verilog:
            raise ValueError(f"two different blocks were both named {module!r}")
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


#: Set to True (tests do) to verify that every placement under one module name is identical.
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
        Re-generate every repeated block to prove it identical to the first (slow; for tests).
    """
    emitter = _Emitter()
    token = _CHECK_SAME.set(check_same)
    try:
        emitter.convert(component, name)
    finally:
        _CHECK_SAME.reset(token)
    return Netlist(name, emitter.modules)
