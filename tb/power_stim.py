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

Block-scaled formats (``mxfp8_e4m3``, ``mxfp4_e2m1``, ``nvfp4``, ...) take their real runs from
:func:`tb.tiles.corpus.tiles` (operands quantized per block along K) and send them as the tile
replay does (:func:`tb.tiles.rtl.program`: per k-tile D ``w`` beats, D/B ``ws`` beats, the ``x``
beats with their activation scale codes). ``random`` draws the
element codes as above and the scale codes with :func:`tb.mu.stimulus.random_scales` (E8M0
exponents within +-8 of 1, seed 1); ``zeros`` sends zero codes with unit scales (1.0). The expected
results come from the model (:meth:`Program.expected`, with the scale codes).

File contents: ``w`` (beats x bytes), ``ws`` (beats x D bytes; no rows for a plain format) and
``x`` (beats x bytes) payloads, little-endian; ``y``
(results x D) expected FP32 bits; ``meta`` (JSON: workload, width, fmt, rows, runs, useful and
issued MACs, beat counts).
"""

import argparse
import dataclasses
import functools
import json
import sys

import ml_dtypes
import numpy as np

from hw.formats import BLOCK_FORMATS, get_block_format

from .mu.model import ElementCodec
from .mu.stimulus import random_scales
from .tiles import corpus, rtl

__all__ = ["tile_runs", "program", "write"]

WORKLOADS = ("tiles", "random", "zeros")


def _specs(width: int, fmt: str, rows: int, n: int) -> list:
    modes = sorted((m for m, r in corpus.MODES.items() if r <= rows), key=lambda m: -corpus.MODES[m])
    if not modes:
        raise ValueError(f"no tile mode fits {rows} accumulator row(s)")
    return [corpus.RunSpec(op, mode, fmt, width, i) for i, (mode, op) in
            enumerate((m, op) for m in modes for op in corpus.minilm.OPS)][:n]


def tile_runs(width: int, fmt: str, rows: int, n: int) -> list:
    """Up to ``n`` real tile runs of this unit (rows per run <= ``rows``), loaded from the corpus
    (block-scaled formats: cut in memory from a forward pass, :func:`tb.tiles.corpus.tiles`)."""
    if fmt in BLOCK_FORMATS:
        get_block_format(fmt).check_width(width)
        return list(_block_runs(width, fmt, rows, n))
    return [t for _, t in corpus.load_runs(_specs(width, fmt, rows, n))]


@functools.lru_cache(maxsize=4)
def _block_runs(width: int, fmt: str, rows: int, n: int) -> tuple:
    """The block tiles, kept for the process (each cut takes a MiniLM forward pass; the tiles are
    only read by their users)."""
    return tuple(corpus.tiles(_specs(width, fmt, rows, n)))


def _unit_scale(fmt: str) -> int:
    """The scale code of 1.0 (E8M0: the biased exponent 127; UE4M3: the E4M3 code of 1.0)."""
    if get_block_format(fmt).scale == "e8m0":
        return 127
    return int(np.asarray(1.0, dtype=ml_dtypes.float8_e4m3fn).view(np.uint8))


def _draw(prog, fmt: str, rng, finite) -> None:
    """Replace the codes of one run's ``prog`` by random ones, in place.

    The draw order differs by kind and is kept so that the stimulus (and the energies measured on
    it) stays what it has been: a per-tensor format draws each weight tile, then that tile's ``x``
    beats, tile by tile; a block-scaled format draws all the run's weight tiles, then all its ``x``
    beats, then its weight and activation scale codes (:func:`tb.mu.stimulus.random_scales`).
    """
    if fmt not in BLOCK_FORMATS:
        starts = np.flatnonzero(prog.swap)
        for t, (a, b) in enumerate(zip(starts, [*starts[1:], len(prog.x)], strict=True)):
            prog.tiles[t] = rng.choice(finite, prog.tiles[t].shape)
            prog.x[a:b] = rng.choice(finite, prog.x[a:b].shape)
        return
    prog.tiles = [rng.choice(finite, t.shape) for t in prog.tiles]
    prog.x = rng.choice(finite, prog.x.shape)
    prog.wscales = [random_scales(fmt, rng, s.shape, spread=8) for s in prog.wscales]
    prog.xscales = random_scales(fmt, rng, prog.xscales.shape, spread=8)


def program(width: int, fmt: str, rows: int, workload: str, n: int, seed: int = 1):
    """(:class:`tb.mu.program.Program`, useful MACs, run ids) of ``workload`` on ``n`` tile runs.

    Each run is sent as the tile replay sends it (:func:`tb.tiles.rtl.program`, scale codes
    included on a block-scaled format); ``random`` draws the codes with :func:`_draw`, ``zeros``
    sends zero codes with unit scales.
    """
    if workload not in WORKLOADS:
        raise ValueError(f"workload must be tiles, random or zeros, not {workload!r}")
    block = fmt in BLOCK_FORMATS
    runs = tile_runs(width, fmt, rows, n)
    rng = np.random.default_rng(seed)
    codec = ElementCodec(get_block_format(fmt).element if block else fmt)
    finite = np.nonzero(~(codec.is_nan | codec.is_inf))[0]
    progs, useful = [], 0
    for run in runs:
        useful += run.x.shape[0] * run.x_f32.shape[1] * run.w_f32.shape[1]
        prog = rtl.program(run, rows)
        if workload == "random":
            _draw(prog, fmt, rng, finite)
        elif workload == "zeros":
            prog.tiles = [np.zeros_like(t) for t in prog.tiles]
            prog.x = np.zeros_like(prog.x)
            if block:
                prog.wscales = [np.full_like(s, _unit_scale(fmt)) for s in prog.wscales]
                prog.xscales = np.full_like(prog.xscales, _unit_scale(fmt))
        progs.append(prog)

    def cat(f):
        return np.concatenate([getattr(q, f) for q in progs])
    scales = {"wscales": [s for q in progs for s in q.wscales], "xscales": cat("xscales")} if block else {}
    out = dataclasses.replace(progs[0], tiles=[t for q in progs for t in q.tiles], x=cat("x"),
                              swap=cat("swap"), first=cat("first"), last=cat("last"), row=cat("row"),
                              **scales)
    out.validate()
    return out, useful, [r.id for r in runs]


def write(path, width: int, fmt: str, rows: int, workload: str, n: int, acc: str = "fp32",
          guard_bits: int = 16) -> dict:
    """Write the stimulus file, results for accumulate mode ``acc``; returns its meta."""
    prog, useful, ids = program(width, fmt, rows, workload, n)
    b = prog.signature.bits
    wb, xb = (width * b + 7) // 8, (prog.signature.x_layout.size + 7) // 8

    def rows_of(ints, nbytes):
        return np.frombuffer(b"".join(int(v).to_bytes(nbytes, "little") for v in ints),
                             dtype=np.uint8).reshape(len(ints), nbytes)

    ys = prog.expected(acc, guard_bits)
    meta = {"workload": workload, "width": width, "fmt": fmt, "rows": rows, "acc": acc, "runs": ids,
            "useful_macs": int(useful), "issued_macs": int(prog.n_beats * width * width),
            "w_beats": len(prog.w_beats()), "ws_beats": len(prog.ws_beats()),
            "x_beats": prog.n_beats, "results": len(ys)}
    ws = rows_of(prog.ws_beats(), width) if prog.wscales else np.zeros((0, width), np.uint8)
    np.savez_compressed(path, w=rows_of(prog.w_beats(), wb), ws=ws, x=rows_of(prog.x_beats(), xb),
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
