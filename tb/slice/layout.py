"""What a compiler does for the slice: HBM weight images, scratchpad words, descriptors; and what the
slice must produce: expected results (via the matrix unit's bit-true model) and expected counters.

The layouts are the ones documented in ``docs/slice.md`` and :mod:`hw.slice.feed`. Block-scaled
formats carry scale codes beside the elements: weight scales as scale rows after each k-tile's D
super-rows in HBM, activation scales above the elements in each scratchpad word.
"""

from dataclasses import dataclass

import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format, get_format
from hw.payload import pack
from hw.slice.slice import cmd_layout
from perf.contract import Product
from tb.mu.program import pack_rows
from tb.mu.rounding import FP32_EDGES

__all__ = ["SliceGeometry", "Matmul", "pack_codes", "unpack_fp32", "hbm_image", "x_words",
           "expected_y", "expected_counters", "cmd_word", "random_fp32", "y_words",
           "expected_spad"]


@dataclass(frozen=True)
class SliceGeometry:
    """The slice parameters the tb needs (mirrors :class:`hw.slice.slice.Slice`)."""

    units: int
    width: int
    fmt: str
    feed_bytes: int
    rows: int = 1
    addr_bits: int = 8
    hbm_addr_bits: int = 32
    burst: int = 16
    acc: str = "fp32"

    @property
    def block(self) -> int:
        """B of a block-scaled format (elements per scale along K), 0 for a plain one."""
        return get_block_format(self.fmt).block if self.fmt in BLOCK_FORMATS else 0

    @property
    def scale_rows(self) -> int:
        """Scale rows per k-tile in HBM (D/B), 0 for a plain format."""
        return self.width // self.block if self.block else 0

    @property
    def scale_bytes(self) -> int:
        """Bytes of one scale row (``units * D`` codes), 0 for a plain format."""
        return self.units * self.width if self.block else 0

    @property
    def bits(self) -> int:
        """Element bits."""
        fmt = get_block_format(self.fmt).element if self.block else self.fmt
        return get_format(fmt).bits

    @property
    def row_bytes(self) -> int:
        """S: bytes of one super-row (units * D weights)."""
        return self.units * self.width * self.bits // 8


@dataclass
class Matmul:
    """One command: y[M x N] = x[M x K] . W[K x N] (codes), placed in scratchpad and HBM."""

    x: np.ndarray
    w: np.ndarray
    x_addr: int
    y_addr: int
    w_addr: int
    acc: int = 0
    y_init: np.ndarray | None = None   # FP32 bits [M, ceil(N/D)*D] the host writes before (acc)
    xs: np.ndarray | None = None       # block-scaled: x scale codes [M, ceil(K/B)]
    ws: np.ndarray | None = None       # block-scaled: W scale codes [ceil(K/B), N]

    @property
    def mkn(self):
        return self.x.shape[0], self.x.shape[1], self.w.shape[1]


