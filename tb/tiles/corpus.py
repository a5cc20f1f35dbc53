"""The real-tile corpus: plan, cut, store, validate and load MiniLM tiles for a unit of width D.

A *tile run* is what one output block of a real matmul costs the unit: ``M`` activation rows (1 for
decode, 16 for prefill) times one ``D``-wide slice of the weight columns, with ``K`` (the whole
reduction of the real matmul) cut into ``ceil(K / D)`` weight tiles of ``D x D`` that the unit
accumulates. ``K`` and the column slice are padded to multiples of ``D`` with zero codes.

Operands are quantized (:mod:`tb.tiles.quant`) over the *whole* matmul operand, as a deployment
would, before the slice is cut: per tensor in an element format, per block along K in a block-scaled
format (the format's rows of the plan: :func:`plan` with ``block=True``, :func:`plan_block_rtl`; the
tile then carries the scale codes ``xs`` and ``ws`` as the unit's streams take them, and the same
run quantized per tensor in the element format, :data:`BASELINE`, for comparison).

Per-tensor runs are cached: each is one ``.npz`` file (:data:`TILE_KEYS`) in a cache folder outside
git (``build/tiles/`` of the checkout, or ``$TILES_CACHE``) with a ``manifest.json`` that records its
source (layer, op, sentence, head, row and column slice) and a SHA-256 of its arrays. The corpus is a
pure function of the model files and :data:`CORPUS_VERSION`, so a rebuild gives the same hashes;
:func:`load_tile` checks every file against its manifest entry. :func:`tiles` cuts any runs in memory
from one forward pass (a few seconds; the block-scaled runs are cut this way, with no cache).
"""

import fcntl
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hw.designs import STUDY_WIDTHS
from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS, get_block_format, get_format

from . import minilm
from .quant import quantize

__all__ = ["CORPUS_VERSION", "MODES", "TILE_KEYS", "BASELINE", "BLOCK_RTL_POINTS", "TileError", "RunSpec",
           "Tile", "plan", "plan_block_rtl", "smoke", "cache_dir", "build", "load_manifest", "load_tile",
           "tile_hash", "cut", "tiles"]

#: Bump when the cutting rules change (it names the cache folder).
CORPUS_VERSION = 1
#: Rows per run: decode is one token, prefill 16 tokens.
MODES = {"decode": 1, "prefill": 16}
#: Arrays of a tile file, with their dtypes.
TILE_KEYS = {"x": np.uint8, "w": np.uint8, "x_f32": np.float32, "w_f32": np.float32,
             "scales": np.float32, "width": np.int64}

#: The per-tensor format each block-scaled format is compared with: its element format (hw/formats.py).
BASELINE = {f: get_block_format(f).element for f in BLOCK_FORMATS}
#: The block-scaled formats the RTL regression runs at every study width; the others run at D = 32.
BLOCK_WIDE = ("mxfp8_e4m3", "mxfp4_e2m1", "nvfp4")
#: (format, width) points of the block-scaled RTL regression, smallest width (cheapest build) first.
BLOCK_RTL_POINTS = tuple((f, 32) for f in BLOCK_WIDE + ("mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3")) + tuple(
    (f, d) for d in (64, 128) for f in BLOCK_WIDE)

_REPO = Path(__file__).resolve().parents[2]


class TileError(ValueError):
    """A tile file or the manifest is missing, corrupt, or of the wrong shape or dtype."""


@dataclass(frozen=True)
class RunSpec:
    """One planned run: which op, rows, format and width; the source is derived from ``index``."""

    op: str
    mode: str
    fmt: str
    width: int
    index: int

    @property
    def rows(self) -> int:
        return MODES[self.mode]


