"""The numpy forward pass of all-MiniLM-L6-v2 is right.

Three independent checks:

* against a second, differently written implementation in float64 (:mod:`tb.tiles.reference`):
  every sentence embedding within 1e-5 (max abs, on unit vectors; float32 rounding noise is ~1e-7);
* semantics: each paraphrase pair is more similar (cosine) than any pair of unrelated sentences,
  by a margin of at least 0.3;
* optional, against the package's own implementation (sentence-transformers, or transformers'
  BertModel with mean pooling) on torch: within 1e-5. torch is not a project dependency, so this
  test skips, saying why, when torch is absent.
"""

import numpy as np
import pytest

from tb.tiles import minilm, reference

#: Max abs difference allowed between unit-norm embeddings of two float implementations.
TOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return minilm.load()


@pytest.fixture(scope="module")
def ours(model):
    caps = []
    emb = model.embed(minilm.SENTENCES, caps)
    return emb, caps


def test_matches_float64_reference(model, ours):
    emb, _ = ours
    ids = [model.tokenize(s) for s in minilm.SENTENCES]
    ref = reference.embed64(model.weights, model.config, ids)
    assert emb.dtype == np.float32 and emb.shape == (len(minilm.SENTENCES), 384)
    assert np.abs(emb - ref).max() < TOL
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-6)


def test_paraphrases_closer_than_unrelated(ours):
    emb, _ = ours
    cos = emb @ emb.T
    paraphrase = [cos[0, 1], cos[2, 3]]
    unrelated = [cos[i, j] for i in range(6) for j in range(i + 1, 6) if (i, j) not in ((0, 1), (2, 3))]
    assert min(paraphrase) > max(unrelated) + 0.3, (paraphrase, max(unrelated))


def test_tokenizer_is_unpadded_bert_wordpiece(model):
    ids = model.tokenize("Hello world")
    assert ids[0] == 101 and ids[-1] == 102 and len(ids) == 4  # [CLS] hello world [SEP]


def test_captures_every_matmul(model, ours):
    _, caps = ours
    n_sent, layers, heads = len(minilm.SENTENCES), model.layers, model.heads
    per_layer = 6 + 2 * heads  # q k v o up down + (scores, pv) per head
    assert len(caps) == n_sent * layers * per_layer
    seen = {c.op for c in caps}
    assert seen == set(minilm.OPS)
    for c in caps:
        length = len(model.tokenize(minilm.SENTENCES[c.sentence]))
        assert c.x.dtype == np.float32 and c.w.dtype == np.float32 and c.x.shape[1] == c.w.shape[0]
        expect = {"q": (384, 384), "k": (384, 384), "v": (384, 384), "o": (384, 384),
                  "ffn_up": (384, 1536), "ffn_down": (1536, 384), "scores": (32, length),
                  "pv": (length, 32)}[c.op]
        assert c.w.shape == expect and c.x.shape[0] == length, c.key


def test_scores_capture_is_q_times_k_transpose(model, ours):
    # the captured operands of one head reproduce that head's slices of the captured Q and K
    _, caps = ours
    by = {(c.sentence, c.layer, c.op, c.head): c for c in caps}
    q, k, s = by[(1, 3, "q", None)], by[(1, 3, "k", None)], by[(1, 3, "scores", 5)]
    bq = model.weights["encoder.layer.3.attention.self.query.bias"]
    bk = model.weights["encoder.layer.3.attention.self.key.bias"]
    cols = slice(5 * 32, 6 * 32)
    assert np.allclose(s.x, (q.x @ q.w + bq)[:, cols], atol=1e-5)
    assert np.allclose(s.w, (k.x @ k.w + bk)[:, cols].T, atol=1e-5)


def _torch_embeddings(directory, sentences):
    torch = pytest.importorskip("torch", reason="torch is not installed (it is deliberately not a "
                                "project dependency); 'pip install torch==2.13.0 transformers' to run "
                                "the comparison with the package's own implementation")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        SentenceTransformer = None
    if SentenceTransformer is not None:
        st = SentenceTransformer(str(directory), device="cpu")
        emb = st.encode(list(sentences), convert_to_numpy=True, normalize_embeddings=True)
        return emb, "sentence-transformers"
    transformers = pytest.importorskip("transformers", reason="neither sentence-transformers nor "
                                       "transformers is installed next to torch; 'pip install transformers'")
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    bert = transformers.AutoModel.from_pretrained(str(directory)).eval()
    enc = tok(list(sentences), padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = bert(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=1).numpy(), "transformers BertModel"


def test_matches_torch_implementation(model, ours):
    emb, _ = ours
    theirs, impl = _torch_embeddings(minilm.model_dir(), minilm.SENTENCES)
    diff = float(np.abs(emb - theirs).max())
    print(f"max |numpy - {impl}| = {diff:.3e}, min cosine = {float((emb * theirs).sum(1).min()):.9f}")
    assert diff < TOL
