"""Stimulus programs for the matrix unit: tiles + activation beats, packing, and expected results.

A :class:`Program` is what a test sends: the weight tiles in load order and the activation beats with
their flags. The first beat served by each tile carries ``swap`` (the tile becomes active for it).
:meth:`Program.expected` runs the bit-true model (:mod:`tb.mu.model`) over it; :func:`pack_rows`
packs element codes, and the ``x``/``y`` payload integers are packed and unpacked through the unit's
layouts (:class:`hw.mu.interface.MatrixUnitSignature`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hw.formats import BLOCK_FORMATS
from hw.mu.interface import MatrixUnitSignature, y_layout
from hw.payload import unpack

from .model import MatrixUnitModel, YRow

__all__ = ["Tile", "Program", "pack_rows", "unpack_y"]


def pack_rows(codes: np.ndarray, bits: int) -> list[int]:
    """Pack each row of element codes into one integer, element ``k`` at ``[k*bits +: bits]``.

    Any element width from 1 to 8 bits (FP4, FP6, FP8 codes); a code wider than ``bits`` is an error.
    """
    if not 1 <= bits <= 8:
        raise ValueError(f"element bits must lie in 1..8, not {bits}")
    c = np.ascontiguousarray(np.asarray(codes, dtype=np.uint8))
    if c.size and int(c.max()) >> bits:
        raise ValueError(f"a code does not fit in {bits} bits (max {int(c.max())})")
    if bits == 4 and c.shape[1] % 2 == 0:
        c = np.ascontiguousarray(c[:, 0::2] | (c[:, 1::2] << 4))
    elif bits != 8:   # generic: every code's bits, LSB first, re-packed into bytes
        lsb_first = (c[:, :, None] >> np.arange(bits, dtype=np.uint8)) & 1
        c = np.packbits(lsb_first.reshape(c.shape[0], -1), axis=1, bitorder="little")
    return [int.from_bytes(r.tobytes(), "little") for r in c]


def unpack_y(payload: int, width: int, rows: int) -> tuple[int, np.ndarray]:
    """Split a ``y__payload`` integer into (row index, FP32 bits as uint32 array of D), through
    the unit's y layout (:func:`hw.mu.interface.y_layout`)."""
    f = unpack(y_layout(width, rows), payload)
    bits = np.frombuffer(f["data"].to_bytes(4 * width, "little"), dtype="<u4").astype(np.uint32)
    return f.get("row", 0), bits


@dataclass
class Tile:
    """One weight tile and the activation beats it serves.

    Parameters
    ----------
    w : ndarray (D, D)
        Weight codes ``W[k, j]`` (row k is the k-th ``w`` beat).
    x : ndarray (n, D)
        Activation codes, one beat per row (n >= 1; the first beat carries ``swap``).
    first, last : bool or array of bool (n,)
        Flags per beat; a scalar applies to every beat.
    row : int or array of int (n,), optional
        Accumulator row per beat (default 0).
    """

    w: np.ndarray
    x: np.ndarray
    first: object = True
    last: object = True
    row: object = 0