@dataclass
class Tile:
    """One loaded tile run.

    Attributes
    ----------
    x : ndarray of uint8, (M, Kp)
        Activation codes, ``Kp`` a multiple of ``width``, zero-padded.
    w : ndarray of uint8, (Kp, width)
        Weight codes, zero-padded rows and columns.
    x_f32, w_f32 : ndarray of float32, (M, K) and (K, n)
        The unquantized operands (no padding): ``n <= width`` real columns.
    scales : (float, float)
        Per-tensor scales of x and w; the true product is ``scales[0] * scales[1] * (x . w)`` (block
        scales included for a block-scaled format; NVFP4's per-tensor scales, 1 for MX).
    xs, ws : ndarray of uint8, (M, Kp / B) and (Kp / B, width), or None
        Block-scaled formats: the scale codes, zero-padded as the codes; None per tensor.
    base : dict or None
        Block-scaled formats: the same run quantized per tensor (amax over the whole operand) in the
        element format (:data:`BASELINE`): ``{"fmt", "x", "w", "scale"}``, for comparison.
    """

    id: str
    meta: dict
    x: np.ndarray
    w: np.ndarray
    x_f32: np.ndarray
    w_f32: np.ndarray
    scales: tuple
    width: int
    xs: np.ndarray | None = None
    ws: np.ndarray | None = None
    base: dict | None = None

    @property
    def fmt(self) -> str:
        return self.meta["fmt"]

    @property
    def block(self) -> int | None:
        """The block size B of a block-scaled format, None per tensor."""
        return get_block_format(self.fmt).block if self.xs is not None else None

    @property
    def k_tiles(self) -> int:
        return self.x.shape[1] // self.width


def plan(full: bool = True, block: bool = False) -> list:
    """The regression's runs: the matrix element formats' rows, or (``block``) the block-scaled ones.

    ``full``: every op x mode x format x study width (:data:`hw.designs.STUDY_WIDTHS`; block-scaled:
    288 runs). Otherwise the quick set CI runs, chosen to need few Verilator builds (see
    tb/tiles/rtl.py): every op at D = 32 in E5M2 and at D = 64 in E2M1 and E4M3 (modes alternating,
    :data:`QUICK_UNITS`), one D = 128 E4M3 run, and one D = 32 run of every other matrix format:
    every op class and format. :func:`rtl_quick` says which of them CI also sends through the RTL.
    Block-scaled quick: one run per (format, width), the op and mode rotating (18 runs, every op
    class), model only.
    """
    runs = []
    modes = list(MODES)
    if full:
        for w in STUDY_WIDTHS:
            for fmt in (BLOCK_FORMATS if block else MATRIX_FORMATS):
                for op in minilm.OPS:
                    for mode in MODES:
                        runs.append(RunSpec(op, mode, fmt, w, len(runs)))
        return runs
    if block:
        for i, (fmt, w) in enumerate((f, w) for f in BLOCK_FORMATS for w in STUDY_WIDTHS):
            runs.append(RunSpec(minilm.OPS[i % len(minilm.OPS)], modes[i % 2], fmt, w, len(runs)))
        return runs
    for j, (fmt, width) in enumerate(QUICK_UNITS):
        for i, op in enumerate(minilm.OPS):
            runs.append(RunSpec(op, modes[(i + j) % 2], fmt, width, len(runs)))
    runs.append(RunSpec("ffn_up", "prefill", "fp8_e4m3", 128, len(runs)))
    for i, fmt in enumerate(_one_run_formats()):
        runs.append(RunSpec(*_PAIRS[i % len(_PAIRS)], fmt, 32, len(runs)))
    return runs


#: (format, width) of the quick plan's per-op runs.
QUICK_UNITS = (("fp8_e5m2", 32), ("fp4_e2m1", 64), ("fp8_e4m3", 64))
#: (width, format) of the units CI builds (tb/mu/test_matrix_unit.py quick builds with R = 16, in the
#: ``exact`` mode), besides D = 32 for each format that :data:`QUICK_UNITS` leaves out.
RTL_QUICK_UNITS = {(32, "fp8_e5m2"), (64, "fp4_e2m1"), (64, "fp8_e4m3")}
#: The width whose quick units share the op classes through the RTL (each op class on one of them).
RTL_HALF_WIDTH = 64
#: (op, mode) pairs handed out in turn to the one-run formats and the D = 8 smoke runs.
_PAIRS = (("q", "prefill"), ("ffn_down", "decode"), ("scores", "prefill"), ("pv", "decode"),
          ("ffn_up", "prefill"), ("o", "decode"))


def _one_run_formats() -> list:
    """Matrix formats without per-op quick runs: one quick run each at D = 32."""
    per_op = {fmt for fmt, _ in QUICK_UNITS}
    return [f for f in MATRIX_FORMATS if f not in per_op]


