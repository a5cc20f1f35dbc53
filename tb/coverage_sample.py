"""Samplers of the cover points of :mod:`tb.coverage`, called by the testbenches after each run.

* :func:`sample_program`: operand classes (vectorized over every beat), schedule shapes (swaps,
  one-beat tiles, row changes and interleaving) and the numeric events of the accumulation: ties
  and binade carries at the FP32 rounding point, massive and exact cancellation, NaN/Inf in each
  position. The numeric events need the exact sums, so they are computed with the model's exact
  integer functions (:func:`tb.mu.model.exact_dot`, :func:`tb.mu.rounding.accumulate`) on the first
  :data:`MAX_ELEMENTS` column results of the run (a bounded cost per run; the adversarial programs
  are short, so they are sampled whole).
* :func:`sample_stalls`: stalls on each stream, from what a run observed.
* :func:`sample_slice_case`: the slice's command shapes, accumulate modes, host reads during a run,
  feed starvation and backpressure.

Coverage is an observation, not a check: a sampler never asserts on the design's output.
"""

from __future__ import annotations

import numpy as np

from hw.formats import BLOCK_FORMATS, CLASSES, get_format
from tb.mu.rounding import WINDOW_FRAC_BITS

from .coverage import flush, hit

__all__ = ["sample_program", "sample_stalls", "sample_slice_case", "MAX_ELEMENTS"]

#: Column results per run whose exact sums are examined for the rounding and cancellation points
#: (16x more in the ``exact`` mode, whose one rounding comes at the end of long accumulations).
MAX_ELEMENTS = 8192


def _round_events(n: int, e: int):
    """(inexact, tie kept even, tie rounded up, carry into a new binade) of RNE_fp32(n * 2**e)."""
    a = -n if n < 0 else n
    q = max(a.bit_length() - 1 + e, -126) - 23
    shift = q - e
    if shift <= 0:
        return False, False, False, False
    rem, half, m = a & ((1 << shift) - 1), 1 << (shift - 1), a >> shift
    tie = rem == half
    up = rem > half or (tie and m & 1)
    return rem != 0, tie and not m & 1, tie and bool(m & 1), bool(up) and ((m + 1) & m) == 0


def _exponent(n: int, e: int) -> int:
    return (-n if n < 0 else n).bit_length() + e


def _sum(an: int, ae: int, bn: int, be: int):
    """Exact ``an * 2**ae + bn * 2**be`` as (n, e)."""
    if ae <= be:
        return an + (bn << (be - ae)), ae
    return (an << (ae - be)) + bn, be


def _operands(prog, f):
    """Operand classes of ``x`` and every tile, in element format ``f``."""
    fmt = f.name
    xc = np.bincount(f.classify(np.asarray(prog.x).ravel()), minlength=len(CLASSES))
    wc = np.bincount(f.classify(np.concatenate([np.asarray(t).ravel() for t in prog.tiles])),
                     minlength=len(CLASSES))
    for pos, counts in (("x", xc), ("w", wc)):
        for cls, n in zip(CLASSES, counts, strict=True):
            if n and (cls not in ("nan", "inf") or getattr(f, f"has_{cls}")):
                hit(f"operand.{fmt}.{pos}.{cls}", int(n))


def _schedule(prog):
    swap, row = np.asarray(prog.swap, bool), np.asarray(prog.row)
    hit("protocol.back_to_back_swaps", int((swap[:-1] & swap[1:]).sum()))
    starts = np.flatnonzero(swap).tolist() + [len(swap)]
    hit("protocol.single_beat_tile", int((np.diff(starts) == 1).sum()))
    hit("protocol.row_change", int((row[1:] != row[:-1]).sum()))
    open_rows = set()
    for r, fst, lst in zip(row.tolist(), prog.first.tolist(), prog.last.tolist(), strict=True):
        if fst:
            open_rows.discard(r)
        if open_rows - {r}:
            hit("protocol.row_interleave")
        if lst:
            open_rows.discard(r)
        else:
            open_rows.add(r)


def _specials(prog, codec, t, beats):
    """Inf x 0 and +Inf/-Inf products within beats of tile ``t`` (only beats meeting an Inf)."""
    f = codec.fmt
    if not f.has_inf:
        return
    x, w = np.asarray(prog.x)[beats], np.asarray(prog.tiles[t])
    rows = np.flatnonzero(codec.is_inf[x].any(1) | codec.is_inf[w].any())
    for i in rows[:64]:
        xi = x[i][:, None]
        hit(f"special.{f.name}.inf_times_zero",
            int(((codec.is_inf[xi] & codec.is_zero[w]) | (codec.is_zero[xi] & codec.is_inf[w])).any()))
        infp = codec.is_inf[xi] | codec.is_inf[w]
        neg = codec.neg[xi] ^ codec.neg[w]
        hit(f"special.{f.name}.inf_minus_inf", int(((infp & neg).any(0) & (infp & ~neg).any(0)).any()))


def _block(prog):
    """Block-scaled programs: element operand classes, the schedule and the scale events. The
    numeric events of the window and the FP32 rounding are not sampled for them."""
    bf = BLOCK_FORMATS[prog.fmt]
    _operands(prog, bf.element_format)
    _schedule(prog)
    _, xe, xnan = bf.scale_split(np.asarray(prog.xscales))
    hit(f"block.{prog.fmt}.nan_scale", int(xnan.sum()))
    starts = np.flatnonzero(prog.swap).tolist() + [prog.n_beats]
    for t in range(len(starts) - 1):
        _, we, wnan = bf.scale_split(np.asarray(prog.wscales[t]))      # (D/B, D)
        hit(f"block.{prog.fmt}.nan_scale", int(wnan.sum()))
        e = xe[starts[t]:starts[t + 1], :, None] + we[None]              # (beats, D/B, D)
        spread = e.max(axis=1) - e.min(axis=1)
        hit(f"block.{prog.fmt}.scale_spread", int((spread > WINDOW_FRAC_BITS).sum()))


