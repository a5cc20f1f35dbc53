"""cocotb test of the slice: HBM model, scratchpad host port, command and done streams, checks.

Knobs (environment, JSON): ``SLICE_CFG`` = :class:`tb.slice.layout.SliceGeometry` fields;
``SLICE_CASES`` = a list of {``shapes``: [[M, K, N], ...] or ``minilm``: op name (``ffn_up``), ``numerics``:
``mu`` | ``stub``, ``rate``: HBM bytes per cycle (float), ``latency``: cycles, ``hbm_pause``,
``req_pause``, ``read_pause``, ``done_pause``, ``load_pause``: pause specs (``tb.mu.stream.make_pause``),
``seed``, ``garbage``: fill padding with random codes}, run in turn with a reset between;
``SLICE_OUT``: a JSON file to write the measurements to (cycles per command, counters).

One clocked loop drives every port: after each rising edge the drivers present beats, at the falling
edge every handshake is sampled (the pattern of :mod:`tb.mu.stream`).
"""

import json
import os
from collections import deque

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge, Timer

from tb.mu.stream import StreamDriver, StreamMonitor, make_pause, read_int
from tb.slice.layout import (
    Matmul,
    SliceGeometry,
    cmd_word,
    expected_counters,
    expected_y,
    hbm_image,
    unpack_fp32,
    x_words,
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
        self.req = StreamMonitor(dut, "hbm_req", req_pause, callback=self._on_req)
        self.payload = dut.hbm_rdata__payload
        self.valid_h = dut.hbm_rdata__valid
        self.ready_h = dut.hbm_rdata__ready
        self.valid_h.value = 0
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
        aw = self.g.hbm_addr_bits
        addr, beats = beat & ((1 << aw) - 1), beat >> aw
        assert 1 <= beats <= self.g.burst, f"request of {beats} beats (burst {self.g.burst})"
        self.requested_bytes += beats * self.B
        for i in range(beats):
            self.queue.append((self.cycle + self.latency, self._read(addr + i * self.B)))

    def drive(self) -> None:
        self.req.drive()
        if self.fired:
            self.queue.popleft()
            self.sent_bytes += self.B
            self.valid = self.fired = False
        self.credit = min(self.credit + self.rate, self.cap)
        paused = next(self.pause)
        if (not self.valid and not paused and self.queue and self.queue[0][0] <= self.cycle
                and self.credit >= self.B):
            self.payload.value = self.queue[0][1]
            self.credit -= self.B
            self.valid = True
        self.valid_h.value = int(self.valid)

    def sample(self) -> None:
        self.req.sample()
        self.fired = self.valid and bool(self.ready_h.value)
        if self.fired and self.first_beat_cycle is None:
            self.first_beat_cycle = self.cycle
        self.cycle += 1


def _matmuls(g: SliceGeometry, case: dict, rng) -> list:
    if "minilm" in case:
        from tb.tiles import minilm, quant
        model = minilm.load()
        caps = []
        model.forward(model.tokenize(minilm.SENTENCES[0]), 0, caps)
        cap = next(c for c in caps if c.op == case["minilm"] and c.layer == case.get("layer", 0))
        row = case.get("token", 1)
        shapes = [(quant.quantize(cap.x[row:row + 1], g.fmt).codes,
                   quant.quantize(cap.w, g.fmt).codes)]
    else:
        shapes = []
        for mm, k, n in case["shapes"]:
            shapes.append((rng.integers(0, 1 << g.bits, size=(mm, k), dtype=np.uint8),
                           rng.integers(0, 1 << g.bits, size=(k, n), dtype=np.uint8)))
        if g.fmt == "fp8_e4m3" and case.get("numerics", "mu") == "mu":
            # keep random E4M3 operands finite (0x7F/0xFF are NaN): specials are the unit's tests
            shapes = [(np.where((x & 0x7F) == 0x7F, x ^ 1, x), np.where((w & 0x7F) == 0x7F, w ^ 1, w))
                      for x, w in shapes]
    D, words = g.width, 1 << g.addr_bits
    cmds, spad, w_addr = [], 0, 64
    for x, w in shapes:
        (mm, k), n = x.shape, w.shape[1]
        kt, nt = -(-k // D), -(-n // D)
        x_addr, y_addr = spad, spad + mm * kt
        spad = y_addr + mm * nt
        assert spad <= words, f"scratchpad too small: {spad} words needed, {words} available"
        cmds.append(Matmul(x, w, x_addr, y_addr, w_addr))
        w_addr += len(hbm_image(g, w)) + 3 * g.feed_bytes + 7   # deliberately unaligned
    return cmds


@cocotb.test()
async def slice_matmuls(dut):
    """Every case of ``SLICE_CASES`` in turn (reset between): results, losses, counters."""
    g = SliceGeometry(**json.loads(os.environ["SLICE_CFG"]))
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    results = []
    for case in json.loads(os.environ["SLICE_CASES"]):
        dut._log.info("case %s", case)
        results.append(await run_case(dut, g, case))
    out = os.environ.get("SLICE_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(results, fh)


async def run_case(dut, g: SliceGeometry, case: dict) -> dict:
    """Commands end to end: results bit-exact, nothing lost, counters match the traffic."""
    rng = np.random.default_rng(case.get("seed", 1))
    numerics = case.get("numerics", "mu")
    cmds = _matmuls(g, case, rng)
    garbage = case.get("garbage", True)
    image = {c.w_addr: hbm_image(g, c.w, rng if garbage else None) for c in cmds}
    seed = case.get("seed", 1)

    dut.rst.value = 1
    for s in ("cmd", "spad_w", "spad_rreq", "hbm_rdata"):
        getattr(dut, f"{s}__valid").value = 0
    for s in ("done", "spad_rdata", "hbm_req"):
        getattr(dut, f"{s}__ready").value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0

    loads = []
    for c in cmds:
        for i, wd in enumerate(x_words(g, c.x, rng if garbage else None)):
            loads.append(wd << g.addr_bits | (c.x_addr + i))
    load = StreamDriver(dut, "spad_w", loads, make_pause(case.get("load_pause", "none"), seed))
    cmd = StreamDriver(dut, "cmd", [cmd_word(g, c) for c in cmds], make_pause("none"))
    done = StreamMonitor(dut, "done", make_pause(case.get("done_pause", "none"), seed + 1))
    hbm = HbmModel(dut, image, g, float(case.get("rate", g.row_bytes)), int(case.get("latency", 20)),
                   make_pause(case.get("req_pause", "none"), seed + 2),
                   make_pause(case.get("hbm_pause", "none"), seed + 3))
    reads = [c.y_addr + i for c in cmds for i in range(c.mkn[0] * -(-c.mkn[2] // g.width))]
    rreq = StreamDriver(dut, "spad_rreq", reads, make_pause(case.get("read_pause", "none"), seed + 4))
    rdata = StreamMonitor(dut, "spad_rdata", make_pause(case.get("read_pause", "none"), seed + 5))

    cycle = 0
    cmd_start, done_cycle, done_valid = [], [], []
    phase = "load"
    limit = int(case.get("max_cycles", 2_000_000))
    while True:
        await RisingEdge(dut.clk)
        # Writes made in the rising edge's own callback can reach the flops of that same edge with
        # Verilator; a step later they cannot (the beats below are meant for the next edge).
        await Timer(1, "ns")
        if phase == "load":
            load.drive()
            if load.done:
                phase = "run"
        if phase == "run":
            cmd.drive()
            done.drive()
        if phase == "read":
            rreq.drive()
            rdata.drive()
        hbm.drive()
        await FallingEdge(dut.clk)
        if phase == "load":
            load.sample()
        if phase == "run":
            if cmd.sample():
                cmd_start.append(cycle)
            got = done.sample()
            if done.valid and len(done_valid) == len(done.received) - got:
                done_valid.append(cycle)
            if got:
                done_cycle.append(cycle)
                if len(done.received) == len(cmds):
                    phase = "read"
        elif phase == "read":
            rreq.sample()
            rdata.sample()
            if len(rdata.received) == len(reads):
                break
        hbm.sample()
        cycle += 1
        assert cycle < limit, f"timeout after {cycle} cycles in phase {phase}"

    # ---- results, bit-exact
    words = dict(zip(reads, rdata.received, strict=True))
    for i, c in enumerate(cmds if numerics != "timing" else []):
        mm, k, n = c.mkn
        nt = -(-n // g.width)
        got = np.zeros((mm, nt * g.width), dtype=np.uint32)
        for r in range(mm):
            for t in range(nt):
                got[r, t * g.width:(t + 1) * g.width] = unpack_fp32(words[c.y_addr + r * nt + t],
                                                                    g.width)
        want = expected_y(g, c.x, c.w, numerics)
        bad = np.argwhere(got[:, :n] != want)
        assert bad.size == 0, (f"command {i} (M,K,N={mm},{k},{n}): {len(bad)} wrong results, first "
                               f"y[{bad[0][0]},{bad[0][1]}] = {got[tuple(bad[0])]:#010x}, "
                               f"want {want[tuple(bad[0])]:#010x}")

    # ---- counters against what the testbench saw and what the shapes imply
    exp = expected_counters(g, cmds)
    cnt = {name: read_int(getattr(dut, name)) for name in
           ("hbm_req_bytes", "hbm_rcv_bytes", "w_useful_elems", "w_pad_elems", "x_beats", "y_rows",
            "cycles")}
    assert cnt["hbm_req_bytes"] == hbm.requested_bytes == exp["hbm_req_bytes"], (cnt, exp)
    assert cnt["hbm_rcv_bytes"] == hbm.sent_bytes == exp["hbm_rcv_bytes"], (cnt, exp)
    for key in ("w_useful_elems", "w_pad_elems", "x_beats", "y_rows"):
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
        vals = [(v >> (32 * u)) & 0xFFFFFFFF for u in range(units)]
        for u, val in enumerate(vals):
            assert val <= total, f"{name}[{u}] = {val} > {total} cycles"
            if name == "unit_busy":
                lo, hi = max(exp["w_rows"], exp["x_beats"]), exp["w_rows"] + exp["x_beats"]
                assert lo <= val <= hi, f"unit_busy[{u}] = {val} outside [{lo}, {hi}]"
        cnt[name] = vals
    return {"cmd_cycles": cycles, "cmd_start": cmd_start, "done_cycle": done_cycle,
            "done_valid": done_valid, "first_beat_cycle": hbm.first_beat_cycle, "counters": cnt,
            "macs": [int(np.prod(c.mkn)) for c in cmds], "case": case}
