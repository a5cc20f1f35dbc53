"""The formats study, ``reports/block_scaled.md``: every element and block-scaled format through the
bit-true model, on real and random data (the regression's per-run records are :mod:`tb.tiles.report`).

Measurements, each through :mod:`tb.mu.model` (the unit's contract, ``docs/numerics.md``
section 7; per-tensor formats through the same code with unit scales, which is the plain contract):

* **window**: how often the F-bit block-sum window changes a result against the same accumulation
  with exact block sums (the correctly rounded per-beat result), on random Gaussian data whose
  blocks are scaled by ``2^u``, ``u`` uniform in [-30, 30], and on real MiniLM matmuls;
* **op classes**: the error of every real MiniLM matmul (float32 captures of the forward pass) in
  every format against the float32 product, per op class, at D = 32, 64, 128;
* **fidelity**: the whole forward pass with every matmul through the model, per format: cosine of
  the sentence embeddings against float32 and whether the paraphrase / unrelated ordering survives;
* **tile runs**: the block-scaled rows of the tile corpus (:func:`tb.tiles.corpus.plan` with
  ``block=True``) replayed beat by beat (:func:`tb.tiles.replay.replay_model`).

Run ``python -m tb.tiles block`` (a few minutes on two cores); the report carries its provenance.
"""

import datetime
import platform
import subprocess
from collections import defaultdict

import numpy as np

from hw.formats import BLOCK_FORMATS, MATRIX_FORMATS, get_block_format
from tb.mu.model import unit_matmul
from tb.mu.rounding import WINDOW_FRAC_BITS, fp32_to_float

from . import corpus, minilm
from .quant import quantize

__all__ = ["Operands", "prepare", "run", "window_random", "op_classes", "fidelity", "tile_runs", "measure",
           "block_md"]

WIDTHS = (32, 64, 128)
#: Formats compared, per-tensor first.
FORMATS = MATRIX_FORMATS + tuple(BLOCK_FORMATS)
#: Per-tensor baseline of each block format in the tables.
BASELINE = {**corpus.BASELINE, "mxfp4_e2m1+ceil": "fp4_e2m1"}


#: Quantizer variants measured beside the formats: ``<format>+<scale rule>`` (tb/tiles/quant.py).
VARIANTS = ("mxfp4_e2m1+ceil",)


class Operands:
    """One matmul's operands quantized to ``fmt`` (a format, or a :data:`VARIANTS` name): codes,
    scale codes and the outside scale."""

    def __init__(self, x, w, fmt: str):
        fmt, _, rule = fmt.partition("+")
        self.fmt = fmt
        qx, qw = quantize(x, fmt, 1, rule or "ocp"), quantize(w, fmt, 0, rule or "ocp")
        self.x, self.xs, self.w, self.ws = qx.codes, qx.scales, qw.codes, qw.scales
        self.scale = qx.scale * qw.scale


def prepare(x, w, fmt: str) -> Operands:
    """Quantize ``x`` (M, K) and ``w`` (K, N) to ``fmt`` (blocks along K)."""
    return Operands(np.asarray(x, np.float32), np.asarray(w, np.float32), fmt)


def _pad(a, n, axis):
    if a is None or a.shape[axis] == n:
        return a
    pad = [(0, 0), (0, 0)]
    pad[axis] = (0, n - a.shape[axis])
    return np.pad(a, pad)


