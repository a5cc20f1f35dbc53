"""Cell areas the liberty leaves at 0 (OSU 0.18 um's LATCH) come from the LEF beside it."""

import re

import pytest

from flows.synth import liberty as L
from tb.flows import OSU, needs_osu

pytestmark = pytest.mark.quick


@needs_osu
def test_zero_area_cell_takes_its_lef_size():
    lef = OSU.with_suffix(".lef").read_text()
    m = re.search(r"MACRO LATCH\b.*?SIZE ([0-9.]+) BY ([0-9.]+)", lef, re.S)
    assert m, "the OSU LEF describes the LATCH macro"
    assert re.search(r"cell \(LATCH\) \{\s*area : 0;", OSU.read_text()), "the liberty gives it no area"
    lib = L.load(OSU)
    assert lib.cells["LATCH"].area == pytest.approx(float(m[1]) * float(m[2]))
    assert lib.cells["DFFPOSX1"].area == 96.0          # a liberty area is kept as it is


def test_no_lef_no_change(tmp_path):
    assert L.lef_areas(tmp_path / "missing.lef") == {}
    (tmp_path / "x.lef").write_text("MACRO FOO\n  CLASS CORE ;\n  SIZE 2.4 BY 10 ;\nEND FOO\n")
    assert L.lef_areas(tmp_path / "x.lef") == {"FOO": pytest.approx(24.0)}
