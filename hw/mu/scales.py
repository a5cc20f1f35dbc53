"""Block scales of the block-scaled matrix unit: scale-code decode and the window sum of one column.

The contract is ``docs/numerics.md`` section 7: a scale code is ``m * 2**e`` (E8M0: ``m = 1``,
``e = c - 127``, NaN ``0xFF``; UE4M3: ``m`` the E4M3 significand, ``e = max(eeee, 1) - 10``, NaN with
bit 7 set or ``0x7F``), and the block terms ``P_i * 2**E_i`` of a column are summed in a window of
``F + 1`` fraction bits below the largest contributing block, lower blocks rounded to odd.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

__all__ = ["WINDOW_FRAC_BITS", "SCALE_EXP_BITS", "decode_scale", "window_sum"]

#: F, fraction bits of the window below the unit of the largest block term (docs/numerics.md 7.2).
WINDOW_FRAC_BITS = 32
#: Signed bits of one scale exponent (E8M0: -127..127; UE4M3: -9..5).
SCALE_EXP_BITS = 9


def decode_scale(m: Module, code, scale: str, *, name: str):
    """Split an 8-bit scale code into ``(m, e, nan)``: integer significand (1 bit for E8M0, 4 for
    UE4M3), signed exponent of :data:`SCALE_EXP_BITS` bits and the NaN flag."""
    e = Signal(signed(SCALE_EXP_BITS), name=f"{name}_e")
    nan = Signal(name=f"{name}_nan")
    if scale == "e8m0":
        m.d.comb += [e.eq(code - 127), nan.eq(code == 0xFF)]
        return Const(1, 1), e, nan
    ex, man = code[3:7], code[0:3]
    sig = Signal(4, name=f"{name}_m")
    m.d.comb += [
        sig.eq(Cat(man, ex != 0)),
        e.eq(Mux(ex == 0, 1, ex) - 10),
        nan.eq(code[7] | (code == 0x7F)),
    ]
    return sig, e, nan


def _max_key(m: Module, keys: list, *, name: str):
    """Largest of unsigned keys, by a balanced tree of compare-and-select."""
    level = 0
    while len(keys) > 1:
        nxt = []
        for i in range(0, len(keys) - 1, 2):
            k = Signal(len(keys[i]), name=f"{name}{level}_{i // 2}")
            m.d.comb += k.eq(Mux(keys[i] >= keys[i + 1], keys[i], keys[i + 1]))
            nxt.append(k)
        if len(keys) % 2:
            nxt.append(keys[-1])
        keys, level = nxt, level + 1
    return keys[0]


def window_sum(m: Module, terms: list, exps: list, *, frac_bits: int = WINDOW_FRAC_BITS,
               name: str = "win"):
    """The window sum of block terms ``terms[i] * 2**exps[i]`` (signed integers, signed exponents).

    Returns ``(s, top)``: the signed sum ``s`` with LSB weight ``2**(top - frac_bits - 1)``, where
    ``top`` (signed, one bit wider than the exponents) is the largest exponent among the nonzero
    terms. A term more than ``frac_bits`` below ``top`` is shifted right arithmetically with the bits
    shifted out ORed into its last bit (rounded to odd); every other term enters exactly. With no
    nonzero term ``s`` is 0 (``top`` is then meaningless).
    """
    pb = max(len(t) for t in terms)
    lw = pb + frac_bits + 1                      # a term placed at the top of the window
    eb = max(len(e) for e in exps) + 1
    bias = 1 << (eb - 1)
    keys = []
    for i, (t, e) in enumerate(zip(terms, exps, strict=True)):
        k = Signal(eb + 1, name=f"{name}_key{i}")  # 0: a zero term, else e + bias (>= 1)
        m.d.comb += k.eq(Mux(t != 0, e + bias, 0))
        keys.append(k)
    kmax = _max_key(m, keys, name=f"{name}_max")
    top = Signal(signed(eb + 1), name=f"{name}_top")
    m.d.comb += top.eq(kmax - bias)
    if len(terms) == 2:  # one of the two is the top: align only the other one
        sel = Signal(name=f"{name}_sel")
        big, small = Signal(signed(pb), name=f"{name}_big"), Signal(signed(pb), name=f"{name}_small")
        e_small = Signal(signed(eb), name=f"{name}_es")
        m.d.comb += [sel.eq(keys[1] > keys[0]), big.eq(Mux(sel, terms[1], terms[0])),
                     small.eq(Mux(sel, terms[0], terms[1])), e_small.eq(Mux(sel, exps[0], exps[1]))]
        vals = [Signal(signed(lw), name=f"{name}_v0"),
                _to_odd(m, small, top, e_small, lw, frac_bits, name=f"{name}1")]
        m.d.comb += vals[0].eq(big << (frac_bits + 1))
    else:
        vals = [_to_odd(m, t, top, e, lw, frac_bits, name=f"{name}{i}")
                for i, (t, e) in enumerate(zip(terms, exps, strict=True))]
    s = Signal(signed(lw + (len(vals) - 1).bit_length()), name=f"{name}_s")
    m.d.comb += s.eq(sum(vals[1:], vals[0]))
    return s, top


def _to_odd(m, t, top, e, lw, frac_bits, *, name):
    """Term ``t * 2**e`` in units of ``2**(top - frac_bits - 1)``, rounded to odd: ``t`` placed at
    the top of ``lw`` bits, shifted right arithmetically by ``top - e`` (clamped at ``lw``) with the
    shifted-out bits ORed into the last bit."""
    d = Signal(signed(len(top) + 1), name=f"{name}_d")
    dc = Signal(range(lw + 1), name=f"{name}_dc")
    placed = Signal(signed(lw), name=f"{name}_pl")
    v = Signal(signed(lw), name=f"{name}_v")
    sticky = Signal(name=f"{name}_st")  # t's bit k sits at k + F + 1 of the placed value
    m.d.comb += [
        d.eq(top - e),
        dc.eq(Mux((d < 0) | (d > lw), lw, d)),  # a zero term may sit above top: it adds 0
        placed.eq(t << (frac_bits + 1)),
        sticky.eq(Cat(*[t[k] & (dc > frac_bits + 1 + k) for k in range(len(t))]).any()),
        v.eq((placed >> dc) | sticky),
    ]
    return v
