"""cocotb test of the slice: HBM model, scratchpad host port, command and done streams, checks.

Knobs (environment, JSON): ``SLICE_CFG`` = :class:`tb.slice.layout.SliceGeometry` fields;
``SLICE_CASES`` = a list of {``shapes``: [[M, K, N] or [M, K, N, acc], ...] or ``minilm``: op name
(``ffn_up``), ``numerics``: ``mu`` | ``stub``, ``rate``: HBM bytes per cycle (float), ``latency``:
cycles, ``hbm_pause``, ``req_pause``, ``read_pause``, ``done_pause``, ``load_pause``: pause specs
(``tb.lib.pause.make_pause``), ``seed``, ``garbage``: fill padding with random codes,
``spy_reads``: host reads of x words issued while the commands run}, run in turn with a reset
between. ``acc`` = 0 overwrites y, 1 accumulates onto old y values the host writes first (random
FP32 with specials, :func:`tb.slice.layout.random_fp32`), 2 accumulates onto the previous command's
y (same M and N: a K split over two commands);
``SLICE_OUT``: a JSON file to write the measurements to (cycles per command, counters).

One clocked loop drives every port (:class:`tb.lib.clocked.Clocked`, the project's one clock-edge
rule): at each falling edge the sources present beats and the sinks set ``ready``; once the design
has settled, every handshake of the coming rising edge is sampled.
"""

import json
import os
from collections import deque

import cocotb
import numpy as np

from hw.payload import pack, unpack
from hw.slice.feed import request_layout
from hw.slice.slice import spad_write_layout, unit_counters_layout
from tb.coverage_sample import sample_slice_case
from tb.lib.clocked import Clocked, write
from tb.lib.pause import make_pause
from tb.lib.stream import StreamSink, StreamSource, read_int
from tb.slice.layout import (
    Matmul,
    SliceGeometry,
    cmd_word,
    expected_counters,
    expected_spad,
    hbm_image,
    random_fp32,
    unpack_fp32,
    x_words,
    y_words,
)


class HbmModel:
    """HBM read port: takes requests, returns beats in order after ``latency`` cycles, at most
    ``rate`` bytes per cycle on average (a token bucket of one beat plus one cycle's worth), with
    extra stalls from a pause generator.

    Attributes
    ----------
    sent_bytes : int
        Bytes of the beats the design accepted.
    requested_bytes : int
        Bytes of the requests the model accepted.
    """

    def __init__(self, dut, image: dict, geom: SliceGeometry, rate: float, latency: int,
                 req_pause, data_pause):
        self.dut, self.image, self.g = dut, image, geom
        self.B = geom.feed_bytes
        self.rate, self.latency = rate, latency
        self.cap = self.B + rate
        self.credit = 0.0
        self.pause = data_pause
        self.queue = deque()
        self.cycle = 0
        self.req = StreamSink(dut, "hbm_req", req_pause, callback=self._on_req)
        self.payload = dut.hbm_rdata__payload
        self.valid_h = dut.hbm_rdata__valid
        self.ready_h = dut.hbm_rdata__ready
        self.valid = self.fired = False
        self.sent_bytes = 0
        self.requested_bytes = 0
        self.first_beat_cycle = None

    def _read(self, addr: int) -> int:
        out = bytearray(self.B)
        for base, blob in self.image.items():
            lo, hi = max(addr, base), min(addr + self.B, base + len(blob))
            if lo < hi:
                out[lo - addr:hi - addr] = blob[lo - base:hi - base]
        return int.from_bytes(out, "little")

    def _on_req(self, beat: int) -> None:
        req = unpack(request_layout(self.g.hbm_addr_bits, self.g.burst), beat)
        addr, beats = req["addr"], req["beats"]
        assert 1 <= beats <= self.g.burst, f"request of {beats} beats (burst {self.g.burst})"
        self.requested_bytes += beats * self.B
        for i in range(beats):
            self.queue.append((self.cycle + self.latency, self._read(addr + i * self.B)))

    def drive(self) -> None:
        """At a falling edge: retire a taken beat, present the next one the rate allows."""
        self.req.drive()
        if self.fired:
            self.queue.popleft()
            self.sent_bytes += self.B
            self.valid = self.fired = False
        self.credit = min(self.credit + self.rate, self.cap)
        paused = next(self.pause)
        if (not self.valid and not paused and self.queue and self.queue[0][0] <= self.cycle
                and self.credit >= self.B):
            write(self.payload, self.queue[0][1])
            self.credit -= self.B
            self.valid = True
        write(self.valid_h, self.valid)

    def sample(self) -> None:
        """Settled before a rising edge: the request and data handshakes that edge makes."""
        self.req.sample()
        self.fired = self.valid and bool(read_int(self.ready_h))
        if self.fired and self.first_beat_cycle is None:
            self.first_beat_cycle = self.cycle
        self.cycle += 1


