"""Standard-cell libraries: find a liberty file, read it with ``liberty-parser``, look up NLDM tables.

The flow needs from a liberty: cell areas, input pin capacitances, the timing arcs of every output
pin (``related_pin``, ``timing_sense``, ``timing_type`` and the ``cell_rise``/``cell_fall``/
``rise_transition``/``fall_transition`` tables), the drive limits of output pins (``max_capacitance``,
``max_transition``, or the library's ``default_max_*``) and the flops' clock-to-Q arcs and setup
constraints.
:func:`load` parses the file once with ``liberty-parser`` and keeps a plain-Python :class:`Library`
(cached as JSON under ``build/qor-cache/``, keyed by the file's hash, because parsing takes seconds).
A cell whose liberty area is 0 (OSU 0.18 um's ``LATCH``) takes its area from the ``SIZE`` of its
macro in the LEF beside the liberty (same stem, ``.lef``), when there is one.

Which liberty (:func:`find_liberty`): ``LIBERTY=`` when given (a missing file is an error), else the
first ``*.lib`` under ``$PDK_ROOT`` (preferring typical-corner standard cells), else Debian's OSU
0.18 um library (package ``qflow-tech-osu018``). With none, :func:`generic_library` returns a
technology-independent gate library: area in gate equivalents and one unit of delay per gate, so
"timing" is then a count of logic levels.
"""

import bisect
import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import BUILD

__all__ = ["Table", "Arc", "Cell", "Library", "LibertyError", "find_liberty", "load",
           "generic_library", "load_top", "OSU018_DEFAULT", "NO_LIBERTY_NOTE"]

OSU018_DEFAULT = Path("/usr/share/qflow/tech/osu018/osu018_stdcells.lib")
CACHE_DIR = BUILD / "qor-cache" / "liberty"
_FORMAT = 5  # bump when the cached JSON layout changes

NO_LIBERTY_NOTE = (
    "no liberty file found: using the generic gate library (area in gate equivalents, delay in "
    "logic levels); timing is technology-independent. For real timing install the OSU 0.18 um "
    "library (`apt-get install qflow-tech-osu018`) or pass LIBERTY=/path/to/cells.lib "
    "(or set PDK_ROOT).")


class LibertyError(RuntimeError):
    """A liberty file is missing, unreadable or lacks what the flow needs; the message says which."""


@dataclass
class Table:
    """One NLDM lookup table, indexed by load capacitance and input transition.

    ``index_1``/``index_2`` follow the table's template; ``load_first`` says whether variable_1 is
    the output load (``total_output_net_capacitance``) or the input transition. Scalar tables have
    empty indices. Values are in library time units.

    Interpolation is bilinear inside the grid; outside it the two nearest grid points of each axis
    are extended linearly (the usual liberty convention, as OpenSTA does).
    """

    index_1: list
    index_2: list
    values: list  # rows along index_1, columns along index_2
    load_first: bool = True

    def lookup(self, load: float, slew: float) -> float:
        """Value at output load ``load`` and input transition ``slew`` (library units)."""
        x1, x2 = (load, slew) if self.load_first else (slew, load)
        if not self.index_1:
            return self.values[0][0]
        if not self.index_2:
            row = [v[0] for v in self.values] if len(self.values) > 1 else self.values[0]
            return _interp1(self.index_1, row, x1)
        i = _bracket(self.index_1, x1)
        j = _bracket(self.index_2, x2)
        a0, a1 = self.index_1[i], self.index_1[i + 1]
        b0, b1 = self.index_2[j], self.index_2[j + 1]
        t = (x1 - a0) / (a1 - a0)
        u = (x2 - b0) / (b1 - b0)
        v = self.values
        return ((1 - t) * (1 - u) * v[i][j] + t * (1 - u) * v[i + 1][j]
                + (1 - t) * u * v[i][j + 1] + t * u * v[i + 1][j + 1])


def _bracket(axis, x):
    """Index i such that axis[i], axis[i+1] bracket x (clamped to the end segments)."""
    if len(axis) < 2:
        raise LibertyError("a lookup table axis has fewer than two points")
    i = bisect.bisect_right(axis, x) - 1
    return min(max(i, 0), len(axis) - 2)


