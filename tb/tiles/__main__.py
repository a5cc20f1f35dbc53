"""``python -m tb.tiles {build,report,padding}``: the real-tile corpus and its reports.

* ``build [--quick]``: cut the tile corpus into the cache (``build/tiles/`` or ``$TILES_CACHE``).
* ``report [--quick] [--rtl]``: replay every planned run through the numerics model (and, with
  ``--rtl``, through the RTL for runs without a recorded RTL result), measure every run's errors in
  FP32 ulps in both accumulate modes (kept in the run's record), then write
  ``reports/regression.md``.
* ``block [--json FILE]``: measure the block-scaled formats through ``tb/mu/model_block.py`` and
  write ``reports/block_scaled.md`` (``--json``: keep the measurements there, part by part, and
  reuse the parts already there).
* ``padding``: write ``reports/padding.md`` (shapes catalog, padding and cycle analysis, with the RTL
  cross-check from recorded runs).
"""

import argparse
import sys
from pathlib import Path

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
    sub.add_parser("padding")
    sub.add_parser("block").add_argument("--json", help="measurements file to write or reuse")
    args = ap.parse_args(argv)
    if args.cmd == "block":
        return _block(args.json)
    if args.cmd == "build":
        path = corpus.build(_runs(args))
        print(f"corpus: {path} ({len(_runs(args))} runs)")
        return 0
    if args.cmd == "padding":
        REPORTS.mkdir(exist_ok=True)
        (REPORTS / "padding.md").write_text(report.padding_md(report.load_all()))
        print(f"wrote {REPORTS / 'padding.md'}")
        return 0
    recs = report.load_all()
    for _spec, tile in corpus.load_runs(_runs(args)):
        rec = recs.get(tile.id)
        if rec is None or rec.get("rtl_match") is None:  # no RTL result recorded yet: (re)run it
            res = replay.replay_model(tile)
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
    from flows.synth.metrics import git_revision

    note = (f"harness available; {n_rtl} runs have an RTL record (they come from `make test` / "
            "`make test-full` or `python -m tb.tiles report --rtl`); generated at revision "
            f"`{git_revision()}`")
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "regression.md").write_text(report.regression_md(recs, note, report.forward_check()))
    print(f"wrote {REPORTS / 'regression.md'} ({len(recs)} runs, "
          f"{sum(r['rtl_match'] is not None for r in recs.values())} through the RTL)")
    return 0


def _block(json_path) -> int:
    from . import block_report

    data = block_report.measure(json_path)
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / "block_scaled.md").write_text(block_report.block_md(data))
    print(f"wrote {REPORTS / 'block_scaled.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
