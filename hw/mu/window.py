"""The ``exact`` accumulate mode on OCP MX formats: exact sums in a window that slides up with the
largest block term, rounded once (contract: ``docs/numerics.md`` section 7.7).

E8M0 scales move a block term over ``2**-254 .. 2**256`` (times the element range), so an exact
K-long sum would need 550+ bits per row. The window keeps ``A`` bits of two's complement whose LSB
weight is set by a per-row *anchor* ``b`` (a multiple of ``Q`` = ``chunk_bits`` binades): the
largest term seen so far sits at the top below the guard bits, everything within about ``A - Wt - g``
binades below it is added exactly, and what falls below the window is dropped (floor) and remembered
as one sticky ``lost`` bit, which enters the one rounding as half an LSB. Without a loss the result
is the correctly rounded exact sum.

Geometry (:func:`window_widths`), with ``Wt`` the bits of a block's tree sum, ``g`` guard bits, ``lb =
ceil(log2 D/B)`` and ``E' = e(sx) + e(sw) + 254`` in ``0 .. 510``:

* the window LSB is ``2**L(b)``, ``L(b) = -254 + lsb_exp + Q b - H``, with ``H = A - 1 - Wt - g - lb``
  the highest LSB position of a term, so ``|sum| <= 2**(A-2)`` over ``2**g`` beats;
* a nonzero term needs ``b >= ceil(E' / Q)``; a beat's anchor is the largest need of its terms, the
  row's the largest of its beats' (a zero term needs nothing);
* a term sits at ``p = E' + H - Q b`` under its row's anchor (floor-shifted right when ``p < 0``);
  when a beat raises the anchor, the row's sum is floor-shifted right by ``Q`` times the rise first.

Hardware (in :class:`hw.mu.exact_acc.ExactAccumulator` with an MX format): three placement stages
(:func:`place_needs`: the needs, the beat's anchor and the offsets; :func:`anchor_step` and
:func:`offsets`: the rows' anchors two stages ahead of the loop and each term's offset below its
row's; :func:`place_terms`: the terms shifted there, compressed to two rows, beside
:func:`move_select`: the row's move as one-hot selects), a per-beat loop whose only additions
are the carry-pending chunk adds of the ``exact`` mode, each a lookahead adder
(:func:`realign`: the row's sum moves down by whole chunks, a two-level arithmetic shift of the
pending sum whose dropped part's carry and zero test come from a prefix over the chunks, no carry
propagation; a move past the whole window takes the row's resolved sign, a state bit
:func:`resolved_sign` forms beside the chunk adds), and a drain with a variable exponent and
subnormals (:func:`drain_steps`: its magnitude's OR prefix starts from per-chunk nonzero flags
registered with the resolved sum).
"""

from dataclasses import dataclass
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from ..clock_gate import fanout, gated_assign
from ..formats import BLOCK_FORMATS, get_block_format, get_format
from ..fp.booth import dadda_reduce
from ..fp.round import leading_zeros
from .exact_drain import flags, prefix, shift_left
from .numerics import EXACT_SPAN_MAX, dot_widths, scale_span
from .scales import finish_sum

__all__ = ["WINDOW_ROOM", "WindowWidths", "window_widths", "windowed", "window_inputs", "place_needs",
           "offsets", "place_terms", "anchor_step", "MOVE_GROUP", "move_select", "realign",
           "resolved_sign", "drain_steps"]

FP32 = get_format("fp32")
#: Binades below the largest term's LSB that a window holds at least (rounded up to whole chunks).
WINDOW_ROOM = 64
_EXP_BITS = 10  # signed bits of a block's exponent sum e(sx) + e(sw) (hw.mu.scales.SCALE_EXP_BITS + 1)


def windowed(fmt) -> bool:
    """Whether block-scaled ``fmt``'s ``exact`` mode is the window (its scale exponent sums span
    more than :data:`~hw.mu.numerics.EXACT_SPAN_MAX` binades: OCP MX) rather than a fixed grid."""
    return isinstance(fmt, str) and fmt in BLOCK_FORMATS and scale_span(fmt) > EXACT_SPAN_MAX


