"""Matmul shapes of the models users care about, and what padding and feed cost on a unit of width D.

Model numbers are the published configurations (``/work/shared/reference/anchors.md``, Hugging Face
``config.json`` files). Each decode step of a model is a list of :class:`Matmul`: ``y[M x N] =
x[M x K] . W[K x N]`` where ``W`` is what streams from memory (weights, or the KV cache for the
attention products) and ``count`` is how many such products one decode step of the whole batch
runs (layers x heads x sequences x experts).

The cost model is the unit's throughput contract (:mod:`perf.contract`), nothing else:

* a product is cut into ``ceil(K/D) * ceil(N/D)`` weight tiles of ``D x D``, zero-padded;
* each tile streams ``D`` weight rows of ``D*b/8`` bytes (``b`` = element bits), so the bytes fetched
  are ``tiles * D^2 * b/8`` against ``K*N*b/8`` useful ones;
* a tile serving ``M`` activation rows costs ``max(D, M)`` cycles: at ``M < D`` the unit waits for
  weights (one tile per ``D`` cycles, a feed of ``D*b/8`` bytes per cycle), at ``M >= D`` it issues
  one x beat per cycle (rows beyond ``D`` reuse the tile: ``M`` beats);
* MAC utilisation = useful MACs ``M*K*N`` / (cycles x ``D^2``).

Activations live on chip and are not counted as fetched bytes. Fill and pipeline latency are left
out (they are per product, a few tens of cycles): the cycles are
:meth:`perf.contract.Product.steady_cycles` at full feed, whose schedule the regression checks
against the RTL's counters on real MiniLM tiles (reports/regression.md).
"""

import math
from dataclasses import dataclass

from .contract import Product

__all__ = ["Matmul", "MODELS", "catalog", "prefill_catalog", "cost", "slice80"]

#: Context length assumed for the attention products of the LLMs (MiniLM: its 256-token maximum).
CONTEXT = 4096


@dataclass(frozen=True)
class Matmul:
    """One kind of product of a decode step: ``count`` products of ``M x K`` by ``K x N``."""

    model: str
    name: str
    m: int
    k: int
    n: int
    count: float
    note: str = ""


def _distinct_experts(experts: int, top_k: int, tokens: int) -> float:
    """Expected number of distinct experts hit by ``tokens`` tokens routing top-k uniformly."""
    return experts * (1 - (1 - top_k / experts) ** tokens)


def _attention(model, layers, q_heads, kv_heads, head_dim, batch, ctx, v_dim=None):
    g = q_heads // kv_heads  # query heads sharing one KV head are the rows of one product
    c = layers * kv_heads * batch
    return [Matmul(model, "attn scores Q.K^T", g, head_dim, ctx, c, f"per KV head, {g} query rows"),
            Matmul(model, "attn P.V", g, ctx, v_dim or head_dim, c, f"per KV head, {g} query rows")]


