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


#: Attention of the models with per-head attention: (layers, query heads, KV heads, head dimension).
_HEADS = {"MiniLM-L6": (6, 12, 12, 32), "Llama-3.1-8B": (32, 32, 8, 128), "Phi-2": (32, 32, 32, 80),
          "gpt-oss-120b": (36, 64, 8, 64)}


def _attention(model, seqs, ctx, tokens=1):
    """Q.K^T and P.V of ``seqs`` sequences of context ``ctx``, ``tokens`` query tokens each: the query
    heads sharing one KV head (GQA) are rows of one product with every token's."""
    layers, q_heads, kv_heads, head_dim = _HEADS[model]
    g = q_heads // kv_heads
    c = layers * kv_heads * seqs
    note = f"per KV head, {g} query rows" + (f" x {tokens} tokens" if tokens > 1 else "")
    return [Matmul(model, "attn scores Q.K^T", g * tokens, head_dim, ctx, c, note),
            Matmul(model, "attn P.V", g * tokens, ctx, head_dim, c, note)]


# The weight products of each model, shared by decode and prefill: ``rows`` activation rows per
# product, ``head`` rows for the LM head; the MoE experts serve ``expert_rows`` rows each, ``experts``
# of them per layer (``note`` on the first expert product).

def _minilm(rows):
    # all-MiniLM-L6-v2: BERT, 6 layers, hidden 384, 12 heads x 32, FFN 1536 (real weights we run)
    L = 6
    return [Matmul("MiniLM-L6", "q/k/v proj", rows, 384, 384, 3 * L),
            Matmul("MiniLM-L6", "out proj", rows, 384, 384, L),
            Matmul("MiniLM-L6", "ffn up", rows, 384, 1536, L),
            Matmul("MiniLM-L6", "ffn down", rows, 1536, 384, L)]


def _llama(rows, head):
    # Llama-3.1-8B: hidden 4096, 32 layers, 32 heads / 8 KV heads x 128, SwiGLU FFN 14336
    L = 32
    return [Matmul("Llama-3.1-8B", "q proj", rows, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "k/v proj", rows, 4096, 1024, 2 * L),
            Matmul("Llama-3.1-8B", "out proj", rows, 4096, 4096, L),
            Matmul("Llama-3.1-8B", "ffn gate/up", rows, 4096, 14336, 2 * L),
            Matmul("Llama-3.1-8B", "ffn down", rows, 14336, 4096, L),
            Matmul("Llama-3.1-8B", "lm head", head, 4096, 128256, 1)]


def _phi2(rows, head):
    # Phi-2: hidden 2560, 32 layers, 32 heads x 80 (MHA), GELU FFN 10240
    L = 32
    return [Matmul("Phi-2", "q/k/v proj", rows, 2560, 2560, 3 * L),
            Matmul("Phi-2", "out proj", rows, 2560, 2560, L),
            Matmul("Phi-2", "ffn up", rows, 2560, 10240, L),
            Matmul("Phi-2", "ffn down", rows, 10240, 2560, L),
            Matmul("Phi-2", "lm head", head, 2560, 51200, 1)]


def _gpt_oss(rows, head, expert_rows, experts, note):
    # gpt-oss-120b: hidden 2880, 36 layers, 64 q / 8 KV heads x 64, 128 experts top-4, expert FFN 2880
    L = 36
    return [Matmul("gpt-oss-120b", "q proj", rows, 2880, 4096, L),
            Matmul("gpt-oss-120b", "k/v proj", rows, 2880, 512, 2 * L),
            Matmul("gpt-oss-120b", "out proj", rows, 4096, 2880, L),
            Matmul("gpt-oss-120b", "router", rows, 2880, 128, L),
            Matmul("gpt-oss-120b", "expert gate+up", expert_rows, 2880, 5760, L * experts, note),
            Matmul("gpt-oss-120b", "expert down", expert_rows, 2880, 2880, L * experts),
            Matmul("gpt-oss-120b", "lm head", head, 2880, 201088, 1)]