def _interp1(axis, vals, x):
    if len(axis) == 1:
        return vals[0]
    i = _bracket(axis, x)
    t = (x - axis[i]) / (axis[i + 1] - axis[i])
    return (1 - t) * vals[i] + t * vals[i + 1]


@dataclass
class Arc:
    """A timing arc ``related`` -> ``pin`` of a cell.

    ``sense`` is ``positive_unate``, ``negative_unate`` or ``non_unate``; ``kind`` is
    ``combinational``, ``rising_edge``/``falling_edge`` (clock-to-Q) or ``setup_rising``/
    ``setup_falling`` (a constraint on an input pin; tables ``rise_constraint``/``fall_constraint``
    indexed by clock and data transition). ``tables`` maps table names to :class:`Table`.
    """

    pin: str
    related: str
    sense: str
    kind: str
    tables: dict


@dataclass
class Cell:
    """A library cell: area, pins (direction, capacitance, clock flag), arcs and flop data.

    ``max_cap`` and ``max_tran`` map output pins to the liberty's ``max_capacitance`` /
    ``max_transition`` (library units); a pin the liberty gives no limit is absent.
    """

    name: str
    area: float
    inputs: dict  # pin -> capacitance (library units)
    outputs: list
    clock_pins: list
    arcs: list  # list of Arc
    is_seq: bool = False
    functions: dict = field(default_factory=dict)
    max_cap: dict = field(default_factory=dict)
    max_tran: dict = field(default_factory=dict)

    def arcs_to(self, pin):
        return [a for a in self.arcs if a.pin == pin and a.kind in
                ("combinational", "rising_edge", "falling_edge", "combinational_rise",
                 "combinational_fall")]


