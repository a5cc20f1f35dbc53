"""Real MiniLM tile runs in the block-scaled formats, replayed through the block model beat by beat.

The block-scaled counterpart of :mod:`tb.tiles.corpus` + :mod:`tb.tiles.replay`, ready for the
block-scaled RTL: the same run rule (``M`` rows of one real matmul against one ``D``-column slice
of its weights, K over the whole reduction, zero-padded to a multiple of D; source picked by the
same deterministic rule as the plain corpus), operands quantized as a whole with
:func:`tb.tiles.quant_block.quantize_block` (blocks along K), and the unit's transfers per k-tile:
``D`` ``w`` beats, ``D/B`` ``ws`` beats, ``M`` ``x`` beats with their activation scale codes
(``first`` on k-tile 0, ``last`` on the last one, row index = beat). Tiles are cut in memory from
one forward pass (a few seconds), so there is no cache.

:func:`replay_block` runs a tile through :class:`tb.mu.model.MatrixUnitModel` (the
reference the RTL will be compared with) and checks it against the vectorised whole-matmul path
(:func:`tb.mu.model.unit_matmul`) bit for bit and against float64 within the contract's bound.
"""

import hashlib
from dataclasses import dataclass

import numpy as np

from hw.designs import STUDY_WIDTHS
from hw.formats import BLOCK_FORMATS, get_block_format
from tb.mu.model import MatrixUnitModel, unit_matmul
from tb.mu.rounding import fp32_to_float

from . import minilm
from .corpus import MODES, RunSpec, _run_id, _source
from .quant import quantize
from .quant_block import quantize_block
from .replay import _rel

__all__ = ["BASELINE", "BlockTile", "plan_block", "cut_block", "tiles", "beats_block", "replay_block"]


#: The per-tensor format each block format is compared with: its element format (hw/formats.py).
BASELINE = {f: get_block_format(f).element for f in BLOCK_FORMATS}


@dataclass
class BlockTile:
    """One block-scaled tile run: codes and scale codes as the unit's streams carry them.

    ``x`` (M, Kp), ``xs`` (M, Kp/B), ``w`` (Kp, D), ``ws`` (Kp/B, D) codes (zero-padded);
    ``x_f32`` (M, K) and ``w_f32`` (K, n) the unquantized operands; ``tensor_scale`` the product of
    the two per-tensor scales (NVFP4; 1 for MX), applied outside the unit. ``base`` holds the same
    run quantized per tensor (amax over the whole operand, as the plain corpus does) in the block
    format's element format (:data:`BASELINE`): ``{"fmt", "x", "w", "scale"}``, for comparison.
    """

    id: str
    meta: dict
    x: np.ndarray
    xs: np.ndarray
    w: np.ndarray
    ws: np.ndarray
    x_f32: np.ndarray
    w_f32: np.ndarray
    tensor_scale: float
    width: int
    base: dict | None = None

    @property
    def fmt(self) -> str:
        return self.meta["fmt"]

    @property
    def k_tiles(self) -> int:
        return self.x.shape[1] // self.width


def plan_block(full: bool = True) -> list:
    """Block-scaled runs: ``full`` every op x mode x block format x study width (288 runs); else one
    run per (format, width), the op and mode rotating (18 runs, every op class)."""
    runs = []
    if full:
        for w in STUDY_WIDTHS:
            for fmt in BLOCK_FORMATS:
                for op in minilm.OPS:
                    for mode in MODES:
                        runs.append(RunSpec(op, mode, fmt, w, len(runs)))
        return runs
    modes = list(MODES)
    for i, (fmt, w) in enumerate((f, w) for f in BLOCK_FORMATS for w in STUDY_WIDTHS):
        runs.append(RunSpec(minilm.OPS[i % len(minilm.OPS)], modes[i % 2], fmt, w, len(runs)))
    return runs


def _pad(a: np.ndarray, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, np.uint8)
    out[:a.shape[0], :a.shape[1]] = a
    return out


