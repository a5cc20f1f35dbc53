"""Replay real tiles through the numerics model (and the RTL, when its harness exists) and measure them.

One run feeds the ``ceil(K / D)`` weight tiles of a :class:`tb.tiles.corpus.Tile` to a unit of width
``D`` with ``M`` accumulator rows: for tile ``t`` the ``M`` activation beats carry ``swap`` on the
first beat, ``first`` on every beat of ``t == 0`` and ``last`` on every beat of the final tile, row
index ``r`` on beat ``r``. The FP32 results are

* checked bit for bit: the RTL against ``tb/mu/model.py`` (the numerics contract's model), and that
  model against the independently written :mod:`tb.tiles.exact` (block-scaled formats: the beats
  carry the scale codes, and the beat-by-beat model is checked against its whole-matmul path,
  :func:`tb.mu.model.unit_matmul`);
* compared with float64 (the exact dot product of the same codes: the unit's own rounding error,
  which must stay within the contract's bound) and with the unquantized float32 product of the real
  model (the cost of the format: quantization error after the per-tensor scales are applied).

Cost figures come from the throughput contract (:mod:`perf.contract`: a run is one
:class:`~perf.contract.Product` pass) and, for RTL runs, from the unit's counters.
"""

import time
from dataclasses import dataclass, field

import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format, get_format
from perf.contract import Product

from . import exact
from .corpus import Tile

__all__ = ["beats", "RunResult", "replay_model", "baseline_error", "finish"]


def beats(tile: Tile) -> list:
    """The run as unit transfers: per K tile ``(w_tile (D, D), x (M, D), first, last, scales)``;
    ``scales`` is ``{"ws": (D/B, D), "xs": (M, D/B)}`` of scale codes for a block-scaled format and
    ``{}`` per tensor (the keywords of :meth:`tb.mu.model.MatrixUnitModel.run`)."""
    d, m = tile.width, tile.x.shape[0]
    nb = d // tile.block if tile.block else 0
    out = []
    for t in range(tile.k_tiles):
        ks, bs = slice(t * d, (t + 1) * d), slice(t * nb, (t + 1) * nb)
        scales = {"ws": tile.ws[bs], "xs": tile.xs[:, bs]} if nb else {}
        out.append((tile.w[ks], tile.x[:, ks], t == 0, t == tile.k_tiles - 1, scales))
    assert out and m > 0
    return out


@dataclass
class RunResult:
    """Everything the regression report shows about one run."""

    id: str
    meta: dict
    width: int
    fmt: str
    rows: int
    k: int
    n: int
    k_tiles: int
    bits: np.ndarray              # (M, D) uint32 FP32 results of the numerics model
    acc: str = "fp32"             # the accumulate mode of the model run (and of the RTL run)
    err_f64: dict = field(default_factory=dict)
    err_f32: dict = field(default_factory=dict)
    cycles_contract: int = 0
    counters: dict = field(default_factory=dict)  # RTL counters, empty for model-only runs
    rtl_match: bool | None = None
    seconds: float = 0.0

    @property
    def b(self) -> int:
        """Element bits (a block-scaled format's element format; scale codes not counted)."""
        fmt = get_block_format(self.fmt).element if self.fmt in BLOCK_FORMATS else self.fmt
        return get_format(fmt).bits

    @property
    def useful_macs(self) -> int:
        return self.rows * self.k * self.n

    @property
    def issued_macs(self) -> int:
        """MACs the unit issues, padding included (its ``cnt_macs`` after an RTL run)."""
        if "macs" in self.counters:
            return int(self.counters["macs"])
        return self.k_tiles * self.rows * self.width * self.width

    @property
    def bytes_fed(self) -> float:
        """Weight plus activation bytes the unit takes in, padding (and weight re-feeds) included.

        From the beat counters after an RTL run; else one pass of ``k_tiles`` tiles (``R >= M``).
        """
        if "w_beats" in self.counters:
            return (self.counters["w_beats"] + self.counters["x_beats"]) * self.width * self.b / 8
        return self.k_tiles * (self.width + self.rows) * self.width * self.b / 8

    @property
    def bytes_useful(self) -> float:
        return (self.k * self.n + self.rows * self.k) * self.b / 8


def _model_bits(tile: Tile, acc: str = "fp32") -> tuple:
    """The model's result bits, float64 references and bounds of ``tile`` in accumulate mode ``acc``."""
    from tb.mu.model import MatrixUnitModel

    m = tile.x.shape[0]
    model = MatrixUnitModel(tile.width, tile.fmt, rows=m, acc=acc)
    rows = []
    for w, x, first, last, scales in beats(tile):
        rows += model.run(w, x, first, last, row=np.arange(m), **scales)
    assert [r.row for r in rows] == list(range(m)), "one result per row, in order"
    bits = np.stack([r.bits for r in rows]).astype(np.uint32)
    return bits, np.stack([r.ref for r in rows]), np.stack([r.bound for r in rows])