@dataclass
class Library:
    """A cell library as the flow uses it.

    Attributes
    ----------
    name : str
        ``library(...)`` name in the file.
    short : str
        Short tag for variant names (``osu018``, ``sky130hd``, ``generic``).
    path : str or None
        File it was read from (None for the generic library).
    time_ps : float
        Picoseconds per library time unit.
    cap_pf : float
        Picofarads per library capacitance unit.
    cells : dict[str, Cell]
    generic : bool
        True for the technology-independent fallback.
    """

    name: str
    short: str
    path: str | None
    time_ps: float
    cap_pf: float
    cells: dict
    generic: bool = False
    sha256: str = ""

    @property
    def nand2(self) -> Cell:
        """Smallest 2-input NAND: the gate equivalent (GE) reference."""
        cands = [c for c in self.cells.values()
                 if len(c.inputs) == 2 and len(c.outputs) == 1 and not c.is_seq
                 and _is_nand2(c.functions.get(c.outputs[0], ""), list(c.inputs))]
        if not cands:
            raise LibertyError(f"liberty {self.name}: no 2-input NAND cell to define a gate equivalent")
        return min(cands, key=lambda c: (c.area, c.name))

    @property
    def ge_area(self) -> float:
        return self.nand2.area

    def cell(self, name: str) -> Cell:
        try:
            return self.cells[name]
        except KeyError:
            raise LibertyError(f"cell {name!r} is not in liberty {self.name} ({self.path}); the mapped "
                               "netlist and the liberty disagree (was synthesis run with another "
                               "LIBERTY?)") from None

    def default_input_slew(self) -> float:
        """Input transition assumed at primary inputs (library units).

        The output transition of the GE NAND2 (input A, input slew = its table's smallest
        transition) driving four copies of itself (fanout of 4): a realistic on-chip slew in any
        library's own scale.
        """
        if self.generic:
            return 0.0
        nand = self.nand2
        arc = nand.arcs_to(nand.outputs[0])[0]
        load = 4 * max(nand.inputs.values())
        tab = arc.tables.get("rise_transition") or next(iter(arc.tables.values()))
        axis = tab.index_2 if tab.load_first else tab.index_1
        s0 = axis[0] if axis else 0.0
        return max(t.lookup(load, s0) for k, t in arc.tables.items() if k.endswith("transition"))

    def drive_limit(self, ctype: str, pin: str, within_tables: bool = False) -> float:
        """Most load (library units) output ``pin`` of cell ``ctype`` may drive.

        The pin's ``max_capacitance``; with a ``max_transition`` also the load at which the pin's
        output transition (at :meth:`default_input_slew`) reaches it; with neither, the top of the
        pin's load tables (no extrapolation beyond the characterized range). ``within_tables``
        also caps the limit at that top.
        """
        cell = self.cell(ctype)
        limit = cell.max_cap.get(pin)
        if pin in cell.max_tran:
            t = _transition_limit(cell, pin, cell.max_tran[pin], self.default_input_slew())
            limit = t if limit is None else min(limit, t)
        top = load_top(cell, pin)
        if limit is None or (within_tables and top < limit):
            return top
        return limit

    def load_within_slew(self, ctype: str, pin: str, slew: float) -> float:
        """Most load (library units) output ``pin`` of cell ``ctype`` drives with every output
        transition within ``slew`` when its input transition is ``slew`` too (the load a buffer of a
        tree that holds one slew throughout may take)."""
        return _transition_limit(self.cell(ctype), pin, slew, slew)

    def default_output_load(self) -> float:
        """Load on primary outputs (library units): four GE NAND2 inputs (fanout of 4)."""
        if self.generic:
            return 0.0
        return 4 * max(self.nand2.inputs.values())

    def to_json(self):
        return {"format": _FORMAT, "name": self.name, "short": self.short, "path": self.path,
                "time_ps": self.time_ps, "cap_pf": self.cap_pf, "generic": self.generic,
                "sha256": self.sha256,
                "cells": {n: {"area": c.area, "inputs": c.inputs, "outputs": c.outputs,
                              "clock_pins": c.clock_pins, "is_seq": c.is_seq, "functions": c.functions,
                              "max_cap": c.max_cap, "max_tran": c.max_tran,
                              "arcs": [[a.pin, a.related, a.sense, a.kind,
                                        {k: [t.index_1, t.index_2, t.values, t.load_first]
                                         for k, t in a.tables.items()}] for a in c.arcs]}
                          for n, c in self.cells.items()}}

    @classmethod
    def from_json(cls, d):
        cells = {}
        for n, c in d["cells"].items():
            arcs = [Arc(p, r, s, k, {tn: Table(*tv) for tn, tv in tabs.items()})
                    for p, r, s, k, tabs in c["arcs"]]
            cells[n] = Cell(n, c["area"], c["inputs"], c["outputs"], c["clock_pins"], arcs, c["is_seq"],
                            c["functions"], c.get("max_cap", {}), c.get("max_tran", {}))
        return cls(d["name"], d["short"], d["path"], d["time_ps"], d["cap_pf"], cells, d["generic"],
                   d.get("sha256", ""))


def load_top(cell: Cell, pin: str) -> float:
    """Top of the load axes of the tables of ``cell``'s arcs to ``pin`` (inf without tables)."""
    tops = []
    for a in cell.arcs_to(pin):
        for t in a.tables.values():
            axis = t.index_1 if t.load_first else t.index_2
            if axis:
                tops.append(axis[-1])
    return max(tops) if tops else math.inf


def _transition_limit(cell, pin, max_tran, slew):
    """Largest load at which every transition table of ``pin`` stays within ``max_tran``."""
    tabs = [t for a in cell.arcs_to(pin) for n, t in a.tables.items() if n.endswith("transition")]
    if not tabs:
        return math.inf

    def worst(load):
        return max(t.lookup(load, slew) for t in tabs)

    lo, hi = 0.0, max(load_top(cell, pin), 1e-9)
    if worst(lo) > max_tran:
        return 0.0
    while worst(hi) <= max_tran and hi < 1e6:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst(mid) <= max_tran else (lo, mid)
    return lo


def _is_nand2(func: str, pins) -> bool:
    f = func.replace(" ", "").replace('"', "")
    a, b = pins
    return f in {f"(!({a}{b}))", f"!({a}{b})", f"!({a}&{b})", f"(!({a}&{b}))", f"!({a}*{b})",
                 f"(!({a}*{b}))", f"(!{a})+(!{b})", f"!{a}+!{b}", f"!{a}|!{b}", f"(!{a}|!{b})"}


_PDK_PREFER = ("sky130_fd_sc_hd__tt_025C_1v80", "NangateOpenCellLibrary_typical", "tt", "typ")


