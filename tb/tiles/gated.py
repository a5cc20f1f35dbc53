"""The real-tile regression through the clock-gated matrix units (``gate = on``).

Clock gates (:mod:`hw.clock_gate`) change when registers load, never what they compute, so a gated
unit must give the results of the ungated one bit for bit. This regression sends the real tiles of
the published energy variants (E4M3, E5M2, E2M1, MXFP8 E4M3, NVFP4 and MXFP4 at D = 32, 64 and 128:
:data:`POINTS`) through the gated unit in the ``exact`` accumulate mode, every planned run of a
point in one simulation, and checks each run three ways:

* the RTL against ``tb/mu/model.py`` in the ``exact`` mode, bit for bit (the model knows nothing of
  the gates);
* every result within half an FP32 ulp of the exact K-long sum of the (scaled) products, computed
  with Python integers from the codes (:func:`tb.tiles.exact.ulp_errors`,
  :func:`tb.tiles.exact.block_ulp_errors`), independently of the model;
* the unit's beat counters against the throughput contract's schedule of the runs
  (:class:`perf.contract.Product`).

The per-tensor runs are the full regression plan's (every op class x decode and prefill, 16 runs a
point, :func:`tb.tiles.corpus.plan`); the block-scaled ones the block RTL regression's (8 a point,
:func:`tb.tiles.corpus.plan_block_rtl`). Units: R = 16 accumulator rows (block-scaled: 4), the Dadda
column tree synthesis maps at D = 32 and the word-level tree (proved to compute the same function,
docs/verification.md; its pipeline cuts are gated by the same code) at D = 64 and 128, where the
Dadda build takes most of ten minutes. Records are kept per point under the tile cache
(``gated_results/``); ``python -m tb.tiles gated-rtl`` runs the points without a record and writes
``reports/gated_rtl.md``, which says in its first lines how many of the planned points it covers.
"""

import time
from pathlib import Path

import numpy as np

from hw.formats import BLOCK_FORMATS
from perf.contract import Product

from . import corpus, exact, report
from .corpus import cache_dir

__all__ = ["POINTS", "REPORT", "plan", "unit", "run_point", "results_dir", "load_records",
           "report_md", "run"]

#: (format, width) of the gated regression: the published energy variants (reports/power/).
POINTS = tuple((f, d) for f in ("fp8_e4m3", "fp8_e5m2", "fp4_e2m1", "mxfp8_e4m3", "nvfp4", "mxfp4_e2m1")
               for d in (32, 64, 128))
#: The accumulate mode the gated units run in (the recommended one).
ACC = "exact"
#: The committed report.
REPORT = Path(__file__).resolve().parents[2] / "reports" / "gated_rtl.md"


def plan(points=POINTS) -> dict:
    """``{(format, width): [RunSpec, ...]}`` of ``points``, in the order of :data:`POINTS`."""
    runs = corpus.plan(full=True) + corpus.plan_block_rtl()
    out = {p: [s for s in runs if (s.fmt, s.width) == p] for p in points}
    for p, specs in out.items():
        if not specs:
            raise ValueError(f"no planned real-tile runs for {p}; points are (format, width) among "
                             f"{sorted(set((s.fmt, s.width) for s in runs))}")
    return out


def unit(width: int, fmt: str) -> tuple:
    """``(rows, tree)`` of the gated unit of a point (tree None: the Dadda default)."""
    return (4 if fmt in BLOCK_FORMATS else 16), (None if width <= 32 else "words")


def results_dir() -> Path:
    return cache_dir() / "gated_results"


def _key(fmt: str, width: int) -> str:
    return f"{fmt}-d{width}"


def run_point(tiles: list) -> dict:
    """Send ``tiles`` (one format and width) through the gated unit in one simulation and check
    them (module docstring). Returns the point's record.

    Raises
    ------
    AssertionError
        A result bit differs from the model, a result lies more than half an ulp from the exact sum,
        a row is missing, or the beat counters differ from the contract's schedule.
    """
    from flows.synth.metrics import git_revision
    from tb.mu.replay import run_tiles

    from .rtl import program

    d, fmt = tiles[0].width, tiles[0].fmt
    assert all((t.width, t.fmt) == (d, fmt) for t in tiles), "one format and width per point"
    rows, tree = unit(d, fmt)
    t0 = time.perf_counter()
    rr = run_tiles(d, fmt, program(tiles, rows), rows=rows, acc=ACC, check=False,
                   name_suffix="-gtiles", tree=tree, gate=True)
    ids = ", ".join(t.id for t in tiles)
    assert not rr.mismatches, f"{ids}: gated RTL vs model: {rr.mismatches[:3]}"
    ms = [t.x.shape[0] for t in tiles]
    assert rr.y_bits.shape == (sum(ms), d), f"{ids}: {rr.y_bits.shape[0]} result rows, expected {sum(ms)}"
    assert np.array_equal(rr.y_bits, rr.expected), f"{ids}: gated RTL differs from the model"
    scheds = [Product(m, t.x.shape[1], d, d, rows=rows).schedule() for m, t in zip(ms, tiles, strict=True)]
    want = (sum(s.x_beats for s in scheds), sum(s.w_beats for s in scheds))
    got = (rr.counters["x_beats"], rr.counters["w_beats"])
    assert got == want, f"{ids}: x and w beats {got}, the schedule's {want}"
    runs, y0 = [], 0
    for t, m in zip(tiles, ms, strict=True):
        bits = rr.y_bits[y0:y0 + m]
        if t.xs is None:
            u = exact.ulp_errors(t.x, t.w, fmt, d, bits, ACC)
        else:
            u = exact.block_ulp_errors(t.x, t.xs, t.w, t.ws, fmt, d, bits, ACC)
        runs.append({"id": t.id, "op": t.meta["op"], "mode": t.meta["mode"], "m": m, "k": t.meta["k"],
                     "max_ulps": u["max_ulps"], "within_half": u["within_half"], "n": u["n"]})
        y0 += m
    return {"id": _key(fmt, d), "fmt": fmt, "width": d, "rows": rows, "tree": tree or "dadda", "acc": ACC,
            "gate": True,
            "runs": runs, "results": int(rr.y_bits.size), "bit_exact": True,
            "x_beats": got[0], "w_beats": got[1], "cycles": int(rr.y_cycles[-1]) + 1,
            "sim_s": rr.sim_s, "wall_s": time.perf_counter() - t0, "revision": git_revision()}