def _deepseek(rows, head, expert_rows, experts, note, attention):
    # DeepSeek-R1 (V3): hidden 7168, 61 layers (3 dense FFN 18432, 58 MoE: 256 experts top-8 of 2048 +
    # 1 shared), MLA: 128 heads, q_lora 1536, kv_lora 512, qk 128 nope + 64 rope, v 128. ``attention``
    # (the products between the latent projection and the output projection) depends on the regime.
    L, dense, moe = 61, 3, 58
    return [Matmul("DeepSeek-R1", "q down (q_a)", rows, 7168, 1536, L),
            Matmul("DeepSeek-R1", "q up (q_b)", rows, 1536, 128 * 192, L),
            Matmul("DeepSeek-R1", "kv down (kv_a)", rows, 7168, 576, L),
            *attention,
            Matmul("DeepSeek-R1", "out proj", rows, 16384, 7168, L),
            Matmul("DeepSeek-R1", "dense ffn gate/up", rows, 7168, 18432, 2 * dense),
            Matmul("DeepSeek-R1", "dense ffn down", rows, 18432, 7168, dense),
            Matmul("DeepSeek-R1", "shared expert gate/up", rows, 7168, 2048, 2 * moe),
            Matmul("DeepSeek-R1", "shared expert down", rows, 2048, 7168, moe),
            Matmul("DeepSeek-R1", "expert gate/up", expert_rows, 7168, 2048, 2 * moe * experts, note),
            Matmul("DeepSeek-R1", "expert down", expert_rows, 2048, 7168, moe * experts),
            Matmul("DeepSeek-R1", "lm head", head, 7168, 129280, 1)]


def catalog(batch: int) -> list:
    """Every product of one decode step at ``batch`` sequences, for each model of :data:`MODELS`.

    Each MoE expert hit serves about one token (the expected number of distinct experts hit by
    ``batch`` tokens routing top-k uniformly); DeepSeek's MLA runs with the up-projections absorbed
    (all heads attend over the shared 576-wide latent cache).
    """
    b = batch
    oss, ds = _distinct_experts(128, 4, b), _distinct_experts(256, 8, b)
    L = 61
    mla = [Matmul("DeepSeek-R1", "q absorb (W_UK)", b, 128, 512, L * 128, "per head"),
           Matmul("DeepSeek-R1", "attn scores (latent)", 128, 576, CONTEXT, L * b,
                  "128 heads share the cache"),
           Matmul("DeepSeek-R1", "attn P.V (latent)", 128, CONTEXT, 512, L * b),
           Matmul("DeepSeek-R1", "v up (W_UV)", b, 512, 128, L * 128, "per head")]
    return [*_minilm(b), *_attention("MiniLM-L6", b, 256),
            *_llama(b, b), *_attention("Llama-3.1-8B", b, CONTEXT),
            *_phi2(b, b), *_attention("Phi-2", b, CONTEXT),
            *_gpt_oss(b, b, 1, oss, f"{oss:.1f} distinct experts/layer, ~1 token each"),
            *_attention("gpt-oss-120b", b, CONTEXT),
            *_deepseek(b, b, 1, ds, f"{ds:.1f} distinct experts/layer, ~1 token each", mla)]


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
    seq = min(t, 256)
    oss, ds = _per_expert(t, 128, 4), _per_expert(t, 256, 8)
    L = 61
    mla = [Matmul("DeepSeek-R1", "kv up (kv_b)", t, 512, 128 * 256, L),
           Matmul("DeepSeek-R1", "attn scores", t, 192, t, L * 128, "per head"),
           Matmul("DeepSeek-R1", "attn P.V", t, t, 128, L * 128, "per head")]
    return [*_minilm(t), *_attention("MiniLM-L6", -(-t // seq), seq, seq),
            *_llama(t, 1), *_attention("Llama-3.1-8B", 1, t, t),
            *_phi2(t, 1), *_attention("Phi-2", 1, t, t),
            *_gpt_oss(t, 1, oss, 128, f"{oss} tokens per expert"),
            *_attention("gpt-oss-120b", 1, t, t),
            *_deepseek(t, 1, ds, 256, f"{ds} tokens per expert", mla)]


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