def pack_codes(codes: np.ndarray, bits: int) -> bytes:
    """Codes -> little-endian bytes, element j at bits [j*b +: b] (any b in 1..8; the last byte is
    zero-padded)."""
    c = np.asarray(codes, dtype=np.uint8).ravel()
    n = -(-c.size * bits // 8)
    return pack_rows(c[None, :], bits)[0].to_bytes(n, "little")


def unpack_fp32(word: int, width: int) -> np.ndarray:
    """A scratchpad word -> its D FP32 lanes (uint32)."""
    return np.frombuffer(word.to_bytes(4 * width, "little"), dtype="<u4").copy()


def _tiles(g: SliceGeometry, k: int, n: int):
    D = g.width
    kt = -(-k // D)
    nt = -(-n // D)
    groups = -(-nt // g.units)
    return kt, nt, groups


def hbm_image(g: SliceGeometry, w: np.ndarray, rng: np.random.Generator | None = None,
              ws: np.ndarray | None = None) -> bytes:
    """The weight region of one command: groups of Kp super-rows; padding random if ``rng``.

    Block-scaled formats (``ws``: scale codes ``[ceil(K/B), N]``): each k-tile's D super-rows are
    followed by its D/B scale rows of ``units * D`` bytes (one code per column).
    """
    k, n = w.shape
    D, U = g.width, g.units
    kt, _, groups = _tiles(g, k, n)
    kp, cols = kt * D, groups * U * D
    if rng is None:
        full = np.zeros((kp, cols), dtype=np.uint8)
    else:
        full = rng.integers(0, 1 << g.bits, size=(kp, cols), dtype=np.uint8)
    full[:k, :n] = w
    nb = g.scale_rows
    if nb:
        if rng is None:
            fs = np.zeros((kt * nb, cols), dtype=np.uint8)
        else:
            fs = rng.integers(0, 256, size=(kt * nb, cols), dtype=np.uint8)
        fs[:ws.shape[0], :n] = ws
    out = bytearray()
    for grp in range(groups):
        gcols = slice(grp * U * D, (grp + 1) * U * D)
        if not nb:
            out += pack_codes(full[:, gcols], g.bits)
            continue
        for t in range(kt):
            out += pack_codes(full[t * D:(t + 1) * D, gcols], g.bits)
            out += fs[t * nb:(t + 1) * nb, gcols].tobytes()
    return bytes(out)


def x_words(g: SliceGeometry, x: np.ndarray, rng: np.random.Generator | None = None,
            xs: np.ndarray | None = None) -> list:
    """Scratchpad words of x: word ``m*ceil(K/D) + kt`` holds x[m, kt*D:+D] in its low D*b bits;
    block-scaled formats (``xs``: scale codes ``[M, ceil(K/B)]``): the D/B scale codes of those
    blocks above them, block i's at bits ``[D*b + 8*i +: 8]``.

    Lanes past K (and scales of blocks past K) carry random codes if ``rng`` is given (the slice
    must zero them).
    """
    mm, k = x.shape
    D, nb = g.width, g.scale_rows
    kt = -(-k // D)
    words = []
    for r in range(mm):
        for t in range(kt):
            lanes = np.zeros(D, dtype=np.uint8) if rng is None else \
                rng.integers(0, 1 << g.bits, size=D, dtype=np.uint8)
            seg = x[r, t * D:(t + 1) * D]
            lanes[:seg.size] = seg
            word = int.from_bytes(pack_codes(lanes, g.bits), "little")
            if nb:
                sc = np.zeros(nb, dtype=np.uint8) if rng is None else \
                    rng.integers(0, 256, size=nb, dtype=np.uint8)
                sseg = xs[r, t * nb:(t + 1) * nb]
                sc[:sseg.size] = sseg
                word |= int.from_bytes(sc.tobytes(), "little") << (D * g.bits)
            words.append(word)
    return words


def expected_y(g: SliceGeometry, x: np.ndarray, w: np.ndarray, numerics: str,
               xs: np.ndarray | None = None, ws: np.ndarray | None = None) -> np.ndarray:
    """FP32 bits y[M x ceil(N/D)*D] the slice must write: the N columns of x . W, then the padding
    columns of the last N-tile (zero weights, as the slice zeroes the columns past N).

    ``numerics="mu"``: the matrix unit's bit-true model (``tb.mu.model``) in the units' accumulate
    mode ``g.acc``, tile by tile in the slice's order (k-tiles in order; one rounding per beat in the
    ``fp32`` mode, one per K-long sum in the ``exact`` mode). ``"stub"``: the stub unit's integers.
    Block-scaled formats: the block model (:func:`tb.mu.model.unit_matmul` in the ``fp32`` mode,
    the same k-tile order, one rounding per beat; the unit model's ``exact`` mode otherwise) on x,
    W and their scale codes (``xs``, ``ws``), padded with zero
    elements and zero scale codes, as the slice pads them (with ``"stub"``: the stub's integers,
    scale codes included, on the same padded operands).
    """
    if g.block:
        return _expected_y_block(g, x, w, xs, ws, numerics)
    mm, k = x.shape
    n = w.shape[1]
    D = g.width
    kt, nt, _ = _tiles(g, k, n)
    xp = np.zeros((mm, kt * D), dtype=np.uint8)
    xp[:, :k] = x
    wp = np.zeros((kt * D, nt * D), dtype=np.uint8)
    wp[:k, :n] = w
    if numerics == "stub":
        from tb.slice.stub_unit import stub_reference
        return stub_reference(xp, wp).astype(np.uint32)
    return _model_tiles(g, xp, wp)


def _model_tiles(g: SliceGeometry, xp, wp, xsp=None, wsp=None) -> np.ndarray:
    """The units' model (:class:`tb.mu.model.MatrixUnitModel` in ``g.acc``) over padded operands,
    k-tile by k-tile and N-tile by N-tile in the slice's order (scale codes with a block format)."""
    from tb.mu.model import MatrixUnitModel
    mm, D = xp.shape[0], g.width
    kt, nt = xp.shape[1] // D, wp.shape[1] // D
    nb = D // g.block if g.block else 0
    y = np.zeros((mm, nt * D), dtype=np.uint32)
    for j in range(nt):
        model = MatrixUnitModel(D, g.fmt, rows=mm, acc=g.acc)
        for t in range(kt):
            scales = {} if xsp is None else {"xs": xsp[:, t * nb:(t + 1) * nb],
                                              "ws": wsp[t * nb:(t + 1) * nb, j * D:(j + 1) * D]}
            out = model.run(wp[t * D:(t + 1) * D, j * D:(j + 1) * D], xp[:, t * D:(t + 1) * D],
                            first=t == 0, last=t == kt - 1, row=np.arange(mm), **scales)
        for r in out:
            y[r.row, j * D:(j + 1) * D] = r.bits
    return y


def _expected_y_block(g: SliceGeometry, x, w, xs, ws, numerics: str) -> np.ndarray:
    from tb.mu.model import unit_matmul
    mm, k = x.shape
    n = w.shape[1]
    D, nb = g.width, g.scale_rows
    kt, nt, _ = _tiles(g, k, n)
    xp = np.zeros((mm, kt * D), dtype=np.uint8)
    xp[:, :k] = x
    wp = np.zeros((kt * D, nt * D), dtype=np.uint8)
    wp[:k, :n] = w
    xsp = np.zeros((mm, kt * nb), dtype=np.uint8)
    xsp[:, :xs.shape[1]] = xs
    wsp = np.zeros((kt * nb, nt * D), dtype=np.uint8)
    wsp[:ws.shape[0], :n] = ws
    if numerics == "stub":
        from tb.slice.stub_unit import stub_reference
        return stub_reference(xp, wp, xsp, wsp).astype(np.uint32)
    if g.acc == "exact":  # one rounding per K-long sum (OCP MX: the window)
        return _model_tiles(g, xp, wp, xsp, wsp)
    return unit_matmul(g.fmt, D, xp, xsp, wp, wsp).astype(np.uint32)


def expected_counters(g: SliceGeometry, cmds: list) -> dict:
    """Counter values the shapes imply (HBM bytes, useful/padding weights, beats, result rows).

    The unit-side numbers are the throughput contract's schedule (:class:`perf.contract.Product`
    on ``units`` units with ``rows`` accumulator rows: ``x_beats`` and ``w_rows`` are one unit's
    ``x`` and weight beats, every unit running in lockstep); the HBM side adds the feed's beats of
    ``feed_bytes``, each group's Kp super-rows (and, block-scaled, its ``ceil(K/D) * D/B`` scale
    rows: ``w_scale_bytes``) rounded up to whole beats, fetched once per pass.
    """
    D, B = g.width, g.feed_bytes
    c = dict(hbm_req_bytes=0, w_useful_elems=0, w_pad_elems=0, x_beats=0, y_rows=0, w_rows=0,
             w_scale_bytes=0)
    for cmd in cmds:
        mm, k, n = cmd.mkn
        prod = Product(mm, k, n, D, rows=g.rows, units=g.units)
        sched = prod.schedule()
        scale = prod.k_tiles * g.scale_rows * g.scale_bytes   # one group's scale rows
        beats = -(-(prod.k_tiles * D * g.row_bytes + scale) // B)     # one group's bytes
        c["hbm_req_bytes"] += prod.passes * prod.groups * beats * B
        c["w_scale_bytes"] += prod.passes * prod.groups * scale
        c["w_useful_elems"] += prod.weights_useful
        c["w_pad_elems"] += prod.weights_streamed - prod.weights_useful
        c["x_beats"] += sched.x_beats
        c["y_rows"] += prod.y_rows
        c["w_rows"] += sched.w_beats
    c["hbm_rcv_bytes"] = c["hbm_req_bytes"]
    return c


def cmd_word(g: SliceGeometry, cmd: Matmul, acc: int | None = None) -> int:
    """Pack a descriptor (``hw.slice.slice.cmd_layout``, least significant field first); ``acc``
    defaults to the command's own."""
    acc = cmd.acc if acc is None else acc
    mm, k, n = cmd.mkn
    return pack(cmd_layout(g.addr_bits, g.hbm_addr_bits), m=mm, k=k, n=n, x_addr=cmd.x_addr,
                y_addr=cmd.y_addr, w_addr=cmd.w_addr, acc=acc)




def random_fp32(rng: np.random.Generator, shape, specials: float = 0.05) -> np.ndarray:
    """Random FP32 bits for an old y: signed magnitudes in [2^-21, 1.5 * 2^20) (so sums with the unit's
    results round and cancel), a fraction ``specials`` taken from :data:`tb.mu.rounding.FP32_EDGES`."""
    mag = np.ldexp(rng.random(shape) + 0.5, rng.integers(-20, 21, size=shape))
    v = (mag * rng.choice([-1.0, 1.0], size=shape)).astype(np.float32).view(np.uint32)
    pick = rng.random(shape) < specials
    v[pick] = rng.choice(np.array(FP32_EDGES, dtype=np.uint32), size=int(pick.sum()))
    return v


def y_words(g: SliceGeometry, y: np.ndarray) -> list:
    """Scratchpad words of a y region (FP32 bits [M, ceil(N/D)*D]): word ``m*ceil(N/D) + nt``."""
    D = g.width
    mm, cols = y.shape
    return [int.from_bytes(y[r, t * D:(t + 1) * D].astype("<u4").tobytes(), "little")
            for r in range(mm) for t in range(cols // D)]


def expected_spad(g: SliceGeometry, cmds: list, numerics: str) -> dict:
    """The y words after ``cmds`` in order: {word address: D FP32 lanes}.

    ``acc = 0`` writes the unit's result ``Y`` (:func:`expected_y`); ``acc = 1`` writes
    ``fp32_add(y_old, Y)`` lane by lane (``docs/numerics.md`` section 5), ``y_old`` being the host's
    ``y_init`` or an earlier command's result at that address. Lanes past N hold the padding
    columns' results (zero weights: the slice zeroes the columns past N whatever HBM holds there).
    """
    from tb.mu.rounding import fp32_add

    D = g.width
    mem = {}
    for c in cmds:
        mm, _, n = c.mkn
        nt = -(-n // D)
        if c.y_init is not None:
            for i, wd in enumerate(y_words(g, c.y_init)):
                mem[c.y_addr + i] = unpack_fp32(wd, D)
        y = expected_y(g, c.x, c.w, numerics, c.xs, c.ws)
        for r in range(mm):
            for t in range(nt):
                addr = c.y_addr + r * nt + t
                new = y[r, t * D:(t + 1) * D].astype(np.uint32)
                if c.acc:
                    new = np.array([fp32_add(int(a), int(b)) for a, b in zip(mem[addr], new, strict=True)],
                                   dtype=np.uint32)
                mem[addr] = new
    return mem
