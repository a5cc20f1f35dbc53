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


def test_padding_md_has_the_80_wide_case_and_every_model():
    md = report.padding_md({})
    assert "| 64 | 128 | 37.5% | 60.0% |" in md and "| 32 | 96 | 16.7% | 20.0% |" in md
    for model in ("MiniLM-L6", "Llama-3.1-8B", "Phi-2", "gpt-oss-120b", "DeepSeek-R1"):
        assert f"| {model} | 128 |" in md
    assert "No RTL run recorded yet" in md