def find_liberty(explicit: str | None = None, env=None) -> Path | None:
    """Locate the liberty file to use.

    Parameters
    ----------
    explicit : str or None
        A path given on the command line; overrides the environment.
    env : mapping or None
        Environment to read ``LIBERTY`` and ``PDK_ROOT`` from (default ``os.environ``).

    Returns
    -------
    Path or None
        None when no liberty exists anywhere (the caller falls back to :func:`generic_library`).

    Raises
    ------
    LibertyError
        If a liberty was named explicitly (argument or ``LIBERTY=``) and does not exist.
    """
    env = os.environ if env is None else env
    given = explicit or env.get("LIBERTY") or None
    if given:
        p = Path(given).expanduser()
        if not p.is_file():
            raise LibertyError(f"LIBERTY={given}: no such file. Pass the path of a .lib file, "
                               f"or leave LIBERTY empty to use the default ({OSU018_DEFAULT}).")
        return p
    root = env.get("PDK_ROOT")
    if root and Path(root).is_dir():
        libs = sorted(p for p in Path(root).rglob("*.lib") if p.is_file())
        for key in _PDK_PREFER:
            hit = [p for p in libs if key in p.name]
            if hit:
                return hit[0]
        if libs:
            return libs[0]
    if OSU018_DEFAULT.is_file():
        return OSU018_DEFAULT
    return None


def _short_name(name: str, path: Path) -> str:
    low = (name + " " + path.name).lower()
    for key, short in (("osu018", "osu018"), ("osu035", "osu035"), ("sky130_fd_sc_hd", "sky130hd"),
                       ("sky130_fd_sc_hs", "sky130hs"), ("nangate", "nangate45"), ("asap7", "asap7"),
                       ("gf180", "gf180"), ("sg13g2", "ihp130")):
        if key in low:
            return short
    return "".join(ch for ch in name.lower() if ch.isalnum())[:16] or "lib"


def _unit(value, table, what):
    s = str(value).strip().strip('"').lower().replace(" ", "")
    for suffix, scale in sorted(table.items(), key=lambda kv: -len(kv[0])):
        if s.endswith(suffix):
            num = s[: -len(suffix)] or "1"
            try:
                return float(num) * scale
            except ValueError:
                break
    raise LibertyError(f"cannot read the liberty {what} {value!r}")


def _floats(v):
    if isinstance(v, (int, float)):
        return [float(v)]
    if isinstance(v, list):
        out = []
        for x in v:
            out.extend(_floats(x))
        return out
    s = str(getattr(v, "value", v)).strip().strip('"')
    return [float(x) for x in s.replace("\\", " ").split(",") if x.strip()]


def _table(group, templates):
    tmpl = templates.get(group.args[0] if group.args else "", {})
    idx1 = _floats(group["index_1"]) if "index_1" in group else tmpl.get("index_1", [])
    idx2 = _floats(group["index_2"]) if "index_2" in group else tmpl.get("index_2", [])
    if group.args and str(group.args[0]) == "scalar":
        idx1, idx2 = [], []
    raw = group["values"]
    rows = [_floats(r) for r in raw] if isinstance(raw, list) else [_floats(raw)]
    if len(rows) == 1 and idx2 and len(rows[0]) == len(idx1) * len(idx2):
        flat = rows[0]
        rows = [flat[i * len(idx2):(i + 1) * len(idx2)] for i in range(len(idx1))]
    var1 = tmpl.get("variable_1", "total_output_net_capacitance")
    load_first = "capacitance" in var1 or var1 == "related_pin_transition"
    if not idx2 and len(rows) == 1 and len(rows[0]) == len(idx1) and len(idx1) > 1:
        rows = [[x] for x in rows[0]]
    return Table(idx1, idx2, rows, load_first)


def lef_areas(lef: Path) -> dict:
    """Macro name -> area (``SIZE w BY h``, LEF units: um^2) of a LEF file; empty if there is none."""
    import re

    if not lef.is_file():
        return {}
    text = lef.read_text(errors="replace")
    return {m[1]: float(m[2]) * float(m[3]) for m in
            re.finditer(r"^\s*MACRO\s+(\S+)\s.*?^\s*SIZE\s+([0-9.]+)\s+BY\s+([0-9.]+)", text, re.M | re.S)}


