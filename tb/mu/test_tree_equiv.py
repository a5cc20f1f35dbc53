"""The word-level column tree computes the same function as the Dadda tree (``docs/verification.md``).

Three parts, each with a different kind of evidence:

* ``test_dadda_schedule_preserves_sum``: the generator's own compressor schedule
  (:func:`hw.mu.tree.full_adder_stage` on the column heights :class:`~hw.mu.tree.Tree` builds) is
  walked symbolically at every width and format: every full and half adder is checked on all its
  input combinations (``s + 2c`` = the number of ones in), and every stage's bit accounting (each bit
  consumed at most once, passed through or replaced by its cell's sum in the same column and carry
  in the next) is checked exactly, so each stage preserves the weighted bit sum modulo ``2**W``;
* ``test_prefix_adder_proved`` (``tb/mu/test_tree_sat.py``): a Yosys SAT proof that the final prefix
  adder equals ``+``;
* ``test_trees_cosim``: both trees' netlists, evaluated bit-sliced from the elaborated Amaranth
  (:mod:`tb.lib.bitslice`, no Verilog), on hundreds of thousands of vectors per width including
  the adversarial classes of :mod:`tb.mu.tree_vectors`, against an exact integer sum computed
  independently of either.
"""

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.hdl import Fragment, Signal

from hw.formats import MATRIX_FORMATS
from hw.fp.booth import dadda_heights
from hw.mu.numerics import dot_widths
from hw.mu.tree import Tree, full_adder_stage
from tb.lib.bitslice import _Eval, evaluate, pack_planes

from .tree_vectors import CLASSES, exact_sum, lane_vectors

WIDTHS = (8, 16, 32, 64, 128)


def _leaves(v, out):
    """Signals a cell expression reads."""
    if isinstance(v, Signal):
        out.append(v)
    for part in list(getattr(v, "operands", ())) + list(getattr(v, "parts", ())):
        _leaves(part, out)
    return out


def _shape(v, pos):
    """The expression with its input signals replaced by their positions (a cache key)."""
    if isinstance(v, Signal):
        return pos[id(v)]
    return (getattr(v, "operator", type(v).__name__),
            tuple(_shape(o, pos) for o in list(getattr(v, "operands", ())) + list(getattr(v, "parts", ()))))


_TRUTH: dict = {}


def _cell_truth(s_expr, c_expr, ins) -> bool:
    """``s + 2c == popcount(ins)`` on all ``2**len(ins)`` input combinations (bit-sliced; cached per
    expression shape, as every full adder of the schedule has the same one)."""
    pos = {id(sig): j for j, sig in enumerate(ins)}
    key = (_shape(s_expr, pos), _shape(c_expr, pos), len(ins))
    if key not in _TRUTH:
        _TRUTH[key] = _truth(s_expr, c_expr, ins)
    return _TRUTH[key]


def _truth(s_expr, c_expr, ins) -> bool:
    ev = _Eval(1)
    for j, sig in enumerate(ins):
        word = sum(1 << v for v in range(1 << len(ins)) if (v >> j) & 1)
        ev.env[sig] = [np.array([word], np.uint64)]
    s, c = ev.value(s_expr)[0][0][0], ev.value(c_expr)[0][0][0]
    return all(((int(s) >> v) & 1) + 2 * ((int(c) >> v) & 1) == bin(v).count("1")
               for v in range(1 << len(ins)))