def cut_block(spec: RunSpec, caps: dict) -> BlockTile:
    """Cut one run from the captures (``{(sentence, layer, op, head): Capture}``)."""
    rid = _run_id(spec)
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "little"))
    cap, row0, n0 = _source(spec, caps, len(minilm.SENTENCES), rng)
    d, m, b = spec.width, spec.rows, get_block_format(spec.fmt).block
    get_block_format(spec.fmt).check_width(d)
    qx, qw = quantize_block(cap.x, spec.fmt, axis=1), quantize_block(cap.w, spec.fmt, axis=0)
    k = cap.x.shape[1]
    kp = -(-k // d) * d
    n1 = min(n0 + d, cap.w.shape[1])
    x = _pad(qx.codes[row0:row0 + m], (m, kp))
    xs = _pad(qx.scales[row0:row0 + m], (m, kp // b))
    w = _pad(qw.codes[:, n0:n1], (kp, d))
    ws = _pad(qw.scales[:, n0:n1], (kp // b, d))
    meta = {"op": spec.op, "mode": spec.mode, "fmt": spec.fmt, "width": d, "layer": cap.layer,
            "sentence": cap.sentence, "head": cap.head, "rows": [row0, row0 + m], "k": k, "cols": [n0, n1]}
    bx, bw = quantize(cap.x, BASELINE[spec.fmt]), quantize(cap.w, BASELINE[spec.fmt])
    base = {"fmt": BASELINE[spec.fmt], "x": _pad(bx.codes[row0:row0 + m], (m, kp)),
            "w": _pad(bw.codes[:, n0:n1], (kp, d)), "scale": float(bx.scale) * float(bw.scale)}
    return BlockTile(rid, meta, x, xs, w, ws, cap.x[row0:row0 + m].copy(), cap.w[:, n0:n1].copy(),
                     qx.tensor_scale * qw.tensor_scale, d, base)


def tiles(runs):
    """Yield the :class:`BlockTile` of every run (one float32 forward pass over all sentences)."""
    caps = []
    minilm.load().embed(minilm.SENTENCES, caps)
    by_key = {(c.sentence, c.layer, c.op, c.head): c for c in caps}
    for spec in runs:
        yield cut_block(spec, by_key)


def beats_block(tile: BlockTile) -> list:
    """Per k-tile ``(w (D, D), ws (D/B, D), x (M, D), xs (M, D/B), first, last)``."""
    d, nb = tile.width, tile.width // get_block_format(tile.fmt).block
    return [(tile.w[t * d:(t + 1) * d], tile.ws[t * nb:(t + 1) * nb], tile.x[:, t * d:(t + 1) * d],
             tile.xs[:, t * nb:(t + 1) * nb], t == 0, t == tile.k_tiles - 1) for t in range(tile.k_tiles)]


def replay_block(tile: BlockTile) -> dict:
    """Run ``tile`` through the block model; return its bits and errors.

    Raises
    ------
    AssertionError
        If the beat-by-beat model and the whole-matmul path differ on any bit, or a result leaves
        the contract's bound against float64.
    """
    m = tile.x.shape[0]
    model = MatrixUnitModel(tile.width, tile.fmt, rows=m)
    rows = []
    for w, ws, x, xs, first, last in beats_block(tile):
        rows += model.run(w, x, first, last, row=np.arange(m), ws=ws, xs=xs)
    assert [r.row for r in rows] == list(range(m)), "one result per row, in order"
    bits = np.stack([r.bits for r in rows])
    whole = unit_matmul(tile.fmt, tile.width, tile.x, tile.xs, tile.w, tile.ws)
    assert np.array_equal(bits, whole), f"{tile.id}: beat-by-beat and whole-matmul models differ"
    got = fp32_to_float(bits)
    ref64, bound = np.stack([r.ref for r in rows]), np.stack([r.bound for r in rows])
    assert np.all(np.abs(got - ref64) <= bound), f"{tile.id}: result outside the contract's bound"
    n = tile.w_f32.shape[1]
    ref32 = tile.x_f32.astype(np.float64) @ tile.w_f32
    y = got[:, :n] * tile.tensor_scale
    return {"id": tile.id, "fmt": tile.fmt, "width": tile.width, "op": tile.meta["op"], "bits": bits,
            **_rel(y, ref32)}
