"""The drain steps of :class:`hw.mu.exact_acc.ExactAccumulator`: the captured carry-pending sum
to an FP32 code (:data:`hw.mu.exact_acc.DRAIN_STEPS`; the OCP MX window swaps in its own magnitude
and normalization, :func:`hw.mu.window.drain_steps`).

Each step is ``step(m, v, A, cb, dw) -> dict``: ``v`` the values the previous step (or the capture
register) left, ``A`` the accumulator's bits, ``cb`` its chunk bits, ``dw`` its widths; the
accumulator puts its drain registers between steps.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Signal, signed

from ..clock_gate import fanout
from ..formats import get_format
from ..fp.round import leading_zeros, pack_code

__all__ = ["carries", "resolve", "magnitude", "normalize", "round_pack", "prefix", "lookahead_add",
           "shift_left", "flags"]

FP32 = get_format("fp32")
_FP32_SIG = FP32.man_bits + 1  # significand bits of FP32 (hidden bit included)


def carries(m, v, A, cb, dw):
    """The carry into every chunk when the pending carries are resolved: each chunk's
    ``x_i + c_i`` gives a generate (carry out) and a propagate (all ones), and a parallel prefix
    over the chunks combines them (``cc[i]``: carry into chunk ``i + 1``)."""
    nc = -(-A // cb)
    gp = []
    for i in range(nc - 1):
        lo, hi = i * cb, min((i + 1) * cb, A)
        cin = v["c"][i - 1] if i > 0 else v.get("c0", Const(0, 1))
        a0 = Signal(hi - lo + 1, name=f"rc_s{i}")
        m.d.comb += a0.eq(v["x"][lo:hi] + cin)
        gp.append((a0[-1], a0[:-1].all()))
    grp = prefix(m, gp, name="rc") if gp else []
    cc = Signal(max(nc - 1, 1), name="rc_cc")
    m.d.comb += cc.eq(Cat(*grp) if grp else 0)
    return {"x": v["x"], "c": v["c"], "cc": cc, **{k: v[k] for k in ("c0",) if k in v},
            **flags(v)}


def resolve(m, v, A, cb, dw):
    """x + pending carries -> the A-bit two's-complement sum ``v``: every chunk adds its pending
    carry and its resolved carry-in, independently of the others."""
    nc = -(-A // cb)
    parts = []
    for i in range(nc):
        lo, hi = i * cb, min((i + 1) * cb, A)
        if i == 0 and "c0" not in v:
            parts.append(v["x"][lo:hi])
            continue
        if i == 0:
            t = Signal(hi - lo, name="rs_0")
            m.d.comb += t.eq(v["x"][lo:hi] + v["c0"])
            parts.append(t)
            continue
        t = Signal(hi - lo, name=f"rs_{i}")
        m.d.comb += t.eq(v["x"][lo:hi] + v["c"][i - 1] + v["cc"][i - 1])
        parts.append(t)
    sum_ = Signal(signed(A), name="res_v")
    m.d.comb += sum_.eq(Cat(*parts))
    return {"v": sum_, **flags(v)}


def magnitude(m, v, A, cb, dw, platform=None):
    """Sign and magnitude (``|v| < 2**(A-1)``): a negative v keeps its bits up to the lowest
    one and inverts the rest (an OR prefix, no carry chain). The sign reaches its A - 1 gates
    through buffers (:func:`hw.clock_gate.fanout`, with the caller's ``platform``)."""
    sign, mag = Signal(name="mag_sign"), Signal(A - 1, name="mag")
    below = prefix(m, [(v["v"][i], Const(1, 1)) for i in range(A - 2)], name="mo")
    flip = Cat(Const(0, 1), *below) & fanout(m, platform, sign, A - 1, "mag_sg")
    m.d.comb += [sign.eq(v["v"][-1]), mag.eq(v["v"][:A - 1] ^ flip)]
    return {"sign": sign, "mag": mag, **flags(v)}


def normalize(m, v, A, cb, dw, platform=None):
    """Leading-zero count and left shift (:func:`shift_left`). Keeps FP32's 24 significant bits
    and the guard bit of the normalized magnitude, ORs the rest into a sticky bit, and forms the
    biased exponent for both outcomes of the rounding (no carry into the next binade / a carry).
    For the rounding, which then only selects: whether the kept significand is all ones, and
    whether either exponent overflows."""
    mag = v["mag"]
    lz = leading_zeros(m, mag, name="n_lz")
    norm = shift_left(m, mag, lz, platform, name="n", per_buffer=16)
    keep = _FP32_SIG + 1  # significand and guard
    if len(norm) > keep:
        sig = Cat(norm[:len(norm) - keep].any(), norm[-keep:])
    else:  # fewer bits than FP32 keeps: exact, pad below
        sig = Cat(Const(0, keep + 1 - len(norm)), norm)
    sig_r = Signal(keep + 1, name="n_sig")  # {significand, guard, sticky}
    top = dw.lsb_exp + A - 2 + FP32.bias  # biased exponent of mag's MSB
    eb0, eb1 = Signal(10, name="n_eb0"), Signal(10, name="n_eb1")
    zero = Signal(name="n_zero")
    ones, over0, over1 = Signal(name="n_ones"), Signal(name="n_over0"), Signal(name="n_over1")
    m.d.comb += [sig_r.eq(sig), eb0.eq(top - lz), eb1.eq(top + 1 - lz), zero.eq(mag == 0),
                 ones.eq(sig[2:].all()), over0.eq(eb0 >= 255), over1.eq(eb1 >= 255)]
    return {"sig": sig_r, "eb0": eb0, "eb1": eb1, "zero": zero, "sign": v["sign"],
            "ones": ones, "over0": over0, "over1": over1, **flags(v)}


def shift_left(m, x, sh, platform=None, *, name: str, per_buffer: int = 32):
    """``x << sh`` truncated to ``len(x)``: a level of AND-OR selects per bit of ``sh``, each bit
    reaching its ``len(x)`` selects through buffers of ``per_buffer`` selects each
    (:func:`hw.clock_gate.fanout`, with the caller's ``platform``; each select loads the bit
    twice, as the shifted and as the held bit's enable). ``fanout`` adds no buffer where one
    share covers the word, so a word of at most ``per_buffer`` bits is driven by the bit's own
    gate: the drain's normalization, whose narrow formats shift words of 32 bits or fewer, uses
    16."""
    w = len(x)
    for i in range(len(sh)):
        s = fanout(m, platform, sh[i], w, f"{name}_s{i}", per_buffer=per_buffer)
        nxt = Signal(w, name=f"{name}_ext{i}")
        m.d.comb += nxt.eq(((x << (1 << i))[:w] & s) | (x & ~s))
        x = nxt
    return x


def round_pack(m, v, A, cb, dw):
    """RNE to FP32 and pack, with the specials: NaN (NaN seen, +Inf and -Inf seen, or the
    overflow mark), Inf, +0. The increment is an AND prefix (no carry chain); a carry out of the
    significand selects the next binade's exponent. Where the normalization formed them (both
    :func:`normalize` and the window's, :mod:`hw.mu.window`), the kept significand's all-ones bit
    (``ones``) and both exponents' overflow (``over0``, ``over1``) are only selected here; the
    subnormal flag (``sub``, the window's) takes the field from the rounded significand."""
    sig = v["sig"]
    kept, guard, sticky = sig[2:], sig[1], sig[0]
    up = Signal(name="r_up")
    m.d.comb += up.eq(guard & (sticky | kept[0]))
    ones = prefix(m, [(Const(0, 1), kept[i]) for i in range(_FP32_SIG)], name="ra", propagate=True)
    carry = Cat(up, *[up & ones[i] for i in range(_FP32_SIG - 1)])  # into bit i
    cout = Signal(name="r_cout")
    rounded = Signal(_FP32_SIG, name="r_sig")
    m.d.comb += [rounded.eq(kept ^ carry), cout.eq(up & v.get("ones", ones[-1]))]
    eb = Signal(10, name="r_eb")
    m.d.comb += eb.eq(Mux(cout, v["eb1"], v["eb0"]))
    if "sub" in v:  # a subnormal's field: 1 once the rounding carries into the hidden bit
        ebs = Signal(10, name="r_ebs")
        m.d.comb += ebs.eq(Mux(v["sub"], rounded[-1], eb))
        eb = ebs
    nan, pinf, ninf = (v.get(k, Const(0, 1)) for k in ("nan", "pinf", "ninf"))
    sign = Signal(name="r_sign")
    m.d.comb += sign.eq(Mux(pinf | ninf, ninf, v["sign"] & ~v["zero"]))
    flags = SimpleNamespace(sign=sign, is_nan=nan | v["ovf"] | (pinf & ninf),
                            is_inf=pinf | ninf, is_zero=v["zero"])
    code = Signal(32, name="r_code")
    over = Mux(cout, v["over1"], v["over0"]) if "over0" in v else eb >= 255
    pack_code(m, code, flags, FP32, flush=0, over=over,
              mag=Cat(rounded[:FP32.man_bits], eb[:FP32.exp_bits]))
    return {"code": code, "ovf": v["ovf"]}


def prefix(m, gp: list, *, name: str, propagate: bool = False) -> list:
    """Kogge-Stone prefix of (generate, propagate) pairs: element i of the result is the generate of
    elements 0..i (with every propagate 1 it is the OR of the generates 0..i), or with ``propagate``
    the propagate of 0..i (the AND of the propagates)."""
    g = [x for x, _ in gp]
    p = [y for _, y in gp]
    d, level = 1, 0
    while d < len(g):
        ng, np_ = list(g), list(p)
        for i in range(d, len(g)):
            ng[i] = Signal(name=f"{name}_g{level}_{i}")
            np_[i] = Signal(name=f"{name}_p{level}_{i}")
            m.d.comb += [ng[i].eq(g[i] | (p[i] & g[i - d])), np_[i].eq(p[i] & p[i - d])]
        g, p, d, level = ng, np_, 2 * d, level + 1
    return p if propagate else g


def lookahead_add(m, a, b, cin, *, name: str):
    """``a + b + cin`` (equal widths) with its carries from a :func:`prefix` over the bits'
    generate and propagate instead of a ripple: ``(sum, carry out)``."""
    n = len(a)
    g = [cin] + [a[i] & b[i] for i in range(n)]
    t = [Const(0, 1)] + [a[i] ^ b[i] for i in range(n)]
    cc = prefix(m, list(zip(g, t, strict=True)), name=name)  # cc[i]: carry into bit i (cc[n]: out)
    s = Signal(n, name=f"{name}_s")
    m.d.comb += s.eq(Cat(*[t[i + 1] ^ cc[i] for i in range(n)]))
    return s, cc[n]


def flags(v: dict) -> dict:
    """The overflow bit and the special flags carried down the drain (and the window's lost bit and
    anchor)."""
    return {k: v[k] for k in ("ovf", "nan", "pinf", "ninf", "lost", "b") if k in v}