def _stage_ok(cols, out, comb, target):
    """Check one Dadda stage's cells and bit accounting; return the number of cells."""
    W = len(cols)
    assert len(comb) % 2 == 0, "a cell is a sum and a carry assignment"
    consumed, sums, carries = Counter(), [Counter() for _ in range(W)], [Counter() for _ in range(W)]
    where = {id(sig): k for k, col in enumerate(cols) for sig in col}
    for s_stmt, c_stmt in zip(comb[::2], comb[1::2], strict=True):
        ins = _leaves(s_stmt.rhs, [])
        ids = [id(sig) for sig in ins]      # Signals compare by value: key them by identity
        assert len(ids) == len(set(ids)) in (2, 3), f"cell {s_stmt.lhs.name} reads {ins}"
        assert {id(sig) for sig in _leaves(c_stmt.rhs, [])} == set(ids), \
            f"{c_stmt.lhs.name}: other inputs than its sum"
        ks = {where.get(i) for i in ids}
        assert len(ks) == 1 and None not in ks, f"cell {s_stmt.lhs.name}: inputs from columns {ks}"
        assert _cell_truth(s_stmt.rhs, c_stmt.rhs, ins), f"cell {s_stmt.lhs.name}: s + 2c != a + b + d"
        k = ks.pop()
        consumed.update(ids)
        sums[k][id(s_stmt.lhs)] += 1
        if k + 1 < W:                 # a carry out of the top column is dropped: the sum is mod 2^W
            carries[k + 1][id(c_stmt.lhs)] += 1
    assert max(consumed.values(), default=1) == 1, "a bit consumed by two cells"
    for k in range(W):
        kept = Counter(id(sig) for sig in cols[k] if id(sig) not in consumed)
        assert Counter(id(sig) for sig in out[k]) == kept + sums[k] + carries[k], \
            f"column {k}: bits lost or invented"
        assert len(out[k]) <= target, f"column {k}: {len(out[k])} bits after a stage to {target}"
    return len(comb) // 2


#: Every width in the default format; every format up to D = 32 (make test); the rest in full. The
#: schedule depends on D and the product width P only, so these cover every column height profile.
SCHEDULES = [pytest.param(fmt, D, id=f"{fmt}-w{D}",
                          marks=() if fmt == "fp8_e4m3" or D <= 32 else pytest.mark.full)
             for fmt in MATRIX_FORMATS for D in WIDTHS]


@pytest.mark.parametrize("fmt,width", SCHEDULES)
def test_dadda_schedule_preserves_sum(fmt, width):
    """Every compressor step of the generator's schedule preserves the weighted bit sum."""
    D = width
    dw = dot_widths(fmt, D)
    P, W = dw.prod_bits, dw.sum_bits
    # the columns Tree.elaborate builds: t bits, neg at 0 (sign-magnitude formats), ~neg at P, the
    # constant at W - 1
    cols = [[] for _ in range(W)]
    for i in range(D):
        for k in range(P):
            cols[k].append(Signal(name=f"t{i}_{k}"))
        if dw.ones_complement:
            cols[0].append(Signal(name=f"neg{i}"))
        cols[P].append(Signal(name=f"nneg{i}"))
    cols[W - 1].append(Signal(name="one"))
    cells = 0
    for stage, target in enumerate(dadda_heights(2 * D), start=1):
        m = SimpleNamespace(d=SimpleNamespace(comb=[]))
        out = full_adder_stage(m, cols, target, name=f"dd{stage}")
        cells += _stage_ok(cols, out, m.d.comb, target)
        cols = out
    assert max(len(c) for c in cols) <= 2, "the tree must end with two rows"
    if D <= 32:   # the walk is the schedule Tree builds: the same number of adder sums
        frag = Fragment.get(Tree(fmt, D, stages=0), None)
        built = sum(1 for s in frag.statements["comb"]
                    if isinstance(s.lhs, Signal) and s.lhs.name.startswith("dd")
                    and "_s" in s.lhs.name)
        assert built == cells, f"D={D}: Tree built {built} adders, the walked schedule {cells}"


def _lane_planes(arr, bits):
    """Planes of a (n, D) array, lane-major: lane i's bit k at index ``i * bits + k``."""
    n, D = arr.shape
    out = [None] * (D * bits)
    arr = np.asarray(arr, np.uint64)
    for k in range(bits):
        b = ((arr >> np.uint64(k)) & np.uint64(1)).astype(np.uint8).T.copy()
        packed = np.packbits(b, axis=1, bitorder="little").view(np.uint64)
        for i in range(D):
            out[i * bits + k] = packed[i]
    return out


