"""``python -m tb.tiles {build,report,padding,block,block-rtl}``: the real-tile corpus and its reports.

* ``build [--quick]``: cut the tile corpus into the cache (``build/tiles/`` or ``$TILES_CACHE``).
* ``report [--quick] [--rtl]``: replay every planned run through the numerics model in the
  recommended accumulate mode (:func:`hw.mu.numerics.default_acc`; and, with ``--rtl``, through the
  RTL for runs without a recorded RTL result in that mode, the block-scaled RTL regression's
  missing runs included), measure every run's errors in FP32 ulps in the accumulate
  modes its format has (kept in the run's record), then write ``reports/regression.md`` (per-tensor
  and block-scaled runs in one report).
* ``block [--json FILE]``: measure every format, block-scaled ones included, through
  ``tb/mu/model.py`` (:mod:`tb.tiles.study`) and write ``reports/block_scaled.md`` (``--json``: keep
  the measurements there, part by part, and reuse the parts already there).
* ``block-rtl [--widths 32,64] [--formats ...] [--report-only]``: send the block-scaled RTL
  regression's runs (:func:`tb.tiles.corpus.plan_block_rtl`) that have no record yet through the RTL
  (sequentially, one simulation per format and width; the unit builds dominate at D = 64 and 128),
  then rewrite the generated section of ``reports/block_rtl.md``.
* ``gated-rtl [--points fmt:D,...] [--report-only]``: send the real tiles of the published energy
  variants through the clock-gated units (:mod:`tb.tiles.gated`; the points without a record), then
  write ``reports/gated_rtl.md``.
* ``padding``: write ``reports/padding.md`` (shapes catalog, padding and cycle analysis, with the RTL
  cross-check from recorded runs).
"""

import argparse
import sys
from pathlib import Path

from hw.mu.numerics import default_acc

from . import corpus, replay, report

REPORTS = Path(__file__).resolve().parents[2] / "reports"


def _runs(args):
    return corpus.plan(full=not args.quick) + corpus.smoke()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tb.tiles", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("build", "report"):
        p = sub.add_parser(name)
        p.add_argument("--quick", action="store_true", help="only the quick (CI) plan")
        if name == "report":
            p.add_argument("--rtl", action="store_true", help="also run missing runs through the RTL")
    gr = sub.add_parser("gated-rtl")
    gr.add_argument("--points", default="", help="fmt:D points to run, comma separated (default: all)")
    gr.add_argument("--report-only", action="store_true", help="only rewrite the report")
    sub.add_parser("padding")
    sub.add_parser("block").add_argument("--json", help="measurements file to write or reuse")
    br = sub.add_parser("block-rtl")
    br.add_argument("--widths", default="32,64,128", help="widths to run (default: %(default)s)")
    br.add_argument("--formats", default="", help="block formats to run, comma separated (default: all)")
    br.add_argument("--report-only", action="store_true", help="only rewrite the report section")
    args = ap.parse_args(argv)
    if args.cmd == "block":
        return _block(args.json)
    if args.cmd == "block-rtl":
        return _block_rtl(args)
    if args.cmd == "gated-rtl":
        return _gated_rtl(args)
    if args.cmd == "build":
        path = corpus.build(_runs(args))
        print(f"corpus: {path} ({len(_runs(args))} runs)")
        return 0
    if args.cmd == "padding":
        REPORTS.mkdir(exist_ok=True)
        (REPORTS / "padding.md").write_text(report.padding_md(_current(report.load_all())))
        print(f"wrote {REPORTS / 'padding.md'}")
        return 0
    recs = _current(report.load_all())
    for _spec, tile in corpus.load_runs(_runs(args)):
        rec = recs.get(tile.id)
        if rec is None or rec.get("rtl_match") is None:  # no RTL result in this mode yet: (re)run it
            replay.replay_model(tile)   # the fp32 mode: bit for bit against tb/tiles/exact.py
            res = replay.replay_model(tile, default_acc(tile.fmt))
            if args.rtl:
                from .rtl import run_rtl

                res = run_rtl(tile, res)
            rec = report.record(res)
        if "ulps" not in rec:
            rec["ulps"] = report.ulps(tile)
        report.save_record(rec)
        recs[tile.id] = rec
    wanted = {corpus._run_id(s) for s in _runs(args)}
    recs = {k: v for k, v in recs.items() if k in wanted}
    n_rtl = sum(r["rtl_match"] is not None for r in recs.values())
    plan = corpus.plan_block_rtl()
    if args.rtl:
        _run_block_rtl(plan)
    blocks = _block_ulps(plan)
    from flows.synth.metrics import git_revision

    note = (f"harness available; {n_rtl} runs have an RTL record (they come from `make test` / "
            "`make test-full` or `python -m tb.tiles report --rtl`); generated at revision "
            f"`{git_revision()}`")
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "regression.md").write_text(report.regression_md(recs, note, report.forward_check(),
                                                                blocks, len(plan)))
    print(f"wrote {REPORTS / 'regression.md'} ({len(recs)} runs, "
          f"{sum(r['rtl_match'] is not None for r in recs.values())} through the RTL; block-scaled "
          f"{len(blocks)} of {len(plan)} through the RTL)")
    return 0


