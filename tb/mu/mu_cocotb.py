"""cocotb tests of the matrix unit (run by tb/mu/test_matrix_unit.py through tb/sim.py).

Knobs (environment): ``MU_WIDTH``, ``MU_FMT``, ``MU_ROWS``, ``MU_ACC``, ``MU_GUARD_BITS``,
``MU_LOOP`` (the build's parameters), ``MU_LATENCY``
(``MatrixUnit.latency``, read from the generator by the runner), ``MU_SEED``, ``MU_SCALE`` (beats
multiplier for random tests), ``MU_REPLAY_IN``/``MU_REPLAY_OUT`` (the ``replay`` test), ``MU_BENCH``
(beats of the ``bench`` test).
"""

from __future__ import annotations

import json
import os
import time

import cocotb
import numpy as np
from cocotb.triggers import Timer

from hw.formats import get_format
from perf.contract import Schedule
from tb import coverage
from tb.lib.clocked import write
from tb.lib.pause import bursty_pause, cycle_pause, random_pause

from . import stimulus
from .program import Program
from .testbench import Checker, MuTestbench

WIDTH = int(os.environ.get("MU_WIDTH", "8"))
FMT = os.environ.get("MU_FMT", "fp8_e4m3")
ROWS = int(os.environ.get("MU_ROWS", "1"))
ACC = os.environ.get("MU_ACC", "fp32")
GUARD_BITS = int(os.environ.get("MU_GUARD_BITS", "16"))
LOOP = int(os.environ.get("MU_LOOP", "1"))
LATENCY = int(os.environ.get("MU_LATENCY", "-1"))
SEED = int(os.environ.get("MU_SEED", "0"))
SCALE = float(os.environ.get("MU_SCALE", "1"))


async def _tb(dut) -> MuTestbench:
    assert LATENCY >= 0, "MU_LATENCY must be set by the runner from MatrixUnit.latency"
    tb = MuTestbench(dut, WIDTH, FMT, ROWS, LATENCY, ACC)
    await tb.start()
    return tb


FAST = os.environ.get("MU_FAST", "0") == "1"


async def _run_checked(tb: MuTestbench, prog: Program, name: str, latency_check=True, fast=None,
                       **pauses):
    expected = prog.expected(ACC, GUARD_BITS)
    res = await tb.run(prog, fast=FAST if fast is None else fast,
                       overflows=sum(e.overflow for e in expected), **pauses)
    Checker(expected, tb.log).check(res.y)
    if latency_check and pauses.get("y_pause") is None:
        tb.check_latency(prog, res)
    tb.log.info("%s: %d x beats, %d rows, %d cycles, %.0f x-beats/s", name, prog.n_beats,
                len(res.y), res.cycles, prog.n_beats / max(res.wall, 1e-9))
    return res, expected


@cocotb.test()
async def every_product(dut):
    """All code pairs of the format through the unit (one-hot beats, D products per beat), checked
    against the model and against a float64 product oracle independent of the model."""
    tb = await _tb(dut)
    prog = stimulus.every_product(WIDTH, FMT, ROWS)
    res, expected = await _run_checked(tb, prog, "every_product", fast=True)
    starts = np.nonzero(prog.swap)[0]
    n = 1 << get_format(FMT).bits
    pairs = 0
    for t, s in enumerate(starts):
        w = prog.tiles[t]
        k0 = int(np.nonzero(prog.x[s])[0][0]) if prog.x[s].any() else int(np.nonzero(w.any(1))[0][0])
        cols = np.nonzero(np.arange(WIDTH) < min(WIDTH, n - t * WIDTH))[0]
        for i in range(s, s + n):
            want = stimulus.product_oracle(FMT, np.full(cols.size, prog.x[i, k0]), w[k0, cols])
            got = res.y[i][1][cols]
            assert (got == want).all(), (f"a={prog.x[i, k0]:#x} b={w[k0, cols][got != want]} "
                                         f"got {got[got != want]} want {want[got != want]}")
            pairs += cols.size
    assert pairs == n * n, pairs


@cocotb.test()
async def random_dots(dut):
    """Random accumulations over several tiles and rows (with a few NaN/Inf codes)."""
    tb = await _tb(dut)
    for i, style in enumerate(("mixed", "uniform")):
        groups = max(1, int(round(2 * SCALE)))
        prog = stimulus.random_program(WIDTH, FMT, ROWS, groups=groups, seed=SEED + i, style=style,
                                       p_special=0.002 if i == 0 else 0.0)
        res, expected = await _run_checked(tb, prog, f"random_{style}")
        # float64 comparison: every finite result within the contract's error bound
        from .model import error_metrics
        met = error_metrics(np.array([r[1] for r in res.y]), np.array([e.ref for e in expected]),
                            np.array([e.bound for e in expected]))
        tb.log.info("random_%s vs float64: %s", style, met)
        assert met["within_bound"], met