def _vectors(fmt, D, per_class, seed):
    parts = [lane_vectors(fmt, D, per_class, c, seed) for c in CLASSES]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def cosim(fmt: str, D: int, per_class: int, seed: int = 0) -> int:
    """Evaluate both trees on ``per_class`` vectors of every class; assert both equal the exact sum
    and the reference flags. Returns the number of vectors."""
    dw = dot_widths(fmt, D)
    P, W = dw.prod_bits, dw.sum_bits
    vec = _vectors(fmt, D, per_class, seed)
    n = len(vec["t"])
    trees = {a: Tree(fmt, D, stages=0, arch=a) for a in ("dadda", "words")}
    ins = {"t": _lane_planes(vec["t"], P), "neg": _lane_planes(vec["neg"], 1)}
    outs = ["s"]
    if "nan" in trees["dadda"].signature.members:
        ins["nan"] = _lane_planes(vec["nan"], 1)
        outs.append("s_nan")
    if "inf" in trees["dadda"].signature.members:
        ins["inf"] = _lane_planes(vec["inf"], 1)
        outs += ["s_inf", "s_inf_neg"]
    lo, hi = exact_sum(fmt, D, vec)
    want = {"s": pack_planes(lo, min(W, 32)) + pack_planes(hi, max(W - 32, 0))}
    pinf = (vec["inf"] & ~vec["neg"]).any(1)
    ninf = (vec["inf"] & vec["neg"]).any(1)
    flags = {"s_nan": vec["nan"].any(1) | (pinf & ninf), "s_inf": pinf | ninf, "s_inf_neg": ninf}
    for k in outs[1:]:
        want[k] = pack_planes(flags[k].astype(np.uint64), 1)
    for arch, tree in trees.items():
        got = evaluate(tree, ins, tuple(outs))
        for k in outs:
            for bit, (g, w) in enumerate(zip(got[k], want[k], strict=True)):
                bad = np.flatnonzero(g != w)
                if bad.size:
                    word = int(bad[0])
                    v = word * 64 + (int(g[word] ^ w[word]) & -int(g[word] ^ w[word])).bit_length() - 1
                    cls = CLASSES[v // per_class]
                    raise AssertionError(f"{arch} tree, {fmt} D={D}: {k} bit {bit} wrong in vector "
                                         f"{v} (class {cls}): t={vec['t'][v].tolist()} "
                                         f"neg={vec['neg'][v].astype(int).tolist()}")
    return n


#: make test: D = 32, 64 and 128 (the default format, and E5M2's widest products at D = 64);
#: make test-full: every format at every one of these widths, 2**15 vectors per class.
COSIM = [pytest.param(fmt, D, n, id=f"{fmt}-w{D}") for fmt, D, n in (
    ("fp8_e4m3", 32, 1 << 15), ("fp8_e5m2", 64, 1 << 14), ("fp8_e4m3", 128, 1 << 13))] + [
    pytest.param(fmt, D, 1 << 15, id=f"{fmt}-w{D}-dense", marks=pytest.mark.full)
    for fmt in MATRIX_FORMATS for D in (32, 64, 128)]


@pytest.mark.parametrize("fmt,width,per_class", COSIM)
def test_trees_cosim(fmt, width, per_class, record_property):
    n = cosim(fmt, width, per_class)
    record_property(f"measured tree co-simulation {fmt} D={width}", f"{n} vectors, both trees exact")


def test_schedule_check_catches_errors():
    """The stage check rejects a wrong carry, a lost bit and a bit moved to another column."""
    a, b = Signal(name="a"), Signal(name="b")
    s, c = Signal(name="dd1_s0_0"), Signal(name="dd1_c0_0")
    good = [s.eq(a ^ b), c.eq(a & b)]
    assert _stage_ok([[a, b], []], [[s], [c]], good, 1) == 1
    for cols_out, comb in (([[s], [c]], [s.eq(a ^ b), c.eq(a | b)]),    # wrong carry
                           ([[s], []], good),                            # carry lost
                           ([[s, c], []], good)):                        # carry in the wrong column
        with pytest.raises(AssertionError):
            _stage_ok([[a, b], []], cols_out, comb, 2)