def catalog(batch: int) -> list:
    """Every product of one decode step at ``batch`` sequences, for each model of :data:`MODELS`."""
    b = batch
    out = []
    # all-MiniLM-L6-v2: BERT, 6 layers, hidden 384, 12 heads x 32, FFN 1536 (real weights we run)
    L = 6
    out += [Matmul("MiniLM-L6", "q/k/v proj", b, 384, 384, 3 * L),
            Matmul("MiniLM-L6", "out proj", b, 384, 384, L),
            Matmul("MiniLM-L6", "ffn up", b, 384, 1536, L),
            Matmul("MiniLM-L6", "ffn down", b, 1536, 384, L)]
    out += _attention("MiniLM-L6", L, 12, 12, 32, b, 256)
    # Llama-3.1-8B: hidden 4096, 32 layers, 32 heads / 8 KV heads x 128, SwiGLU FFN 14336
    L = 32
    out += [Matmul("Llama-3.1-8B", "q proj", b, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "k/v proj", b, 4096, 1024, 2 * L),
            Matmul("Llama-3.1-8B", "out proj", b, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "ffn gate/up", b, 4096, 14336, 2 * L),
            Matmul("Llama-3.1-8B", "ffn down", b, 14336, 4096, L),
            Matmul("Llama-3.1-8B", "lm head", b, 4096, 128256, 1)]
    out += _attention("Llama-3.1-8B", L, 32, 8, 128, b, CONTEXT)
    # Phi-2: hidden 2560, 32 layers, 32 heads x 80 (MHA), GELU FFN 10240
    L = 32
    out += [Matmul("Phi-2", "q/k/v proj", b, 2560, 2560, 3 * L),
            Matmul("Phi-2", "out proj", b, 2560, 2560, L),
            Matmul("Phi-2", "ffn up", b, 2560, 10240, L),
            Matmul("Phi-2", "ffn down", b, 10240, 2560, L),
            Matmul("Phi-2", "lm head", b, 2560, 51200, 1)]
    out += _attention("Phi-2", L, 32, 32, 80, b, CONTEXT)
    # gpt-oss-120b: hidden 2880, 36 layers, 64 q / 8 KV heads x 64, 128 experts top-4, expert FFN 2880
    L, e = 36, _distinct_experts(128, 4, b)
    out += [Matmul("gpt-oss-120b", "q proj", b, 2880, 4096, L),
            Matmul("gpt-oss-120b", "k/v proj", b, 2880, 512, 2 * L),
            Matmul("gpt-oss-120b", "out proj", b, 4096, 2880, L),
            Matmul("gpt-oss-120b", "router", b, 2880, 128, L),
            Matmul("gpt-oss-120b", "expert gate+up", 1, 2880, 5760, L * e,
                   f"{e:.1f} distinct experts/layer, ~1 token each"),
            Matmul("gpt-oss-120b", "expert down", 1, 2880, 2880, L * e),
            Matmul("gpt-oss-120b", "lm head", b, 2880, 201088, 1)]
    out += _attention("gpt-oss-120b", L, 64, 8, 64, b, CONTEXT)
    # DeepSeek-R1 (V3): hidden 7168, 61 layers (3 dense FFN 18432, 58 MoE: 256 experts top-8 of 2048 +
    # 1 shared), MLA: 128 heads, q_lora 1536, kv_lora 512, qk 128 nope + 64 rope, v 128; decode with
    # the up-projections absorbed (all heads attend over the shared 576-wide latent cache).
    L, dense, moe, e = 61, 3, 58, _distinct_experts(256, 8, b)
    out += [Matmul("DeepSeek-R1", "q down (q_a)", b, 7168, 1536, L),
            Matmul("DeepSeek-R1", "q up (q_b)", b, 1536, 128 * 192, L),
            Matmul("DeepSeek-R1", "kv down (kv_a)", b, 7168, 576, L),
            Matmul("DeepSeek-R1", "q absorb (W_UK)", b, 128, 512, L * 128, "per head"),
            Matmul("DeepSeek-R1", "attn scores (latent)", 128, 576, CONTEXT, L * b,
                   "128 heads share the cache"),
            Matmul("DeepSeek-R1", "attn P.V (latent)", 128, CONTEXT, 512, L * b),
            Matmul("DeepSeek-R1", "v up (W_UV)", b, 512, 128, L * 128, "per head"),
            Matmul("DeepSeek-R1", "out proj", b, 16384, 7168, L),
            Matmul("DeepSeek-R1", "dense ffn gate/up", b, 7168, 18432, 2 * dense),
            Matmul("DeepSeek-R1", "dense ffn down", b, 18432, 7168, dense),
            Matmul("DeepSeek-R1", "shared expert gate/up", b, 7168, 2048, 2 * moe),
            Matmul("DeepSeek-R1", "shared expert down", b, 2048, 7168, moe),
            Matmul("DeepSeek-R1", "expert gate/up", 1, 7168, 2048, 2 * moe * e,
                   f"{e:.1f} distinct experts/layer, ~1 token each"),
            Matmul("DeepSeek-R1", "expert down", 1, 2048, 7168, moe * e),
            Matmul("DeepSeek-R1", "lm head", b, 7168, 129280, 1)]
    return out



