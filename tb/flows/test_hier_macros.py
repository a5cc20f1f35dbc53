"""Black-box macros and the top's own timing in the hierarchical flow (flows/synth/hier.py).

(The macro's *area* is the flow's model, added in flows/synth/flow.py; the placeholder itself is an
empty module and synthesizes to nothing whether or not it is declared a macro.)

A small design with the three kinds of module the slice has: an empty placeholder macro (like the
scratchpad SRAM, area modelled elsewhere), a child block with a long internal register-to-register
path (like a matrix unit), and the top's own logic between them. Synthesized with the OSU 0.18 um
library (a few seconds).
"""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from flows.synth import liberty as L
from flows.synth.flow import run
from flows.synth.hier import synth_hier
from hw import hier
from tb.flows import OSU, needs_osu, quiet

pytestmark = [pytest.mark.quick, needs_osu]


class _Macro(wiring.Component):
    """Empty placeholder: its outputs are undriven, as the scratchpad's black box."""

    def __init__(self):
        super().__init__({"d": In(16), "q": Out(16)})

    def elaborate(self, platform):
        return Module()


class _Slow(wiring.Component):
    """Registered 16 x 16 multiplier: a long path entirely inside the block."""

    def __init__(self):
        super().__init__({"a": In(16), "p": Out(32)})

    def elaborate(self, platform):
        m = Module()
        ra, rb = Signal(16), Signal(16)
        m.d.sync += [ra.eq(self.a), rb.eq(self.a ^ 0x5A5A), self.p.eq(ra * rb)]
        return m


class _Top(wiring.Component):
    """register -> 8 x 8 multiplier -> macro input; macro output -> adder -> register."""

    def __init__(self):
        super().__init__({"a": In(8), "y": Out(16), "p": Out(32)})

    def elaborate(self, platform):
        m = Module()
        ra = Signal(8)
        m.d.sync += ra.eq(self.a)
        mac, slow = _Macro(), _Slow()
        hier.place(m, "sram", mac, module="t_sram")
        hier.place(m, "slow", slow, module="t_slow")
        m.d.comb += [mac.d.eq(ra * ra), slow.a.eq(ra), self.p.eq(slow.p)]
        m.d.sync += self.y.eq(mac.q + ra)
        return m


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    netlist = hier.emit(_Top(), "top")
    lib = L.load(OSU)
    work = tmp_path_factory.mktemp("macros")
    return (synth_hier(netlist, lib, work / "with", macros={"t_sram"}, log=quiet),
            synth_hier(netlist, lib, work / "without", log=quiet))


def test_macro_pins_are_timed_as_registers(reports):
    """Declared a macro, the placeholder's input pins end paths: the multiplier feeding it is the
    top's worst own path. Not declared, nothing ends there and that path goes untimed."""
    with_macro, without = reports
    own = with_macro.top_own
    assert "t_sram" in own.end and own.end.endswith(" d"), own.format()
    assert own.delay_ps > without.top_own.delay_ps
    assert "t_sram" not in without.top_own.end
    # the ideal pins add nothing of their own: the macro model is all zeros
    model = with_macro.blocks["t_sram"].model
    assert model.in2reg["d"] == [0.0, 0] and len(model.reg2out) == 16
    assert all(v == [0.0, 0] for v in model.reg2out.values())


def test_top_own_leaves_out_the_blocks_internal_paths(reports):
    """The design's worst path is inside the child (its 16 x 16 multiplier); the top's own worst
    path excludes it but keeps the paths into and out of blocks."""
    with_macro, _ = reports
    slow = with_macro.blocks["t_slow"].model.reg2reg[0]
    assert with_macro.worst.kind == "reg->reg" and "t_slow" in with_macro.worst.start
    assert with_macro.worst.delay_ps == pytest.approx(slow)
    assert with_macro.top_own.delay_ps < slow


def test_flat_flow_refuses_macros(tmp_path):
    """Flattened, the placeholder's undriven outputs would let Yosys delete the logic behind it."""
    with pytest.raises(ValueError, match=r"black-box macros \(spad_sram_.*FLOW=hier"):
        run("slice", {"units": 1, "width": 8, "spad_bytes": 256}, flow="flat", lib=L.load(OSU),
            outdir=tmp_path, log=quiet)


def test_stale_blocks_leave_the_work_directory(tmp_path):
    """A block directory left by an earlier version of the design (a renamed block) is removed
    before the blocks are synthesized, so the run's repaired netlists compose to one design."""
    stale = tmp_path / "run" / "t_gone"
    stale.mkdir(parents=True)
    (stale / "repaired.json").write_text("{}")
    netlist = hier.emit(_Top(), "top")
    synth_hier(netlist, L.load(OSU), tmp_path / "run", log=quiet)
    assert not stale.exists()
    assert {d.name for d in (tmp_path / "run").iterdir()} == set(netlist.modules)