def _block_ulps(plan) -> dict:
    """The block-scaled RTL regression's records of ``plan``, each with its errors in ulps (measured
    and saved for the records that have none yet)."""
    d = report.results_dir(block=True)
    recs = _current(report.load_all(d))
    recs = {corpus._run_id(s): recs[corpus._run_id(s)] for s in plan if corpus._run_id(s) in recs}
    todo = [s for s in plan if corpus._run_id(s) in recs and "ulps" not in recs[corpus._run_id(s)]]
    for tile in corpus.tiles(todo):
        recs[tile.id]["ulps"] = report.ulps(tile)
        report.save_record(recs[tile.id], d)
    return recs


def _current(recs: dict) -> dict:
    """The run records in the accumulate mode the regression runs now
    (:func:`hw.mu.numerics.default_acc`; a record without a mode ran in ``fp32``)."""
    return {k: r for k, r in recs.items() if r.get("acc", "fp32") == default_acc(r["fmt"])}


def _run_block_rtl(plan, widths=None, fmts=None) -> None:
    """Send the runs of ``plan`` without a record (at ``widths`` and ``fmts``, None: all) through the
    RTL, one simulation per format and width, and save their records."""
    from .rtl import rtl_records

    recs = _current(report.load_all(report.results_dir(block=True)))
    todo = [s for s in plan if (widths is None or s.width in widths) and (not fmts or s.fmt in fmts)
            and corpus._run_id(s) not in recs]
    cut = list(corpus.tiles(todo))
    for point in corpus.BLOCK_RTL_POINTS:
        group = [t for t in cut if (t.fmt, t.width) == point]
        if not group:
            continue
        for rec in rtl_records(group):
            report.save_record(rec, report.results_dir(block=True))
            print(f"{rec['id']}: bit-exact, {rec['cycles']} cycles, mean rel {rec['mean_rel']:.3f} "
                  f"(per tensor {rec['base']['mean_rel']:.3f})", flush=True)


def _block(json_path) -> int:
    from . import study

    data = study.measure(json_path)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "block_scaled.md").write_text(study.block_md(data))
    print(f"wrote {REPORTS / 'block_scaled.md'}")
    return 0


def _block_rtl(args) -> int:
    plan = corpus.plan_block_rtl()
    if not args.report_only:
        _run_block_rtl(plan, {int(w) for w in args.widths.split(",") if w},
                       {f for f in args.formats.split(",") if f})
    wanted = {corpus._run_id(s) for s in plan}
    recs = _current(report.load_all(report.results_dir(block=True)))
    report.write_section(report.block_rtl_md({k: v for k, v in recs.items() if k in wanted}, len(plan)))
    print(f"wrote {report.BLOCK_RTL_REPORT}")
    return 0


def _gated_rtl(args) -> int:
    from . import gated

    points = gated.POINTS
    if args.points:
        try:
            points = tuple((f, int(d)) for f, d in (p.split(":") for p in args.points.split(",") if p))
        except ValueError:
            print(f"--points: expected fmt:D,fmt:D (e.g. fp8_e4m3:32), got {args.points!r}", file=sys.stderr)
            return 2
        unknown = [p for p in points if p not in gated.POINTS]
        if unknown:
            print(f"--points: {unknown} not among the gated regression's points {list(gated.POINTS)}",
                  file=sys.stderr)
            return 2
    if not args.report_only:
        gated.run(points)
    REPORTS.mkdir(exist_ok=True)
    gated.REPORT.write_text(gated.report_md(gated.load_records()))
    print(f"wrote {gated.REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
