"""Tests added to close functional coverage (``tb/coverage.py``): cases no other test produced.

``reset_mid_stream`` runs on the D = 8 E4M3 build of ``tb/mu/test_matrix_unit.py`` (the same build
folder, so no extra Verilator build).
"""

import pytest

from .harness import run_unit


@pytest.mark.quick
def test_reset_mid_stream():
    run_unit(8, "fp8_e4m3", 1, ["reset_mid_stream"])
