"""Tests of the synthesis flows, sweeps and reports (mirrors flows/)."""
