"""Flatten mapped Yosys netlists (``write_json``) into arrays for the gate simulator.

The hierarchical flow maps every distinct block once (:func:`flows.synth.hier.synth_hier`); a design
is then the top module's netlist plus one netlist per block, each block instance a cell whose type is
the block's module name. :func:`flatten` stitches them into one netlist of library cells, instance
by instance, with global net numbers (net 0 is constant 0, net 1 constant 1).

Column sampling (the composition of wide units): ``sample=(module, k)`` keeps only ``k`` evenly
spaced instances of ``module`` (in instance-name order). Every other instance ``j`` is replaced by

* a zero-energy ``COPY`` cell per output bit, driving ``j``'s output nets from the outputs of the
  nearest kept instance, so the parent sees data with the kept instances' statistics;
* a *phantom load* on each net feeding ``j``'s inputs: the capacitance that the module's own cells
  present on that input bit, so the parent's drivers see the load of the full design.

Kept instances' cells get the weight ``n / k`` (their energy stands for all ``n``); the parent's
cells weight 1, ``COPY`` cells weight 0.
"""

import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Flat", "flatten", "NetlistError", "COPY", "sample_indices"]

#: Pseudo cell type of the sampled composition: output = input, no energy, no area.
COPY = "__COPY__"


class NetlistError(ValueError):
    """A netlist the simulator cannot use (unknown cell, multiple drivers, constant conflict)."""


@dataclass
class Flat:
    """A flattened netlist.

    Attributes
    ----------
    n_nets : int
    groups : dict[str, dict]
        Per cell type: ``pins`` (pin -> int array of net ids, one per instance), ``block`` (index
        into ``blocks`` of the module that holds each instance) and ``weight`` (float array).
    blocks : list of str
        Module names.
    ports : dict[str, tuple]
        Top port name -> (direction, int array of net ids, least significant bit first).
    phantom : ndarray of float
        Extra load per net (library capacitance units) from replaced instances.
    wire : ndarray of float or None
        Wire capacitance per net (library capacitance units) of a routed layout (``wire_caps``);
        None for a netlist without wires.
    """

    n_nets: int
    groups: dict
    blocks: list
    ports: dict
    phantom: np.ndarray = field(default=None)
    wire: np.ndarray = field(default=None)


