"""Numbers read from a routed DEF and the cells' LEF: die, core, utilization, wirelength, vias."""

import re
from dataclasses import dataclass

__all__ = ["lef_sizes", "Layout", "read_def", "die_size"]


def lef_sizes(lef_text: str) -> dict:
    """``{macro: (width, height)}`` in microns from a LEF's ``MACRO ... SIZE w BY h``."""
    out = {}
    for m in re.finditer(r"^MACRO\s+(\S+)(.*?)^END\s+\1", lef_text, re.M | re.S):
        s = re.search(r"SIZE\s+([0-9.]+)\s+BY\s+([0-9.]+)", m[2])
        if s:
            out[m[1]] = (float(s[1]), float(s[2]))
    return out


@dataclass
class Layout:
    """What a routed DEF says (lengths in um, areas in um^2).

    Attributes
    ----------
    die_area : float
        The DEF's DIEAREA rectangle.
    core_area : float
        The rows' area: every placed component, fill cells included (the placer fills each row
        to the core's right edge with fill cells, so the rows are exactly covered).
    cell_area : float
        Components other than fill cells.
    fill_area : float
    cells, fills : int
    wirelength : float
        Total routed wire length of the signal nets (every segment's Manhattan length).
    vias : int
        Vias on the signal nets.
    nets : int
        Nets in the NETS section.
    """

    die_area: float
    core_area: float
    cell_area: float
    fill_area: float
    cells: int
    fills: int
    wirelength: float
    vias: int
    nets: int

    @property
    def utilization(self) -> float:
        """Cell area / core area."""
        return self.cell_area / self.core_area if self.core_area else 0.0


def die_size(def_text: str) -> tuple:
    """``(width, height)`` in um of a DEF's DIEAREA rectangle."""
    unit = float(re.search(r"UNITS\s+DISTANCE\s+MICRONS\s+(\d+)", def_text)[1])
    num = r"\s*(-?[\d.]+)\s+(-?[\d.]+)\s*"
    d = re.search(rf"DIEAREA\s*\({num}\)\s*\({num}\)", def_text)
    return (float(d[3]) - float(d[1])) / unit, (float(d[4]) - float(d[2])) / unit


def read_def(def_text: str, sizes: dict, fill=("FILL",)) -> Layout:
    """Measure a routed DEF (``sizes`` from :func:`lef_sizes`; ``fill``: the fill cell names)."""
    unit = float(re.search(r"UNITS\s+DISTANCE\s+MICRONS\s+(\d+)", def_text)[1])
    w, h = die_size(def_text)
    die = w * h
    comp = re.search(r"^COMPONENTS\s+\d+\s*;(.*?)^END COMPONENTS", def_text, re.M | re.S)[1]
    cell_area = fill_area = 0.0
    cells = fills = 0
    for m in re.finditer(r"^\s*-\s+(\S+)\s+(\S+)", comp, re.M):
        w, h = sizes[m[2]]
        if m[2] in fill:
            fills += 1
            fill_area += w * h
        else:
            cells += 1
            cell_area += w * h
    nets = re.search(r"^NETS\s+(\d+)\s*;(.*?)^END NETS", def_text, re.M | re.S)
    wl = 0.0
    vias = 0
    for seg in re.split(r"\bROUTED\b|\bNEW\b", nets[2])[1:]:
        seg = seg.split(";")[0].split("\n-")[0]
        pts = re.findall(r"\(\s*(\S+)\s+(\S+)(?:\s+\S+)?\s*\)", seg)
        x0 = y0 = None
        for xs, ys in pts:
            x = x0 if xs == "*" else float(xs)
            y = y0 if ys == "*" else float(ys)
            if x0 is not None:
                wl += abs(x - x0) + abs(y - y0)
            x0, y0 = x, y
        tail = seg[seg.rfind(")") + 1:].split() if ")" in seg else seg.split()[1:]
        vias += sum(1 for t in tail if re.match(r"^[A-Za-z]\w*$", t))
    return Layout(die, cell_area + fill_area, cell_area, fill_area, cells, fills, wl / unit, vias,
                  int(nets[1]))
