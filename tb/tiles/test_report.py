"""The generated reports hold what they claim: every run, the error table, the 80-wide slice."""

from tb.tiles import corpus, replay, report

SPECS = [corpus.RunSpec("q", "decode", "fp8_e4m3", 32, 0), corpus.RunSpec("pv", "prefill", "fp4_e2m1", 64, 1)]


def test_regression_md_lists_runs_and_errors(tmp_path):
    recs = {}
    for _, tile in corpus.load_runs(SPECS, tmp_path):
        r = report.record(replay.replay_model(tile))
        recs[r["id"]] = r
    md = report.regression_md(recs, "test")
    assert "runs: **2**" in md and "through the RTL: **0**" in md
    for rid, r in recs.items():
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {rid} |"))
        assert f"{r['k_tiles']} |" in line and "not run" in line
    assert "| fp8_e4m3 | 32 | 1 |" in md and "| fp4_e2m1 | 64 | 1 |" in md
    head = md.split("## ")[0]
    assert "Partial run: 0 of 2 per-tensor runs went through the RTL" in head
    for r in recs.values():  # with every run through the RTL the report is complete and says nothing
        r["rtl_match"] = True
    md = report.regression_md(recs, "test")
    assert "through the RTL: **2**, bit-exact: **2**" in md and "Partial" not in md


def test_padding_md_has_the_80_wide_case_and_every_model():
    md = report.padding_md({})
    assert "| 64 | 128 | 37.5% | 60.0% |" in md and "| 32 | 96 | 16.7% | 20.0% |" in md
    for model in ("MiniLM-L6", "Llama-3.1-8B", "Phi-2", "gpt-oss-120b", "DeepSeek-R1"):
        assert f"| {model} | 128 |" in md
    assert "No RTL run recorded yet" in md


def test_row_groups_give_the_single_pass_results(monkeypatch, tmp_path):
    """A unit with R < M rows serves a prefill run in row groups; the adapter must reassemble the
    model's single-pass results (checked here through tb/mu's model, no simulator)."""
    import numpy as np

    from perf.contract import Schedule
    from tb.mu import replay as mu_replay
    from tb.tiles import rtl

    def fake_run_tiles(width, fmt, tiles, *, rows, pauses, check, name_suffix, tree, acc):
        tiles = list(tiles)
        y = np.array([r.bits for r in mu_replay.model_tiles(width, fmt, tiles, rows=rows, acc=acc)],
                     np.uint32)
        beats = [len(t.x) for t in tiles]
        last = Schedule(width, beats).cycles(3) - 1
        counters = {"w_beats": len(tiles) * width, "x_beats": sum(beats), "y_beats": len(y),
                    "macs": sum(beats) * width * width}
        return mu_replay.ReplayResult(y, np.zeros(len(y), int), y.copy(), y * 0.0, y * 0.0, [],
                                      last + 12, counters, np.arange(1), np.array([last]))

    monkeypatch.setattr(mu_replay, "run_tiles", fake_run_tiles)
    monkeypatch.setattr("tb.mu.harness.emit_unit", lambda w, f, r, tree, acc: (None, 3, "v", 0.0))
    monkeypatch.setitem(rtl.UNITS, (8, "fp8_e4m3"), (3, "", None))  # 16 rows in groups of 3
    (_, tile), = corpus.load_runs([corpus.RunSpec("o", "prefill", "fp8_e4m3", 8, 0)], tmp_path)
    res = rtl.run_rtl(tile, replay.replay_model(tile, "exact"))
    assert res.rtl_match and res.counters["row_groups"] == 6
    assert res.counters["w_beats"] == 6 * tile.k_tiles * 8  # weights fed once per group