@dataclass
class Program:
    """Everything a run sends.

    Attributes
    ----------
    width, fmt, rows : the unit's parameters
    tiles : list of ndarray (D, D)
        Weight tiles in load order.
    x : ndarray (N, D)
        Activation codes.
    swap, first, last : ndarray of bool (N,)
    row : ndarray of int64 (N,)
    wscales : list of ndarray (D/B, D), optional
        Block-scaled formats: each tile's weight-scale codes (``ws`` beats), in load order.
    xscales : ndarray (N, D/B), optional
        Block-scaled formats: the activation scale codes of each ``x`` beat.
    """

    width: int
    fmt: str
    rows: int
    tiles: list = field(default_factory=list)
    x: np.ndarray | None = None
    swap: np.ndarray | None = None
    first: np.ndarray | None = None
    last: np.ndarray | None = None
    row: np.ndarray | None = None
    wscales: list | None = None
    xscales: np.ndarray | None = None

    @classmethod
    def from_tiles(cls, width: int, fmt: str, rows: int, tiles) -> Program:
        """Build a program from :class:`Tile` objects (each swaps in at its first beat).

        Raises
        ------
        ValueError
            On shapes that do not match ``width`` or row indices outside ``[0, rows)``.
        """
        d = width
        ws, xs, sw, fi, la, ro = [], [], [], [], [], []
        for t, tile in enumerate(tiles):
            w = np.asarray(tile.w)
            x = np.atleast_2d(np.asarray(tile.x))
            if w.shape != (d, d) or x.ndim != 2 or x.shape[1] != d or x.shape[0] < 1:
                raise ValueError(f"tile {t}: w must be ({d}, {d}) and x (n>=1, {d}); "
                                 f"got {w.shape} and {x.shape}")
            n = x.shape[0]
            ws.append(w.astype(np.int64))
            xs.append(x.astype(np.int64))
            s = np.zeros(n, dtype=bool)
            s[0] = True
            sw.append(s)
            fi.append(np.broadcast_to(np.asarray(tile.first, dtype=bool), (n,)))
            la.append(np.broadcast_to(np.asarray(tile.last, dtype=bool), (n,)))
            ro.append(np.broadcast_to(np.asarray(tile.row, dtype=np.int64), (n,)))
        prog = cls(width, fmt, rows, ws, np.concatenate(xs), np.concatenate(sw),
                   np.concatenate(fi), np.concatenate(la), np.concatenate(ro))
        prog.validate()
        return prog

    def validate(self) -> None:
        n = len(self.x)
        if self.swap.sum() != len(self.tiles):
            raise ValueError(f"{self.swap.sum()} swap beats for {len(self.tiles)} tiles")
        if n and not self.swap[0]:
            raise ValueError("the first beat must carry swap (no tile is active after reset)")
        if n and (self.row.min() < 0 or self.row.max() >= self.rows):
            raise ValueError(f"row indices must lie in [0, {self.rows - 1}]")
        if self.x.shape[1:] != (self.width,):
            raise ValueError(f"x must have {self.width} columns, not {self.x.shape}")
        nb = self.signature.blocks
        if nb and (self.wscales is None or self.xscales is None):
            raise ValueError(f"{self.fmt} is block-scaled: set wscales (one ({nb}, {self.width}) "
                             f"array per tile) and xscales (N, {nb})")
        if nb and (len(self.wscales) != len(self.tiles) or self.xscales.shape != (n, nb)
                   or any(np.shape(s) != (nb, self.width) for s in self.wscales)):
            raise ValueError(f"wscales must be {len(self.tiles)} arrays ({nb}, {self.width}) and "
                             f"xscales ({n}, {nb})")

    @property
    def n_beats(self) -> int:
        return len(self.x)

    @property
    def n_outputs(self) -> int:
        return int(self.last.sum())

    # -- packing ----------------------------------------------------------------------------------
    def w_beats(self) -> list[int]:
        """``w__payload`` integers, tile after tile."""
        if not self.tiles:
            return []
        return pack_rows(np.concatenate(self.tiles), self.signature.bits)

    def ws_beats(self) -> list[int]:
        """``ws__payload`` integers (block-scaled formats), D/B per tile, tile after tile."""
        if not self.wscales:
            return []
        return pack_rows(np.concatenate(self.wscales), 8)

    @property
    def signature(self) -> MatrixUnitSignature:
        """The interface of the unit this program is for."""
        return MatrixUnitSignature(self.width, self.fmt, self.rows)

    def x_beats(self) -> list[int]:
        """``x__payload`` integers, packed through the unit's x layout."""
        sig = self.signature
        scales = pack_rows(self.xscales, 8) if sig.blocks else [0] * self.n_beats
        return [sig.pack_x(p, swap=s, first=f, last=la, row=r, scales=sc)
                for p, s, f, la, r, sc in zip(pack_rows(self.x, sig.bits), self.swap.tolist(),
                                              self.first.tolist(), self.last.tolist(),
                                              self.row.tolist(), scales, strict=True)]

    # -- the model --------------------------------------------------------------------------------
    def expected(self, acc: str = "fp32", guard_bits: int = 16) -> list[YRow]:
        """Result rows the contract prescribes, in output order, for a unit with accumulate mode
        ``acc`` (and ``guard_bits`` in the ``exact`` mode, which takes NVFP4 but no MX format)."""
        block = self.fmt in BLOCK_FORMATS
        model = MatrixUnitModel(self.width, self.fmt, self.rows, acc, guard_bits)
        out: list[YRow] = []
        starts = list(np.nonzero(self.swap)[0]) + [self.n_beats]
        for t in range(len(starts) - 1):
            a, b = starts[t], starts[t + 1]
            scales = {"ws": self.wscales[t], "xs": self.xscales[a:b]} if block else {}
            out += model.run(self.tiles[t], self.x[a:b], self.first[a:b], self.last[a:b], self.row[a:b],
                             **scales)
        return out