def rtl_quick() -> list:
    """The quick runs CI sends through the RTL (in the recommended mode, ``exact``): those on the
    units CI builds anyway: every op at D = 32 E5M2; at D = 64 (:data:`RTL_HALF_WIDTH`) every op
    once, E2M1 and E4M3 taking the op classes two at a time (each with decode and prefill runs);
    and the one D = 32 run of every other float format: every op class, every float format, D = 32
    and 64. The other D = 64 runs, the D = 128 runs and the integer formats' D = 32 runs stay on
    the model (CI builds no D = 128 unit and no D = 32 integer unit); the integer D = 8 smoke runs
    go through the RTL."""
    units = RTL_QUICK_UNITS | {(32, f) for f in _one_run_formats() if not get_format(f).is_integer}
    halves = [f for f, w in QUICK_UNITS if w == RTL_HALF_WIDTH]
    ops = list(minilm.OPS)

    def taken(s):
        return s.width != RTL_HALF_WIDTH or ops.index(s.op) // 2 % len(halves) == halves.index(s.fmt)

    return [s for s in plan(full=False) if (s.width, s.fmt) in units and taken(s)]


def plan_block_rtl(points=BLOCK_RTL_POINTS) -> list:
    """The block-scaled RTL regression's runs: one per op class at each (format, width) point;
    decode and prefill alternate along the ops (and start on the other mode at the next point), so
    each point has both modes (96 runs)."""
    modes = list(MODES)
    runs = []
    for p, (fmt, width) in enumerate(points):
        for i, op in enumerate(minilm.OPS):
            runs.append(RunSpec(op, modes[(i + p) % 2], fmt, width, 2000 + len(runs)))
    return runs


def smoke() -> list:
    """Extra real-tile runs on the small units the matrix-unit tests build anyway (D = 8): cheap RTL
    coverage of every matrix format in CI, two runs each. Not part of the study-width counts."""
    pairs = [_PAIRS[k % len(_PAIRS)] for k in range(2 * len(MATRIX_FORMATS))]
    return [RunSpec(*pairs[2 * i + j], fmt, 8, 1000 + 2 * i + j)
            for i, fmt in enumerate(MATRIX_FORMATS) for j in range(2)]


def cache_dir() -> Path:
    """Corpus folder: ``$TILES_CACHE`` or ``build/tiles/v<CORPUS_VERSION>`` of the checkout."""
    root = Path(os.environ.get("TILES_CACHE", _REPO / "build" / "tiles"))
    return root / f"v{CORPUS_VERSION}"


def tile_hash(arrays: dict) -> str:
    """SHA-256 over the arrays' names, dtypes, shapes and bytes (file-format independent)."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _source(spec: RunSpec, caps: dict, n_sent: int, rng: np.random.Generator) -> tuple:
    """Pick layer, sentence, head, row and column slice of ``spec`` deterministically."""
    layer = int(rng.integers(6))
    sentence = int(rng.integers(n_sent))
    head = int(rng.integers(12)) if spec.op in ("scores", "pv") else None
    cap = caps[(sentence, layer, spec.op, head)]
    length, n_total = cap.x.shape[0], cap.w.shape[1]
    m = spec.rows
    row0 = int(rng.integers(length - m + 1))
    n_blocks = -(-n_total // spec.width)
    n0 = int(rng.integers(n_blocks)) * spec.width
    return cap, row0, n0


def _captures(model: "minilm.MiniLM | None" = None) -> dict:
    """``{(sentence, layer, op, head): Capture}`` of one float32 forward pass over all sentences."""
    model = model or minilm.load()
    caps = []
    model.embed(minilm.SENTENCES, caps)
    return {(c.sentence, c.layer, c.op, c.head): c for c in caps}


def _pick(spec: RunSpec, caps: dict) -> tuple:
    """:func:`_source` with the run's own seed (from its id: the same source in every plan)."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(_run_id(spec).encode()).digest()[:8], "little"))
    return _source(spec, caps, len(minilm.SENTENCES), rng)


def _pad(a: np.ndarray, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, np.uint8)
    out[:a.shape[0], :a.shape[1]] = a
    return out


