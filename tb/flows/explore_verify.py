"""Test doubles of the search's verification command (``python -m tb.flows.explore_verify ...``).

``broken``
    The real gate (:func:`tb.verify.main`) on a deliberately broken BF16 multiplier: the
    ``behavioral`` architecture's product has its least significant bit flipped, so its Verilog
    computes a wrong result and the bit-exact regression must reject it; ``booth4`` is untouched.
``fake``
    No simulation: passes every configuration but ``stages=1`` (reported as a mismatch). For the
    tests of the search loop itself (resume, random search, Ray), where the gate's verdict only has
    to be a verdict.

The first argument picks the double; the rest are :mod:`tb.verify`'s arguments.
"""

import json
import sys


def _break_behavioral() -> None:
    """Make ``RawMultiply`` of the behavioral architecture flip bit ``2 * man_bits`` of its exact
    significand product (weight 2^0 of ``1.x * 1.y``): nearly every product comes out wrong."""
    from amaranth.hdl import Module, Signal

    from hw.fp import bf16_mul

    cls = bf16_mul.RawMultiply
    original = cls.elaborate

    def elaborate(self, platform):
        if self.arch != "behavioral":
            return original(self, platform)
        real = self.raw
        self.raw = Signal(real.shape(), name="raw_unbroken")
        try:
            inner = original(self, platform)
        finally:
            tmp, self.raw = self.raw, real
        m = Module()
        m.submodules.inner = inner
        m.d.comb += real.eq(tmp)
        m.d.comb += real.sig.eq(tmp.sig ^ (1 << (2 * self.fmt.man_bits)))
        return m

    cls.elaborate = elaborate


def _fake(argv) -> int:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("--design")
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--effort")
    p.add_argument("--seed", type=int)
    a = p.parse_args(argv)
    params = dict(s.split("=", 1) for s in a.set)
    ok = params.get("stages") != "1"
    rec = {"design": a.design, "params": params, "tests": ["fake"], "passed": ok, "effort": a.effort,
           "seed": a.seed, "reason": None if ok else "fake mismatch at stages=1", "wall_s": 0.0}
    print("VERIFY " + json.dumps(rec))
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    kind, rest = argv[0], argv[1:]
    if kind == "fake":
        return _fake(rest)
    if kind == "broken":
        _break_behavioral()
        from tb.verify import main as verify_main

        return verify_main(rest)
    raise SystemExit(f"unknown double {kind!r}: broken or fake")


if __name__ == "__main__":
    sys.exit(main())
