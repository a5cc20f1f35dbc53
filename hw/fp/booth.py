"""Structural multiplier: radix-4 Booth partial products, a Dadda tree, a prefix adder.

Everything is written out bit by bit, so synthesis sees the architecture rather than a ``*``:

1. **Booth recoding** (radix 4) of the multiplier ``b`` (zero-extended by one bit so it reads as a
   non-negative two's complement number): digit ``i`` in {-2, -1, 0, 1, 2} from bits
   ``b[2i+1], b[2i], b[2i-1]``; ``n_b // 2 + 1`` digits.
2. **Partial products** ``a * digit_i``: each is ``n_a + 2`` bits of two's complement, built as the
   one's complement of ``a * |digit|`` when the digit is negative plus a ``neg`` bit in its LSB
   column. Sign extension is removed by the usual constant trick: the sign bit ``s`` is written
   inverted and ``-2**(n_a + 1)`` (shifted) is added; all those constants are summed in Python into
   one constant row.
3. **Dadda reduction** of the bit columns with full and half adders, stage heights 2, 3, 4, 6, 9,
   13, ... (each stage reduces every column to at most the next height, with as few adders as
   possible).
4. **Final adder**: a Sklansky parallel-prefix adder on the two remaining rows.

All sums are modulo ``2**(n_a + n_b)``, which holds the exact product. Every adder output is its own
named ``Signal``, so the generated expressions stay shallow however wide the operands are.

Pipeline registers may sit at *tree levels* inside the multiplier (:class:`Booth4Multiplier`'s
``cuts``): level 0 holds the partial-product columns (after the Booth recoding), level ``i`` the
columns after Dadda stage ``i``, and the last level (:func:`tree_levels`) the two rows before the
final adder. Each register loads when its bit of the ``en`` port is set.
"""

from amaranth.hdl import Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Booth4Multiplier", "booth4_columns", "dadda_reduce", "prefix_add", "dadda_heights", "tree_levels"]


def booth4_columns(m: Module, a, b, width: int, *, signed: bool = False) -> list:
    """Radix-4 Booth partial products of unsigned ``a * b`` as bit columns.

    With ``signed``, ``a`` and ``b`` are two's complement: ``b`` is recoded as it stands (its MSB
    is the sign, ``ceil(nb / 2)`` digits) and each partial product selects the sign-extended ``a``
    (``na + 1`` bits, whose top bit is the partial product's sign after the inversion).

    Returns
    -------
    list of list of Value
        ``width`` columns; column ``k`` holds the 1-bit values of weight ``2**k``.
    """
    na, nb = len(a), len(b)
    cols = [[] for _ in range(width)]
    const = 0

    def put(k, bit):
        if k < width:
            cols[k].append(bit)

    if signed:  # b's sign above its MSB (odd nb), a sign-extended for the 2*a selection
        bx, ndig = Cat(Const(0, 1), b, b[-1]), (nb + 1) // 2
        ax = Cat(Const(0, 1), a, a[-1])
    else:
        bx = Cat(Const(0, 1), b, Const(0, 2))  # b[-1] = 0, two zero bits above the MSB
        ndig = nb // 2 + 1
        ax = Cat(Const(0, 1), a, Const(0, 1))  # a[-1] = 0 and a[na] = 0, for the 2*a selection
    for i in range(ndig):
        lo, mid, hi = bx[2 * i], bx[2 * i + 1], bx[2 * i + 2]
        one = Signal(name=f"bd{i}_one")
        two = Signal(name=f"bd{i}_two")
        neg = Signal(name=f"bd{i}_neg")
        m.d.comb += [
            one.eq(mid ^ lo),
            two.eq((hi & ~mid & ~lo) | (~hi & mid & lo)),
            neg.eq(hi),
        ]
        shift = 2 * i
        pp = Signal(na + 1, name=f"pp{i}")
        for j in range(na + 1):
            # |digit| * a, bit j: a[j] if |digit| = 1, a[j-1] if |digit| = 2; inverted if negative
            m.d.comb += pp[j].eq(((one & ax[j + 1]) | (two & ax[j])) ^ neg)
        top = na if signed else na + 1  # the sign's column: pp's own top bit, or neg above it
        for j in range(top):
            put(shift + j, pp[j])
        put(shift + top, ~pp[na] if signed else ~neg)  # inverted sign bit ...
        const -= 1 << (shift + top)  # ... and the constant that restores the sign extension
        put(shift, neg)  # +1 that completes the two's complement of a negative digit
    const %= 1 << width
    for k in range(width):
        if (const >> k) & 1:
            cols[k].append(Const(1, 1))
    return cols


