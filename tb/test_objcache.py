"""``tb/objcache.py``: Verilator run-time objects are compiled once per command line and source, and
everything else is always compiled."""

import sys

import pytest

from tb import objcache

#: A stand-in compiler: ``fakecc.py -c -o OUT SRC [flags]`` writes OUT (the source's text and the
#: flags) and OUT's .d file, and appends a line to calls.txt next to itself.
FAKE_CC = """import sys, pathlib
a = sys.argv[1:]
out = pathlib.Path(a[a.index("-o") + 1])
src = [x for x in a if x.endswith(".cpp")][0]
out.write_text(pathlib.Path(src).read_text() + " ".join(a))
out.with_suffix(".d").write_text(f"{out.name}: {src}")
with open(pathlib.Path(__file__).with_name("calls.txt"), "a") as fh:
    fh.write(out.name + "\\n")
"""


@pytest.mark.quick
def test_runtime_objects_are_reused_and_design_objects_are_not(tmp_path, monkeypatch):
    root = tmp_path / "verilator"
    (root / "include").mkdir(parents=True)
    runtime = root / "include" / "verilated.cpp"
    runtime.write_text("runtime v1")
    design = tmp_path / "Vtop.cpp"
    design.write_text("design")
    cc = tmp_path / "fakecc.py"
    cc.write_text(FAKE_CC)
    monkeypatch.setenv("VERILATOR_ROOT", str(root))
    monkeypatch.setenv("HW_OBJCACHE_DIR", str(tmp_path / "cache"))
    calls = tmp_path / "calls.txt"

    def compile_in(folder, src, *flags):
        folder.mkdir(exist_ok=True)
        monkeypatch.chdir(folder)
        assert objcache.main([sys.executable, str(cc), "-c", "-o", "x.o", str(src), *flags]) == 0
        return (folder / "x.o").read_text(), (folder / "x.d").read_text()

    first = compile_in(tmp_path / "b1", runtime, "-O2")
    assert compile_in(tmp_path / "b2", runtime, "-O2") == first          # copied from the cache
    assert calls.read_text().split() == ["x.o"]
    assert "-O1" in compile_in(tmp_path / "b3", runtime, "-O1")[0]       # other flags: compiled
    runtime.write_text("runtime v2")
    assert compile_in(tmp_path / "b4", runtime, "-O2")[0].startswith("runtime v2")  # new source
    compile_in(tmp_path / "b5", design, "-O2")
    compile_in(tmp_path / "b6", design, "-O2")                           # never cached
    assert len(calls.read_text().split()) == 5