def _per_expert(tokens: int, experts: int, top_k: int) -> int:
    """Rows each expert serves in a prefill of ``tokens`` tokens routed top-k uniformly (rounded up)."""
    return -(-tokens * top_k // experts)


def prefill_catalog(tokens: int) -> list:
    """Every product of the prefill of ``tokens`` tokens, for each model of :data:`MODELS`.

    The weight products serve all ``tokens`` rows (``M = tokens``: a tile is reused by every row);
    attention runs over the whole prompt as context (MiniLM: sequences of its 256-token maximum), the
    causal mask's skipped half not subtracted; GQA query heads sharing a KV head are rows of one
    product; every MoE expert is hit and serves ``tokens * top_k / experts`` rows (uniform routing);
    DeepSeek's MLA runs un-absorbed (K/V up-projections of the latent, per-head attention of width
    192 / 128); the LM head runs on the last token only.
    """
    t = tokens
    out = []
    L, seq = 6, min(t, 256)
    out += [Matmul("MiniLM-L6", "q/k/v proj", t, 384, 384, 3 * L),
            Matmul("MiniLM-L6", "out proj", t, 384, 384, L),
            Matmul("MiniLM-L6", "ffn up", t, 384, 1536, L),
            Matmul("MiniLM-L6", "ffn down", t, 1536, 384, L)]
    out += _attention("MiniLM-L6", L, 12, 12, 32, -(-t // seq), seq)
    out[-2:] = [Matmul(m.model, m.name, seq * m.m, m.k, m.n, m.count) for m in out[-2:]]
    L = 32
    out += [Matmul("Llama-3.1-8B", "q proj", t, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "k/v proj", t, 4096, 1024, 2 * L),
            Matmul("Llama-3.1-8B", "out proj", t, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "ffn gate/up", t, 4096, 14336, 2 * L),
            Matmul("Llama-3.1-8B", "ffn down", t, 14336, 4096, L),
            Matmul("Llama-3.1-8B", "lm head", 1, 4096, 128256, 1)]
    out += [Matmul(m.model, m.name, t * m.m, m.k, m.n, m.count)
            for m in _attention("Llama-3.1-8B", L, 32, 8, 128, 1, t)]
    L = 32
    out += [Matmul("Phi-2", "q/k/v proj", t, 2560, 2560, 3 * L),
            Matmul("Phi-2", "out proj", t, 2560, 2560, L),
            Matmul("Phi-2", "ffn up", t, 2560, 10240, L),
            Matmul("Phi-2", "ffn down", t, 10240, 2560, L),
            Matmul("Phi-2", "lm head", 1, 2560, 51200, 1)]
    out += [Matmul(m.model, m.name, t * m.m, m.k, m.n, m.count)
            for m in _attention("Phi-2", L, 32, 32, 80, 1, t)]
    L, r = 36, _per_expert(t, 128, 4)
    out += [Matmul("gpt-oss-120b", "q proj", t, 2880, 4096, L),
            Matmul("gpt-oss-120b", "k/v proj", t, 2880, 512, 2 * L),
            Matmul("gpt-oss-120b", "out proj", t, 4096, 2880, L),
            Matmul("gpt-oss-120b", "router", t, 2880, 128, L),
            Matmul("gpt-oss-120b", "expert gate+up", r, 2880, 5760, L * 128, f"{r} tokens per expert"),
            Matmul("gpt-oss-120b", "expert down", r, 2880, 2880, L * 128),
            Matmul("gpt-oss-120b", "lm head", 1, 2880, 201088, 1)]
    out += [Matmul(m.model, m.name, t * m.m, m.k, m.n, m.count)
            for m in _attention("gpt-oss-120b", L, 64, 8, 64, 1, t)]
    L, dense, moe, r = 61, 3, 58, _per_expert(t, 256, 8)
    out += [Matmul("DeepSeek-R1", "q down (q_a)", t, 7168, 1536, L),
            Matmul("DeepSeek-R1", "q up (q_b)", t, 1536, 128 * 192, L),
            Matmul("DeepSeek-R1", "kv down (kv_a)", t, 7168, 576, L),
            Matmul("DeepSeek-R1", "kv up (kv_b)", t, 512, 128 * 256, L),
            Matmul("DeepSeek-R1", "attn scores", t, 192, t, L * 128, "per head"),
            Matmul("DeepSeek-R1", "attn P.V", t, t, 128, L * 128, "per head"),
            Matmul("DeepSeek-R1", "out proj", t, 16384, 7168, L),
            Matmul("DeepSeek-R1", "dense ffn gate/up", t, 7168, 18432, 2 * dense),
            Matmul("DeepSeek-R1", "dense ffn down", t, 18432, 7168, dense),
            Matmul("DeepSeek-R1", "shared expert gate/up", t, 7168, 2048, 2 * moe),
            Matmul("DeepSeek-R1", "shared expert down", t, 2048, 7168, moe),
            Matmul("DeepSeek-R1", "expert gate/up", r, 7168, 2048, 2 * moe * 256, f"{r} tokens per expert"),
            Matmul("DeepSeek-R1", "expert down", r, 2048, 7168, moe * 256),
            Matmul("DeepSeek-R1", "lm head", 1, 7168, 129280, 1)]
    return out

MODELS = ("MiniLM-L6", "Llama-3.1-8B", "Phi-2", "gpt-oss-120b", "DeepSeek-R1")


def cost(mm: Matmul, width: int, bits: int = 8) -> dict:
    """Tiles, bytes and cycles of ``mm`` on one unit of width ``width`` (all ``count`` products).

    Returns
    -------
    dict
        ``tiles``, ``bytes_fetched``, ``bytes_useful``, ``waste`` (fraction of fetched bytes that are
        padding), ``overhead`` (padding bytes / useful bytes), ``cycles``, ``macs_useful``,
        ``utilization`` (useful MACs per cycle / D^2).
    """
    d = width
    prod = Product(mm.m, mm.k, mm.n, d)        # one pass: a tile serves all M rows
    tiles = prod.tiles
    fetched = tiles * d * d * bits / 8 * mm.count
    useful = mm.k * mm.n * bits / 8 * mm.count
    cycles = prod.steady_cycles() * mm.count
    macs = mm.m * mm.k * mm.n * mm.count
    return {"tiles": tiles * mm.count, "bytes_fetched": fetched, "bytes_useful": useful,
            "waste": 1 - useful / fetched, "overhead": fetched / useful - 1, "cycles": cycles,
            "macs_useful": macs, "utilization": macs / (cycles * d * d)}


def slice80(width: int) -> dict:
    """The 80-wide slice (Phi-2's head dimension) on a unit of width ``width``.

    ``1d``: one dimension of 80 padded (Q.K^T reduces over 80, P.V produces 80 columns; the other
    dimension is a long context, a multiple of D). ``2d``: an 80 x 80 block padded both ways.
    Wasted fraction of fetched bytes, and padding relative to useful bytes.
    """
    p = math.ceil(80 / width) * width
    return {"padded": p, "waste_1d": 1 - 80 / p, "overhead_1d": p / 80 - 1,
            "waste_2d": 1 - 80 * 80 / (p * p), "overhead_2d": (p * p) / (80 * 80) - 1}