@cocotb.test()
async def adversarial(dut):
    """Cancellation, max magnitudes, NaN/Inf, subnormal operands, two-scale rounding."""
    tb = await _tb(dut)
    for name, gen in stimulus.ADVERSARIAL.items():
        await _run_checked(tb, gen(WIDTH, FMT, ROWS), name)


@cocotb.test()
async def stalls(dut):
    """Random and bursty pauses on w, x and y: rows neither lost, duplicated nor reordered, counters
    equal to what the testbench saw (checked inside MuTestbench.run)."""
    tb = await _tb(dut)
    patterns = [
        dict(w_pause=random_pause(0.3, SEED + 1), x_pause=random_pause(0.5, SEED + 2),
             y_pause=random_pause(0.5, SEED + 3)),
        dict(w_pause=bursty_pause(7, 5, SEED + 4), x_pause=bursty_pause(3, 9, SEED + 5),
             y_pause=bursty_pause(4, 12, SEED + 6)),
        dict(w_pause=None, x_pause=None, y_pause=cycle_pause([1, 1, 1, 0])),
        dict(w_pause=cycle_pause([0, 1]), x_pause=None, y_pause=bursty_pause(20, 30)),
    ]
    for i, pauses in enumerate(patterns):
        # >= 16 beats per tile: enough result rows (~0.2 per beat plus R per group) that every
        # pattern meets a valid y beat while it pauses (asserted below)
        prog = stimulus.random_program(WIDTH, FMT, ROWS, groups=2, tiles_per_group=2,
                                       beats_per_tile=max(ROWS, WIDTH // 4, 16), seed=SEED + 10 + i)
        res, _ = await _run_checked(tb, prog, f"stalls_{i}", **pauses)
        assert res.counters["stall_y"] > 0 or pauses["y_pause"] is None


@cocotb.test()
async def long_accumulation(dut):
    """Accumulations of thousands of beats that cancel to a small residue, interleaved over the rows
    with stalls. In the ``exact`` mode each result is the residue rounded once, checked against a
    float64 oracle independent of the model (the residue beat's dot product, exact in float64)."""
    tb = await _tb(dut)
    prog, residue = stimulus.long_cancellation(WIDTH, FMT, ROWS, beats=int(3000 * SCALE),
                                               seed=SEED + 20)
    res, expected = await _run_checked(tb, prog, "long_cancellation", fast=True,
                                       x_pause=random_pause(0.1, SEED + 21),
                                       y_pause=random_pause(0.3, SEED + 22))
    if ACC == "exact":
        for (row, got), want in zip(res.y, residue, strict=True):
            assert (got == want).all(), f"row {row}: got {got} want {want}"


@cocotb.test()
async def reset_mid_stream(dut):
    """Reset with beats in flight (x sent, rows still in the pipeline, weights half loaded), then a
    fresh program: counters read 0 after the reset (checked by ``start``) and every row of the new
    program is right (no state of the interrupted one survives)."""
    tb = await _tb(dut)
    prog = stimulus.random_program(WIDTH, FMT, ROWS, groups=2, seed=SEED + 40)
    cut = WIDTH + 2 * LATENCY + 3          # past the first tile's load, beats in the pipeline
    res = await tb.run(prog, abort_after=cut, y_pause=random_pause(0.5, SEED + 41))
    assert 0 < len(res.x_cycles) < prog.n_beats, "the reset must come with beats in flight"
    await tb.start()
    await _run_checked(tb, stimulus.random_program(WIDTH, FMT, ROWS, groups=1, seed=SEED + 42),
                       "after_reset")
    coverage.hit("protocol.reset_mid_stream")
    coverage.flush()


@cocotb.test()
async def exact_rounding_edges(dut):
    """``exact`` mode, E4M3: an accumulation cancelling 448 to 2**-18 (27 leading bits lost) and one
    of 256 - 2**-18, whose single rounding carries into the next binade (result 256); checked
    against the model and against the hand-computed results."""
    assert ACC == "exact" and FMT == "fp8_e4m3", "written for the exact mode on E4M3 codes"
    import ml_dtypes

    from .program import Tile

    def code(v):
        return int(np.array([v], dtype=ml_dtypes.float8_e4m3fn).view(np.uint8)[0])

    tb = await _tb(dut)
    w = np.zeros((WIDTH, WIDTH), np.int64)
    w[0, :], w[1, :] = code(1.0), code(2.0 ** -9)
    x = np.zeros((4, WIDTH), np.int64)
    x[0, 0], x[1, 0], x[1, 1] = code(448.0), code(-448.0), code(2.0 ** -9)
    x[2, 0], x[3, 1] = code(256.0), code(-(2.0 ** -9))
    prog = Program.from_tiles(WIDTH, FMT, ROWS, [Tile(w, x, first=np.array([1, 0, 1, 0], bool),
                                                      last=np.array([0, 1, 0, 1], bool))])
    res, _ = await _run_checked(tb, prog, "exact_rounding_edges")
    want = [np.float32(2.0 ** -18).view(np.uint32), np.float32(256.0).view(np.uint32)]
    for (_, got), v in zip(res.y, want, strict=True):
        assert (got == v).all(), f"got {got}, want {v:#x}"


@cocotb.test()
async def overflow_limit(dut):
    """``exact`` mode: accumulations of up to ``2**guard_bits`` beats are exact; one beat more gives
    NaN in every column and counts once in ``cnt_acc_overflow`` (counted here from the program's
    first..last runs, not from the model); the next ``first`` starts a clean accumulation."""
    assert ACC == "exact", "overflow_limit tests the exact accumulate mode"
    tb = await _tb(dut)
    limit = 1 << GUARD_BITS
    lengths = [limit, limit + 1, 1, limit - 1, 2 * limit + 3, 2]
    prog = stimulus.accumulation_lengths(WIDTH, FMT, ROWS, lengths, seed=SEED + 30)
    c0 = tb.counters()["acc_overflow"]
    res, expected = await _run_checked(tb, prog, "overflow_limit", fast=True,
                                       y_pause=random_pause(0.4, SEED + 31))
    over = [n > limit for n in lengths for _ in range(ROWS)]
    assert tb.counters()["acc_overflow"] - c0 == sum(over)
    for (row, got), o in zip(res.y, over, strict=True):   # finite operands: NaN only from overflow
        nan = got == 0x7FC00000
        assert nan.all() if o else not nan.any(), f"row {row} (overflow {o}): {got}"


def contract_schedule(prog: Program, loop: int = LOOP) -> Schedule:
    """The throughput contract's schedule of a program: tiles start at the ``swap`` beats (with
    each beat's row, which the ``loop = 2`` interlock counts)."""
    starts = [int(i) for i in np.flatnonzero(prog.swap)] + [prog.n_beats]
    rows = tuple(tuple(prog.row[a:b].tolist()) for a, b in zip(starts, starts[1:], strict=False))
    return Schedule(WIDTH, tuple(np.diff(starts).tolist()), y_beats=prog.n_outputs, rows=rows,
                    loop=loop)


def check_contract(prog: Program, res) -> Schedule:
    """An unpaused run against the contract: the unit's beat and MAC counters, and the cycle of the
    last result (``Schedule.cycles``: cycle 0 is the run's first edge, where the first w beat is
    taken)."""
    sched = contract_schedule(prog)
    got = {k: res.counters[k] for k in sched.counters()}
    assert got == sched.counters(), f"counters {got}, the contract's schedule {sched.counters()}"
    last = int(res.y_cycles[-1]) + 1
    assert last == sched.cycles(LATENCY), (
        f"last result after {last} cycles, the contract says {sched.cycles(LATENCY)} "
        f"({sched.tiles} tiles, D {WIDTH}, latency {LATENCY})")
    return sched


@cocotb.test()
async def throughput(dut):
    """Throughput contract (perf.contract) from the counters: one x beat per cycle when each tile
    serves D beats; one tile per D cycles at batch 1; whole runs end when the contract says."""
    tb = await _tb(dut)
    d = WIDTH
    prog = stimulus.full_rate(d, FMT, ROWS, tiles=4)
    i0, i1 = d, prog.n_beats - 1            # from the first beat of tile 1 to the last beat
    res, _ = await _run_checked(tb, prog, "full_rate", snap_beats=(i0, i1))
    sched = check_contract(prog, res)
    a, b = res.windows
    beats, cycles = b["x_beats"] - a["x_beats"], b["cycles"] - a["cycles"]
    tb.log.info("full rate: %d x beats in %d cycles (stall_tile +%d)", beats, cycles,
                b["stall_tile"] - a["stall_tile"])
    # tiles 1.. serve D beats each: the window holds the unit max(D, D) = 1 cycle per beat (plus
    # the interlock bubbles of loop = 2)
    rest = Schedule(d, sched.tile_beats[1:], rows=sched.rows[1:], loop=LOOP)
    assert beats == i1 - i0 and cycles == rest.steady_cycles() - 1, (beats, cycles)
    assert b["stall_tile"] == a["stall_tile"]
    prog = stimulus.batch_one(d, FMT, ROWS, tiles=8)
    res, _ = await _run_checked(tb, prog, "batch_one", snap_beats=(1, 7))
    check_contract(prog, res)
    a, b = res.windows
    beats, cycles = b["x_beats"] - a["x_beats"], b["cycles"] - a["cycles"]
    w_beats = b["w_beats"] - a["w_beats"]
    tb.log.info("batch 1: %d tiles in %d cycles (%d w beats)", beats, cycles, w_beats)
    # beats 2..7: six one-beat tiles, each holding the unit max(D, 1) = D cycles
    assert beats == 6 and cycles == Schedule(d, (1,) * 6).steady_cycles() == 6 * d, (beats, cycles)
    assert w_beats == 6 * d or beats == 6


@cocotb.test()
async def loop_rows(dut):
    """Row sequences that hit and miss the ``loop = 2`` interlock (rows in turn, runs of one row,
    random rows, a repeated row across a tile edge): bit-exact results, and without pauses the
    last result exactly when the contract (perf.contract, with the interlock's bubbles) says;
    rows in turn at R >= 2 pay nothing. Then the same programs with pauses on every stream."""
    from .loop_stimulus import row_sequences, rows_program

    tb = await _tb(dut)
    for i, (name, seq) in enumerate(row_sequences(WIDTH, ROWS, SEED + 60).items()):
        prog = rows_program(WIDTH, FMT, ROWS, seq, seed=SEED + 61 + i)
        res, _ = await _run_checked(tb, prog, f"loop_{name}")
        sched = check_contract(prog, res)    # the RTL's cycles include the contract's bubbles
        tb.log.info("loop %d, rows %s: %d interlock bubbles in the contract", LOOP, name,
                    sum(sched.spans()) - sum(sched.tile_beats))
        for j, pauses in enumerate((
                dict(w_pause=random_pause(0.3, SEED + 62 + i), x_pause=random_pause(0.4, SEED + 63),
                     y_pause=random_pause(0.5, SEED + 64 + i)),
                dict(w_pause=bursty_pause(5, 3, SEED + 65), x_pause=cycle_pause([0, 1]),
                     y_pause=bursty_pause(3, 7, SEED + 66 + i)))):
            await _run_checked(tb, prog, f"loop_{name}_paused{j}", **pauses)


@cocotb.test()
async def bench(dut):
    """Simulation speed: a long full-rate run (x-beats/s of wall time, model excluded)."""
    tb = await _tb(dut)
    n_tiles = max(1, int(os.environ.get("MU_BENCH", "4096")) // WIDTH)
    prog = stimulus.full_rate(WIDTH, FMT, ROWS, tiles=n_tiles)
    expected = prog.expected(ACC, GUARD_BITS)
    t0, cpu0 = time.perf_counter(), time.process_time()
    res = await tb.run(prog, fast=os.environ.get("MU_BENCH_EXACT", "0") != "1")
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    Checker(expected, tb.log).check(res.y)
    rate = prog.n_beats / wall
    tb.log.info("bench: %d x beats, %d cycles in %.2f s: %.0f x-beats/s, %.0f cycles/s",
                prog.n_beats, res.cycles, wall, rate, res.cycles / wall)
    # The simulator alone: the clock runs (cocotb's GPI clock, in C++) while no Python code runs
    # per cycle, with the datapath busy: x valid on every cycle (the last beat again, on the tile
    # still active, one result row per beat) and y always ready. This bounds any testbench of this
    # RTL on this simulator build.
    dut = tb.dut
    again = Program(WIDTH, FMT, ROWS, x=prog.x[-1:], swap=np.zeros(1, bool),  # no swap: the tile
                    first=np.ones(1, bool), last=np.ones(1, bool),            # still active, a row
                    row=np.zeros(1, np.int64))                                # per beat
    write(dut.x__payload, again.x_beats()[0])   # at the falling edge where the run returned
    write(dut.w__valid, 0)
    write(dut.y__ready, 1)
    write(dut.x__valid, 1)
    raw_cycles = max(2000, res.cycles)
    x0 = tb.counters()["x_beats"]
    t0 = time.perf_counter()
    await Timer(raw_cycles * tb.period_ns, unit="ns")
    raw = raw_cycles / (time.perf_counter() - t0)
    busy = tb.counters()["x_beats"] - x0
    assert busy >= raw_cycles - 2, f"the datapath idled: {busy} x beats in {raw_cycles} cycles"
    tb.log.info("bench: simulator alone %.0f cycles/s (%d x beats)", raw, busy)
    out = os.environ.get("MU_BENCH_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump({"x_beats": prog.n_beats, "cycles": res.cycles, "wall_s": wall,
                       "x_beats_per_s": rate, "cycles_per_s": res.cycles / wall,
                       "x_beats_per_cpu_s": prog.n_beats / cpu,
                       "simulator_cycles_per_s": raw}, fh)


@cocotb.test()
async def block_dots(dut):
    """Block-scaled formats: random accumulations with scales spread over +-3 and +-30 binades
    (E8M0) or any UE4M3 code, a few NaN scales and element specials, then scales at the ends of
    their range and across the window's edge; bit-exact against the block model, latency checked,
    every finite result within the contract's bound of the float64 reference."""
    from .model import error_metrics
    from .stimulus import extreme_block_program, random_program

    tb = await _tb(dut)
    for i, (spread, p_nan) in enumerate(((3, 0.0), (30, 0.01))):
        prog = random_program(WIDTH, FMT, ROWS, seed=SEED + 40 + i, spread=spread,
                              p_nan=p_nan, groups=max(1, int(round(2 * SCALE))),
                              p_special=0.002 if i else 0.0)
        res, expected = await _run_checked(tb, prog, f"block_random_{spread}")
        met = error_metrics(np.array([r[1] for r in res.y]), np.array([e.ref for e in expected]),
                            np.array([e.bound for e in expected]))
        tb.log.info("block_random_%d vs float64: %s", spread, met)
        assert met["within_bound"], met
    await _run_checked(tb, extreme_block_program(WIDTH, FMT, ROWS, seed=SEED + 45), "block_extreme")


@cocotb.test()
async def block_backpressure(dut):
    """Block-scaled formats: random and bursty pauses on w, ws, x and y (ws running ahead of w and
    behind it): rows neither lost, duplicated nor reordered, counters as observed."""
    from .stimulus import random_program

    tb = await _tb(dut)
    patterns = [
        dict(w_pause=random_pause(0.3, SEED + 1), ws_pause=random_pause(0.6, SEED + 7),
             x_pause=random_pause(0.5, SEED + 2), y_pause=random_pause(0.5, SEED + 3)),
        dict(w_pause=bursty_pause(7, 5, SEED + 4), ws_pause=bursty_pause(40, 20, SEED + 8),
             x_pause=bursty_pause(3, 9, SEED + 5), y_pause=bursty_pause(4, 12, SEED + 6)),
        dict(w_pause=cycle_pause([1, 1, 1, 0]), ws_pause=None, x_pause=None,
             y_pause=cycle_pause([0, 1])),
    ]
    for i, pauses in enumerate(patterns):
        prog = random_program(WIDTH, FMT, ROWS, seed=SEED + 50 + i, groups=2,
                              tiles_per_group=2, beats_per_tile=max(ROWS, 16), p_nan=0.01)
        res, _ = await _run_checked(tb, prog, f"block_backpressure_{i}", **pauses)
        assert res.counters["stall_y"] > 0 or pauses["y_pause"] is None


@cocotb.test()
async def replay(dut):
    """Run a program given as an .npz (tb.mu.replay.run_tiles) and write results back."""
    src, dst = os.environ.get("MU_REPLAY_IN"), os.environ.get("MU_REPLAY_OUT")
    assert src and dst, "MU_REPLAY_IN/MU_REPLAY_OUT are set by tb.mu.replay.run_tiles"
    from .replay import load_program, save_result

    prog, pauses = load_program(src)
    tb = await _tb(dut)
    expected = prog.expected(ACC, GUARD_BITS)
    res = await tb.run(prog, fast=True, overflows=sum(e.overflow for e in expected), **pauses)
    errs = Checker(expected, tb.log).mismatches(res.y)
    save_result(dst, res, expected, errs)
    assert not errs, errs[0]