def _rel(got: np.ndarray, ref: np.ndarray) -> dict:
    """Norm-wise relative errors: max |err| / max |ref| and mean |err| / mean |ref|."""
    err = np.abs(got - ref)
    top, avg = float(np.abs(ref).max(initial=0.0)), float(np.abs(ref).mean()) if ref.size else 0.0
    return {"max_rel": float(err.max(initial=0.0)) / top if top else float(err.max(initial=0.0) > 0),
            "mean_rel": float(err.mean()) / avg if avg else float(err.mean() > 0)}


def replay_model(tile: Tile, acc: str = "fp32") -> RunResult:
    """Run ``tile`` through ``tb/mu/model.py`` beat by beat in accumulate mode ``acc``, cross-check it
    independently, measure errors.

    The cross-check in the ``fp32`` mode: bit for bit against :mod:`tb.tiles.exact` (block-scaled
    formats: against the whole-matmul path :func:`tb.mu.model.unit_matmul`); in the ``exact`` mode:
    every result within half an FP32 ulp of the exact K-long sum of the (scaled) products, Python
    integers (:func:`tb.tiles.exact.ulp_errors`, :func:`~tb.tiles.exact.block_ulp_errors`).

    Raises
    ------
    AssertionError
        If the two models disagree on any bit, an ``exact`` result is more than half an ulp from the
        exact sum, or a result leaves the contract's error bound.
    """
    from tb.mu.model import unit_matmul

    t0 = time.perf_counter()
    bits, ref64, bound = _model_bits(tile, acc)
    if acc == "exact":
        if tile.xs is None:
            exact.ulp_errors(tile.x, tile.w, tile.fmt, tile.width, bits, acc)
        else:
            exact.block_ulp_errors(tile.x, tile.xs, tile.w, tile.ws, tile.fmt, tile.width, bits, acc)
    else:
        if tile.xs is None:
            mine = exact.matmul_tiles(tile.x, tile.w, tile.fmt, tile.width).view(np.uint32)
            other = "tb/tiles/exact.py"
        else:
            mine = unit_matmul(tile.fmt, tile.width, tile.x, tile.xs, tile.w, tile.ws)
            other = "the whole-matmul path"
        diff = np.nonzero(mine != bits)
        assert diff[0].size == 0, (f"{tile.id}: tb/mu/model.py and {other} disagree at (row, col) "
                                   f"{list(zip(*diff, strict=True))[:4]}")
    got = bits.view(np.float32).astype(np.float64)
    err = np.abs(got - ref64)
    assert np.all(err <= bound), f"{tile.id}: result outside the contract's rounding bound"
    n = tile.w_f32.shape[1]
    if tile.xs is None:
        scaled = got[:, :n] * tile.scales[0] * tile.scales[1]
        ref32 = (tile.x_f32 @ tile.w_f32).astype(np.float64)
    else:                       # the product of the per-tensor scales first; a float64 product
        scaled = got[:, :n] * (tile.scales[0] * tile.scales[1])
        ref32 = tile.x_f32.astype(np.float64) @ tile.w_f32
    res = RunResult(tile.id, tile.meta, tile.width, tile.fmt, tile.x.shape[0], tile.x_f32.shape[1], n,
                    tile.k_tiles, bits, acc, err_f64=_rel(got, ref64), err_f32=_rel(scaled, ref32))
    res.err_f64["within_bound"] = True
    res.cycles_contract = Product(res.rows, tile.x.shape[1], n, tile.width).schedule().cycles()
    res.seconds = time.perf_counter() - t0
    return res


def baseline_error(tile: Tile) -> dict:
    """A block-scaled run's error against the float32 product when quantized per tensor instead
    (``tile.base``), through the per-tensor contract at the same width."""
    from tb.mu.model import unit_matmul

    b = tile.base
    bits = unit_matmul(b["fmt"], tile.width, b["x"], None, b["w"], None)
    n = tile.w_f32.shape[1]
    y = bits.view(np.float32).astype(np.float64)[:, :n] * b["scale"]
    return {"fmt": b["fmt"], **_rel(y, tile.x_f32.astype(np.float64) @ tile.w_f32)}


def finish(res: RunResult, rtl_bits: np.ndarray, counters: dict) -> RunResult:
    """Attach an RTL run's results and counters to ``res``; assert bit equality with the model."""
    rtl_bits = np.asarray(rtl_bits, dtype=np.uint32)
    diff = np.nonzero(rtl_bits != res.bits)
    res.rtl_match = diff[0].size == 0
    res.counters = dict(counters)
    assert res.rtl_match, (f"{res.id}: RTL differs from tb/mu/model.py at (row, col) "
                           f"{list(zip(*diff, strict=True))[:4]}")
    return res
