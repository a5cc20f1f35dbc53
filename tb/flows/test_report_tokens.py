"""Energy per token and tokens per joule (flows/report/tokens.py), checked by hand."""

import json

import pytest

from flows.report import tokens


def _run(variant, width=32, fmt="fp8_e4m3", rows=1, cycles=1000, beats=10, blocks=None, sampled=8,
         workload="tiles"):
    blocks = blocks or {"mu_lane_fp8_e4m3": 3e5, "mu_tree_w32": 2e5, "mu_xacc_w32": 1e5,
                        "mu_wbuf_w32_b8": 4e5}
    total = sum(blocks.values())
    cats = {}
    for b, e in blocks.items():
        c = next(c for p, c in (("mu_lane", "multipliers"), ("mu_tree", "tree"), ("mu_xacc", "accumulate"),
                                ("mu_wbuf", "weight buffers")) if b.startswith(p))
        cats[c] = cats.get(c, 0.0) + e
    return {"variant": variant, "workload": workload, "width": width, "columns": width, "fmt": fmt,
            "rows": rows, "columns_simulated": sampled, "cycles": cycles,
            "issued_macs": beats * width * width, "energy_pj": {"total": total},
            "pj_per_cycle": total / cycles, "by_category_pj": cats,
            "by_block_pj": {b: {"internal": e, "switching": 0.0, "leakage": 0.0} for b, e in blocks.items()}}


def test_activity_model_from_the_decode_split_by_hand():
    """Multipliers, tree and accumulator (6e5 pJ) over 10 beats; the rest (4e5 pJ) over 1000 cycles."""
    m = tokens.activity_model(_run("mu-w32-fp8_e4m3-xacc-cg-osu018"))
    assert m.beat_pj == pytest.approx(6e4) and m.floor_pj == pytest.approx(400.0)
    assert m.pj_per_cycle(0.01) == pytest.approx(1000.0)     # reproduces the run itself
    assert "split" in m.source


def test_activity_model_through_a_decode_and_a_prefill_run():
    """Decode: 1000 pJ/cycle at 0.01 beats/cycle; prefill: 5000 pJ/cycle at 0.5: B = 4000 / 0.49."""
    dec = _run("mu-w32-fp8_e4m3-xacc-cg-osu018")
    pre = _run("mu-w32-fp8_e4m3-r16-xacc-cg-osu018", rows=16, beats=500,
               blocks={"mu_lane_fp8_e4m3": 5e6})
    m = tokens.activity_model(dec, pre)
    b = 4000 / 0.49
    assert m.beat_pj == pytest.approx(b) and m.floor_pj == pytest.approx(1000 - 0.01 * b)
    assert m.pj_per_cycle(0.5) == pytest.approx(5000.0)
    with pytest.raises(ValueError, match="too close"):
        tokens.activity_model(dec, dec)
    with pytest.raises(ValueError, match="no beat"):
        tokens.activity_model(_run("mu-w32-x", beats=0))


def test_minilm_decode_costs_by_hand():
    """MiniLM at batch 1 on D = 32: every K and N is a multiple of 32, every product has M = 1.
    Weight tiles: 24 products of 384 x 384 (144 tiles) and 12 of 384 x 1536 (576): 10,368; attention:
    72 Q.K^T of 32 x 256 and 72 P.V of 256 x 32, 8 tiles each: 1,152. 11,520 tiles of 32 cycles and
    one beat; 1,024 bytes each in FP8, plus one 32-byte scale row in MXFP8 (blocks of 32)."""
    tiles = 24 * 144 + 12 * 576 + 2 * 72 * 8
    cyc, beats, macs, nbytes = tokens._model_costs("decode", 1, 32, "fp8_e4m3")["MiniLM-L6"]
    assert (cyc, beats, nbytes) == (tiles * 32, tiles, tiles * 1024)
    assert macs == 24 * 384 * 384 + 12 * 384 * 1536 + 2 * 72 * 32 * 256
    assert tokens._model_costs("decode", 1, 32, "mxfp8_e4m3")["MiniLM-L6"][3] == tiles * (1024 + 32)
    # batch 8: the weight tiles serve 8 rows (8 beats each); every sequence has its own KV cache, so
    # the attention tiles are 8 times as many, one beat each
    w8, a8 = 24 * 144 + 12 * 576, 8 * 2 * 72 * 8
    assert tokens._model_costs("decode", 8, 32, "fp8_e4m3")["MiniLM-L6"][:2] == ((w8 + a8) * 32,
                                                                                  w8 * 8 + a8)

    m = tokens.ActivityModel(400.0, 6e4, "hand")
    e = tokens.step_energy(m, 32, "fp8_e4m3", "decode", 8, hbm_pj=40.0)["MiniLM-L6"]
    assert e["unit_pj"] == pytest.approx((w8 + a8) * 32 * 400.0 + (w8 * 8 + a8) * 6e4)
    assert e["hbm_pj"] == pytest.approx((w8 + a8) * 1024 * 40.0)
    assert tokens.tokens_per_joule(e) == pytest.approx(8 / ((e["unit_pj"] + e["hbm_pj"]) * 1e-12))
    assert tokens.tokens_per_joule(e, with_hbm=False) == pytest.approx(8 / (e["unit_pj"] * 1e-12))
    with pytest.raises(ValueError, match="pJ per byte"):
        tokens.step_energy(m, 32, "fp8_e4m3", "decode", 1, hbm_pj=-1.0)


