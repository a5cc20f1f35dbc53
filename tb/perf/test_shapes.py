"""The shapes catalog and the padding / cycle model, against numbers worked out by hand."""

import pytest

from perf import shapes
from perf.shapes import Matmul


def test_slice80_by_hand():
    # 80 -> 96 at D = 32 (16 of 96 bytes padding), -> 128 at D = 64 and 128 (48 of 128)
    assert shapes.slice80(32)["padded"] == 96 and shapes.slice80(32)["waste_1d"] == pytest.approx(16 / 96)
    assert shapes.slice80(32)["overhead_1d"] == pytest.approx(0.2)
    for d in (64, 128):
        s = shapes.slice80(d)
        assert s["padded"] == 128 and s["waste_1d"] == pytest.approx(48 / 128)
        assert s["overhead_1d"] == pytest.approx(0.6) and s["waste_2d"] == pytest.approx(1 - 6400 / 16384)


def test_cost_by_hand():
    # Phi-2 Q.K^T of one head at decode: 1 x 80 by 80 x 4096 on D = 64: 2 x 64 tiles of 64 x 64 bytes
    c = shapes.cost(Matmul("t", "qk", 1, 80, 4096, 1), 64)
    assert c["tiles"] == 128 and c["bytes_fetched"] == 128 * 64 * 64 and c["bytes_useful"] == 80 * 4096
    assert c["cycles"] == 128 * 64                     # weight-feed bound: one tile per D cycles
    assert c["utilization"] == pytest.approx(80 * 4096 / (128 * 64 * 64 * 64))
    # 128 rows on D = 64: one x beat per cycle, a tile serves 128 beats
    c = shapes.cost(Matmul("t", "mla", 128, 64, 64, 1), 64)
    assert c["cycles"] == 128 and c["utilization"] == pytest.approx(1.0)
    # FP4 halves bytes, keeps ratios
    c4 = shapes.cost(Matmul("t", "x", 1, 100, 100, 3), 32, bits=4)
    assert c4["bytes_fetched"] == 3 * 16 * 32 * 32 / 2 and c4["waste"] == pytest.approx(1 - 1e4 / (128 * 128))


@pytest.mark.parametrize("model, params", [
    ("Llama-3.1-8B", 8.03e9 - 128256 * 4096),      # 8.03B total minus the input embedding table
    ("Phi-2", 2.78e9 - 51200 * 2560),              # 2.78B minus the embedding table
    ("gpt-oss-120b", 5.1e9),                       # ~5.1B active parameters per token (model card)
    ("MiniLM-L6", 6 * (4 * 384 * 384 + 2 * 384 * 1536)),
])
def test_catalog_weight_bytes_match_published_parameter_counts(model, params):
    useful = sum(shapes.cost(m, 32)["bytes_useful"] for m in shapes.catalog(1)
                 if m.model == model and "attn" not in m.name)
    assert useful == pytest.approx(params, rel=0.02)  # FP8: one byte per weight (biases, norms left out)


def test_batch_grows_rows_not_weights():
    b1 = {(m.model, m.name): m for m in shapes.catalog(1)}
    for m in shapes.catalog(8):
        ref = b1[(m.model, m.name)]
        if "expert" in m.name and "shared" not in m.name:
            assert m.count > ref.count      # more distinct experts, ~1 token each
        elif "attn" in m.name:
            assert m.m == ref.m and m.count == 8 * ref.count  # each sequence has its own KV cache
        else:
            assert m.m == 8 * ref.m and m.count == ref.count


def test_gqa_rows_and_80_wide_heads():
    cat = {(m.model, m.name): m for m in shapes.catalog(1)}
    assert cat[("gpt-oss-120b", "attn scores Q.K^T")].m == 8       # 64 query heads / 8 KV heads
    assert cat[("Phi-2", "attn scores Q.K^T")].k == 80
    assert cat[("Phi-2", "attn P.V")].n == 80
    assert shapes.cost(cat[("Phi-2", "attn P.V")], 32)["waste"] == pytest.approx(1 / 6)


def test_prefill_catalog_minilm_macs_by_hand():
    """MiniLM prefill of 512 tokens: projections and FFN on every token, attention per 256-token
    sequence (two of them), counted from the model's published sizes."""
    t, L, h, hd, seq = 512, 6, 12, 32, 256
    want = (t * 384 * 384 * 4 * L + t * 384 * 1536 * 2 * L
            + 2 * (t // seq) * L * h * seq * hd * seq)
    got = sum(m.m * m.k * m.n * m.count for m in shapes.prefill_catalog(t) if m.model == "MiniLM-L6")
    assert got == want


def test_prefill_reuses_tiles_and_spreads_experts():
    cat = {(m.model, m.name): m for m in shapes.prefill_catalog(4096)}
    up = cat[("Llama-3.1-8B", "ffn gate/up")]
    c = shapes.cost(up, 64)
    assert c["utilization"] == 1.0                     # K, N multiples of D and M >= D: no idle cycle
    assert c["cycles"] == 4096 * (4096 // 64) * (14336 // 64) * up.count
    assert cat[("gpt-oss-120b", "expert down")].m == 4096 * 4 // 128       # top-4 of 128 experts
    assert cat[("DeepSeek-R1", "expert down")].m == 4096 * 8 // 256        # top-8 of 256
    assert cat[("Llama-3.1-8B", "lm head")].m == 1                          # last token only
    assert cat[("Llama-3.1-8B", "attn scores Q.K^T")].m == 4096 * 4         # 4 query heads per KV head