def sample_program(prog, acc: str = "fp32", overflows: int = 0) -> None:
    """Sample one program's operands, schedule and numeric events (see the module docstring)."""
    from tb.mu.model import ElementCodec, exact_dot
    from tb.mu.rounding import FINITE, NAN, NINF, PINF, accumulate, fp32_exact

    if prog.fmt in BLOCK_FORMATS:
        _block(prog)
        return
    codec = ElementCodec(prog.fmt)
    f, fmt = get_format(prog.fmt), prog.fmt
    _operands(prog, f)
    _schedule(prog)
    if overflows:
        hit("overflow.exact.guard_bits", overflows)
    e = 2 * codec.lsb
    D = prog.width
    accs = {}                     # row -> list of FP32 bits (fp32) or [total, max |S|] (exact)
    starts = np.flatnonzero(prog.swap).tolist() + [prog.n_beats]
    budget = MAX_ELEMENTS * (16 if acc == "exact" else 1)
    for t in range(len(starts) - 1):
        if budget <= 0:
            break
        beats = np.arange(starts[t], min(starts[t + 1], starts[t] + max(1, budget // D)))
        budget -= len(beats) * D
        _specials(prog, codec, t, beats)
        num, cls = exact_dot(codec, np.asarray(prog.x)[beats], prog.tiles[t])
        for k, i in enumerate(beats.tolist()):
            r, first, last = int(prog.row[i]), bool(prog.first[i]), bool(prog.last[i])
            if acc == "exact":
                _exact_beat(accs, r, first, last, num[k], cls[k], e, FINITE)
                continue
            old = None if first else accs.get(r)
            new = []
            for j in range(D):
                a = None if old is None else old[j]
                c, s = int(cls[k][j]), int(num[k][j])
                if a is not None:
                    acls, an, ae = fp32_exact(a)
                    if acls == NAN:
                        hit(f"special.{fmt}.acc_nan_sticky")
                    elif acls in (PINF, NINF) and c in (PINF, NINF) and c != acls:
                        hit(f"special.{fmt}.acc_inf_then_opposite")
                    elif acls == FINITE and c == FINITE:
                        vn, ve = _sum(an, ae, s, e)
                        _value_events("fp32", vn, ve, (an, ae), (s, e))
                        if an and vn and _exponent(vn, ve) > _exponent(an, ae):
                            hit("round.fp32.binade_up")
                elif c == FINITE:
                    _value_events("fp32", s, e, (s, e))
                new.append(accumulate(a, s, c, e))
            accs[r] = new


def _value_events(acc, vn, ve, *terms):
    """Rounding and cancellation events of an exact value ``vn * 2**ve`` made of ``terms``."""
    inexact, tie_even, tie_odd, carry = _round_events(vn, ve)
    hit(f"round.{acc}.inexact", int(inexact))
    hit(f"round.{acc}.tie_even", int(tie_even))
    hit(f"round.{acc}.tie_odd", int(tie_odd))
    hit(f"round.{acc}.carry_binade", int(carry))
    nonzero = [(n, e) for n, e in terms if n]
    if len(nonzero) >= 2 or (acc == "exact" and nonzero):
        if vn == 0:
            hit(f"cancel.{acc}.exact_zero")
        elif max(_exponent(n, e) for n, e in nonzero) - _exponent(vn, ve) >= 24:
            hit(f"cancel.{acc}.massive")


def _exact_beat(accs, r, first, last, num, cls, e, finite):
    """The exact mode: sums per row (object arrays of Python ints), events at the one rounding on
    ``last``."""
    s = np.where(cls == finite, num, 0)
    if first or r not in accs:
        accs[r] = [s, np.abs(s)]
    else:
        accs[r] = [accs[r][0] + s, np.maximum(accs[r][1], np.abs(s))]
    if last:
        tot, big = accs[r]
        for j in range(len(num)):
            _value_events("exact", int(tot[j]), e, (int(big[j]), e))


def sample_stalls(w_paused: int, x_paused: int, stall_tile: int, stall_y: int, w_backpressure: int,
                  final: bool = True) -> None:
    """Stalls a run observed on each stream; ``final``: write this process's counts."""
    hit("protocol.stall_w", w_paused)
    hit("protocol.stall_x", x_paused)
    hit("protocol.stall_tile", stall_tile)
    hit("protocol.stall_y", stall_y)
    hit("protocol.w_backpressure", w_backpressure)
    if final:
        flush()


def sample_slice_case(width: int, cmds: list, spy_received: int, counters: dict,
                      done_backpressured: int) -> None:
    """One slice case: command shapes and modes, host reads, starvation and backpressure."""
    for c in cmds:
        m, k, n = c.mkn
        hit("slice.ragged_k", int(k % width != 0))
        hit("slice.ragged_n", int(n % width != 0))
        hit("slice.single_element", int(m == k == n == 1))
        if not c.acc:
            hit("slice.acc_overwrite")
        elif c.y_init is not None:
            hit("slice.acc_host_y")
        else:
            hit("slice.acc_chain")
    hit("slice.host_reads_during_run", spy_received)
    hit("slice.feed_starvation", int(sum(counters.get("unit_starved", [0])) > 0))
    hit("slice.unit_backpressure", int(sum(counters.get("unit_backpressured", [0])) > 0))
    hit("slice.done_backpressure", done_backpressured)
    flush()