def _cut(spec: RunSpec, cap: minilm.Capture, row0: int, n0: int) -> tuple:
    d, m = spec.width, spec.rows
    qx, qw = quantize(cap.x, spec.fmt), quantize(cap.w, spec.fmt)
    k = cap.x.shape[1]
    kp = -(-k // d) * d
    n1 = min(n0 + d, cap.w.shape[1])
    x = _pad(qx.codes[row0:row0 + m], (m, kp))
    w = _pad(qw.codes[:, n0:n1], (kp, d))
    arrays = {"x": x, "w": w, "x_f32": cap.x[row0:row0 + m].copy(), "w_f32": cap.w[:, n0:n1].copy(),
              "scales": np.array([qx.scale, qw.scale], np.float32), "width": np.array(d, np.int64)}
    meta = {"op": spec.op, "mode": spec.mode, "fmt": spec.fmt, "width": d, "layer": cap.layer,
            "sentence": cap.sentence, "head": cap.head, "rows": [row0, row0 + m], "k": k, "k_padded": kp,
            "cols": [n0, n1], "matmul_shape": [cap.x.shape[0], k, cap.w.shape[1]],
            "amax": [float(np.abs(cap.x).max()), float(np.abs(cap.w).max())]}
    return arrays, meta


def _cut_block(spec: RunSpec, cap: minilm.Capture, row0: int, n0: int) -> Tile:
    bf = get_block_format(spec.fmt)
    d, m, b = spec.width, spec.rows, bf.block
    bf.check_width(d)
    qx, qw = quantize(cap.x, spec.fmt, axis=1), quantize(cap.w, spec.fmt, axis=0)
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
    return Tile(_run_id(spec), meta, x, w, cap.x[row0:row0 + m].copy(), cap.w[:, n0:n1].copy(),
                (qx.scale, qw.scale), d, xs, ws, base)


def cut(spec: RunSpec, caps: dict) -> Tile:
    """Cut one run in memory from the captures (``{(sentence, layer, op, head): Capture}``)."""
    cap, row0, n0 = _pick(spec, caps)
    if spec.fmt in BLOCK_FORMATS:
        return _cut_block(spec, cap, row0, n0)
    arrays, meta = _cut(spec, cap, row0, n0)
    return Tile(_run_id(spec), meta, arrays["x"], arrays["w"], arrays["x_f32"], arrays["w_f32"],
                tuple(float(s) for s in arrays["scales"]), spec.width)


def tiles(runs):
    """Yield the :class:`Tile` of every run, cut in memory (one float32 forward pass over all
    sentences; no cache)."""
    caps = _captures()
    for spec in runs:
        yield cut(spec, caps)


def build(runs=None, directory: Path | None = None, model: "minilm.MiniLM | None" = None) -> Path:
    """Cut the tiles of ``runs`` (default: the full plan) into ``directory``; reuse what is there.

    Returns the manifest path. Files already present with the manifest's hash are kept.
    """
    runs = plan(True) if runs is None else runs
    blocked = sorted({s.fmt for s in runs if s.fmt in BLOCK_FORMATS})
    if blocked:
        raise ValueError(f"block-scaled runs ({', '.join(blocked)}) are not cached: cut them in memory "
                         "with tiles()")
    directory = Path(directory) if directory is not None else cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a") as lock:  # pytest-xdist workers share the cache
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _build_locked(runs, directory, model)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _build_locked(runs, directory: Path, model) -> Path:
    mpath = directory / "manifest.json"
    manifest = load_manifest(directory) if mpath.is_file() else {"version": CORPUS_VERSION, "tiles": {}}
    todo = [s for s in runs if not _present(directory, manifest, _run_id(s))]
    if todo:
        by_key = _captures(model)
        manifest["sentences"] = list(minilm.SENTENCES)
        for spec in todo:
            rid = _run_id(spec)
            cap, row0, n0 = _pick(spec, by_key)
            arrays, meta = _cut(spec, cap, row0, n0)
            np.savez(directory / f"{rid}.npz", **arrays)
            meta.update(file=f"{rid}.npz", sha256=tile_hash(arrays), spec=asdict(spec))
            manifest["tiles"][rid] = meta
        tmp = mpath.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
        tmp.replace(mpath)
    return mpath


def _run_id(spec: RunSpec) -> str:
    return f"{spec.op}-{spec.mode}-{spec.fmt}-d{spec.width}"


def _present(directory: Path, manifest: dict, rid: str) -> bool:
    meta = manifest["tiles"].get(rid)
    return meta is not None and (directory / meta["file"]).is_file()


def load_manifest(directory: Path | None = None) -> dict:
    """The manifest of a built corpus.

    Raises
    ------
    TileError
        If it is missing or not JSON (fix: ``python -m tb.tiles build``).
    """
    directory = Path(directory) if directory is not None else cache_dir()
    path = directory / "manifest.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise TileError(f"no tile manifest at {path}; build the corpus with "
                        "'python -m tb.tiles build'") from None
    except ValueError as e:
        raise TileError(f"tile manifest {path} is corrupt ({e}); delete {directory} and rebuild with "
                        "'python -m tb.tiles build'") from None


