"""Port stimulus and expected results for the gate-level energy flow (``flows.power``).

``python -m tb.power_stim --width D --fmt F --rows R --workload tiles|random|zeros --runs N -o f.npz``
writes the beats a matrix unit is sent and the results the bit-true model (:mod:`tb.mu.model`,
through :meth:`tb.mu.program.Program.expected`) prescribes for them. The flows side runs this as a
subprocess (flows never imports tb) and drives the gate-level netlist with the beats.

Workloads (all with the same schedule, so their energies compare like for like):

``tiles``
    ``N`` real MiniLM tile runs (:mod:`tb.tiles.corpus`) of the unit's width and format whose rows
    fit the unit's accumulator rows (the most rows that fit first: decode, one row, for ``R = 1``;
    prefill, 16 rows, for ``R >= 16``), replayed as the tile
    regression does (:func:`tb.tiles.replay.beats`): per K tile, the weight tile and one beat per
    row, ``first`` on the first K tile, ``last`` on the final one.
``random``
    The same shapes with codes drawn uniformly from the format's finite values (seed 1).
``zeros``
    The same shapes with every code zero.

File contents: ``w`` (beats x bytes) and ``x`` (beats x bytes) payloads, little-endian; ``y``
(results x D) expected FP32 bits; ``meta`` (JSON: workload, width, fmt, rows, runs, useful and
issued MACs).
"""

import argparse
import json
import sys

import numpy as np

from hw.formats import get_format

from .mu.model import ElementCodec
from .mu.program import Program, Tile
from .tiles import corpus
from .tiles.replay import beats

__all__ = ["tile_runs", "program", "write"]


def tile_runs(width: int, fmt: str, rows: int, n: int) -> list:
    """Up to ``n`` real tile runs of this unit (rows per run <= ``rows``), loaded from the corpus."""
    modes = sorted((m for m, r in corpus.MODES.items() if r <= rows), key=lambda m: -corpus.MODES[m])
    if not modes:
        raise ValueError(f"no tile mode fits {rows} accumulator row(s)")
    specs = [corpus.RunSpec(op, mode, fmt, width, i) for i, (mode, op) in
             enumerate((m, op) for m in modes for op in corpus.minilm.OPS)][:n]
    return [t for _, t in corpus.load_runs(specs)]


def program(width: int, fmt: str, rows: int, workload: str, n: int, seed: int = 1):
    """(:class:`tb.mu.program.Program`, useful MACs) of ``workload`` on ``n`` tile runs."""
    if workload not in ("tiles", "random", "zeros"):
        raise ValueError(f"workload must be tiles, random or zeros, not {workload!r}")
    runs = tile_runs(width, fmt, rows, n)
    rng = np.random.default_rng(seed)
    finite = np.nonzero(~(ElementCodec(fmt).is_nan | ElementCodec(fmt).is_inf))[0]
    tiles, useful = [], 0
    for run in runs:
        m = run.x.shape[0]
        useful += m * run.x_f32.shape[1] * run.w_f32.shape[1]
        for w, x, first, last in beats(run):
            if workload == "random":
                w, x = rng.choice(finite, w.shape), rng.choice(finite, x.shape)
            elif workload == "zeros":
                w, x = np.zeros_like(w), np.zeros_like(x)
            tiles.append(Tile(w, x, first, last, np.arange(m)))
    return Program.from_tiles(width, fmt, rows, tiles), useful, [r.id for r in runs]


def write(path, width: int, fmt: str, rows: int, workload: str, n: int, acc: str = "fp32",
          guard_bits: int = 16) -> dict:
    """Write the stimulus file, results for accumulate mode ``acc``; returns its meta."""
    prog, useful, ids = program(width, fmt, rows, workload, n)
    b = get_format(fmt).bits
    wb, xb = (width * b + 7) // 8, (prog.signature.x_layout.size + 7) // 8

    def rows_of(ints, nbytes):
        return np.frombuffer(b"".join(int(v).to_bytes(nbytes, "little") for v in ints),
                             dtype=np.uint8).reshape(len(ints), nbytes)

    ys = prog.expected(acc, guard_bits)
    meta = {"workload": workload, "width": width, "fmt": fmt, "rows": rows, "acc": acc, "runs": ids,
            "useful_macs": int(useful), "issued_macs": int(prog.n_beats * width * width),
            "w_beats": len(prog.w_beats()), "x_beats": prog.n_beats, "results": len(ys)}
    np.savez_compressed(path, w=rows_of(prog.w_beats(), wb), x=rows_of(prog.x_beats(), xb),
                        y=np.stack([r.bits for r in ys]).astype(np.uint32),
                        y_row=np.asarray([r.row for r in ys], dtype=np.int64),
                        meta=np.asarray(json.dumps(meta)))
    return meta


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tb.power_stim", description=__doc__.splitlines()[0])
    p.add_argument("--width", type=int, required=True)
    p.add_argument("--fmt", required=True)
    p.add_argument("--rows", type=int, default=1)
    p.add_argument("--workload", default="tiles")
    p.add_argument("--runs", type=int, default=8)
    p.add_argument("--acc", default="fp32", choices=("fp32", "exact"))
    p.add_argument("--guard-bits", type=int, default=16)
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args(argv)
    try:
        meta = write(a.output, a.width, a.fmt, a.rows, a.workload, a.runs, a.acc, a.guard_bits)
    except (ValueError, corpus.TileError) as e:
        print(f"python -m tb.power_stim: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
