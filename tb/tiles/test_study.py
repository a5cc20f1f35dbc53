"""The formats study (tb/tiles/study.py): block-scaled formats on real MiniLM matmuls, and its report.

The claims the report rests on, checked on a few real matmuls: block scaling beats per-tensor FP4
(MXFP4 and NVFP4) and MXFP8 is far better than both, errors measured against the float64 product of the
float32 operands; NVFP4's window is exact (its block exponents span at most 28 < F binades).
"""

import numpy as np
import pytest

from tb.tiles import minilm, study

pytestmark = pytest.mark.quick


@pytest.fixture(scope="module")
def captures():
    caps = []
    minilm.load().embed(minilm.SENTENCES[:1], caps)
    return {(c.layer, c.op, c.head): c for c in caps}


@pytest.mark.parametrize("key", [(0, "q", None), (5, "ffn_down", None), (2, "pv", 3)])
def test_block_formats_beat_per_tensor(captures, key):
    c = captures[key]
    ref = c.x.astype(np.float64) @ c.w.astype(np.float64)

    def err(fmt):
        y = study.run(study.prepare(c.x, c.w, fmt), 64)[1]
        return np.abs(y - ref).mean() / np.abs(ref).mean()

    fp4, mx4 = err("fp4_e2m1"), err("mxfp4_e2m1")
    assert mx4 < fp4 and err("nvfp4") < fp4
    assert err("mxfp8_e4m3") < mx4 / 2


def test_nvfp4_window_is_exact():
    rows = study.window_random(fmts=("nvfp4",), widths=(128,), fracs=(study.WINDOW_FRAC_BITS,))
    assert rows and all(r["differ"] == 0 for r in rows)
    narrow = study.window_random(fmts=("nvfp4",), widths=(128,), fracs=(0,))
    assert any(r["differ"] > 0 for r in narrow)           # the measurement can see a too-narrow window


def test_report_renders_what_was_measured():
    data = {"window_random": [{"fmt": "nvfp4", "width": 32, "beats": 1, "frac_bits": f, "n": 10,
                               "differ": 3 if f == 0 else 0, "max_ulps": 0.0} for f in (0, 32)],
            "tile_runs": [{"id": "a", "fmt": "nvfp4", "width": 32, "op": "q", "mean_rel": 0.1,
                           "max_rel": 0.5}]}
    md = study.block_md(data)
    assert "| nvfp4 | 32 | 1 | 3 / 10 (30%) | 0 / 10 (0%) | 0 |" in md
    assert "| nvfp4 | 1.00e-01 | - | - | 5.00e-01 |" in md
    assert md.count("Not measured in this run.") == 2          # op classes and fidelity