def _parse(path: Path) -> Library:
    from liberty.parser import parse_liberty

    try:
        lib = parse_liberty(path.read_text(errors="replace"))
    except Exception as e:  # the parser raises several of its own types
        raise LibertyError(f"liberty-parser could not read {path}: {e}") from None
    name = str(lib.args[0]) if lib.args else path.stem
    time_ps = _unit(lib.get("time_unit", "1ns"), {"ps": 1.0, "ns": 1e3, "us": 1e6}, "time_unit")
    cap = lib.get_attributes("capacitive_load_unit")
    if cap:
        c = cap[0]
        num, unit = (c[0], c[1]) if isinstance(c, list) else (1, c)
        cap_pf = float(num) * {"pf": 1.0, "ff": 1e-3}[str(unit).lower()]
    else:
        cap_pf = 1.0
    templates = {}
    for kind in ("lu_table_template",):
        for g in lib.get_groups(kind):
            templates[str(g.args[0])] = {
                "variable_1": str(g.get("variable_1", "")), "variable_2": str(g.get("variable_2", "")),
                "index_1": _floats(g["index_1"]) if "index_1" in g else [],
                "index_2": _floats(g["index_2"]) if "index_2" in g else []}
    lib_max = {k: float(lib.get(f"default_{k}")) for k in ("max_capacitance", "max_transition")
               if lib.get(f"default_{k}") is not None}
    cells = {}
    for cg in lib.get_groups("cell"):
        cname = str(cg.args[0]).strip('"')
        if cg.get("dont_use") in (True, "true"):
            continue
        inputs, outputs, clocks, arcs, funcs = {}, [], [], [], {}
        limits = {"max_capacitance": {}, "max_transition": {}}
        pins = list(cg.get_groups("pin"))
        for bus in cg.get_groups("bus"):
            pins.extend(bus.get_groups("pin"))
        for pg in pins:
            pname = str(pg.args[0]).strip('"')
            direction = str(pg.get("direction", ""))
            if direction == "input":
                capv = pg.get("capacitance")
                if capv is None:
                    capv = max(float(pg.get("rise_capacitance", 0)), float(pg.get("fall_capacitance", 0)))
                inputs[pname] = float(capv)
                if str(pg.get("clock", "false")) == "true":
                    clocks.append(pname)
            elif direction in ("output", "inout"):
                outputs.append(pname)
                for k, got in limits.items():
                    v = pg.get(k, lib_max.get(k))
                    if v is not None:
                        got[pname] = float(v)
                if "function" in pg:
                    funcs[pname] = str(getattr(pg["function"], "value", pg["function"])).strip('"')
            for tg in pg.get_groups("timing"):
                related = str(tg.get("related_pin", "")).strip('"')
                kind = str(tg.get("timing_type", "combinational")).strip('"')
                sense = str(tg.get("timing_sense", "non_unate")).strip('"')
                tables = {}
                for tn in ("cell_rise", "cell_fall", "rise_transition", "fall_transition",
                           "rise_constraint", "fall_constraint"):
                    for t in tg.get_groups(tn):
                        tables[tn] = _table(t, templates)
                for rel in related.split():
                    arcs.append(Arc(pname, rel, sense, kind, tables))
        is_seq = bool(cg.get_groups("ff") or cg.get_groups("latch") or cg.get_groups("ff_bank"))
        area = float(cg.get("area", 0.0)) or lef_areas(path.with_suffix(".lef")).get(cname, 0.0)
        cells[cname] = Cell(cname, area, inputs, outputs, clocks, arcs, is_seq, funcs,
                            limits["max_capacitance"], limits["max_transition"])
    return Library(name, _short_name(name, path), str(path), time_ps, cap_pf, cells)