def load_records(directory: Path | None = None) -> dict:
    """``{(format, width): record}`` of the points run so far (one JSON file a point, written by
    :func:`tb.tiles.report.save_record` under its ``id``)."""
    recs = report.load_all(directory if directory is not None else results_dir())
    return {(r["fmt"], r["width"]): r for r in recs.values()}


def run(points=POINTS, redo: bool = False, log=print) -> dict:
    """Run the ``points`` without a record (all of them with ``redo``); return every record."""
    have = load_records()
    for (fmt, d), specs in plan(points).items():
        if (fmt, d) in have and not redo:
            continue
        rec = run_point(list(corpus.tiles(specs)))
        report.save_record(rec, results_dir())
        have[(fmt, d)] = rec
        log(f"{fmt} D={d}: {len(rec['runs'])} runs, {rec['results']} results bit-exact, max "
            f"{max(r['max_ulps'] for r in rec['runs']):.3f} ulp, {rec['cycles']} cycles, "
            f"{rec['wall_s']:.0f} s")
    return have


def report_md(records: dict, planned=POINTS) -> str:
    """``reports/gated_rtl.md`` from ``records`` (:func:`load_records`)."""
    from flows.synth.metrics import git_revision

    done = [p for p in planned if p in records]
    missing = [p for p in planned if p not in records]
    n_runs = sum(len(records[p]["runs"]) for p in done)
    n_res = sum(records[p]["results"] for p in done)
    revs = sorted({records[p]["revision"] for p in done})
    head = "complete" if not missing else "**partial**"
    L = ["<!-- generated by `python -m tb.tiles gated-rtl`; do not edit -->", "",
         "# Real tiles through the clock-gated units", "",
         f"- {head}: **{len(done)} of {len(planned)}** planned points (format x width) through the "
         f"gated RTL, **{n_runs} runs, {n_res} results, every one bit-exact** against the numerics "
         "model in the `exact` mode and within half an FP32 ulp of the exact K-long sum."]
    if missing:
        L.append("- not run: " + ", ".join(f"{f} D = {d}" for f, d in missing) + ".")
    L += [f"- runs made at revision(s) {', '.join(f'`{r}`' for r in revs) or '-'}; report written at "
          f"`{git_revision()}`.", "",
          "What is checked and how: `tb/tiles/gated.py`. Each point is one simulation of the unit "
          "built with `gate=on` and `acc=exact` (R = 16 accumulator rows, block-scaled R = 4; the "
          "Dadda column tree at D = 32, the word-level tree at D = 64 and 128) running every planned "
          "real-tile run of its format and width one after the other: the per-tensor formats' 16 "
          "runs (8 op classes x decode and prefill) and the block formats' 8 (the block RTL "
          "regression's). Bit equality is with `tb/mu/model.py`, which has no notion of clock "
          "gates; the ulp errors are measured with Python integers from the codes "
          "(`tb/tiles/exact.py`), not from the model; the beat counters are checked against the "
          "throughput contract's schedule.", "",
          "| format | D | tree | runs | results | bit-exact | max error (ulp) | within half an ulp | "
          "x beats | cycles | simulated (s) |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in done:
        r = records[p]
        half = sum(x["within_half"] for x in r["runs"])
        L.append(f"| {r['fmt']} | {r['width']} | {r['tree']} | {len(r['runs'])} | {r['results']} | "
                 f"{'yes' if r['bit_exact'] else 'NO'} | {max(x['max_ulps'] for x in r['runs']):.3f} | "
                 f"{half} of {sum(x['n'] for x in r['runs'])} | {r['x_beats']} | {r['cycles']} | "
                 f"{r['sim_s']:.0f} |")
    return "\n".join(L) + "\n"