def load_tile(path: Path, meta: dict | None = None) -> Tile:
    """Load one tile file and validate it (keys, dtypes, shapes, code range, hash against ``meta``).

    Raises
    ------
    TileError
        Naming the file, what is wrong, and the fix (rebuild the corpus).
    """
    path = Path(path)
    fix = f"delete {path} and rebuild with 'python -m tb.tiles build'"
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise TileError(f"tile file {path} is missing; rebuild with 'python -m tb.tiles build'") from None
    except Exception as e:
        raise TileError(f"tile file {path} is not a readable .npz ({type(e).__name__}: {e}); {fix}") from None
    missing = sorted(set(TILE_KEYS) - set(arrays))
    if missing:
        raise TileError(f"tile file {path} lacks array(s) {missing}; {fix}")
    for k, dt in TILE_KEYS.items():
        if arrays[k].dtype != dt:
            raise TileError(f"tile file {path}: array '{k}' has dtype {arrays[k].dtype}, expected "
                            f"{np.dtype(dt)}; {fix}")
    d = int(arrays["width"])
    x, w, xf, wf = arrays["x"], arrays["w"], arrays["x_f32"], arrays["w_f32"]
    shape_ok = (x.ndim == 2 and w.ndim == 2 and xf.ndim == 2 and wf.ndim == 2 and d > 0
                and x.shape[1] % d == 0 and x.shape[1] > 0 and w.shape == (x.shape[1], d)
                and xf.shape[0] == x.shape[0] and xf.shape[1] <= x.shape[1]
                and wf.shape[0] == xf.shape[1] and wf.shape[1] <= d and arrays["scales"].shape == (2,))
    if not shape_ok:
        raise TileError(f"tile file {path} has inconsistent shapes for width {d}: x {x.shape}, w {w.shape}, "
                        f"x_f32 {xf.shape}, w_f32 {wf.shape}, scales {arrays['scales'].shape} (expected x "
                        f"(M, Kp), w (Kp, {d}), Kp a multiple of {d}); {fix}")
    if meta is not None:
        if meta.get("width") != d:
            raise TileError(f"tile file {path} has width {d}, manifest says {meta.get('width')}; {fix}")
        bits = get_format(meta["fmt"]).bits
        if max(int(x.max(initial=0)), int(w.max(initial=0))) >= 1 << bits:
            raise TileError(f"tile file {path} holds codes wider than {bits} bits ({meta['fmt']}); {fix}")
        if tile_hash(arrays) != meta["sha256"]:
            raise TileError(f"tile file {path} does not match its manifest hash (corrupt or stale); {fix}")
    scales = tuple(float(s) for s in arrays["scales"])
    return Tile(Path(path).stem, dict(meta or {}), x, w, xf, wf, scales, d)


def load_runs(runs, directory: Path | None = None):
    """Build what is missing, then yield ``(spec, Tile)`` for ``runs``."""
    directory = Path(directory) if directory is not None else cache_dir()
    build(runs, directory)
    manifest = load_manifest(directory)
    for spec in runs:
        meta = manifest["tiles"][_run_id(spec)]
        yield spec, load_tile(directory / meta["file"], meta)
