"""Replay API: run arbitrary tiles through the matrix unit RTL (or only the model) and get the results.

Used by the real-model tile replay (tb/tiles/)::

    from tb.mu.program import Tile
    from tb.mu.replay import run_tiles, model_tiles

    res = run_tiles(64, "fp8_e4m3", [Tile(w, x, first=True, last=True)], rows=1)
    res.y_bits        # (M, D) uint32 FP32 results from the RTL, one row per `last` beat
    res.expected      # (M, D) the bit-true model's results (docs/numerics.md)
    res.cycles, res.counters["stall_tile"], res.mismatches

A :class:`~tb.mu.program.Tile` is a (D, D) weight tile ``W[k, j]`` (element codes) and the ``x``
beats (n, D codes) it serves; its first beat carries ``swap``; ``first``/``last``/``row`` are per
beat (or scalars). Accumulating a ``K > D`` product over K/D tiles: ``first`` on the beats of the
first tile, ``last`` on those of the final tile, one accumulator row per activation row (so at most
R rows per tile group; with R = 1, one activation row at a time).

The RTL run happens in a Verilator + cocotb subprocess (tb/sim.py); the program and the results
travel as .npz files in the build folder ``build/sim/<variant>-replay``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from tb.lib.pause import make_pause

from .program import Program, Tile

__all__ = ["ReplayResult", "run_tiles", "model_tiles", "load_program", "save_result"]


@dataclass
class ReplayResult:
    """Results of :func:`run_tiles`.

    Attributes
    ----------
    y_bits : ndarray of uint32 (M, D)
        FP32 rows received from the unit, in order.
    y_rows : ndarray of int (M,)
        Their accumulator row indices.
    expected : ndarray of uint32 (M, D)
        The model's rows (bit-true contract).
    ref : ndarray of float64 (M, D)
        float64 reference of the same accumulations.
    bound : ndarray of float64 (M, D)
        Allowed ``|result - ref|`` implied by the contract (docs/numerics.md).
    mismatches : list of str
        Differences between unit and model (empty when bit-exact).
    cycles : int
        Clock cycles of the run (reset excluded).
    counters : dict
        The unit's counters over the run (``cycles``, ``w_beats``, ``x_beats``, ``y_beats``,
        ``stall_tile``, ``stall_x``, ``stall_y``, ``macs``).
    x_cycles, y_cycles : ndarray
        Cycle of each x / y transfer.
    wall_s : float
        Wall seconds of the whole call (generation, build, simulation).
    sim_s : float
        Wall seconds of the cocotb run alone.
    """

    y_bits: np.ndarray
    y_rows: np.ndarray
    expected: np.ndarray
    ref: np.ndarray
    bound: np.ndarray
    mismatches: list = field(default_factory=list)
    cycles: int = 0
    counters: dict = field(default_factory=dict)
    x_cycles: np.ndarray | None = None
    y_cycles: np.ndarray | None = None
    wall_s: float = 0.0
    sim_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _program(width, fmt, rows, tiles) -> Program:
    if isinstance(tiles, Program):
        return tiles
    return Program.from_tiles(width, fmt, rows, list(tiles))


def model_tiles(width: int, fmt: str, tiles, rows: int = 1, acc: str = "fp32") -> list:
    """The model's results for ``tiles`` (list of :class:`~tb.mu.model.YRow`) on a unit with
    accumulate mode ``acc``, no simulation."""
    return _program(width, fmt, rows, tiles).expected(acc)


def save_program(path, prog: Program, pauses: dict) -> None:
    scales = {}
    if prog.wscales is not None:   # block-scaled formats
        scales = {"wscales": np.array(prog.wscales, dtype=np.int64), "xscales": prog.xscales}
    np.savez(path, tiles=np.array(prog.tiles, dtype=np.int64).reshape(-1, prog.width, prog.width),
             x=prog.x, swap=prog.swap, first=prog.first, last=prog.last, row=prog.row, **scales,
             meta=json.dumps({"width": prog.width, "fmt": prog.fmt, "rows": prog.rows,
                              "pauses": pauses}))


def load_program(path):
    """Program and pause generators saved by :func:`run_tiles` (used in the cocotb process)."""
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    scales = (list(z["wscales"]), z["xscales"]) if "wscales" in z.files else (None, None)
    prog = Program(meta["width"], meta["fmt"], meta["rows"], list(z["tiles"]), z["x"], z["swap"],
                   z["first"], z["last"], z["row"], *scales)
    pauses = {f"{k}_pause": make_pause(v, seed=i) for i, (k, v) in enumerate(meta["pauses"].items())}
    return prog, pauses


def save_result(path, res, expected, errs) -> None:
    """Write what the cocotb run saw (used in the cocotb process)."""
    d = len(expected[0].bits) if expected else 0
    ybits = np.array([b for _, b in res.y], dtype=np.uint32).reshape(-1, d) if res.y else \
        np.zeros((0, d), np.uint32)
    np.savez(path, y_bits=ybits, y_rows=np.array([r for r, _ in res.y], dtype=np.int64),
             x_cycles=res.x_cycles, y_cycles=res.y_cycles,
             meta=json.dumps({"cycles": res.cycles, "counters": res.counters, "errors": errs,
                              "sim_s": res.wall}))


def run_tiles(width: int, fmt: str, tiles, *, rows: int = 1, stages: int | None = None,
              acc: str = "fp32", pauses: dict | None = None, check: bool = True,
              name_suffix: str = "-replay", tree: str | None = None, gate: bool = False) -> ReplayResult:
    """Run tiles through the RTL matrix unit and compare with the model.

    Parameters
    ----------
    width, fmt, rows, stages, acc :
        Unit parameters (``stages`` default: the design's default; ``acc`` the accumulate mode).
    tiles : iterable of Tile, or a Program
        What to send, in order.
    pauses : dict, optional
        Pause specs per stream, e.g. ``{"w": "random:0.3", "y": "bursty:4:8"}``
        (:func:`tb.lib.pause.make_pause`); default none.
    check : bool
        Raise ``AssertionError`` if the unit's rows differ from the model's.
    name_suffix : str
        Build folder suffix (one folder per concurrent user).
    tree : str or None
        The unit's column tree (None: the design's default, Dadda; ``words``: the fast build that
        computes the same function, :func:`tb.mu.harness.run_unit`).
    gate : bool
        The clock-gated unit (:mod:`hw.clock_gate`; the same function, so the same expected rows).

    Returns
    -------
    ReplayResult
    """
    from .harness import run_unit

    t0 = time.perf_counter()
    prog = _program(width, fmt, rows, tiles)
    expected = prog.expected(acc)
    with tempfile.TemporaryDirectory(prefix="mu-replay-") as tmp:
        src, dst = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        save_program(src, prog, dict(pauses or {}))
        err = None
        try:
            run_unit(width, fmt, rows, "replay", stages=stages, acc=acc, suffix=name_suffix,
                     tree=tree, gate=gate, env={"MU_REPLAY_IN": src, "MU_REPLAY_OUT": dst})
        except AssertionError as e:      # the cocotb test failed; results are still written
            err = e
        if not os.path.exists(dst):
            raise AssertionError(f"replay produced no results: {err}")
        z = np.load(dst)
        meta = json.loads(str(z["meta"]))
        res = ReplayResult(
            y_bits=z["y_bits"], y_rows=z["y_rows"],
            expected=np.array([e.bits for e in expected], dtype=np.uint32).reshape(-1, width),
            ref=np.array([e.ref for e in expected]).reshape(-1, width),
            bound=np.array([e.bound for e in expected]).reshape(-1, width),
            mismatches=meta["errors"], cycles=meta["cycles"], counters=meta["counters"],
            x_cycles=z["x_cycles"], y_cycles=z["y_cycles"], sim_s=meta["sim_s"],
            wall_s=time.perf_counter() - t0)
    if check and (res.mismatches or err is not None):
        raise AssertionError(f"matrix unit replay failed: {res.mismatches[:3] or err}")
    return res


__all__ += ["Tile", "save_program"]