def sample_indices(n: int, k: int) -> list:
    """The ``k`` evenly spaced instance indices (first and last included) kept out of ``n``."""
    if k >= n:
        return list(range(n))
    if k <= 1:
        return [n // 2]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def _bit(b):
    if isinstance(b, int):
        return b
    return {"0": -1, "1": -2}.get(str(b), -1)  # x and z simulate as 0


class _Module:
    """One module's cells as local-bit arrays."""

    def __init__(self, name, mod, modules, lib_cells):
        self.name = name
        self.ports = {p: (v["direction"], [_bit(b) for b in v["bits"]]) for p, v in mod["ports"].items()}
        bits = [b for v in self.ports.values() for b in v[1]]
        types: dict = {}
        self.children = []
        for cname, c in sorted(mod["cells"].items(), key=lambda kv: _natural(kv[0])):
            t = c["type"]
            conns = {p: [_bit(b) for b in v] for p, v in c["connections"].items()}
            for v in conns.values():
                bits.extend(v)
            if t in modules:
                self.children.append((cname, t, conns))
            elif t in lib_cells:
                d = types.setdefault(t, {})
                for p, v in conns.items():
                    d.setdefault(p, []).append(v[0] if v else -1)
            elif not t.startswith("$scopeinfo"):
                raise NetlistError(f"module {name}: cell {cname} of type {t!r} is neither a library "
                                   "cell nor a module of the design (was it synthesized with another "
                                   "liberty?)")
        self.nbits = max([b for b in bits if b >= 0], default=1) + 1
        self.types = {t: {p: np.asarray(v, dtype=np.int64) for p, v in d.items()} for t, d in types.items()}


class _Builder:
    def __init__(self, modules, lib_cells, sample, wire_caps=None):
        self.wire_caps = wire_caps or {}
        self.wires = []       # (global nets, capacitances) per instance of a module with wires
        self.mods = {}
        self.src = modules
        self.lib_cells = lib_cells
        self.n = 2
        self.unions = []
        self.parts = {}       # type -> list of (pins dict, block idx, weight)
        self.blocks = []
        self.sample = sample
        self.phantom = []     # (net, module name, port, bit index)
        self.copies = []      # (src net, dst net)

    def module(self, name):
        if name not in self.mods:
            self.mods[name] = _Module(name, self.src[name], self.src, self.lib_cells)
        return self.mods[name]

    def block(self, name):
        if name not in self.blocks:
            self.blocks.append(name)
        return self.blocks.index(name)

    def glob(self, base, local):
        local = np.asarray(local, dtype=np.int64)
        return np.where(local >= 0, base + local, np.where(local == -2, 1, 0))

    def instance(self, name, bind, weight):
        """Allocate ``name``'s nets, bind its port bits to the parent's nets ``bind``; returns the
        port -> global nets map of this instance."""
        m = self.module(name)
        base = self.n
        self.n += m.nbits
        nets = {p: self.glob(base, bits) for p, (_, bits) in m.ports.items()}
        for p, g in nets.items():
            for a, b in zip(g.tolist(), bind.get(p, []), strict=False):
                self.unions.append((a, b))
        if name in self.wire_caps:
            bits, caps = self.wire_caps[name]
            self.wires.append((self.glob(base, bits), np.asarray(caps, dtype=np.float64)))
        bi = self.block(name)
        for t, pins in m.types.items():
            self.parts.setdefault(t, []).append(({p: self.glob(base, v) for p, v in pins.items()}, bi,
                                                 weight))
        self._children(m, base, weight)
        return nets

    def _children(self, m, base, weight):
        groups: dict = {}
        for cname, t, conns in m.children:
            groups.setdefault(t, []).append((cname, conns))
        for t, insts in groups.items():
            keep = list(range(len(insts)))
            if self.sample and self.sample[0] == t:
                keep = sample_indices(len(insts), self.sample[1])
            w = weight * len(insts) / len(keep)
            kept_nets = {}
            for i in keep:
                conns = insts[i][1]
                kept_nets[i] = self.instance(t, {p: self.glob(base, v).tolist() for p, v in conns.items()}, w)
            cm = self.module(t)
            for i, (_, conns) in enumerate(insts):
                if i in kept_nets:
                    continue
                src = kept_nets[min(keep, key=lambda s, i=i: (abs(s - i), s))]
                for p, bits in conns.items():
                    parent = self.glob(base, bits).tolist()
                    if cm.ports[p][0] == "output":
                        self.copies.extend(zip(src[p].tolist(), parent, strict=True))
                    else:
                        self.phantom.extend((net, t, p, k) for k, net in enumerate(parent))


def _resolve(n, unions):
    parent = np.arange(n, dtype=np.int64)

    def find(a):
        root = a
        while parent[root] != root:
            root = parent[root]
        while parent[a] != root:
            parent[a], a = root, parent[a]
        return root

    for a, b in unions:
        ra, rb = find(a), find(b)
        if ra == rb:
            continue
        if ra < 2 and rb < 2:
            raise NetlistError("a net is tied to both constant 0 and constant 1")
        if rb < 2 or (ra >= 2 and rb < ra):
            ra, rb = rb, ra
        parent[rb] = ra
    while True:
        nxt = parent[parent]
        if np.array_equal(nxt, parent):
            break
        parent = nxt
    uniq, canon = np.unique(parent, return_inverse=True)
    return canon  # canonical ids are dense; 0 and 1 stay the constants


def flatten(modules: dict, top: str, lib_cells, sample=None, port_caps=None, wire_caps=None) -> Flat:
    """Stitch ``modules`` (name -> Yosys JSON module) below ``top`` into one :class:`Flat` netlist.

    Parameters
    ----------
    lib_cells : container of str
        Library cell names (any other cell type must be a module in ``modules``).
    sample : (str, int) or None
        Keep ``k`` instances of that module (see the module docstring).
    port_caps : callable or None
        ``port_caps(module, port)`` -> array of input capacitance per bit of that module's input
        port; required with ``sample`` for the phantom loads.
    wire_caps : dict or None
        ``{module: (local bits, capacitances)}``: the wire capacitance (library units) of that
        module's nets, added to :attr:`Flat.wire` once per instance kept. A net that crosses a
        module port gets the wire on each side.

    Raises
    ------
    NetlistError
        On unknown cell types or a constant conflict.
    """
    if top not in modules:
        raise NetlistError(f"no module {top!r} among {', '.join(modules)}")
    b = _Builder(modules, lib_cells, sample, wire_caps)
    top_nets = b.instance(top, {}, 1.0)
    canon = _resolve(b.n, b.unions)
    groups = {}
    for t, parts in b.parts.items():
        pins = {p: canon[np.concatenate([pp[p] for pp, _, _ in parts])] for p in parts[0][0]}
        cnt = [len(next(iter(pp.values()))) for pp, _, _ in parts]
        groups[t] = {"pins": pins,
                     "block": np.repeat(np.asarray([bi for _, bi, _ in parts], dtype=np.int32), cnt),
                     "weight": np.repeat(np.asarray([w for _, _, w in parts], dtype=np.float64), cnt)}
    n_nets = int(canon.max()) + 1
    if b.copies:
        src, dst = np.asarray(b.copies, dtype=np.int64).T
        groups[COPY] = {"pins": {"A": canon[src], "Y": canon[dst]},
                        "block": np.zeros(len(src), dtype=np.int32), "weight": np.zeros(len(src))}
    phantom = np.zeros(n_nets)
    if b.phantom:
        if port_caps is None:
            raise NetlistError("sampling needs port_caps for the replaced instances' input loads")
        cache = {}
        for net, mod, port, k in b.phantom:
            if (mod, port) not in cache:
                cache[(mod, port)] = port_caps(mod, port)
            phantom[canon[net]] += cache[(mod, port)][k]
    wire = None
    if wire_caps is not None:
        wire = np.zeros(n_nets)
        for nets, caps in b.wires:
            np.add.at(wire, canon[nets], caps)
        wire[:2] = 0.0
    ports = {p: (d, canon[top_nets[p]]) for p, (d, _) in b.module(top).ports.items()}
    return Flat(n_nets, groups, b.blocks, ports, phantom, wire)
