"""``python -m hw``: option listing for the Makefile and clear errors for bad options."""

import pytest

from hw.cli import main

pytestmark = pytest.mark.quick


def test_choices_lists_every_matrix_format(capsys):
    assert main(["options", "--choices", "fmt"]) == 0
    got = capsys.readouterr().out.split()
    # the five OCP element formats, the two integers and the six block-scaled ones (OCP MX, NVFP4),
    # spelled out here rather than read from the table
    assert sorted(got) == sorted(["fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "fp6_e3m2", "fp6_e2m3",
                                  "int8", "int4", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3",
                                  "mxfp4_e2m1", "nvfp4"])


def test_make_vars_are_the_upper_case_options(capsys):
    assert main(["options", "--make-vars"]) == 0
    names = capsys.readouterr().out.split()
    assert {"WIDTH", "FMT", "SPAD_MACRO", "ARCH"} <= set(names) and len(names) == len(set(names))


def test_unknown_option_is_named(capsys):
    assert main(["options", "--choices", "fmtt"]) == 2
    err = capsys.readouterr().err
    assert "'fmtt'" in err and "fmt" in err


@pytest.mark.parametrize("args, words", [
    (["--width", "12"], ("12", "power of two", "8, 16, 32, 64, 128")),
    (["--fmt", "fp7"], ("fp7", "fp6_e3m2")),
])
def test_bad_generator_option_is_a_clear_error(args, words, tmp_path, capsys):
    out = tmp_path / "mu.v"
    assert main(["gen", "mu", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words) and not out.exists()