def test_recommended_units_pick_gated_exact_tile_runs():
    runs = [_run("mu-w32-fp8_e4m3-xacc-cg-osu018", sampled=8),
            _run("mu-w32-fp8_e4m3-xacc-cg-osu018", sampled=32),
            _run("mu-w32-fp8_e4m3-xacc-osu018"),                       # no gates
            _run("mu-w32-fp8_e4m3-xacc-cg-osu018", workload="zeros"),
            _run("mu-w32-fp8_e4m3-r16-xacc-cg-osu018", rows=16, beats=500),
            _run("mu-w64-fp8_e4m3-xacc-cg-osu018", width=64)]
    units = tokens.recommended_units(runs)
    assert list(units) == [(32, "fp8_e4m3"), (64, "fp8_e4m3")]
    dec, pre = units[(32, "fp8_e4m3")]
    assert dec["columns_simulated"] == 32 and pre["rows"] == 16
    assert units[(64, "fp8_e4m3")][1] is None


def test_equal_power_and_the_width_verdict():
    """Equal per-beat energy per MAC, a floor per cycle that grows 4x per doubling: the narrower unit
    does more MACs per joule in every decode case (same cycles per MAC at M = 1)."""
    runs = [_run(f"mu-w{d}-fp8_e4m3-xacc-cg-osu018", width=d, cycles=1000, beats=10,
                 blocks={"mu_lane_fp8_e4m3": 10 * d * d, "mu_wbuf": 1000 * 4 ** (d // 64)})
            for d in (32, 64, 128)]
    table = tokens.equal_power(tokens.recommended_units(runs), regimes=(("decode", 1),))
    v = tokens.width_verdict(table, 64, 128)
    assert v["won"] == v["cases"] == 5 and v["gmean"] > 1
    lines = tokens.equal_power_lines(table)
    assert lines[2].startswith("| fp8_e4m3 | decode 1 |") and lines[2].endswith("| 5/5 | 5/5 |")
    assert tokens.width_verdict(table, 64, 256) is None


def test_summary_and_qor_report_carry_tokens_per_joule(tmp_path):
    from flows.power.summary import write_summary
    from flows.report.energy import equal_power_section

    for d in (64, 128):
        r = _run(f"mu-w{d}-fp8_e4m3-xacc-cg-osu018", width=d)
        r.update({"useful_macs": r["issued_macs"], "pj_per_useful_mac": 1.0, "pj_per_issued_mac": 1.0,
                  "fmax_mhz": 100.0, "mw_at_fmax": 1.0, "area_um2": 1e6, "seconds": dict.fromkeys(
                      ("synth", "stimulus", "build", "sim", "energy", "total"), 1), "peak_mb": 1})
        (tmp_path / r["variant"]).mkdir()
        (tmp_path / r["variant"] / "energy-tiles-sample8.json").write_text(json.dumps(r))
    text = write_summary(tmp_path).read_text()
    assert "| 64 | fp8_e4m3 | Llama-3.1-8B |" in text and "64 against 128 per joule" in text
    lines, rows = equal_power_section(tmp_path)
    assert any(ln.startswith("| fp8_e4m3 | prefill 512 |") for ln in lines)
    assert [r[0].split("(")[1] for r in rows] == ["decode 1/8, acc = exact, clock gates on)",
                                                  "prefill 512, acc = exact, clock gates on)"]
    lines, rows = equal_power_section(tmp_path / "none")
    assert rows[0][2] == "can't tell"
