"""Reading the geometry of a placed or routed DEF and of LEF macros (what the hierarchical flow needs).

:class:`Def` holds a DEF's die, tracks, components, pins and the wiring of its nets and special nets
in microns; :func:`lef_macros` the size and pin shapes of LEF macros (standard cells or our block
abstracts), :func:`lef_vias` the vias' shapes and :func:`cell_overhang` how far a cell's metal
reaches beyond its size box. The DEFs are the ones qflow and qrouter write (one statement per
``- ... ;``, routed points ``( x y )`` with ``*`` for a repeated coordinate, a via name after the
last point of a wire).
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Def", "Wire", "Via", "statements", "section", "lef_macros", "lef_vias", "cell_overhang",
           "placed_rect", "MacroPin"]


def _tokens(text: str) -> list:
    return re.findall(r"\(|\)|;|[^\s();]+", text)


def section(text: str, name: str) -> str:
    """The body of DEF section ``name`` (between its header line and ``END name``), or ''."""
    m = re.search(rf"^{name}\b.*?;\s*\n(.*?)^END {name}", text, re.S | re.M)
    return m[1] if m else ""


def statements(body: str) -> list:
    """The ``- ... ;`` statements of a DEF section as token lists (the leading ``-`` dropped)."""
    out, cur = [], None
    for t in _tokens(body):
        if t == "-" and cur is None:
            cur = []
        elif t == ";" and cur is not None:
            out.append(cur)
            cur = None
        elif cur is not None:
            cur.append(t)
    return out


@dataclass(frozen=True)
class Wire:
    """A routed path on one layer: its points (um) and width (None: the layer's default)."""

    layer: str
    points: tuple
    width: float | None = None


@dataclass(frozen=True)
class Via:
    """A via of a routed path, by name, at a point (um)."""

    name: str
    at: tuple


def _wiring(st: list, scale: float, special: bool) -> list:
    """The :class:`Wire` and :class:`Via` items of one NETS or SPECIALNETS statement."""
    out, i = [], 0
    while i < len(st):
        if st[i] in ("ROUTED", "FIXED", "COVER", "NEW") and i + 1 < len(st):
            layer, i = st[i + 1], i + 2
            width = None
            if special and i < len(st) and st[i] != "(":
                width, i = float(st[i]) / scale, i + 1
            pts, last = [], None
            while i < len(st) and st[i] == "(":
                j = st.index(")", i)
                x, y = st[i + 1], st[i + 2]
                last = (last[0] if x == "*" else float(x) / scale, last[1] if y == "*" else float(y) / scale)
                pts.append(last)
                i = j + 1
            if len(pts) > 1:
                out.append(Wire(layer, tuple(pts), width))
            if i < len(st) and st[i] not in ("NEW", "+", "("):
                out.append(Via(st[i], last))
                i += 1
        else:
            i += 1
    return out


@dataclass
class Def:
    """A DEF's geometry in microns.

    Attributes
    ----------
    text : str
    scale : float
        DEF units per micron.
    die : tuple
        ``(x0, y0, x1, y1)``.
    tracks : dict
        ``{layer: (start, count, step)}``.
    components : list
        ``(instance, cell, x, y, orientation, status)``.
    pins : dict
        ``{pin: {"net", "layer", "rect", "direction"}}`` (rect absolute).
    nets : dict
        ``{net: [(instance or "PIN", pin), ...]}`` in the order written.
    wiring : dict
        ``{net: [Wire | Via, ...]}`` of the NETS section.
    special : dict
        The same of the SPECIALNETS section.
    vias : dict
        ``{via: [(layer, x0, y0, x1, y1), ...]}`` of the DEF's own VIAS section.
    """

    text: str
    scale: float = 100.0
    die: tuple = (0.0, 0.0, 0.0, 0.0)
    tracks: dict = field(default_factory=dict)
    components: list = field(default_factory=list)
    pins: dict = field(default_factory=dict)
    nets: dict = field(default_factory=dict)
    wiring: dict = field(default_factory=dict)
    special: dict = field(default_factory=dict)
    vias: dict = field(default_factory=dict)

    @classmethod
    def read(cls, path) -> "Def":
        """Parse the DEF file ``path``.

        Raises
        ------
        ValueError
            The file has no UNITS or DIEAREA line.
        """
        text = Path(path).read_text()
        u = re.search(r"UNITS\s+DISTANCE\s+MICRONS\s+(\d+)", text)
        d = re.search(r"DIEAREA\s*\(\s*(-?\d+)\s+(-?\d+)\s*\)\s*\(\s*(-?\d+)\s+(-?\d+)\s*\)", text)
        if not u or not d:
            raise ValueError(f"{path}: not a DEF with UNITS and DIEAREA")
        s = float(u[1])
        out = cls(text, s, tuple(float(v) / s for v in d.groups()))
        tracks = r"^TRACKS\s+[XY]\s+(-?[\d.]+)\s+DO\s+(\d+)\s+STEP\s+([\d.]+)\s+LAYER\s+(\S+)"
        for m in re.finditer(tracks, text, re.M):
            out.tracks[m[4]] = (float(m[1]) / s, int(m[2]), float(m[3]) / s)
        for st in statements(section(text, "VIAS")):
            geo = []
            for k, t in enumerate(st):
                if t == "RECT":
                    geo.append((st[k + 1], *(float(st[j]) / s for j in (k + 3, k + 4, k + 7, k + 8))))
            out.vias[st[0]] = geo
        for st in statements(section(text, "COMPONENTS")):
            k = st.index("(")
            out.components.append((st[0], st[1], float(st[k + 1]) / s, float(st[k + 2]) / s, st[k + 4],
                                   st[k - 1]))
        for st in statements(section(text, "PINS")):
            p = {"net": st[st.index("NET") + 1] if "NET" in st else st[0],
                 "direction": st[st.index("DIRECTION") + 1] if "DIRECTION" in st else "INPUT"}
            if "LAYER" in st and ("PLACED" in st or "FIXED" in st):
                k = st.index("LAYER")
                p["layer"] = st[k + 1]
                r = [float(st[j]) / s for j in (k + 3, k + 4, k + 7, k + 8)]
                k = st.index("PLACED") if "PLACED" in st else st.index("FIXED")
                px, py = float(st[k + 2]) / s, float(st[k + 3]) / s
                p["rect"] = (px + r[0], py + r[1], px + r[2], py + r[3])
            out.pins[st[0]] = p
        for st in statements(section(text, "NETS")):
            conns, i = [], 1
            while i + 3 < len(st) and st[i] == "(" and st[i + 3] == ")":
                conns.append((st[i + 1], st[i + 2]))
                i += 4
            out.nets[st[0]] = conns
            out.wiring[st[0]] = _wiring(st, s, False)
        for st in statements(section(text, "SPECIALNETS")):
            out.special.setdefault(st[0], []).extend(_wiring(st, s, True))
        return out


@dataclass(frozen=True)
class MacroPin:
    """A LEF macro pin: direction and shapes ``(layer, x0, y0, x1, y1)`` relative to the origin."""

    direction: str
    shapes: tuple


def _rects(body: str) -> list:
    """``[(layer, x0, y0, x1, y1), ...]``: the RECTs of a LEF block, each on the LAYER before it."""
    out, layer = [], None
    for line in body.splitlines():
        w = line.split()
        if w[:1] == ["LAYER"]:
            layer = w[1]
        elif w[:1] == ["RECT"]:
            out.append((layer, *map(float, w[1:5])))
    return out


def lef_macros(text: str) -> dict:
    """``{macro: ((width, height), {pin: MacroPin})}`` of a LEF's MACROs."""
    out = {}
    for m in re.finditer(r"^MACRO\s+(\S+)\s*\n(.*?)^END\s+\1\s*$", text, re.S | re.M):
        size = re.search(r"SIZE\s+([\d.]+)\s+BY\s+([\d.]+)", m[2])
        pins = {}
        for p in re.finditer(r"^\s*PIN\s+(\S+)\s*\n(.*?)^\s*END\s+\1\s*$", m[2], re.S | re.M):
            d = re.search(r"DIRECTION\s+(\S+)", p[2])
            pins[p[1]] = MacroPin(d[1] if d else "INOUT", tuple(_rects(p[2])))
        out[m[1]] = ((float(size[1]), float(size[2])) if size else (0.0, 0.0), pins)
    return out


def lef_vias(text: str) -> dict:
    """``{via: [(layer, x0, y0, x1, y1), ...]}`` of a LEF's VIA definitions."""
    return {m[1]: _rects(m[2]) for m in re.finditer(r"^VIA\s+(\S+).*?\n(.*?)^END\s+\1", text, re.S | re.M)}


def cell_overhang(text: str) -> dict:
    """``{cell: (dx, dy)}``: how far a LEF cell's shapes (power rails, pins) reach beyond its SIZE box
    on either side (the OSU cells' rails: 0.3 um above and below)."""
    out = {}
    for m in re.finditer(r"^MACRO\s+(\S+)\s*\n(.*?)^END\s+\1\s*$", text, re.S | re.M):
        size = re.search(r"SIZE\s+([\d.]+)\s+BY\s+([\d.]+)", m[2])
        rs = [tuple(map(float, r)) for r in
              re.findall(r"RECT\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+)", m[2])]
        if size and rs:
            w, h = float(size[1]), float(size[2])
            out[m[1]] = (max(0.0, -min(r[0] for r in rs), max(r[2] for r in rs) - w),
                         max(0.0, -min(r[1] for r in rs), max(r[3] for r in rs) - h))
    return out


def placed_rect(shape: tuple, x: float, y: float, orient: str, size: tuple) -> tuple:
    """A macro shape ``(layer, x0, y0, x1, y1)`` placed at ``(x, y)`` with a DEF orientation
    (N, S, FN, FS) of a macro of ``size``.

    Raises
    ------
    ValueError
        A rotated orientation (E, W, FE, FW): the flow places cells and macros unrotated.
    """
    layer, x0, y0, x1, y1 = shape
    w, h = size
    flip = {"N": (False, False), "S": (True, True), "FN": (True, False), "FS": (False, True)}
    if orient not in flip:
        raise ValueError(f"orientation {orient} is not supported (only N, S, FN, FS)")
    fx, fy = flip[orient]
    xs = (w - x1, w - x0) if fx else (x0, x1)
    ys = (h - y1, h - y0) if fy else (y0, y1)
    return (layer, x + xs[0], y + ys[0], x + xs[1], y + ys[1])
