"""Bit-sliced numpy evaluation of a combinational Amaranth component: millions of input vectors per
second through the generator's own netlist, without Verilog or a simulator.

Every signal bit is a *plane*: a ``uint64`` array whose bit ``v % 64`` of word ``v // 64`` is that
bit's value in vector ``v``. The component is elaborated (:meth:`amaranth.hdl.Fragment.get`) and its
``comb`` statements are interpreted in order with numpy bitwise operations on planes, following the
Amaranth language reference for each operator: ``+``/``-`` are ripple-carry adds on the result's
shape (operands sign- or zero-extended by their own signedness), ``.eq`` truncates or extends the
right-hand side to the target. Only the operators a compressor tree or an adder tree uses are
accepted (bitwise logic, ``+``, ``-``, reductions, ``as_signed``/``as_unsigned``, slices and
concatenations); anything else (a register, a ``Switch``, a multiplier) raises ``NotImplementedError``
naming it, so an unsupported design fails loudly instead of being mis-evaluated.

The interpreter shares nothing with Verilog generation or Verilator: it is an independent reading
of the same Amaranth netlist, used to co-simulate two variants of a block densely
(``tb/mu/test_tree_equiv.py``).
"""

from __future__ import annotations

import numpy as np
from amaranth.hdl import Const, Fragment, Signal
from amaranth.hdl._ast import Assign, Concat, Operator, SignalDict, Slice

__all__ = ["pack_planes", "unpack_planes", "evaluate"]


def pack_planes(values: np.ndarray, bits: int) -> list:
    """Planes of unsigned integers.

    Parameters
    ----------
    values : ndarray of uint64, shape (n,)
        One value per vector; ``n`` a multiple of 64.
    bits : int
        Planes to produce (bit ``k`` of every value in plane ``k``; at most 64).

    Returns
    -------
    list of ndarray
        ``bits`` arrays of ``n // 64`` words.
    """
    values = np.asarray(values, dtype=np.uint64)
    if values.ndim != 1 or values.size % 64:
        raise ValueError(f"need a 1-D array whose length is a multiple of 64, not shape {values.shape}")
    if not 0 <= bits <= 64:
        raise ValueError(f"bits must be 0..64, not {bits}")
    out = []
    for k in range(bits):
        b = ((values >> np.uint64(k)) & np.uint64(1)).astype(np.uint8)
        out.append(np.packbits(b, bitorder="little").view(np.uint64))
    return out


def unpack_planes(planes: list) -> np.ndarray:
    """Inverse of :func:`pack_planes` for up to 64 planes: one ``uint64`` per vector."""
    if len(planes) > 64:
        raise ValueError(f"at most 64 planes fit a uint64, not {len(planes)}")
    out = None
    for k, p in enumerate(planes):
        b = np.unpackbits(np.ascontiguousarray(p).view(np.uint8), bitorder="little").astype(np.uint64)
        out = b << np.uint64(k) if out is None else out | (b << np.uint64(k))
    return out