def dadda_heights(max_height: int) -> list:
    """Dadda stage heights below ``max_height``, largest first (..., 6, 4, 3, 2)."""
    hs = [2]
    while int(hs[-1] * 1.5) < max_height:
        hs.append(int(hs[-1] * 1.5))
    return list(reversed(hs))


def dadda_reduce(m: Module, cols: list, *, name: str = "dd", after_stage=None) -> tuple:
    """Reduce bit columns to two rows with a Dadda tree of full and half adders.

    Parameters
    ----------
    cols : list of list of Value
        Column ``k`` holds bits of weight ``2**k``; carries out of the last column are dropped
        (the sum is modulo ``2**len(cols)``).
    after_stage : callable, optional
        ``after_stage(stage, cols) -> cols``, called with the columns after each Dadda stage
        (``stage`` counted from 1); the columns it returns (e.g. registered copies) feed the next
        stage.

    Returns
    -------
    (Value, Value)
        Two ``len(cols)``-bit rows whose sum is the sum of all the bits.
    """
    width = len(cols)
    cols = [list(c) for c in cols]
    for stage, target in enumerate(dadda_heights(max((len(c) for c in cols), default=0))):
        new_cols = [[] for _ in range(width)]
        for k in range(width):
            pending = cols[k]
            incoming = len(new_cols[k])  # carries from column k-1 of this stage
            sums = []
            while len(pending) + len(sums) + incoming > target:
                excess = len(pending) + len(sums) + incoming - target
                s = Signal(name=f"{name}{stage}_s{k}_{len(sums)}")
                c = Signal(name=f"{name}{stage}_c{k}_{len(sums)}")
                if excess == 1 or len(pending) < 3:
                    assert len(pending) >= 2, "Dadda stage has too few bits for an adder"
                    x, y = pending[0], pending[1]
                    pending = pending[2:]
                    m.d.comb += [s.eq(x ^ y), c.eq(x & y)]
                else:
                    x, y, z = pending[0], pending[1], pending[2]
                    pending = pending[3:]
                    m.d.comb += [s.eq(x ^ y ^ z), c.eq((x & y) | (z & (x ^ y)))]
                sums.append(s)
                if k + 1 < width:
                    new_cols[k + 1].append(c)
            new_cols[k] = pending + sums + new_cols[k]
        cols = new_cols
        if after_stage is not None:
            cols = after_stage(stage + 1, cols)
    rows = [[], []]
    for k in range(width):
        assert len(cols[k]) <= 2, "Dadda reduction left a column above height 2"
        bits = cols[k] + [Const(0, 1)] * (2 - len(cols[k]))
        rows[0].append(bits[0])
        rows[1].append(bits[1])
    return Cat(*rows[0]), Cat(*rows[1])