def run(op: Operands, width: int, frac_bits=WINDOW_FRAC_BITS):
    """FP32 result bits of the unit (K zero-padded to a multiple of D) and their float64 value with
    the outside scale applied."""
    kp = -(-op.x.shape[1] // width) * width
    x, w = _pad(op.x, kp, 1), _pad(op.w, kp, 0)
    if op.fmt in BLOCK_FORMATS:
        nbk = kp // get_block_format(op.fmt).block
        bits = unit_matmul(op.fmt, width, x, _pad(op.xs, nbk, 1), w, _pad(op.ws, nbk, 0), frac_bits)
    else:
        bits = unit_matmul(op.fmt, width, x, None, w, None)
    return bits, fp32_to_float(bits) * op.scale


def _rel(y, ref) -> float:
    return float(np.abs(y - ref).mean() / max(np.abs(ref).mean(), 1e-300))


def window_random(fmts=tuple(BLOCK_FORMATS), widths=WIDTHS, fracs=(0, 8, 16, 24, WINDOW_FRAC_BITS),
                  spread: int = 30, seed: int = 0) -> list:
    """Share of results that differ from exact block sums, on randomly scaled Gaussian blocks.

    Per format and D: 64 x (4 D) activations against (4 D) x 64 weights (four beats per result) and
    a one-beat product; every block of 16 elements along K is multiplied by ``2^u``, ``u`` uniform
    in [-spread, spread], before quantization. Returns dicts with ``fmt, width, beats, frac_bits,
    n, differ, max_ulps``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for fmt in fmts:
        for d in widths:
            if d % get_block_format(fmt).block:
                continue
            for beats in (1, 4):
                k = beats * d
                x = rng.standard_normal((64, k)) * np.repeat(2.0 ** rng.integers(-spread, spread + 1,
                                                                                 (64, k // 16)), 16, 1)
                w = rng.standard_normal((k, 64)) * np.repeat(2.0 ** rng.integers(-spread, spread + 1,
                                                                                 (k // 16, 64)), 16, 0)
                op = prepare(x, w, fmt)
                exact, _ = run(op, d, None)
                ex = fp32_to_float(exact)
                for f in fracs:
                    got, _ = run(op, d, f)
                    diff = got != exact
                    ulp = np.spacing(np.abs(ex).astype(np.float32)).astype(np.float64)
                    ulps = np.abs(fp32_to_float(got) - ex) / ulp
                    out.append({"fmt": fmt, "width": d, "beats": beats, "frac_bits": f, "n": int(diff.size),
                                "differ": int(diff.sum()), "max_ulps": float(ulps.max())})
    return out


def _captures(sentences):
    model = minilm.load()
    caps = []
    model.embed([minilm.SENTENCES[s] for s in sentences], caps)
    return caps


def op_classes(sentences=(0, 2), fmts=FORMATS, widths=WIDTHS) -> dict:
    """Per (fmt, width, op): mean over the matmuls of the norm-wise mean relative error against the
    float32 product, plus (block formats) results changed by the window against exact block sums.
    The E5M2 formats run at D = 64 only (their block sums exceed int64, which is slow).

    Returns ``{"err": {(fmt, d, op): [rel, ...]}, "window": {(fmt, d): (n, differ)}}``.
    """
    caps = _captures(sentences)
    err, window = defaultdict(list), defaultdict(lambda: [0, 0])
    for c in caps:
        ref = c.x.astype(np.float64) @ c.w.astype(np.float64)
        for fmt in fmts:
            op = prepare(c.x, c.w, fmt)
            for d in widths if "e5m2" not in fmt else (64,):    # E5M2 sums need Python ints: slow
                bits, y = run(op, d)
                err[(fmt, d, c.op)].append(_rel(y, ref))
                if fmt in BLOCK_FORMATS and d > get_block_format(fmt).block:   # not the variants
                    exact, _ = run(op, d, None)
                    window[(fmt, d)][0] += exact.size
                    window[(fmt, d)][1] += int((exact != bits).sum())
    return {"err": dict(err), "window": {k: tuple(v) for k, v in window.items()}, "matmuls": len(caps)}


def fidelity(fmts=FORMATS, width: int = 64) -> dict:
    """Per format: cosine of each sentence embedding with float32, and the semantic ordering."""
    model = minilm.load()
    ref = model.embed(minilm.SENTENCES)
    out = {"float32": _ordering(ref) | {"cos": [1.0] * len(ref)}}
    for fmt in fmts:
        def mm(x, w, _op, fmt=fmt):
            return run(prepare(x, w, fmt), width)[1].astype(np.float32)

        emb = model.embed(minilm.SENTENCES, matmul=mm)
        out[fmt] = _ordering(emb) | {"cos": [float(v) for v in (emb * ref).sum(axis=1)]}
    return out


def _ordering(emb) -> dict:
    cos = emb @ emb.T
    para = [float(cos[0, 1]), float(cos[2, 3])]
    unrel = max(float(cos[i, j]) for i in range(6) for j in range(i + 1, 6) if (i, j) not in ((0, 1), (2, 3)))
    return {"paraphrase": para, "unrelated_max": unrel, "ordered": min(para) > unrel}


def _provenance(cmd: str) -> list:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "unknown"
    from importlib.metadata import version
    return [f"- generated {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC by `{cmd}` at git "
            f"revision `{rev}` (plus the uncommitted report), Python {platform.python_version()}, "
            f"numpy {np.__version__}, ml_dtypes {version('ml_dtypes')}, gfloat {version('gfloat')}"]


def measure(path=None) -> dict:
    """All three measurements (JSON-able); with ``path``, each part is saved there when done and
    parts already in the file are reused."""
    import json
    from pathlib import Path

    path = Path(path) if path else None
    data = json.loads(path.read_text()) if path is not None and path.is_file() else {}

    def part(key, fn):
        if key not in data:
            data.update(fn())
            if path is not None:
                path.write_text(json.dumps(data))

    part("window_random", lambda: {"window_random": window_random()})

    def ops():
        oc = op_classes()
        return {"op_err": [[f, d, o, v] for (f, d, o), v in oc["err"].items()],
                "op_window": [[f, d, n, k] for (f, d), (n, k) in oc["window"].items()],
                "matmuls": oc["matmuls"]}

    part("op_err", ops)

    def variants():
        oc = op_classes(fmts=VARIANTS, widths=(64,))
        return {"op_variant": [[f, d, o, v] for (f, d, o), v in oc["err"].items()]}

    part("op_variant", variants)
    part("fidelity", lambda: {"fidelity": fidelity()})
    part("tile_runs", lambda: {"tile_runs": tile_runs()})
    return data


def tile_runs(full: bool = True) -> list:
    """The block-scaled rows of the tile corpus, replayed beat by beat
    (:func:`tb.tiles.replay.replay_model`)."""
    from .replay import replay_model

    out = []
    for t in corpus.tiles(corpus.plan(full, block=True)):
        res = replay_model(t)
        out.append({"id": res.id, "fmt": res.fmt, "width": res.width, "op": t.meta["op"], **res.err_f32})
    return out


def _pct(k: int, n: int) -> str:
    return f"{k} / {n} ({100 * k / n:.2g}%)" if n else "-"


def block_md(data: dict, cmd: str = "python -m tb.tiles block") -> str:
    """The report from :func:`measure`'s output."""
    out = ["<!-- generated by `python -m tb.tiles block`; do not edit -->",
           "# Block-scaled formats (OCP MX, NVFP4) through the bit-true model\n", *_provenance(cmd),
           f"- model: `tb/mu/model.py` (contract: docs/numerics.md section 7), window F = "
           f"{WINDOW_FRAC_BITS} fraction bits; quantizer `tb/tiles/quant.py` (per block: OCP MX "
           "conversion, NVFP4 two-level; per tensor: amax-scaled); per-tensor formats through the same "
           "model with unit scales (bit-identical to its per-tensor path)\n",
           "## 1. The window against exact block sums, random data\n",
           "Gaussian values, every 16-element block along K scaled by 2^u, u uniform in [-30, 30] (so "
           "the block scales spread over about 60 binades), quantized with the block quantizer; "
           "64 x 64 results per table row. *differ*: results whose FP32 bits differ from the same "
           "accumulation with exact block sums (the correctly rounded per-beat result); *max ulps*: "
           "largest difference in FP32 ulps of the exact-sum result.\n",
           "| format | D | beats | F = 0 | F = 8 | F = 16 | F = 24 | F = 32 | max ulps at F = 32 |",
           "|---|---|---|---|---|---|---|---|---|"]
    groups = defaultdict(dict)
    for r in data.get("window_random", []):
        groups[(r["fmt"], r["width"], r["beats"])][r["frac_bits"]] = r
    for (fmt, d, beats), rs in groups.items():
        cells = [_pct(r["differ"], r["n"]) for _, r in sorted(rs.items())]
        out.append(f"| {fmt} | {d} | {beats} | " + " | ".join(cells)
                   + f" | {rs[WINDOW_FRAC_BITS]['max_ulps']:.2g} |")
    out += _ops_md(data) + _fidelity_md(data.get("fidelity")) + _tiles_md(data.get("tile_runs"))
    return "\n".join(out) + "\n"


def _ops_md(data: dict) -> list:
    if "op_err" not in data:
        return ["", "## 2. Real MiniLM matmuls\n", "Not measured in this run.\n"]
    out = ["", "## 2. Real MiniLM matmuls: error against float32 by op class\n",
            f"{data['matmuls']} real matmuls (sentences 0 and 2, all six layers, all heads; float32 "
            "operands captured from the float32 forward pass), each quantized as a whole (per tensor, "
            "or in blocks along K) and run through the model with K zero-padded to a multiple of D. "
            "Cell: mean over the op's matmuls of mean|y - ref| / mean|ref| (ref: the float32 operands' "
            "float64 product). D = 64 shown; D = 32 and 128 differ only in the accumulation order "
            "(section 3).\n"]
    err = defaultdict(dict)
    for f, d, o, v in data["op_err"] + data.get("op_variant", []):
        err[(f, d)][o] = float(np.mean(v))
    ops = minilm.OPS
    fm = [f for f in FORMATS + VARIANTS if (f, 64) in err]
    out += ["| op | " + " | ".join(fm) + " |", "|---|" + "---|" * len(fm)]
    for o in ops:
        out.append(f"| {o} | " + " | ".join(f"{err[(f, 64)][o]:.2e}" for f in fm) + " |")
    out += ["", "### Block formats against their per-tensor baselines (D = 64)\n",
            "| block format | baseline | ops where it is better | worst ratio block / baseline |",
            "|---|---|---|---|"]
    for f, base in BASELINE.items():
        if (f, 64) not in err or (base, 64) not in err:
            continue
        ratios = {o: err[(f, 64)][o] / err[(base, 64)][o] for o in ops}
        better = sum(r < 1 for r in ratios.values())
        worst = max(ratios, key=ratios.get)
        out.append(f"| {f} | {base} | {better} / {len(ops)} | {ratios[worst]:.2f} ({worst}) |")
    out += ["", "Why MXFP8 need not beat per-tensor FP8: the OCP shared exponent "
            "`floor(log2 amax) - emax_elem` maps a block's amax into `[2^emax, 2^(emax+1))`, so for "
            "E4M3 (largest 448 = 1.75 * 2^8) a block's values above 448 * 2^X saturate, and the "
            "elements keep the same 3 (E4M3) or 2 (E5M2) mantissa bits as per tensor. Block scaling "
            "buys range, which per-tensor FP8 (2^-9 .. 448) already has for these tensors; the "
            "narrow formats (E2M1: 0.5 .. 6) are where it pays.",
            "", "`mxfp4_e2m1+ceil`: MXFP4 with the shared exponent rounded up "
            "(`X = ceil(log2(amax / 6))`, `tb/tiles/quant.py` scale_rule `ceil`) instead of "
            "the OCP rule, whose `floor(log2 amax) - 2` saturates a block's values in (6, 8) * 2^X "
            "to 6 * 2^X. Same codes, same unit, same contract: only the quantizer differs.",
            "", "Attention scores are the hard case for MX against per-tensor: there the per-tensor "
            "operands are one head's Q (L x 32) and K (32 x L), so a per-tensor scale is already "
            "one scale per few hundred values, and it is a float32 that puts the amax exactly on the "
            "element's largest value, where an E8M0 power of two leaves part of the element grid "
            "unused (OCP rule) or rounds the amax down into saturation; NVFP4's UE4M3 block scales "
            "(3 mantissa bits, B = 16) do not have this loss."]
    out += ["", "## 3. Per width, and the window on real data\n",
            "| format | D=32 mean over ops | D=64 | D=128 | results changed by the window (D=64) | (D=128) |",
            "|---|---|---|---|---|---|"]
    win = {(f, d): (n, k) for f, d, n, k in data["op_window"]}
    for f in FORMATS:
        cells = [f"{np.mean(list(err[(f, d)].values())):.2e}" if (f, d) in err else "-" for d in WIDTHS]
        ws = [_pct(win[(f, d)][1], win[(f, d)][0]) if (f, d) in win else "-" for d in (64, 128)]
        out.append(f"| {f} | " + " | ".join(cells + ws) + " |")
    return out


def _fidelity_md(fid) -> list:
    if not fid:
        return ["", "## 4. Model-level fidelity\n", "Not measured in this run.\n"]
    out = ["", "## 4. Model-level fidelity: the whole forward pass through the model (D = 64)\n",
            "Every matmul of all-MiniLM-L6-v2 (projections, FFN, attention scores and P.V, per head) "
            "quantized and run through the bit-true model; everything else in float32. Cosine of "
            "each sentence embedding with the float32 one; *ordering*: both paraphrase pairs more "
            "similar than every unrelated pair.\n",
            "| format | min cosine vs float32 | mean cosine | paraphrases | max unrelated | ordering |",
            "|---|---|---|---|---|---|"]
    for f, r in fid.items():
        out.append(f"| {f} | {min(r['cos']):.4f} | {np.mean(r['cos']):.4f} | {r['paraphrase'][0]:.3f}, "
                   f"{r['paraphrase'][1]:.3f} | {r['unrelated_max']:.3f} | "
                   f"{'kept' if r['ordered'] else 'LOST'} |")
    return out


def _tiles_md(runs) -> list:
    if not runs:
        return ["", "## 5. Block-scaled tile runs\n", "Not measured in this run.\n"]
    out = ["", "## 5. Block-scaled tile runs (the plan the block-scaled RTL will replay)\n",
           f"{len(runs)} runs of `tb/tiles/corpus.py` (every op x mode x block format x D = 32, "
           "64, 128; M = 1 or 16 rows of a real matmul against one D-column slice, K whole), fed beat "
           "by beat to `MatrixUnitModel` with the `ws` stream and scale codes as the RTL will "
           "take them. Every run is bit-identical to the whole-matmul path and within the "
           "contract's bound of float64 (asserted). Error against float32 (mean rel, mean over runs; "
           "worst run's max rel):\n",
           "| format | D = 32 | D = 64 | D = 128 | worst max rel |", "|---|---|---|---|---|"]
    by = defaultdict(list)
    for r in runs:
        by[(r["fmt"], r["width"])].append(r)
    for f in BLOCK_FORMATS:
        cells = [f"{np.mean([r['mean_rel'] for r in by[(f, d)]]):.2e}" if by[(f, d)] else "-" for d in WIDTHS]
        worst = max((r["max_rel"] for d in WIDTHS for r in by[(f, d)]), default=float("nan"))
        out.append(f"| {f} | " + " | ".join(cells) + f" | {worst:.2e} |")
    return out
