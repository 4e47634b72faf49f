"""Chunking speed of two revisions, in alternating rounds (so that a busy machine slows both).

Builds the package of each revision as `identity.py` does (`git archive`, or `WORKTREE`),
then, round after round, runs one process per revision (their order swapped every round)
that parses every file of the folders once, untimed, and times `Chunker.chunk_document` over
all of them, per configuration (the best of `--repeat` tries, wall and CPU time). Prints the
median over rounds of each side's seconds.

    python tests/bench/bench_alternate.py BASE [HEAD] [--rounds 7] [--repeat 1]
        [--configs minilm256,cl512,t64]
        [--folders ../shared/corpus/code ../shared/corpus/code-multi ../shared/corpus/markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from identity import ROOT, package  # noqa: E402

CONFIGS = {"minilm256": {}, "cl512": {"tokenizer": "cl100k_base", "max_tokens": 512},
           "t64": {"max_tokens": 64}}

_CHILD = r"""
import json, sys, time
from pathlib import Path
from chunkwise.chunking.api import Chunker, parse_file
folders, configs, repeat = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
docs = []
for folder in folders:
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            try:
                docs.append(parse_file(path))
            except Exception:
                pass
out = {}
for name, options in configs.items():
    chunker = Chunker(**options)
    chunker.chunk_document(docs[0])  # warm: tokenizer loaded, modules imported
    best = cpu = float("inf")
    for _ in range(repeat):  # the best of a few: another process's burst costs one try
        t, c = time.perf_counter(), time.process_time()
        n = sum(len(chunker.chunk_document(d)) for d in docs)
        best = min(best, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    out[name] = (best, cpu, n)
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("head", nargs="?", default="WORKTREE")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1, help="tries per round (the best counts)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--folders", nargs="+", default=[
        "../shared/corpus/code", "../shared/corpus/code-multi", "../shared/corpus/markdown"])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="chunkwise-alternate-"))
    sides = {name: package(rev, work / f"pkg-{name}")
             for name, rev in (("base", args.base), ("head", args.head))}
    configs = {c: CONFIGS[c] for c in args.configs.split(",")}
    times: dict[str, dict[str, list[float]]] = {s: {c: [] for c in configs} for s in sides}
    cpus: dict[str, dict[str, list[float]]] = {s: {c: [] for c in configs} for s in sides}
    counts: dict[str, dict[str, int]] = {s: {} for s in sides}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for side in order:
            env = {**os.environ, "PYTHONPATH": str(sides[side])}
            done = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args.folders),
                                   json.dumps(configs), str(args.repeat)], env=env, cwd=ROOT, check=True,
                                  capture_output=True, text=True)
            for name, (seconds, cpu, n) in json.loads(done.stdout.strip().splitlines()[-1]).items():
                times[side][name].append(seconds)
                cpus[side][name].append(cpu)
                counts[side][name] = n
        print(f"round {r + 1}: " + ", ".join(
            f"{s} {c} {times[s][c][-1]:.3f}s" for s in sides for c in configs), flush=True)
    for c in configs:
        b, h = (statistics.median(times[s][c]) for s in ("base", "head"))
        bc, hc = (statistics.median(cpus[s][c]) for s in ("base", "head"))
        print(f"{c}: wall base {b:.3f}s, head {h:.3f}s (head/base {h / b:.3f}); CPU base "
              f"{bc:.3f}s, head {hc:.3f}s (head/base {hc / bc:.3f}); chunks "
              f"{counts['base'][c]} / {counts['head'][c]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