def prefix_add(m: Module, x, y, *, name: str = "pa") -> Signal:
    """``(x + y) mod 2**len(x)`` with a Sklansky parallel-prefix carry network."""
    width = len(x)
    g = [Signal(name=f"{name}_g{k}") for k in range(width)]
    p = [Signal(name=f"{name}_p{k}") for k in range(width)]
    for k in range(width):
        m.d.comb += [g[k].eq(x[k] & y[k]), p[k].eq(x[k] ^ y[k])]
    # G[k], P[k]: group generate/propagate of bits k..0, computed in log2(width) levels
    G, P = list(g), list(p)
    span, level = 1, 0
    while span < width:
        nG, nP = list(G), list(P)
        for k in range(width):
            if (k // span) % 2 == 1:
                j = (k // span) * span - 1  # top bit of the lower block
                gk = Signal(name=f"{name}_G{level}_{k}")
                pk = Signal(name=f"{name}_P{level}_{k}")
                m.d.comb += [gk.eq(G[k] | (P[k] & G[j])), pk.eq(P[k] & P[j])]
                nG[k], nP[k] = gk, pk
        G, P = nG, nP
        span *= 2
        level += 1
    s = Signal(width, name=name)
    m.d.comb += s[0].eq(p[0])
    for k in range(1, width):
        m.d.comb += s[k].eq(p[k] ^ G[k - 1])
    return s


def tree_levels(a_width: int, b_width: int) -> int:
    """The last tree level of an ``a_width x b_width`` :class:`Booth4Multiplier`: the number of
    Dadda stages (level 0: the partial products; this level: the two rows before the final adder)."""
    m = Module()
    m._MustUse__silence = True  # only counts the columns' bits
    cols = booth4_columns(m, Signal(a_width), Signal(b_width), a_width + b_width)
    return len(dadda_heights(max(len(c) for c in cols)))


def _register_columns(m: Module, cols: list, en, name: str) -> list:
    """A register holding every bit of ``cols`` (loaded when ``en``); the registered columns."""
    flat = [bit for c in cols for bit in c]
    reg = Signal(len(flat), name=name, reset_less=True)
    with m.If(en):
        m.d.sync += reg.eq(Cat(*flat))
    out, i = [], 0
    for c in cols:
        out.append([reg[i + j] for j in range(len(c))])
        i += len(c)
    return out


class Booth4Multiplier(wiring.Component):
    """Unsigned ``a_width x b_width`` multiplier: radix-4 Booth, Dadda tree, prefix adder.

    Parameters
    ----------
    a_width, b_width : int
        Operand widths (>= 1).
    cuts : tuple of int
        Tree levels (see the module docstring; 0 .. :func:`tree_levels`) that hold a pipeline
        register, distinct, in increasing order. Empty (the default): combinational.

    Members
    -------
    a : In(a_width)
    b : In(b_width)
    p : Out(a_width + b_width)
        The exact product, ``len(cuts)`` register loads after its operands.
    en : In(len(cuts))
        Load enable of each register (only when ``cuts`` is not empty).

    Raises
    ------
    ValueError
        For cuts outside the tree's levels, repeated or out of order.
    """

    def __init__(self, a_width: int, b_width: int, cuts: tuple = ()):
        for nm, v in (("a_width", a_width), ("b_width", b_width)):
            if not isinstance(v, int) or v < 1:
                raise TypeError(f"{nm} must be a positive integer, not {v!r}")
        cuts = tuple(cuts)
        last = tree_levels(a_width, b_width) if cuts else 0
        if list(cuts) != sorted(set(cuts)) or any(not 0 <= c <= last for c in cuts):
            raise ValueError(f"cuts must be distinct tree levels in 0..{last}, in increasing order, "
                             f"not {cuts!r}")
        self._cuts = cuts
        sig = {"a": In(a_width), "b": In(b_width), "p": Out(a_width + b_width)}
        if cuts:
            sig["en"] = In(len(cuts))
        super().__init__(sig)

    @property
    def cuts(self) -> tuple:
        return self._cuts

    def elaborate(self, platform):
        m = Module()
        width = len(self.p)
        cols = booth4_columns(m, self.a, self.b, width)
        if not self._cuts:
            x, y = dadda_reduce(m, cols)
            m.d.comb += self.p.eq(prefix_add(m, x, y))
            return m

        def cut(level, cols):
            if level not in self._cuts:
                return cols
            return _register_columns(m, cols, self.en[self._cuts.index(level)], f"tree{level}_q")

        x, y = dadda_reduce(m, cut(0, cols), after_stage=cut)
        m.d.comb += self.p.eq(prefix_add(m, x, y))
        return m
