"""``reports/physical.md``: routed matrix-unit columns against their pre-route numbers.

The report reads the ``metrics.json`` of place-and-route runs of the matrix unit's column macro
(``python -m flows pnr --design mu --set acc=exact --block mu_col ...``) as ``make pnr-study``
publishes them under ``reports/pnr/`` (:func:`flows.pnr_study.publish`: with the die size, the load
a column's activation input presents and the unrouted nets, taken from the run's layout files). It
writes, per element format and width D: the runs (effort, utilization, failed routes, runtime per
step), pre- against post-route area and delay, wirelength per MAC, the analytic estimate of the
top-level wires the macro leaves out (:mod:`flows.pnr.wires`), and the study's claims restated on
the routed numbers; and, for the runs that have one (``make power LAYOUT=``), the energy with their
wires (:mod:`flows.report.layout_energy`).

The text is built by pure functions of the runs and estimates (:func:`render`), so it can be
checked on hand-made metrics.
"""

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import metric_keys as K
from .common import Point, fit_slope, read_metrics
from .layout_energy import attach_energy, column_energy_section, label_key, unit_energy_section
from .silicon import model_costs, model_perf

__all__ = ["Run", "load_runs", "load_units", "point_of", "unit_of", "choose", "render", "port_load",
           "best_units", "LEAVES_OUT", "FORMATS", "WIDTHS"]

#: Element formats and widths the study places and routes (``acc = exact`` columns).
FORMATS = ("fp8_e4m3", "fp4_e2m1")
WIDTHS = (32, 64, 128)

#: What every number of the report leaves out.
LEAVES_OUT = [
    "The clock is ideal: no clock tree, no insertion delay, no skew, no jitter (OpenSTA with an "
    "ideal clock; a clock tree must keep its skew below the reported slack). The clock net's wire "
    "does not enter an ideal clock's timing, so a `clk` left unrouted (failed, or left out of the route "
    "on purpose: section 1) changes no delay here; left out, its tracks are free for the signal nets "
    "(a little less congestion than a routed clock tree would leave).",
    "Sections 1-4 place and route the column macro alone. There the unit's top-level wires "
    "(activation broadcast, weight rows, results, control) are **estimated** analytically from the "
    "macro's routed size (section 4), not routed; the top's own logic (control, feed registers, "
    "result skid buffer) is not laid out, and unit silicon is D x the column's die. Section 5 lays "
    "the whole unit out hierarchically at the widths listed there (the top with no power grid, "
    "the clock ideal and left unrouted).",
    "Inputs arrive at 0 ps at the macro's pins and outputs end at the pins (no input or output "
    "delay); the pins are spread on the die edge by qflow's `arrangepins`, not floorplanned.",
    "No timing-driven placement, no resizing or buffering after placement: the routed netlist is "
    "the synthesized one (post-route delay differs from pre-route by wires and OpenSTA's arc model).",
    "Parasitics are qrouter's own RC estimate from the LEF's per-square values (no field solver, no "
    "coupling capacitance, so no crosstalk); one corner (the liberty's typical).",
    "DRC and LVS are not run on these large macros (they are run on small blocks: `make pnr`); "
    "where they are run, magic checks the cells as LEF abstracts (no cell GDS in the Debian package).",
    "Power stripes are qflow's (2 um every 50 um); no IR-drop analysis.",
    "Energy (`make power LAYOUT=<run>`: the routed netlists simulated on real tiles, each net loaded "
    "with its extracted wire) is given for the whole units of section 5 and, in section 2, for units "
    "built of a routed column under the synthesized top, whose wires are not laid out and not "
    "counted. The clock is ideal and unrouted in both: its energy adds the least wire a tree through "
    "the clock pins must have and the least buffer tree that drives them at our STA's clock slew, "
    "not a synthesized clock tree.",
]


