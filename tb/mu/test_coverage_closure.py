"""Tests added to close functional coverage (``tb/coverage.py``): cases no other test produced.

They run on D = 8 E4M3 builds of ``tb/mu/test_matrix_unit.py`` (the same build folders, so no
extra Verilator build): ``reset_mid_stream`` (a reset with beats in flight) and
``exact_rounding_edges`` (the exact mode's massive cancellation and a rounding carry into a new
binade, which the random and adversarial programs do not produce).
"""

import pytest

from .harness import run_unit


@pytest.mark.quick
def test_reset_mid_stream():
    run_unit(8, "fp8_e4m3", 1, ["reset_mid_stream"])


@pytest.mark.quick
def test_exact_rounding_edges():
    run_unit(8, "fp8_e4m3", 1, ["exact_rounding_edges"], acc="exact")