class _Eval:
    """One evaluation: signal name -> list of planes (LSB first)."""

    def __init__(self, words: int):
        self.words = words
        self.zero = np.zeros(words, np.uint64)
        self.ones = ~self.zero
        self.env = SignalDict()

    def value(self, v) -> tuple:
        """(planes, signed) of an Amaranth value."""
        if isinstance(v, Signal):
            if v not in self.env:
                raise KeyError(f"signal {v.name!r} is read before any statement drives it "
                               f"(not an input and not yet assigned)")
            return self.env[v], v.shape().signed
        if isinstance(v, Const):
            return [self.ones if (v.value >> k) & 1 else self.zero for k in range(len(v))], \
                v.shape().signed
        if isinstance(v, Slice):
            planes, _ = self.value(v.value)
            return planes[v.start:v.stop], False
        if isinstance(v, Concat):
            return [p for part in v.parts for p in self.value(part)[0]], False
        if isinstance(v, Operator):
            return self.operator(v)
        raise NotImplementedError(f"bitslice: value {type(v).__name__} ({v!r}) is not supported")

    def extend(self, planes, signed, width):
        if len(planes) >= width:
            return planes[:width]
        fill = planes[-1] if (signed and planes) else self.zero
        return planes + [fill] * (width - len(planes))

    def operator(self, v):
        op, shape = v.operator, v.shape()
        args = [self.value(o) for o in v.operands]
        w = shape.width
        if op in ("s", "u"):
            return args[0][0], op == "s"
        if op in ("r|", "r&", "r^", "b"):
            planes = args[0][0]
            acc = self.zero if op in ("r|", "r^", "b") else self.ones
            for p in planes:
                acc = (acc | p) if op in ("r|", "b") else (acc & p) if op == "r&" else (acc ^ p)
            return [acc], False
        if op == "~":
            return [~p for p in self.extend(*args[0], w)], shape.signed
        if op in ("&", "|", "^"):
            a, b = (self.extend(p, s, w) for p, s in args)
            f = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op]
            return [f(x, y) for x, y in zip(a, b, strict=True)], shape.signed
        if op in ("+", "-"):
            a, b = (self.extend(p, s, w) for p, s in args)
            if op == "-":                      # a - b = a + ~b + 1
                b, carry = [~p for p in b], self.ones
            else:
                carry = self.zero
            out = []
            for x, y in zip(a, b, strict=True):
                t = x ^ y
                out.append(t ^ carry)
                carry = (x & y) | (carry & t)
            return out, shape.signed
        raise NotImplementedError(f"bitslice: operator {op!r} is not supported")

    def assign(self, stmt):
        if not isinstance(stmt, Assign):
            raise NotImplementedError(f"bitslice: statement {type(stmt).__name__} is not supported "
                                      f"(combinational assignments only)")
        planes, signed = self.value(stmt.rhs)
        lhs = stmt.lhs
        if isinstance(lhs, Signal):
            self.env[lhs] = self.extend(planes, signed, len(lhs))
        elif isinstance(lhs, Slice) and isinstance(lhs.value, Signal):
            sig = lhs.value
            cur = self.env.setdefault(sig, [self.zero] * len(sig))
            cur[lhs.start:lhs.stop] = self.extend(planes, signed, lhs.stop - lhs.start)
        else:
            raise NotImplementedError(f"bitslice: assignment target {lhs!r} is not supported")


def evaluate(component, inputs: dict, outputs: tuple) -> dict:
    """Evaluate a combinational component on bit-sliced inputs.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component
        Elaborated with no platform; it must hold only ``comb`` statements and no submodules.
    inputs : dict
        Port name -> list of planes (LSB first, as many as the port is wide; all the same length).
    outputs : tuple of str
        Port names to return.

    Returns
    -------
    dict
        Port name -> list of planes.

    Raises
    ------
    ValueError
        A registered or hierarchical design, or inputs of the wrong width.
    NotImplementedError
        A statement or operator the interpreter does not know.
    """
    frag = Fragment.get(component, None)
    if frag.subfragments or set(frag.statements) - {"comb"}:
        raise ValueError(f"bitslice evaluates one combinational fragment; this one has domains "
                         f"{sorted(frag.statements)} and {len(frag.subfragments)} submodules "
                         f"(use a variant without pipeline registers)")
    words = {len(p) for planes in inputs.values() for p in planes}
    if len(words) != 1:
        raise ValueError(f"every input plane must have the same length, got {sorted(words)}")
    ev = _Eval(words.pop())
    for name, planes in inputs.items():
        port = getattr(component, name)
        if len(planes) != len(port):
            raise ValueError(f"input {name!r} is {len(port)} bits wide, given {len(planes)} planes")
        ev.env[port] = list(planes)
    for stmt in frag.statements.get("comb", []):
        ev.assign(stmt)
    return {name: ev.env[getattr(component, name)] for name in outputs}