@dataclass(frozen=True)
class WindowWidths:
    """The window of an MX format's ``exact`` mode at D = ``width`` (see the module docstring).

    Attributes
    ----------
    fmt : SimpleNamespace
        ``name`` and the special-value flags of the beat (NaN: scales can be NaN; Inf as the element).
    width, blocks, term_bits, exp_bits : int
        D, D/B, Wt (signed bits of a block's tree sum) and the signed bits of its exponent sum.
    exp_min, lsb_exp : int
        Smallest exponent sum (-254) and the element product's LSB exponent.
    chunk_bits, guard_bits : int
        Q (a power of two, >= 4) and g.
    acc_bits, top : int
        A (a multiple of Q) and H.
    anchor_max : int
        Largest anchor, ``ceil(E'max / Q)``.
    """

    fmt: SimpleNamespace
    width: int
    blocks: int
    term_bits: int
    exp_bits: int
    exp_min: int
    lsb_exp: int
    chunk_bits: int
    guard_bits: int
    acc_bits: int
    top: int
    anchor_max: int

    @property
    def anchor_bits(self) -> int:
        return self.anchor_max.bit_length()

    @property
    def chunks(self) -> int:
        return self.acc_bits // self.chunk_bits

    @property
    def shift_bits(self) -> int:
        """Bits of a term's offset ``Q b - E'`` below its beat's anchor (0 .. Q anchor_max)."""
        return (self.chunk_bits * self.anchor_max).bit_length()

    def lsb(self, b: int) -> int:
        """L(b): the weight exponent of the window's LSB at anchor ``b``."""
        return self.exp_min + self.lsb_exp + self.chunk_bits * b - self.top

    def need(self, e: int) -> int:
        """The smallest anchor holding a nonzero term of exponent sum ``e`` below the guard bits."""
        return -(-(e - self.exp_min) // self.chunk_bits)


def window_widths(fmt: str, width: int, guard_bits: int, chunk_bits: int = 8,
                  room: int = WINDOW_ROOM) -> WindowWidths:
    """The :class:`WindowWidths` of MX format ``fmt`` at D = ``width``.

    Raises
    ------
    ValueError
        ``fmt`` is not windowed, or ``chunk_bits`` is not a power of two >= 4.
    """
    if not windowed(fmt):
        raise ValueError(f"{fmt!r} has no window: the window is the exact mode of the formats with "
                         f"E8M0 scales ({', '.join(n for n in BLOCK_FORMATS if windowed(n))})")
    if chunk_bits < 4 or chunk_bits & (chunk_bits - 1):
        raise ValueError(f"chunk_bits must be a power of two >= 4 in the window, not {chunk_bits}")
    bf = get_block_format(fmt)
    nb = bf.check_width(width)
    dw = dot_widths(bf.element, bf.block)
    lo, hi = bf.scale_format.exp_range
    lb = (nb - 1).bit_length()
    wt = dw.sum_bits
    a = -(-(wt + guard_bits + lb + 1 + room) // chunk_bits) * chunk_bits
    e_top = 2 * (hi + 1) - 2 * lo  # E' of the largest code (the NaN code decodes one above hi)
    flags = SimpleNamespace(name=bf.name, has_nan=True, has_inf=bf.element_format.has_inf)
    return WindowWidths(flags, width, nb, wt, _EXP_BITS, 2 * lo, dw.lsb_exp, chunk_bits,
                        guard_bits, a, a - 1 - wt - guard_bits - lb, -(-e_top // chunk_bits))


def window_inputs(m: Module, acc, parts, exps, nans, pinfs, ninfs, nzs) -> list:
    """Drive the window accumulator ``acc`` with a column's block terms (the block trees' sums, added
    here from :func:`hw.mu.scales.split_sum`'s half-added ``parts``: the second half of the adder
    runs beside the accumulator's first placement stage, which takes the terms' zero tests from
    ``nzs``) and exponent sums (:func:`hw.mu.scales.block_terms`); returns the statements of its
    special-value inputs (NaN wins, +Inf with -Inf is NaN)."""
    wt = len(acc.t) // len(parts)
    terms = [finish_sum(m, p, wt, name=f"bt{i}") for i, p in enumerate(parts)]
    m.d.comb += [acc.t.eq(Cat(*terms)), acc.e.eq(Cat(*exps)), acc.nz.eq(Cat(*nzs))]
    pinf = Cat(*pinfs).any() if pinfs else Const(0, 1)
    ninf = Cat(*ninfs).any() if ninfs else Const(0, 1)
    out = [acc.s_nan.eq(Cat(*nans).any() | (pinf & ninf))]
    if hasattr(acc, "s_inf"):
        out += [acc.s_inf.eq(pinf | ninf), acc.s_inf_neg.eq(ninf)]
    return out


# ------------------------------------------------------------------------------------ placement
def place_needs(m: Module, ww: WindowWidths, t, e, nz, en, *, platform=None, valid=None) -> dict:
    """The beat's first placement stage (registered, enabled by ``en``; clock-gated to ``en &
    valid`` when ``valid`` is given, :func:`hw.clock_gate.gated_assign` with the caller's
    ``platform``): each block's need ``ceil(E'/Q)`` (0 for a zero term: ``nz`` has a bit per block,
    ``t != 0``, so the needs do not wait for the terms), the beat's anchor ``need`` (their largest),
    each term and its offset ``d = Q need - E'`` below that anchor (0 for a zero term)."""
    Q, nb, wt = ww.chunk_bits, ww.blocks, ww.term_bits
    qs = Q.bit_length() - 1
    es = [e[i * _EXP_BITS:(i + 1) * _EXP_BITS].as_signed() for i in range(nb)]
    # per block: its need and the exponent it rounds up to, u = Q need + exp_min (>= e)
    needs, ups = [], []
    for i in range(nb):
        nd = Signal(ww.anchor_bits, name=f"wp{i}_need")
        u = Signal(signed(_EXP_BITS + 1), name=f"wp{i}_u")
        m.d.comb += [nd.eq((es[i] - ww.exp_min + (Q - 1)) >> qs), u.eq((nd << qs) + ww.exp_min)]
        needs.append(nd)
        ups.append(u)
    # the beat's anchor is the need of its largest nonzero term (the first of equals): every
    # comparison and every candidate offset u_j - e_i at once, then a one-hot select
    win = []
    for j in range(nb):
        beats = [~nz[i] | (es[j] > es[i] if i < j else es[j] >= es[i]) for i in range(nb) if i != j]
        w = Signal(name=f"wp{j}_win")
        m.d.comb += w.eq(nz[j] & (Cat(*beats).all() if beats else 1))
        win.append(w)
    need = Signal(ww.anchor_bits, name="wp_need")
    m.d.comb += need.eq(_one_hot(win, needs))
    s1 = {"need": need}
    for i in range(nb):
        cands = []
        for j in range(nb):
            c = Signal(ww.shift_bits, name=f"wp{i}_c{j}")
            m.d.comb += c.eq(ups[j] - es[i])
            cands.append(c)
        d = Signal(ww.shift_bits, name=f"wp{i}_d")
        m.d.comb += d.eq(Mux(nz[i], _one_hot(win, cands), 0))
        s1[f"d{i}"], s1[f"t{i}"] = d, t[i * wt:(i + 1) * wt].as_signed()
    regs = {k: Signal.like(v, name=f"wq_{k}", reset_less=True) for k, v in s1.items()}
    if valid is not None:
        gated_assign(m, platform, en & valid, [(regs[k], v) for k, v in s1.items()], "wqg")
        return regs
    with m.If(en):
        m.d.sync += [regs[k].eq(v) for k, v in s1.items()]
    return regs


def _one_hot(sel: list, vals: list):
    """``vals[j]`` for the one ``sel[j]`` that is high (0 when none is): an AND-OR."""
    return Cat(*[Cat(*[s & v[k] for s, v in zip(sel, vals, strict=True)]).any()
                 for k in range(len(vals[0]))])


def offsets(m: Module, ww: WindowWidths, regs: dict, kt) -> dict:
    """Each term's offset below its row's new anchor, ``d + Q kt`` (``d`` below the beat's own
    anchor, from :func:`place_needs`; ``kt`` from :func:`anchor_step`), clamped to the shift that
    leaves a term's sign only (so the register before :func:`place_terms` drives the shifter's
    selects), and the terms."""
    qs = ww.chunk_bits.bit_length() - 1
    span = ww.term_bits + ww.top  # bits of t << H
    out = {}
    for i in range(ww.blocks):
        d = Signal(ww.shift_bits + 1, name=f"wo{i}_d")
        dc = Signal(range(span + 1), name=f"wo{i}_dc")
        m.d.comb += [d.eq(regs[f"d{i}"] + (kt << qs)), dc.eq(Mux(d > span, span, d))]
        out[f"d{i}"], out[f"t{i}"] = dc, regs[f"t{i}"]
    return out


def place_terms(m: Module, ww: WindowWidths, regs: dict) -> dict:
    """The beat's last placement stage: every term floor-shifted to its position ``H - d`` under
    its row's new anchor (``t << (H - d)``, or right with the dropped bits' OR in ``tloss``; ``d``
    from :func:`offsets`, at most ``Wt + H``), and the terms compressed to two rows ``u + v = T``
    modulo ``2**A`` (a Dadda tree; one term is its own row). No carry-propagate adder: the loop
    adds the rows."""
    A, H, nb, wt = ww.acc_bits, ww.top, ww.blocks, ww.term_bits
    span = wt + H  # bits of t << H; a shift right by span leaves the sign only
    placed, losses = [], []
    for i in range(nb):
        ti, dc = regs[f"t{i}"].as_signed(), regs[f"d{i}"]
        ext = Signal(signed(span), name=f"wq{i}_ext")
        v = Signal(signed(A), name=f"wq{i}_v")
        lost = Signal(name=f"wq{i}_lost")  # t's bit j sits at j + H of ext
        kept = Signal(span, name=f"wq{i}_kept")  # ones where ext's bits survive the shift
        m.d.comb += [ext.eq(ti << H), v.eq(ext >> dc),
                     kept.eq(Const((1 << span) - 1, span) << dc), lost.eq((ext & ~kept).any())]
        placed.append(v)
        losses.append(lost)
    u, v = Signal(A, name="wq_u"), Signal(A, name="wq_v")
    if nb == 1:
        m.d.comb += [u.eq(placed[0]), v.eq(0)]
    else:
        rows = dadda_reduce(m, [[p[k] for p in placed] for k in range(A)], name="wq_dd")
        m.d.comb += [u.eq(rows[0]), v.eq(rows[1])]
    tloss = Signal(name="wq_tloss")
    m.d.comb += tloss.eq(Cat(*losses).any())
    return {"u": u, "v": v, "tloss": tloss}


def anchor_step(m: Module, ww: WindowWidths, need, *, rows: int, first, row, take,
                platform=None, gate: bool = False):
    """The rows' anchors, two stages ahead of the accumulate loop: the beat's row's anchor (0 on
    ``first``) against the beat's ``need``. Returns ``kr`` (chunks the row's sum moves down), ``kt``
    (chunks the beat's terms move down below their own anchor) and ``b`` (the new anchor), and
    writes ``b`` into the row's anchor register when ``take`` (with ``gate``: through a clock
    gate per row, :func:`hw.clock_gate.gated_assign` with the caller's ``platform``)."""
    ab = ww.anchor_bits
    regs = [Signal(ab, name=f"wa{r}_b") for r in range(rows)]
    cur = Signal(ab, name="wa_cur")
    if rows > 1:
        with m.Switch(row):
            for r in range(rows - 1):
                with m.Case(r):
                    m.d.comb += cur.eq(regs[r])
            with m.Default():
                m.d.comb += cur.eq(regs[-1])
    else:
        m.d.comb += cur.eq(regs[0])
    diff = Signal(signed(ab + 1), name="wa_diff")  # need - the row's anchor (first: need wins)
    up = Signal(name="wa_up")
    kr, kt, b = Signal(ab, name="wa_kr"), Signal(ab, name="wa_kt"), Signal(ab, name="wa_b")
    m.d.comb += [diff.eq(need - cur), up.eq(diff > 0),
                 kr.eq(Mux(up & ~first, diff, 0)), kt.eq(Mux(first | up, 0, -diff)),
                 b.eq(Mux(first | up, need, cur))]
    for r, reg in enumerate(regs):
        load = take if rows == 1 else take & (row == r)
        if gate:
            gated_assign(m, platform, load, [(reg, b)], f"wa{r}g")
        else:
            with m.If(load):
                m.d.sync += reg.eq(b)
    return {"kr": kr, "kt": kt, "b": b}


# ----------------------------------------------------------------------------------- the loop
def _chunk_gp(m, x, cin, Q, nc, *, name):
    """Per chunk of the pending sum ``x`` + ``cin`` (carry into every chunk): generate (carry out)
    and propagate (all ones) of ``x_i + cin_i``."""
    gp = []
    for i in range(nc):
        a0 = Signal(Q + 1, name=f"{name}_s{i}")
        m.d.comb += a0.eq(x[i * Q:(i + 1) * Q] + cin[i])
        gp.append((a0[-1], a0[:-1].all()))
    return gp


#: Chunks a row's sum moves within the first level of :func:`realign`'s shift (the second moves
#: by whole groups of this many chunks).
MOVE_GROUP = 4


def move_select(m: Module, ww: WindowWidths, k):
    """``k`` (chunks the row's sum moves down, :func:`anchor_step`) as the selects of
    :func:`realign`'s two-level shift, ``k = MOVE_GROUP a + b``: one-hot ``b`` (:data:`MOVE_GROUP`
    bits), one-hot ``a`` (one bit per group of chunks, none on a move past the whole window) and
    that move (``k >= nc``). Formed a stage ahead of the loop, so the loop's shift starts from
    registered selects instead of decoding ``k`` in its own cycle."""
    nc, g = ww.chunks, MOVE_GROUP
    na, lg = -(-nc // g), g.bit_length() - 1
    h = Signal(g + na + 1, name="wm_h")
    m.d.comb += h.eq(Cat(*[k[:lg] == b for b in range(g)],
                         *[((k >> lg) == a) & (k < nc) for a in range(na)], k >= nc))
    return h


def _any(terms):
    """OR of ``terms`` as a balanced tree."""
    while len(terms) > 1:
        terms = [terms[i] | terms[i + 1] if i + 1 < len(terms) else terms[i]
                 for i in range(0, len(terms), 2)]
    return terms[0]


def realign(m: Module, ww: WindowWidths, x, c, h, sign, platform=None):
    """The row's pending sum ``x + sum_i c_i 2**(Q i)`` floor-divided by ``2**(Q k)``, with the move
    ``k`` given as the selects ``h`` of :func:`move_select`.

    ``c`` holds the pending carry into every chunk (chunk 0's included). With ``|sum| <= 2**(A-2)``
    an arithmetic shift of ``x`` by whole chunks (its own top bit as the sign) plus the carries
    shifted with it is the floor, up to the carry out of the dropped chunks (``lam``, a prefix over
    the chunks' generate/propagate, which becomes the new pending carry into chunk 0). The dropped
    part is zero iff ``(x ^ C) ^ ((x | C) << 1)`` has no one below ``Q k`` (a sum of two vectors is 0
    modulo ``2**n`` iff every bit's XOR equals the OR one bit below). ``k >= A/Q`` leaves the sign
    of the resolved sum, ``sign`` (kept with the row by :func:`resolved_sign`, so no carry chain
    over the row's sum sits in the loop). The shift has two levels of AND-OR over one-hot selects
    (by ``b`` chunks, then by ``MOVE_GROUP a``); each select and ``sign`` reach their A + nc gates
    through buffers (:func:`hw.clock_gate.fanout`, with the caller's ``platform``). Returns
    ``(x', c', lam, loss)``.
    """
    Q, A, nc, g = ww.chunk_bits, ww.acc_bits, ww.chunks, MOVE_GROUP
    na = -(-nc // g)
    hb, ha, past = h[:g], h[g:g + na], h[g + na]
    gp = _chunk_gp(m, x, c, Q, nc, name="wl")
    cc = prefix(m, gp, name="wl_cc")  # cc[i]: carry out of chunks 0..i resolved (into chunk i+1)
    cvec = Signal(A, name="wl_C")
    m.d.comb += cvec.eq(Cat(*[Cat(c[i], Const(0, Q - 1)) for i in range(nc)]))
    z = Signal(A, name="wl_z")
    m.d.comb += z.eq((x ^ cvec) ^ Cat(Const(0, 1), (x | cvec)[:A - 1]))
    zc = [z[i * Q:(i + 1) * Q].any() for i in range(nc)]
    nz = prefix(m, [(zc[i], Const(1, 1)) for i in range(nc)], name="wl_nz")  # OR of chunks 0..i
    levels = []  # (x, c) after each level: by b chunks, then by g a chunks
    for name, sel, step in (("b", hb, 1), ("a", ha, g)):
        xi, ci = levels[-1] if levels else (x, c)
        xt, ct = [], []
        for j in range(len(sel)):
            t = Signal(A, name=f"wl_{name}{j}")
            m.d.comb += t.eq(xi.as_signed() >> (Q * step * j))
            s = fanout(m, platform, sel[j], A + nc, f"wl_s{name}{j}")
            xt.append(t & s[:A])
            ct.append((ci >> (step * j)) & s[A:])
        if name == "a":
            xt.append(fanout(m, platform, sign, A, "wl_sg") & fanout(m, platform, past, A, "wl_sp"))
        xo, co = Signal(A, name=f"wl_x{name}"), Signal(nc, name=f"wl_c{name}")
        m.d.comb += [xo.eq(_any(xt)), co.eq(_any(ct))]
        levels.append((xo, co))
    lam, loss = Signal(name="wl_lam"), Signal(name="wl_loss")
    moved = [ha[j // g] & hb[j % g] for j in range(nc)]  # k == j
    m.d.comb += [lam.eq(_any([cc[j - 1] & moved[j] for j in range(1, nc)])),
                 loss.eq(_any([nz[j - 1] & moved[j] for j in range(1, nc)] + [nz[nc - 1] & past]))]
    return (*levels[-1], lam, loss)


def resolved_sign(m: Module, ww: WindowWidths, p, q, cin, lam):
    """The sign of the row's new sum ``p + q + sum_i cin_i 2**(Q (i + 1)) + lam`` modulo
    ``2**A`` (its carry-save rows, the pending carries into chunks 1.. and into chunk 0), the
    row state :func:`realign` takes for a move past the whole window: one full-adder level, then
    the carry into the top bit from a log-depth tree of generate/propagate pairs."""
    Q, A, nc = ww.chunk_bits, ww.acc_bits, ww.chunks
    r = Signal(A, name="ws_r")
    m.d.comb += r.eq(Cat(lam, *[Cat(Const(0, Q - 1), cin[i]) for i in range(nc - 1)]))
    s, t = Signal(A, name="ws_s"), Signal(A, name="ws_t")
    m.d.comb += [s.eq(p ^ q ^ r), t.eq(Cat(Const(0, 1), ((p & q) | (p & r) | (q & r))[:A - 1]))]
    gp = [(s[i] & t[i], s[i] | t[i]) for i in range(A - 1)]  # bits 0 .. A-2, low first
    level = 0
    while len(gp) > 1:
        nxt = []
        for j in range(0, len(gp) - 1, 2):
            (g0, p0), (g1, p1) = gp[j], gp[j + 1]
            g, pp = Signal(name=f"ws_g{level}_{j}"), Signal(name=f"ws_p{level}_{j}")
            m.d.comb += [g.eq(g1 | (p1 & g0)), pp.eq(p1 & p0)]
            nxt.append((g, pp))
        if len(gp) % 2:
            nxt.append(gp[-1])
        gp, level = nxt, level + 1
    sign = Signal(name="ws_sign")
    m.d.comb += sign.eq(s[A - 1] ^ t[A - 1] ^ gp[0][0])
    return sign


# ---------------------------------------------------------------------------------- the drain
def drain_steps(ww: WindowWidths):
    """The window's drain steps between the ``exact`` mode's carries and its rounding: the resolve
    with a nonzero flag per chunk of the sum, the magnitude of ``2 v + lost`` (A + 1 bits), then
    normalize with the exponent of the captured anchor, FP32's subnormals included (the rounding
    takes the ``sub`` flag)."""
    return (_resolve_chunks, _odd_magnitude, _normalize)


def _resolve_chunks(m, v, A, cb, ww, resolve):
    """The ``exact`` mode's resolve, and whether each chunk of the sum is nonzero (``nzc``), so the
    magnitude's OR prefix starts from a prefix over the chunks' registered flags."""
    out = resolve(m, v, A, cb, ww)
    nzc = Signal(A // cb, name="wr_nzc")
    m.d.comb += nzc.eq(Cat(*[out["v"][i * cb:(i + 1) * cb].any() for i in range(A // cb)]))
    return {**out, "nzc": nzc}


def _odd_magnitude(m, v, A, cb, dw):
    """Sign and magnitude of ``2 v + lost`` (A + 1 bits, ``|v| < 2**(A-1)``): a negative value keeps
    its bits up to the lowest one and inverts the rest. Whether a one lies below a bit is ``lost``,
    or a nonzero chunk below the bit's chunk (a prefix over the resolve's chunk flags), or a one
    below it in its own chunk; no carry chain. Also the leading zeros and the exponents the
    normalization needs from the anchor (computed here, beside the magnitude, so the normalization
    starts from registers)."""
    x, lost, nc = v["v"], v["lost"], A // cb
    low = prefix(m, [(lost, Const(1, 1))] + [(v["nzc"][i], Const(1, 1)) for i in range(nc - 1)],
                 name="wo_c")  # low[i]: lost or a one in chunks 0 .. i-1
    sign = Signal(name="mag_sign")
    m.d.comb += sign.eq(x[-1])
    below = []  # below[k]: a one in 2 v + lost below its bit k + 1 (lost or x[0 .. k-1])
    for c in range(nc):
        inner = prefix(m, [(x[c * cb + i], Const(1, 1)) for i in range(cb)], name=f"wo_i{c}")
        below += [low[c]] + [low[c] | inner[i] for i in range(cb - 1)]
    mag = Signal(A, name="mag")  # |2 v + lost| below its sign bit
    m.d.comb += mag.eq(Cat(lost, x[:A - 1] ^ (Cat(*below[:A - 1]) & sign.replicate(A - 1))))
    n = len(mag)
    etop = Signal(signed(12), name="wn_etop")  # the exponent of the magnitude's MSB
    lim = Signal(signed(12), name="wn_lim")  # the left shift that puts the MSB at 2**emin
    m.d.comb += [etop.eq(dw.exp_min + dw.lsb_exp - dw.top + n - 2 + (v["b"] << (cb.bit_length() - 1))),
                 lim.eq(etop - FP32.emin)]
    return {"sign": sign, "mag": mag, **flags(v), "lz": leading_zeros(m, mag, name="wn_lz"),
            "etop": etop, "lim": lim}


def _normalize(m, v, A, cb, ww, platform=None):
    """Leading zeros and one left shift of the A-bit magnitude (MSB weight ``e_top = L(b) - 1 +
    A - 1``) that stops where the exponent would go below FP32's ``emin``: a normal keeps its 24
    bits and guard, a subnormal the bits from ``2**-149`` up, the rest ORed into a sticky bit. The
    magnitude sits between 26 zero bits on each side, so a value below the subnormals shifts in
    zeros (all of it sticky). Biased exponents for both outcomes of the rounding, and ``sub``. The
    shift is a level per bit of its amount, each bit reaching its gates through buffers
    (:func:`hw.clock_gate.fanout`, with the caller's ``platform``)."""
    mag = v["mag"]
    n = len(mag)
    keep = FP32.man_bits + 2  # significand and guard
    lz, etop, lim = v["lz"], v["etop"], v["lim"]  # from the magnitude step: the two steps balance
    sub = Signal(name="wn_sub")
    sh = Signal(range(n + keep + 1), name="wn_sh")
    m.d.comb += [sub.eq(lim < lz),
                 sh.eq(Mux(sub, Mux(lim < -(keep + 1), 0, lim + keep + 1), lz + keep + 1))]
    ext = Cat(Const(0, keep + 1), mag, Const(0, keep + 1))
    ext = shift_left(m, ext, sh, platform, name="wn")
    sig = Signal(keep + 1, name="wn_sig")  # {significand, guard, sticky}
    m.d.comb += sig.eq(Cat(ext[:len(ext) - keep].any(), ext[-keep:]))
    eb0, eb1 = Signal(10, name="wn_eb0"), Signal(10, name="wn_eb1")
    zero = Signal(name="wn_zero")
    m.d.comb += [eb0.eq(etop - lz + FP32.bias), eb1.eq(etop - lz + FP32.bias + 1), zero.eq(mag == 0)]
    # for the rounding: its carry out needs the kept significand all ones, and the overflow of
    # either exponent outcome (a subnormal never overflows), so it only selects
    ones, over0, over1 = Signal(name="wn_ones"), Signal(name="wn_over0"), Signal(name="wn_over1")
    m.d.comb += [ones.eq(ext[-(keep - 1):].all()),
                 over0.eq(~sub & (eb0 >= 255)), over1.eq(~sub & (eb1 >= 255))]
    flags = {k: v[k] for k in ("ovf", "nan", "pinf", "ninf") if k in v}
    return {"sig": sig, "eb0": eb0, "eb1": eb1, "sub": sub, "zero": zero, "sign": v["sign"],
            "ones": ones, "over0": over0, "over1": over1, **flags}
