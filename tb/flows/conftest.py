"""Fixtures shared by the flow tests."""

import pytest

from flows.power.libpower import load_power
from flows.synth import liberty as L
from tb.flows import OSU


@pytest.fixture(scope="module")
def libs():
    """The OSU 0.18 um liberty as the flows read it: (timing library, power library)."""
    return L.load(OSU), load_power(OSU)
