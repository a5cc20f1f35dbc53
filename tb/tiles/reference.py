"""A second, independently written forward pass of the same model, in float64.

Written differently from :mod:`tb.tiles.minilm` on purpose, so that a slip in one (a transposed
weight, a wrong head split, a missing residual) shows up as a disagreement: all heads at once with
``einsum`` on a (heads, tokens, head_dim) layout, variance through ``np.var``, softmax in log-sum-exp
form, and every tensor in float64. The two agree to float32 rounding noise (tested in
``test_forward.py``); neither is the package's own torch implementation, which is compared in the
optional test when torch and transformers are installed.
"""

import math

import numpy as np

__all__ = ["embed64"]

_erf = np.frompyfunc(math.erf, 1, 1)


def _ln(x, g, b, eps):
    return (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps) * g + b


def _encode(weights: dict, config: dict, ids: np.ndarray) -> np.ndarray:
    w = {k: np.asarray(v, dtype=np.float64) for k, v in weights.items() if k.startswith(("enc", "emb"))}
    eps = float(config["layer_norm_eps"])
    nh = int(config["num_attention_heads"])
    t = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    for i in range(int(config["num_hidden_layers"])):
        def p(name, i=i):
            return w[f"encoder.layer.{i}.{name}"]

        def split(name, h):
            y = np.einsum("td,od->to", h, p(f"attention.self.{name}.weight")) \
                + p(f"attention.self.{name}.bias")
            return y.reshape(t, nh, -1).transpose(1, 0, 2)  # (heads, tokens, head_dim)

        q, k, v = split("query", x), split("key", x), split("value", x)
        logits = np.einsum("htd,hsd->hts", q, k) / math.sqrt(q.shape[-1])
        lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) \
            + logits.max(-1, keepdims=True)
        ctx = np.einsum("hts,hsd->thd", np.exp(logits - lse), v).reshape(t, -1)
        att = np.einsum("td,od->to", ctx, p("attention.output.dense.weight")) \
            + p("attention.output.dense.bias")
        x = _ln(x + att, p("attention.output.LayerNorm.weight"), p("attention.output.LayerNorm.bias"), eps)
        u = np.einsum("td,fd->tf", x, p("intermediate.dense.weight")) + p("intermediate.dense.bias")
        gelu = u * (1.0 + _erf(u / math.sqrt(2.0)).astype(np.float64)) / 2.0
        ff = np.einsum("tf,df->td", gelu, p("output.dense.weight")) + p("output.dense.bias")
        x = _ln(x + ff, p("output.LayerNorm.weight"), p("output.LayerNorm.bias"), eps)
    return x


def embed64(weights: dict, config: dict, token_ids) -> np.ndarray:
    """Float64 sentence embeddings (mean pooling + L2 normalisation), one row per id sequence."""
    rows = []
    for ids in token_ids:
        pooled = _encode(weights, config, np.asarray(ids)).mean(axis=0)
        rows.append(pooled / np.linalg.norm(pooled))
    return np.array(rows)
