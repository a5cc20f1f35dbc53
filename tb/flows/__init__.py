"""Tests of the synthesis flows, sweeps and reports (mirrors flows/)."""

import pytest

from flows.synth import liberty as L

OSU = L.OSU018_DEFAULT
#: Tests that synthesize to the real OSU 0.18 um library skip (with the fix) where it is missing;
#: .ci/run installs it, so CI always runs them.
needs_osu = pytest.mark.skipif(not OSU.is_file(), reason="OSU 0.18um liberty not installed "
                               "(apt-get install qflow-tech-osu018); .ci/run installs it")


def quiet(*_) -> None:
    """A flow ``log`` callback that prints nothing."""