@dataclass
class Run:
    """One place-and-route run: its metrics and folder, and the point it measures."""

    metrics: dict
    folder: Path
    fmt: str
    width: int
    extra: dict = field(default_factory=dict)

    @property
    def routed(self) -> bool:
        """Timed after routing (a bounded route may leave a few nets unrouted: counted, timed
        without wires)."""
        return self.metrics.get(K.ROUTE_CP_PS) is not None

    @property
    def label(self) -> str:
        """The format, and "+ clock gates" for a unit built with them (``GATE=on``): units with and
        without gates are told apart in the tables and compared only with their own kind."""
        gate = str((self.metrics.get("design__params") or {}).get("gate", "")).lower()
        return f"{self.fmt} + clock gates" if gate in ("true", "on", "1") else self.fmt

    def get(self, key):
        v = self.metrics.get(key)
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def point_of(m: dict):
    """``(fmt, D)`` of an ``exact`` matrix-unit column run, else None."""
    p = m.get("design__params") or {}
    if m.get("design") != "mu" or p.get("acc") != "exact" or not str(p.get("block", "")).startswith("mu_col"):
        return None
    return p.get("fmt"), int(p["width"])


def unit_of(m: dict):
    """``(fmt, D)`` of a hierarchical run of the whole ``exact`` matrix unit, else None."""
    p = m.get("design__params") or {}
    if m.get("design") != "mu" or p.get("acc") != "exact" or not m.get("flow__hierarchical"):
        return None
    return p.get("fmt"), int(p["width"])


def load_units(pnr_dir: Path) -> list:
    """Every whole-unit hierarchical run (:func:`unit_of`) under ``pnr_dir/*/metrics.json``."""
    found = read_metrics(pnr_dir, "rerun that place-and-route point")
    units = [Run(m, f.parent, *unit_of(m)) for f, m in found if unit_of(m)]
    for r in units:
        attach_energy(r)
    return units


def load_runs(pnr_dir: Path) -> list:
    """Every column run (:func:`point_of`) under ``pnr_dir/*/metrics.json``, by folder name."""
    runs = []
    for f, m in read_metrics(pnr_dir, "rerun that place-and-route point"):
        pt = point_of(m)
        if pt:
            names = m[K.ROUTE_UNROUTED] if K.ROUTE_UNROUTED in m else unrouted_names(m.get("route__project"))
            runs.append(attach_energy(Run(m, f.parent, *pt, extra={"unrouted": names})))
    return runs


def choose(runs) -> dict:
    """``{(fmt, D): run}``: per point the timed run with the fewest unrouted nets, then the highest
    achieved utilization (the smallest die); later runs win ties."""
    out = {}
    for r in sorted(runs, key=lambda r: r.metrics.get("flow__date") or ""):
        if not r.routed:
            continue
        best = out.get((r.fmt, r.width))
        rank = (-(r.get(K.ROUTE_FAILED) or 0), r.get(K.UTIL))
        if best is None or rank >= (-(best.get(K.ROUTE_FAILED) or 0), best.get(K.UTIL)):
            out[(r.fmt, r.width)] = r
    return out


def port_load(spef_text: str, verilog_text: str, lib, port_prefix: str) -> list:
    """Load (pF) each input port bit named ``<port_prefix><i>_`` presents inside the routed macro:
    its net's routed wire capacitance (SPEF) plus the input pin capacitances of its sinks (liberty)."""
    types = dict((inst, typ) for typ, inst in re.findall(r"^\s*(\w+)\s+(\w+)\s*\(", verilog_text, re.M))
    out = []
    pat = re.compile(rf"\*D_NET\s+({re.escape(port_prefix)}\d+_)\s+(\S+)\s*\n\*CONN\n(.*?)\*CAP", re.S)
    for m in pat.finditer(spef_text):
        pins = 0.0
        for inst, pin in re.findall(r"^\*I\s+(\w+):(\w+)\s+I", m[3], re.M):
            pins += lib.cell(types[inst]).inputs[pin] * lib.cap_pf
        out.append(float(m[2]) + pins)
    return out


def _f(v, digits=0, unit=""):
    if v is None:
        return "not measured"
    return f"{v:,.{digits}f}{unit}"