def _minilm(g: SliceGeometry, case: dict) -> tuple:
    """The case's real MiniLM tile: x (one token) and W codes, plus scale codes if block-scaled."""
    from tb.tiles import minilm, quant
    model = minilm.load()
    caps = []
    model.forward(model.tokenize(minilm.SENTENCES[0]), 0, caps)
    cap = next(c for c in caps if c.op == case["minilm"] and c.layer == case.get("layer", 0))
    row = case.get("token", 1)
    x = cap.x[row:row + 1]
    if not g.block:
        return quant.quantize(x, g.fmt).codes, quant.quantize(cap.w, g.fmt).codes
    qx, qw = quant.quantize(x, g.fmt, axis=1), quant.quantize(cap.w, g.fmt, axis=0)
    k = x.shape[1]
    return qx.codes[:, :k], qw.codes[:k], qx.scales, qw.scales


def _finite_e4m3(a):
    """Random E4M3 codes kept finite (0x7F/0xFF are NaN): specials are the unit's tests."""
    return np.where((a & 0x7F) == 0x7F, a ^ 1, a)


def _matmuls(g: SliceGeometry, case: dict, rng) -> list:
    if "minilm" in case:
        shapes = [_minilm(g, case)]
    else:
        shapes = []
        for mm, k, n, *_ in case["shapes"]:
            shapes.append((rng.integers(0, 1 << g.bits, size=(mm, k), dtype=np.uint8),
                           rng.integers(0, 1 << g.bits, size=(k, n), dtype=np.uint8)))
        if g.fmt in ("fp8_e4m3", "mxfp8_e4m3") and case.get("numerics", "mu") == "mu":
            shapes = [(_finite_e4m3(x), _finite_e4m3(w)) for x, w in shapes]
        if g.block:   # scale codes: E8M0 within +-10 binades of 1, UE4M3 any non-NaN code
            from tb.mu.stimulus import random_scales
            B = g.block
            shapes = [(x, w, random_scales(g.fmt, rng, (x.shape[0], -(-x.shape[1] // B)), spread=10),
                       random_scales(g.fmt, rng, (-(-w.shape[0] // B), w.shape[1]), spread=10))
                      for x, w in shapes]
    accs = [s[3] if len(s) > 3 else 0 for s in case.get("shapes", [])] or [0]
    D, words = g.width, 1 << g.addr_bits
    cmds, spad, w_addr = [], 0, 64
    for (x, w, *scales), acc in zip(shapes, accs, strict=True):
        xs, ws = scales or (None, None)
        (mm, k), n = x.shape, w.shape[1]
        kt, nt = -(-k // D), -(-n // D)
        x_addr = spad
        y_init = None
        if acc == 2:   # accumulate onto the previous command's y (same M, N)
            prev = cmds[-1]
            assert (prev.mkn[0], prev.mkn[2]) == (mm, n), "acc=2 needs the previous command's M, N"
            y_addr, spad = prev.y_addr, x_addr + mm * kt
        else:
            y_addr = x_addr + mm * kt
            spad = y_addr + mm * nt
            if acc == 1:   # accumulate onto old y values the host writes first
                y_init = random_fp32(rng, (mm, nt * D))
        assert spad <= words, f"scratchpad too small: {spad} words needed, {words} available"
        cmds.append(Matmul(x, w, x_addr, y_addr, w_addr, acc=int(acc > 0), y_init=y_init,
                           xs=None if xs is None else np.asarray(xs, dtype=np.uint8),
                           ws=None if ws is None else np.asarray(ws, dtype=np.uint8)))
        w_addr += len(hbm_image(g, w, ws=ws)) + 3 * g.feed_bytes + 7   # deliberately unaligned
    return cmds


@cocotb.test()
async def slice_matmuls(dut):
    """Every case of ``SLICE_CASES`` in turn (reset between): results, losses, counters."""
    g = SliceGeometry(**json.loads(os.environ["SLICE_CFG"]))
    clock = Clocked(dut, period_ns=10)
    results = []
    for case in json.loads(os.environ["SLICE_CASES"]):
        dut._log.info("case %s", case)
        results.append(await run_case(dut, clock, g, case))
    out = os.environ.get("SLICE_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(results, fh)


class _CaseLoop:
    """The phases of one case on the clocked loop: ``load`` (host writes x and old y words), ``run``
    (commands, done, host spy reads, HBM), ``read`` (host reads every y word back).

    Attributes
    ----------
    cmd_start, done_valid, done_cycle : list of int
        Cycle of each command's acceptance, of the first cycle its ``done`` beat was valid, and of
        its transfer (cycle ``n`` is the ``n``-th rising edge of the case).
    rdata : StreamSink
        The y words read back (phase ``read``).
    """

    def __init__(self, dut, case, seed, n_cmds, reads, load, cmd, done, spy, spy_mon, hbm):
        self.dut, self.case, self.seed, self.n_cmds, self.reads = dut, case, seed, n_cmds, reads
        self.load, self.cmd, self.done, self.spy, self.spy_mon, self.hbm = (load, cmd, done, spy,
                                                                           spy_mon, hbm)
        self.rreq = self.rdata = None
        self.cycle = 0
        self.cmd_start, self.done_cycle, self.done_valid = [], [], []
        self.phase = "load"
        self.limit = int(case.get("max_cycles", 2_000_000))
        self.finished = False

    def step(self) -> bool:
        """At a falling edge: True once every y word was read back."""
        return self.finished

    def drive(self) -> None:
        """At a falling edge: the current phase's sources and sinks, then the HBM model."""
        if self.finished:
            return
        if self.phase == "load":
            self.load.drive()
            if self.load.done:
                self.phase = "run"
        if self.phase == "run":
            for p in (self.cmd, self.done, self.spy, self.spy_mon):
                p.drive()
        if self.phase == "read_start":
            pause = self.case.get("read_pause", "none")
            self.rreq = StreamSource(self.dut, "spad_rreq", self.reads, make_pause(pause, self.seed + 4))
            self.rdata = StreamSink(self.dut, "spad_rdata", make_pause(pause, self.seed + 5))
            self.phase = "read"
        if self.phase == "read":
            self.rreq.drive()
            self.rdata.drive()
        self.hbm.drive()

    def sample(self) -> None:
        """Settled before a rising edge: that edge's handshakes; phase changes take effect at the
        next falling edge."""
        cycle = self.cycle
        if self.phase == "load":
            self.load.sample()
        if self.phase == "run":
            cmd, done, spy, spy_mon = self.cmd, self.done, self.spy, self.spy_mon
            if cmd.sample():
                self.cmd_start.append(cycle)
            got = done.sample()
            if done.valid and len(self.done_valid) == len(done.received) - got:
                self.done_valid.append(cycle)
            spy.sample()
            spy_mon.sample()
            if got:
                self.done_cycle.append(cycle)
                if len(done.received) == self.n_cmds:
                    # stop the spy reads after the request on the port (a beat is never withdrawn)
                    spy.beats = spy.beats[:spy.sent + int(spy.valid)]
            if len(done.received) == self.n_cmds and len(spy_mon.received) == len(spy.beats):
                self.phase = "read_start"   # the read stack takes the ports at the next falling edge
        elif self.phase == "read":
            self.rreq.sample()
            self.rdata.sample()
            if len(self.rdata.received) == len(self.reads):
                self.finished = True
        self.hbm.sample()
        self.cycle += 1
        assert self.cycle < self.limit, f"timeout after {self.cycle} cycles in phase {self.phase}"


async def run_case(dut, clock: Clocked, g: SliceGeometry, case: dict) -> dict:
    """Commands end to end: results bit-exact, nothing lost, counters match the traffic."""
    rng = np.random.default_rng(case.get("seed", 1))
    numerics = case.get("numerics", "mu")
    cmds = _matmuls(g, case, rng)
    garbage = case.get("garbage", True)
    image = {c.w_addr: hbm_image(g, c.w, rng if garbage else None, ws=c.ws) for c in cmds}
    seed = case.get("seed", 1)

    await clock.reset(3, idle=[getattr(dut, f"{s}__valid") for s in ("cmd", "spad_w", "spad_rreq",
                                                                      "hbm_rdata")]
                      + [getattr(dut, f"{s}__ready") for s in ("done", "spad_rdata", "hbm_req")])

    loads = []
    x_mem = {}
    spad_w = spad_write_layout(g.addr_bits, g.width)
    for c in cmds:
        for i, wd in enumerate(x_words(g, c.x, rng if garbage else None, xs=c.xs)):
            loads.append(pack(spad_w, addr=c.x_addr + i, data=wd))
            x_mem[c.x_addr + i] = wd
        if c.y_init is not None:
            for i, wd in enumerate(y_words(g, c.y_init)):
                loads.append(pack(spad_w, addr=c.y_addr + i, data=wd))
    load = StreamSource(dut, "spad_w", loads, make_pause(case.get("load_pause", "none"), seed))
    cmd = StreamSource(dut, "cmd", [cmd_word(g, c) for c in cmds], make_pause("none"))
    done = StreamSink(dut, "done", make_pause(case.get("done_pause", "none"), seed + 1))
    hbm = HbmModel(dut, image, g, float(case.get("rate", g.row_bytes)), int(case.get("latency", 20)),
                   make_pause(case.get("req_pause", "none"), seed + 2),
                   make_pause(case.get("hbm_pause", "none"), seed + 3))
    reads = sorted({c.y_addr + i for c in cmds for i in range(c.mkn[0] * -(-c.mkn[2] // g.width))})
    # host reads of x words while the commands run ("spy_reads"): they share a read port with the
    # acc write-back's old-y reads and must return the right words in order
    spy_addrs = list(x_mem)
    n_spy = int(case.get("spy_reads", 0))
    spy_list = [spy_addrs[i % len(spy_addrs)] for i in range(n_spy)]
    spy = StreamSource(dut, "spad_rreq", spy_list, make_pause(case.get("read_pause", "none"), seed + 6))
    spy_mon = StreamSink(dut, "spad_rdata", make_pause(case.get("read_pause", "none"), seed + 7))
    loop = _CaseLoop(dut, case, seed, len(cmds), reads, load, cmd, done, spy, spy_mon, hbm)
    await clock.run(loop.step, (loop,), (loop,))
    rdata, cmd_start, done_cycle, done_valid = loop.rdata, loop.cmd_start, loop.done_cycle, loop.done_valid

    # ---- host reads during the run: the x words, in order
    spy_want = [x_mem[a] for a in spy.beats]
    assert spy_mon.received == spy_want, (
        f"host reads during the run: {len(spy_mon.received)} words, "
        f"{sum(a != b for a, b in zip(spy_mon.received, spy_want, strict=False))} wrong")

    # ---- results, bit-exact (every y word after all commands, acc chains included)
    words = dict(zip(reads, rdata.received, strict=True))
    want = expected_spad(g, cmds, numerics)
    for addr, lanes in want.items():   # every lane: past N those of the zeroed padding columns
        got = unpack_fp32(words[addr], g.width)
        bad = np.flatnonzero(got != lanes)
        owner = max(i for i, c in enumerate(cmds)
                    if c.y_addr <= addr < c.y_addr + c.mkn[0] * -(-c.mkn[2] // g.width))
        assert bad.size == 0, (
            f"y word {addr} (last written by command {owner}, M,K,N={cmds[owner].mkn}, "
            f"acc={cmds[owner].acc}): {bad.size} wrong lanes, first lane {bad[0]} = "
            f"{got[bad[0]]:#010x}, want {lanes[bad[0]]:#010x}; got {[hex(v) for v in got]}, "
            f"want {[hex(v) for v in lanes]}")

    # ---- counters against what the testbench saw and what the shapes imply
    exp = expected_counters(g, cmds)
    cnt = {name: read_int(getattr(dut, name)) for name in
           ("hbm_req_bytes", "hbm_rcv_bytes", "w_useful_elems", "w_pad_elems", "x_beats", "y_rows",
            "cycles")}
    assert cnt["hbm_req_bytes"] == hbm.requested_bytes == exp["hbm_req_bytes"], (cnt, exp)
    assert cnt["hbm_rcv_bytes"] == hbm.sent_bytes == exp["hbm_rcv_bytes"], (cnt, exp)
    keys = ("w_useful_elems", "w_pad_elems", "x_beats", "y_rows")
    if g.block:
        cnt["w_scale_bytes"] = read_int(dut.w_scale_bytes)
        keys += ("w_scale_bytes",)
    for key in keys:
        assert cnt[key] == exp[key], f"counter {key} = {cnt[key]}, shapes imply {exp[key]}"
    assert read_int(dut.row_error) == 0, "a unit returned an unexpected accumulator row"
    assert not hbm.queue, f"{len(hbm.queue)} HBM beats were never taken"
    cycles = [d & 0xFFFFFFFF for d in done.received]
    for i, (s, e) in enumerate(zip(cmd_start, done_valid, strict=True)):
        # done counts the edges from the command's acceptance to the one that raised done.valid
        assert cycles[i] == e - s, f"command {i}: done says {cycles[i]} cycles, tb saw {e - s}"
    total = read_int(dut.cycles)
    units = g.units
    for name in ("unit_busy", "unit_starved", "unit_backpressured"):
        v = read_int(getattr(dut, name))
        vals = unpack(unit_counters_layout(units), v)
        for u, val in enumerate(vals):
            assert val <= total, f"{name}[{u}] = {val} > {total} cycles"
            if name == "unit_busy":
                lo, hi = max(exp["w_rows"], exp["x_beats"]), exp["w_rows"] + exp["x_beats"]
                assert lo <= val <= hi, f"unit_busy[{u}] = {val} outside [{lo}, {hi}]"
        cnt[name] = vals
    sample_slice_case(g.width, cmds, len(spy_mon.received), cnt, done.backpressured)
    return {"cmd_cycles": cycles, "cmd_start": cmd_start, "done_cycle": done_cycle,
            "done_valid": done_valid, "first_beat_cycle": hbm.first_beat_cycle, "counters": cnt,
            "macs": [int(np.prod(c.mkn)) for c in cmds], "case": case}