def cached_parse(path, cache_dir: Path, fmt: int, parse, from_json):
    """Parse a liberty file once per content: ``parse(path)`` on a miss, ``from_json(d)`` on a hit.

    The result (an object with ``sha256`` and ``to_json()``) is cached as JSON by the file's content
    hash under ``cache_dir``; a cached record of another ``fmt`` (layout version) or an unreadable one
    is parsed afresh. Writes go through a temporary file, so concurrent readers never see half a
    record.

    Raises
    ------
    LibertyError
        If the file is missing (the message says how to pass another one).
    """
    path = Path(path)
    if not path.is_file():
        raise LibertyError(f"liberty file {path} does not exist; pass LIBERTY=/path/to/cells.lib")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    cached = cache_dir / f"{digest[:24]}.json"
    if cached.is_file():
        try:
            d = json.loads(cached.read_text())
            if d.get("format") == fmt:
                return from_json(d)
        except (ValueError, KeyError):
            pass
    parsed = parse(path)
    parsed.sha256 = digest
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(".tmp%d" % os.getpid())
    tmp.write_text(json.dumps(parsed.to_json()))
    tmp.replace(cached)
    return parsed


def _parse_checked(path: Path) -> Library:
    lib = _parse(path)
    if not lib.cells:
        raise LibertyError(f"liberty {path} defines no cells")
    return lib


def load(path) -> Library:
    """Read a liberty file (cached by content hash under ``build/qor-cache/liberty``).

    Raises
    ------
    LibertyError
        If the file is missing or cannot be parsed.
    """
    lib = cached_parse(path, CACHE_DIR, _FORMAT, _parse_checked, Library.from_json)
    lib.path = str(path)
    return lib


# Gate-equivalent weights of Yosys's internal gates for the generic library: the ratio of each
# gate's area to a 2-input NAND in a typical static-CMOS library (these are the OSU 0.18 um
# ratios: INVX1 16, NAND2X1 24, AND2X1 32, XOR2X1 56, MUX2X1 48, DFFPOSX1 96 um^2).
GENERIC_GE = {
    "$_NOT_": 0.67, "$_BUF_": 0.67, "$_NAND_": 1.0, "$_NOR_": 1.0, "$_AND_": 1.33, "$_OR_": 1.33,
    "$_ANDNOT_": 1.33, "$_ORNOT_": 1.33, "$_XOR_": 2.33, "$_XNOR_": 2.33, "$_MUX_": 2.0,
    "$_NMUX_": 2.0, "$_AOI3_": 1.33, "$_OAI3_": 1.33, "$_AOI4_": 1.67, "$_OAI4_": 1.67,
    "$_DFF_P_": 4.0, "$_DFF_N_": 4.0,
}
_GENERIC_PINS = {
    "$_NOT_": ["A"], "$_BUF_": ["A"], "$_MUX_": ["A", "B", "S"], "$_NMUX_": ["A", "B", "S"],
    "$_AOI3_": ["A", "B", "C"], "$_OAI3_": ["A", "B", "C"], "$_AOI4_": ["A", "B", "C", "D"],
    "$_OAI4_": ["A", "B", "C", "D"],
}


def generic_library() -> Library:
    """Technology-independent library: area in GE (NAND2 = 1), one time unit per gate.

    Every combinational arc has delay 1 and zero slew, so the STA's "delay" is the number of logic
    levels; flops have clock-to-Q 0 and setup 0.
    """
    one = Table([], [], [[1.0]])
    zero = Table([], [], [[0.0]])
    comb = {"cell_rise": one, "cell_fall": one, "rise_transition": zero, "fall_transition": zero}
    cells = {}
    for name, ge in GENERIC_GE.items():
        if name.startswith("$_DFF"):
            arcs = [Arc("Q", "C", "non_unate", "rising_edge" if name.endswith("P_") else "falling_edge",
                        {"cell_rise": zero, "cell_fall": zero, "rise_transition": zero,
                         "fall_transition": zero}),
                    Arc("D", "C", "non_unate", "setup_rising" if name.endswith("P_") else "setup_falling",
                        {"rise_constraint": zero, "fall_constraint": zero})]
            cells[name] = Cell(name, ge, {"C": 0.0, "D": 0.0}, ["Q"], ["C"], arcs, True)
            continue
        pins = _GENERIC_PINS.get(name, ["A", "B"])
        arcs = [Arc("Y", p, "non_unate", "combinational", comb) for p in pins]
        func = "(!(A B))" if name == "$_NAND_" else ""
        cells[name] = Cell(name, ge, {p: 0.0 for p in pins}, ["Y"], [], arcs, False, {"Y": func})
    return Library("generic", "generic", None, 1.0, 1.0, cells, generic=True)