def _gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def unrouted_names(project) -> list:
    """Names of the nets qrouter left unrouted (its ``layout/fail.out``; empty without one)."""
    f = Path(project or "") / "layout" / "fail.out"
    if not project or not f.is_file():
        return []
    return [ln.strip() for ln in f.read_text().splitlines()[1:] if ln.strip()]


def _names(r) -> str:
    names = r.extra.get("unrouted") or []
    return f" ({', '.join(f'`{n}`' for n in names[:3])}{', ...' if len(names) > 3 else ''})" if names else ""


def stopped(m) -> str:
    """What a run stopped at its step time limit got done (``route__status: "timeout"``), or ""."""
    t = m.get("route__timeout") if m.get("route__status") == "timeout" else None
    if not t:
        return ""
    how = ""
    if t.get("nets") and "remaining" in t:
        how = (f": {t['nets'] - t['remaining']:,} of {t['nets']:,} nets routed, in stage "
               f"{t.get('stage', '?')}")
    return f"{t.get('step', '?')} stopped at its {_f(t.get('limit_seconds'))} s limit{how}"


def _no_rc(m) -> str:
    names = m.get("route__rc__nets_without_driver") or []
    return (f"; routed but without RC: {', '.join(f'`{n}`' for n in names)}" if names else "")


def _in_order(r):
    """Sort key of runs: format (the study's first), width, date."""
    return FORMATS.index(r.fmt) if r.fmt in FORMATS else 9, r.width, r.metrics.get("flow__date") or ""


def runs_section(runs) -> list:
    L = ["## 1. Runs", "",
         "Every run found, chosen or not (a run of the full route with failed nets has no timing; the "
         "bounded route, cleanup off, times its few unrouted nets without wire and names them). "
         "Effort divisor: "
         "graywolf's `TWSC*fast` (1 = its default effort); groute: graywolf's own global routing (qrouter "
         "routes the whole layout either way); cleanup: qrouter's stage 3 (every net rerouted to "
         "shorten it); left out: nets qrouter was told not to route (`--no-route-clock`); stage-1 "
         "failed nets: what qrouter's first "
         "pass (no rip-up) left unrouted, the congestion its later passes resolved; times are wall "
         "seconds per qflow step on this machine (2 cores shared with other jobs); a run that re-read an "
         "earlier run's layout (`--reuse-layout`: SPEF and timing redone) shows the times and the "
         "revision of the run that made the layout, when that run measured them.", "",
         "| format | D | cells | effort divisor | groute | cleanup | left out | target util | util "
         "| die (um^2) "
         "| stage-1 failed nets | failed nets | place (s) | route (s) | STA (s) | total (s) | revision |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=_in_order):
        m, s = r.metrics, r.metrics.get("route__steps_seconds") or {}
        total = r.get("flow__runtime__seconds_total")
        lay = m.get("route__layout_run") or {}
        if m.get("route__reused_layout"):   # timing redone on an earlier run's layout: its run's times
            s, total = lay.get("steps_seconds") or {}, lay.get("seconds_total")
        sta = None
        if m.get("route__reused_layout"):   # the re-timing itself: SPEF and OpenSTA
            sta = r.get(K.PNR_RUNTIME)
        elif total is not None and r.get(K.PNR_RUNTIME) is not None and s:
            sta = r.get(K.PNR_RUNTIME) - sum(s.values())
        L.append(f"| {r.fmt} | {r.width} | {_f(r.get(K.CELLS))} | {m.get('place__graywolf__fast', '?')} | "
                 f"{'on' if m.get('place__graywolf__global_route', True) else 'off'} | "
                 f"{'on' if m.get('route__qrouter__cleanup', True) else 'off'} | "
                 f"{', '.join(f'`{n}`' for n in m.get('route__qrouter__ignored_nets') or []) or 'none'} | "
                 f"{_f(r.get(K.PNR_TARGET_UTIL), 2)} | {_f(r.get(K.UTIL), 3)} | {_f(r.get(K.DIE_AREA))} | "
                 f"{_f(r.get(K.ROUTE_FAILED_STAGE1))} | "
                 f"{stopped(m) or _f(r.get(K.ROUTE_FAILED))}{_names(r)}{_no_rc(m)} | "
                 f"{_f(s.get('place'))} | "
                 f"{_f(s.get('route'))} | {_f(sta)} | {_f(total)} | {m.get('flow__git_revision', '?')}"
                 + (f" (layout {lay.get('revision') or 'revision not recorded'})" if lay else "") + " |")
    return L


def qor_section(chosen) -> list:
    L = ["## 2. Pre- against post-route", "",
         "Pre-route: our synthesis and STA (Yosys + ABC, drive repair, no wires). OpenSTA without "
         "wires: the routed netlist timed with pin capacitances only (the same netlist: it checks "
         "that the two STAs agree). Post-route: OpenSTA with every routed net's RC (SPEF; a net the "
         "bounded route left unrouted, counted in section 1, is timed without wire, as is a routed net "
         "qrouter's RC writer skipped for want of a driver pin, named in section 1). A column "
         "does D MACs per cycle, so wirelength per MAC is the column's routed wire / D.", "",
         "| format | D | cells | cell area (um^2) | die (um^2) | die / cell area | pre-route (ps) | "
         "levels | OpenSTA no wires (ps) | post-route (ps) | wires' share | fmax pre / post (MHz) | "
         "wire (mm) | wire per MAC (um) | wire cap (pF) |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (fmt, d), r in sorted(chosen.items(), key=lambda kv: (FORMATS.index(kv[0][0])
                                                               if kv[0][0] in FORMATS else 9, kv[0][1])):
        post, nowire = r.get(K.ROUTE_CP_PS), r.get(K.ROUTE_CP_PS_NOWIRE)
        share = (post - nowire) / post if post and nowire is not None else None
        wl = r.get(K.ROUTE_WL)
        die, area = r.get(K.DIE_AREA), r.get(K.AREA)
        L.append(f"| {fmt} | {d} | {_f(r.get(K.CELLS))} | {_f(area)} | {_f(die)} | "
                 f"{_f(die / area, 2)} | {_f(r.get(K.CP_PS))} | {_f(r.get(K.CP_LV))} | "
                 f"{_f(nowire)} | {_f(post)} | {_f(100 * share, 1, '%') if share is not None else '-'} | "
                 f"{_f(r.get(K.FMAX), 1)} / {_f(r.get(K.ROUTE_FMAX), 1)} | {_f(wl / 1000, 1)} | "
                 f"{_f(wl / d, 0)} | {_f(r.get(K.ROUTE_WIRE_CAP), 2)} |")
    return L


