"""``make prove DESIGN=bf16_mul``: the SAT proofs run in the regression, and can fail."""

import pytest

from flows.prove import PROOFS, main, prove_pair

pytestmark = pytest.mark.quick


def test_prove_bf16_mul(capsys):
    """booth4 == behavioral for all 2^32 inputs, both subnormals settings (flows.prove.main)."""
    assert main(["--design", "bf16_mul"]) == 0
    out = capsys.readouterr().out
    assert out.count("PROVED equivalent") == len(PROOFS["bf16_mul"])
    print(out)


def test_prove_finds_a_difference():
    """The miter is not vacuous: gradual underflow and flush-to-zero differ, and SAT says so."""
    (r,) = prove_pair("bf16_mul", {"arch": "behavioral", "stages": 0, "subnormals": True},
                      {"arch": "booth4", "stages": 0, "subnormals": False}, method="monolithic")
    assert not r.proved
    assert r.counterexample


@pytest.mark.full
def test_prove_bf16_mul_monolithic(capsys):
    """The same proof as one SAT run on the whole miter (several minutes: make test-full)."""
    assert main(["--design", "bf16_mul", "--method", "monolithic"]) == 0
    print(capsys.readouterr().out)


def test_prove_unknown_design(capsys):
    assert main(["--design", "mu"]) == 2
    assert "no proof is defined" in capsys.readouterr().err
