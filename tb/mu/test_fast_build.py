"""The bulk of the wide-unit regression on the fast build: the word-level column tree (proved to
compute the Dadda tree's function, ``docs/verification.md``) in one flat Verilator model.

At D = 64 it runs the core tests with 8x the random beats, and a 20,000-beat full-rate run checked
bit-exact whose x-beats/s appear in the run's measurements. The Dadda builds of
``tb/mu/test_matrix_unit.py`` keep a smaller bit-exact set at every width, so the structure
synthesis maps is simulated too. Full set only: the flat D = 64 build takes about two minutes.
"""

import json

import pytest

from .harness import run_unit


@pytest.mark.full
def test_fast_build_w64(tmp_path, record_property):
    out = tmp_path / "bench.json"
    run_unit(64, "fp8_e4m3", 16, ["random_dots", "adversarial", "stalls", "throughput", "bench"],
             tree="words", flat=True,
             env={"MU_SCALE": 8, "MU_BENCH": 20000, "MU_BENCH_OUT": out})
    r = json.loads(out.read_text())
    record_property("measured cocotb rate, D=64 word tree flat",
                    f"{r['x_beats_per_s']:.0f} x-beats/s ({r['x_beats_per_cpu_s']:.0f} per CPU s, "
                    f"{r['x_beats']} beats checked bit-exact)")
