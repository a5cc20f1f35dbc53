"""``python -m flows bf16-compare``: BF16 multipliers side by side -> ``reports/qor/bf16_mul_comparison.md``.

Variants: ``behavioral`` (significand product written with ``*``, generic RoundPack), ``booth4``
(our radix-4 Booth, Dadda tree, prefix adder, and its own normalize/round path: exponent, shift and
sticky from the operands, :class:`hw.fp.round_product.ProductRoundPack`) and ``behavioral``
synthesized with Yosys's own ``synth -booth``; each at
stages 0 and 2, with subnormals on and off. Every variant goes through the same flow
(:func:`flows.synth.flow.run`, reports published under ``reports/qor/<variant>/``), and the ratios
are to the behavioral baseline with the same stages and subnormal mode; the Markdown is rendered by
:mod:`flows.report.bf16`.

The per-stage breakdown synthesizes the multiplier's own sub-blocks separately (combinational):
``Unpack`` (twice), the 8x8 significand product, ``RoundPack`` (normalize, round, pack) for the
behavioral arch, and for booth4 its exponent/shift/sticky logic (beside the product), its one
normalize/denormalize shift alone and its whole ``ProductRoundPack`` (shift, round, pack); a
stage's delay is its own input-to-output path, so the stages' delays do not add up exactly to the
whole multiplier's path (loads and ABC's choices differ in context).
"""


from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .metric_keys import AREA, CP_LV, CP_PS
from .paths import BUILD, PUBLISHED_QOR
from .report.bf16 import VARIANTS, render
from .synth.flow import resolve_library, run
from .synth.hier import own_area
from .synth.sta import Sta
from .synth.yosys import run_yosys

__all__ = ["main", "stage_breakdown", "OUT"]

OUT = PUBLISHED_QOR / "bf16_mul_comparison.md"


class _SigMul(wiring.Component):
    """Measurement harness: an unsigned ``n x n`` product written with ``*`` (the behavioral core)."""

    def __init__(self, n):
        super().__init__({"a": In(n), "b": In(n), "p": Out(2 * n)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.p.eq(self.a * self.b)
        return m


class _Fields(wiring.Component):
    """Measurement harness: booth4's exponent, shift and sticky logic from the operand codes."""

    def __init__(self, subnormals):
        from hw.fp.round_product import shift_width

        self._sub = subnormals
        ports = {"a": In(16), "b": In(16), "exp": Out(10)}
        if subnormals:
            ports.update(shift=Out(shift_width(_bf16(), True)), sticky=Out(2), tiny=Out(1))
        super().__init__(ports)

    def elaborate(self, platform):
        from hw.fp.round_product import product_fields

        m = Module()
        out = product_fields(m, self.a, self.b, _bf16(), self._sub, exp_width=10)
        m.d.comb += self.exp.eq(out["exp"])
        if self._sub:
            m.d.comb += [self.shift.eq(out["shift"]), self.sticky.eq(out["sticky"]),
                         self.tiny.eq(out["tiny"])]
        return m


class _Shift(wiring.Component):
    """Measurement harness: booth4's one normalize/denormalize shift (the rounder's window bits)."""

    def __init__(self):
        from hw.fp.round_product import shift_width

        super().__init__({"sig": In(16), "shift": In(shift_width(_bf16(), True)), "win": Out(11)})

    def elaborate(self, platform):
        m = Module()
        mb = _bf16().man_bits
        ext = Signal(16 + mb + 2)
        m.d.comb += [ext.eq(Cat(Const(0, 2 * mb + 2), self.sig) >> self.shift),
                     self.win.eq(ext[-11:])]
        return m


def _bf16():
    from hw.formats import get_format

    return get_format("bf16")


def _measure(component, name, lib, workdir, booth=False):
    """(area um^2, delay ps, levels) of one combinational component, flat."""
    from hw import hier

    net = hier.emit(component, name)
    r = run_yosys(net.verilog, name, workdir, lib, booth=booth)
    area = own_area(lib, r.netlist)[0]
    res = Sta(lib, r.netlist).run()
    return area, res.delay_ps, res.levels


def stage_breakdown(lib, subnormals, log=print):
    """Rows (stage, variant label, area, delay, levels) for the combinational multiplier's blocks."""
    from hw.formats import get_format
    from hw.fp.booth import Booth4Multiplier
    from hw.fp.round import RoundPack
    from hw.fp.round_product import ProductRoundPack
    from hw.fp.unpack import Unpack, unpack_exp_width

    bf16 = get_format("bf16")
    n = bf16.man_bits + 1
    work = BUILD / "qor" / "bf16-stages"
    tag = "" if subnormals else "_ftz"
    rows = []
    a, d, lv = _measure(Unpack(bf16, subnormals=subnormals), f"unpack_bf16{tag}", lib, work / f"unpack{tag}")
    rows.append(("unpack (x2)", "all", 2 * a, d, lv))
    a, d, lv = _measure(_Fields(subnormals), f"fields{tag}", lib, work / f"fields{tag}")
    rows.append(("exponent" + (", shift, sticky" if subnormals else "") + " (beside the product)",
                 "booth4", a, d, lv))
    for label, arch, booth in VARIANTS:
        comp = Booth4Multiplier(n, n) if arch == "booth4" else _SigMul(n)
        nm = f"sigmul_{arch}{'_ysbooth' if booth else ''}"
        a, d, lv = _measure(comp, nm, lib, work / nm, booth=booth)
        rows.append((f"multiply ({n}x{n} significands)", label, a, d, lv))
    rp = RoundPack(bf16, sig_width=2 * n, exp_width=unpack_exp_width(bf16) + 1, subnormals=subnormals)
    a, d, lv = _measure(rp, f"roundpack_bf16{tag}", lib, work / f"roundpack{tag}")
    rows.append(("normalize + round + pack", "behavioral", a, d, lv))
    if subnormals:
        a, d, lv = _measure(_Shift(), "prodshift", lib, work / "prodshift")
        rows.append(("normalize/denormalize shift (alone)", "booth4", a, d, lv))
    prp = ProductRoundPack(bf16, sig_width=2 * n, exp_width=unpack_exp_width(bf16),
                           subnormals=subnormals)
    a, d, lv = _measure(prp, f"prodround_bf16{tag}", lib, work / f"prodround{tag}")
    rows.append(("normalize + round + pack", "booth4", a, d, lv))
    return rows


def main(argv=None, log=print):
    """Run every variant and write the comparison report; returns 0."""
    lib = resolve_library(log=log)
    results = {}

    def quiet(*_):
        pass

    for stages in (0, 2):
        for sub in (True, False):
            for label, arch, booth in VARIANTS:
                out = run("bf16_mul", {"arch": arch, "stages": stages, "subnormals": sub}, lib=lib,
                          booth=booth, log=quiet, reports_dir=PUBLISHED_QOR)
                results[(stages, sub, label)] = out.metrics
                m = out.metrics
                log(f"  {m['variant']}: {m[AREA]:.0f} um^2, {m[CP_PS]} ps, {m[CP_LV]} levels")
    breakdown = {sub: stage_breakdown(lib, sub, log) for sub in (True, False)}
    text = render(results, breakdown, lib)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    log(f"wrote {OUT}")
    return 0