def wires_section(chosen, est) -> list:
    """``est``: ``{(fmt, D): dict}`` with ``w``, ``h`` (macro um), ``c_in`` (pF, mean activation
    pin load), ``layer``, ``length`` (um), ``elmore_ps``, ``repeated_ps``, ``repeaters``,
    ``buffer``, ``top_wl`` (um of all top-level nets), ``bits`` (activation element width)."""
    L = ["## 4. Top-level wires: an estimate, not routed", "",
         "The column macro leaves out the unit's own nets. Estimated from the routed macro's size with "
         "the D macros abutted in one row (`flows/pnr/wires.py`): each broadcast net (activation "
         "`x`: D x b bits; row enable `we`: D bits; 4 control nets) runs the row, D x macro width, "
         "with D taps of the load one column's activation pin presents (measured: the routed net's "
         "wire capacitance plus its sinks' pin capacitances, mean over the `x` bits); the "
         "point-to-point nets (`wdata`: b bits, `y`: 32 bits per column) average half the row. Wire R "
         "and C per um from the technology LEF for the layer named; delays: the unbuffered wire's "
         "Elmore delay from an ideal driver, and the fastest repeater chain (liberty delays). "
         "**Estimate**: no routing, no congestion, no coupling.", "",
         "| format | D | macro w x h (um) | row (mm) | x pin load (fF) | layer | broadcast wire C (pF) "
         "| unbuffered Elmore (ps) | repeated (ps, repeaters) | fits one cycle at post-route fmax | "
         "top-level wire per MAC (um, est.) | in-column wire per MAC (um) |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(est, key=lambda k: (FORMATS.index(k[0]) if k[0] in FORMATS else 9, k[1])):
        e, r = est[key], chosen[key]
        fmt, d = key
        post = r.get(K.ROUTE_CP_PS)
        fits = "yes" if e["repeated_ps"] <= post else f"no: {math.ceil(e['repeated_ps'] / post)} cycles"
        L.append(f"| {fmt} | {d} | {e['w']:.0f} x {e['h']:.0f} | {e['length'] / 1000:.1f} | "
                 f"{1000 * e['c_in']:.0f} | {e['layer']} | {e['wire_c']:.2f} | {e['elmore_ps']:,.0f} | "
                 f"{e['repeated_ps']:,.0f} ({e['repeaters']} x {e['buffer']}) | {fits} | "
                 f"{e['top_wl'] / (d * d):,.0f} | {r.get(K.ROUTE_WL) / d:,.0f} |")
    L += ["", "Per MAC: a unit does D x D MACs per cycle; its top-level wire estimate over D^2 against "
          "one column's routed wire over its D MACs. Placing each column's registers beside it, or the "
          "columns in a grid instead of a row, shortens these nets; the row is the pessimistic, simple "
          "floorplan."]
    return L


def _perf_ratio(pts, a, b, regime, n):
    """Geometric mean over the models of perf(a)/perf(b) and how many models favour ``a``."""
    ca, cb = model_costs(regime, n, a), model_costs(regime, n, b)
    ratios = [model_perf(pts[a], ca[mo]) / model_perf(pts[b], cb[mo]) for mo in ca]
    return _gmean(ratios), sum(x > 1 for x in ratios), len(ratios)


def _unit_point(r, fmax, fmt, d):
    return Point(f"mu-w{d}-{fmt}-routed", "mu", {"width": d}, {K.FMAX: fmax, K.AREA: d * r.get(K.DIE_AREA)},
                 r.folder)


def claims_section(chosen, est) -> list:
    L = ["## 3. The study's claims on the routed numbers", "",
         "Unit silicon = D x the column's routed die (the top's logic and wires left out); fmax "
         "**column**: the routed column's post-route fmax; **with broadcast**: the lower of that and "
         "1 / (the repeated activation broadcast's estimated delay), i.e. the broadcast given one "
         "pipeline stage of its own (section 4). Equal-silicon performance: useful MACs per second "
         "per mm^2 over each model's matmuls (`flows/report/silicon.py`, the same tile costs as "
         "`reports/qor_comparison.md`).", ""]
    for fmt in FORMATS:
        pts = {d: chosen[(fmt, d)] for d in WIDTHS if (fmt, d) in chosen}
        if not pts:
            L += [f"- **{fmt}**: no routed point yet.", ""]
            continue
        fcol = {d: r.get(K.ROUTE_FMAX) for d, r in pts.items()}
        fwire = {d: min(fcol[d], 1e6 / est[(fmt, d)]["repeated_ps"]) if (fmt, d) in est else None
                 for d in pts}
        ds = sorted(pts)
        L.append(f"**{fmt}** (routed: D = {', '.join(map(str, ds))}; not routed: "
                 f"{', '.join(str(d) for d in WIDTHS if d not in pts) or 'none'})")
        L.append("")
        verdict = _falls_verdict(fcol)
        L.append("- *Wider arrays cannot be clocked as fast*: post-route fmax "
                 + ", ".join(f"D={d} {fcol[d]:.1f} MHz" for d in ds) + "; with broadcast "
                 + ", ".join(f"D={d} {_f(fwire[d], 1)} MHz" for d in ds)
                 + (f" -> column alone: {verdict}" if verdict else " -> one width only: not decided"))
        xs = [math.log2(d) for d in ds]
        ps = fit_slope(xs, [pts[d].get(K.ROUTE_CP_PS) for d in ds])
        lv = fit_slope(xs, [pts[d].get(K.CP_LV) for d in ds])
        if ps is None:
            L.append("- *Levels per doubling*: one width only: not decided")
        else:
            levels = ", ".join(f"D={d} {_f(pts[d].get(K.CP_LV))}" for d in ds)
            L.append(f"- *Levels per doubling*: critical-path levels {levels} ({_f(lv, 2)} per doubling; "
                     f"the pre-route path: the routed netlist is the same), post-route delay "
                     f"{_f(ps, 0)} ps per doubling")
        for a, b, claim in ((64, 128, "64 beats 128 at equal silicon"),
                            (32, 64, "32 edges out 64 at equal silicon")):
            if a not in pts or b not in pts:
                L.append(f"- *{claim}*: D = {b if a in pts else a} not routed: not decided")
                continue
            parts = []
            for label, f in (("column", fcol), ("with broadcast", fwire)):
                if f[a] is None or f[b] is None:
                    continue
                P = {a: _unit_point(pts[a], f[a], fmt, a), b: _unit_point(pts[b], f[b], fmt, b)}
                for regime, n in (("decode", 1), ("decode", 8), ("prefill", 4096)):
                    g, k, tot = _perf_ratio(P, a, b, regime, n)
                    parts.append(f"{label}, {regime} {n}: {a}/{b} = {g:.2f} ({k} of {tot} models favour {a})")
            L.append(f"- *{claim}*: " + "; ".join(parts))
        L.append("")
    return L


def units_section(units) -> list:
    """The whole units laid out hierarchically, each against the top-level wire estimate of section 4
    applied to its own column's width."""
    from hw.formats import get_format

    from ..pnr.wires import top_wirelength

    if not units:
        return []
    L = ["## 5. The whole unit, routed hierarchically", "",
         "`python -m flows pnr-study --unit FMT:D` (`make pnr DESIGN=mu HIER=1` with the study's effort): "
         "the column laid out once (placed by graywolf, its pins on its upper edge, routed on metal1-4, "
         "DRC-checked; LVS when its clock is routed: the study leaves clocks unrouted, ideal) and "
         "turned into a macro (LEF abstract, timing model measured by OpenSTA "
         "on the routed column with its parasitics); its D copies FIXED in a row, the top's own cells "
         "(control, feed registers, result path, buffers) in rows above them, placed by our quadratic "
         "placer (`flows/pnr/place.py`), its buffer trees rebuilt by position and placed again (top buffer "
         "trees: `flows/pnr/repeat.py`, the drive repair's buffer as repeater, chains from each driver "
         "along the row, clusters of at most one segment and the buffer's load; \"as synthesized\": the "
         "repair's trees, their sinks in netlist order), the top routed by qrouter (metal5-6 over the "
         "columns), "
         "extracted, timed by OpenSTA with the columns' models, and checked in magic over the "
         "columns' real layouts (DRC; every signal pin on its netlist net). Unit critical path: the "
         "longer of the top's post-route path (it includes a column input's setup, measured with the "
         "column's wires) and the column's own. Top wire, estimated: section 4's formula with this "
         "unit's column width (broadcasts the row's length, point-to-point nets half of it).", "",
         "| format | D | column cells | column die (um) | column DRC / LVS | top cells | top util "
         "| top buffer trees | unit die (mm) | unit die / (D x column die) | top wire (mm): routed / est. "
         "| top wire per MAC (um) | top nets unrouted: stage 1 / final | top DRC "
         "| pins: open / short / missing | top path post / no wires / pre (ps) | column path post (ps) "
         "| unit fmax (MHz) | total (min) "
         "| revision |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(units, key=_in_order):
        m, d = r.metrics, r.width
        bw, bh = m.get("hier__block__die_width_um"), m.get("hier__block__die_height_um")
        tw, th = m.get("hier__top__die_width_um"), m.get("hier__top__die_height_um")
        conn = m.get("hier__top__connectivity") or {}
        top, col = r.get(K.ROUTE_CP_PS), r.get("hier__block__critical_path_ps_post")
        unit = max(x for x in (top, col) if x is not None) if top or col else None
        est = top_wirelength(d, bw, get_format(r.fmt).bits) if bw else None
        wl = r.get(K.ROUTE_WL)
        total = r.get("flow__runtime__seconds_total")
        lvs = {True: "match", False: "mismatch"}.get(m.get("hier__block__lvs_match"), "not run")
        rb = m.get("hier__top__rebuffer")
        trees = (f"by position: {rb['nets']} nets, {_f(rb['repeaters'])} repeaters every "
                 f"<= {_f(rb['segment_um'] / 1000, 1)} mm" if rb else "as synthesized")
        L.append(f"| {r.label} | {d} | {_f(r.get('hier__block__cells'))} | {_f(bw)} x {_f(bh)} | "
                 f"{_f(r.get('hier__block__drc_errors'))} / {lvs} | {_f(r.get('hier__top__cells'))} | "
                 f"{_f(r.get('hier__top__target_util'), 2)} | {trees} | "
                 f"{_f(tw / 1000, 2)} x {_f(th / 1000, 2)} | {_f(tw * th / (d * bw * bh), 2)} | "
                 f"{_f(wl / 1000, 0)} / {_f(est / 1000 if est else None, 0)} | {_f(wl / (d * d), 0)} | "
                 f"{_f(r.get(K.ROUTE_FAILED_STAGE1)) if K.ROUTE_FAILED_STAGE1 in m else 'not recorded'} / "
                 f"{_f(r.get(K.ROUTE_FAILED))} | {_f(r.get('hier__top__drc_errors'))} | "
                 f"{_f(conn.get('opens'))} / {_f(conn.get('shorts'))} / {_f(conn.get('missing'))} of "
                 f"{_f(conn.get('pins'))} | {_f(top)} / {_f(r.get(K.ROUTE_CP_PS_NOWIRE))} / "
                 f"{_f(r.get(K.CP_PS))} | {_f(col)} | {_f(1e6 / unit if unit else None, 1)} | "
                 f"{_f(total / 60 if total else None, 1)} | "
                 f"{m.get('flow__git_revision', '?')} |")
    return L + [""] + unit_claims(units) + unit_energy_section(sorted(units, key=_in_order), best_units)


def _falls_verdict(fmax: dict) -> str | None:
    """The claim "wider arrays cannot be clocked as fast" on ``{D: fmax}``: agree when fmax falls
    with every doubling; None for one width."""
    ds = sorted(fmax)
    if len(ds) < 2:
        return None
    falls = all(fmax[b] < fmax[a] for a, b in zip(ds, ds[1:], strict=False))
    return (f"{'agree' if falls else 'disagree'} (fmax {'falls' if falls else 'does not fall'} "
            "with every doubling)")


def best_units(units) -> dict:
    """``{(fmt, D): (run, top path, column path)}``: per format and D the fastest run routed with no
    failed net and both paths timed; on a tie, the shorter top path."""
    best = {}
    for r in units:
        top, col = r.get(K.ROUTE_CP_PS), r.get("hier__block__critical_path_ps_post")
        if r.get(K.ROUTE_FAILED) != 0 or top is None or col is None:
            continue
        key = (r.label, r.width)
        if key not in best or (max(top, col), top) < (max(*best[key][1:]), best[key][1]):
            best[key] = (r, top, col)
    return best


def unit_claims(units) -> list:
    """The first of the study's claims on whole routed units: per format, the fastest run at each D
    among those routed with no failed net and both paths timed (on a tie, the shorter top path), its
    fmax, and what sets it (the top's path or the column's)."""
    best = best_units(units)
    fmts = sorted({f for f, _ in best}, key=lambda f: label_key(f, FORMATS))
    if not fmts:
        return []
    L = ["Wider arrays cannot be clocked as fast, on whole units (the fastest routed run of each D with "
         "no failed net, on a tie the one with the shorter top path; what sets the unit's period, and the "
         "top's path against the column's):", ""]
    for f in fmts:
        ds = sorted(d for g, d in best if g == f)
        pts = {d: best[(f, d)] for d in ds}
        fmax = {d: 1e6 / max(top, col) for d, (_, top, col) in pts.items()}
        parts = [f"D={d} {fmax[d]:.1f} MHz ({'top' if top > col else 'column'}; top/column "
                 f"{top / col:.2f}, top util {_f(r.get('hier__top__target_util'), 2)})"
                 for d, (r, top, col) in pts.items()]
        verdict = _falls_verdict(fmax)
        L.append(f"- **{f}**: " + ", ".join(parts) + f" -> {verdict or 'one width only: not decided'}")
    return L + [""]


def missing_section(chosen, runs=()) -> list:
    """Points without a routed run, with the size and time they would take, scaled from the widest
    routed column of the same format (a column is D lanes: cells about linear in D; place and route
    time at least linear in the cells, so the time is a lower estimate), and what the runs of that
    point stopped at their step time limit got done (:func:`stopped`)."""
    missing = [(f, d) for f in FORMATS for d in WIDTHS if (f, d) not in chosen]
    if not missing:
        return []
    L = ["## 6. Columns not routed", "",
         "| format | D | cells (est.) | place and route time (est., at least) | tried |",
         "|---|---|---|---|---|"]
    for f, d in missing:
        tried = "; ".join(_attempt(r) for r in runs
                          if (r.fmt, r.width) == (f, d) and stopped(r.metrics)) or "-"
        ref = [r for (g, _), r in chosen.items() if g == f and _seconds(r)]
        if not ref:
            L.append(f"| {f} | {d} | no routed column of this format to scale from | - | {tried} |")
            continue
        r = max(ref, key=lambda r: r.width)
        k = d / r.width
        t = _seconds(r) / 60
        L.append(f"| {f} | {d} | {_f(k * r.get(K.CELLS))} (D={r.width}: {_f(r.get(K.CELLS))}) | "
                 f"{_f(k * t if t else None, 0)} min (D={r.width}: {_f(t, 1)} min) | {tried} |")
    return L + [""]


def _attempt(r) -> str:
    place = (r.metrics.get("route__steps_seconds") or {}).get("place")
    return f"{stopped(r.metrics)} (place {_f(place)} s, revision {r.metrics.get('flow__git_revision', '?')})"


def _seconds(r):
    """Wall seconds of the run that placed and routed ``r``'s layout (that earlier run's, for a
    re-timed layout: its place and route steps when its total was not recorded), or None when not
    measured."""
    if r.metrics.get("route__reused_layout"):
        lay = r.metrics.get("route__layout_run") or {}
        steps = lay.get("steps_seconds")   # place and route alone when the total was not recorded
        return lay.get("seconds_total") or (sum(steps.values()) if steps else None)
    return r.get("flow__runtime__seconds_total")


def render(runs, est, provenance, units=()) -> str:
    """The report's text from the column runs (:func:`load_runs`), the top-level wire estimates
    (``{(fmt, D): dict}``, see :func:`wires_section`), provenance lines and the whole-unit runs
    (:func:`load_units`)."""
    chosen = choose(runs)
    L = ["# Physical design: routed matrix-unit columns (`acc = exact`)", "",
         "Generated by `python -m flows pnr-study` (`make pnr-study`) from the place-and-route runs' "
         "`metrics.json` as published under `reports/pnr/`; do not edit by hand.", ""]
    tried = {(r.fmt, r.width) for r in runs}
    absent = [f"{f} D = {d}" for f in FORMATS for d in WIDTHS if (f, d) not in tried]
    if absent:
        L += [f"**Partial**: no run at all of {', '.join(absent)} (neither routed nor stopped at its "
              "limit); place and route them (`make pnr-study RUN=...`) before publishing this report.",
              ""]
    L += ["## Provenance", ""] + provenance
    L += ["", "## What these numbers leave out", ""] + [f"- {x}" for x in LEAVES_OUT] + [""]
    L += runs_section(runs) + [""] + qor_section(chosen) + [""] + column_energy_section(chosen)
    L += claims_section(chosen, est) + [""]
    L += wires_section(chosen, est) + [""]
    L += units_section(units)
    L += missing_section(chosen, runs)
    return "\n".join(L)
