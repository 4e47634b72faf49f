"""Byte identity of the chunks before and after a change: `chunk --jsonl` of two revisions.

Builds the package of each revision (`git archive` of `src/chunkwise` and `parsers`, laid out
as installed) under a temporary folder, runs `chunkwise chunk --jsonl` from each over the same
folders for every strategy at three budgets (the default; `cl100k_base` 512 with overlap 32;
64 tokens), and compares the chunks document by document. Chunk ids hash the chunker's
fingerprint, which carries `CHUNKER_VERSION`, so they are left out of the comparison; every
other field must be equal. Prints, per run, the documents that differ and which fields.

    python tests/bench/identity.py BASE [HEAD] [--folders ../shared/corpus fixtures]
        [--strategies structure,fixed,sentence,recursive,semantic] [--keep DIR]

HEAD may be `WORKTREE` (the default): the files as they are now, committed or not. Whole
corpus, five strategies: about 40 minutes a side on two cores (semantic is most of it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = {"default": [], "cl512": ["--tokenizer", "cl100k_base", "--max-tokens", "512",
                                    "--overlap", "32"], "t64": ["--max-tokens", "64"]}


def package(rev: str, dest: Path) -> Path:
    """The package `chunkwise` of `rev` (or of the working tree) as an importable folder."""
    pkg = dest / "chunkwise"
    if rev == "WORKTREE":
        shutil.copytree(ROOT / "src" / "chunkwise", pkg)
        shutil.rmtree(pkg / "parsers", ignore_errors=True)
        shutil.copytree(ROOT / "parsers", pkg / "parsers")
    else:
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/chunkwise",
                                  "parsers"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        (dest / "src" / "chunkwise").rename(pkg)
        shutil.rmtree(pkg / "parsers", ignore_errors=True)
        (dest / "parsers").rename(pkg / "parsers")
    return dest


def chunks(path_entry: Path, strategy: str, budget: list[str], folders: list[str],
           out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(path_entry)}
    with out.open("wb") as f:
        subprocess.run([sys.executable, "-c", "from chunkwise.cli import main; main()",
                        "chunk", "--jsonl", "-q", "--strategy", strategy, *budget, *folders],
                       stdout=f, env=env, check=True, cwd=ROOT)


def by_document(path: Path) -> dict[str, list[dict]]:
    docs: dict[str, list[dict]] = defaultdict(list)
    with path.open() as f:
        for line in f:
            chunk = json.loads(line)
            chunk.pop("id", None)
            docs[chunk["source"]].append(chunk)
    return docs


def compare(a: Path, b: Path) -> list[str]:
    """One line per document whose chunks differ: its name, the chunk counts, the fields."""
    before, after = by_document(a), by_document(b)
    lines = []
    for source in sorted(set(before) | set(after)):
        x, y = before.get(source, []), after.get(source, [])
        if x == y:
            continue
        fields = Counter(k for c1, c2 in zip(x, y) for k in set(c1) | set(c2)
                         if c1.get(k) != c2.get(k))
        lines.append(f"  {source}: {len(x)} -> {len(y)} chunks; {dict(fields)}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("base")
    ap.add_argument("head", nargs="?", default="WORKTREE")
    ap.add_argument("--folders", nargs="+", default=["../shared/corpus", "fixtures"])
    ap.add_argument("--strategies", default="structure,fixed,sentence,recursive,semantic")
    ap.add_argument("--keep", type=Path, help="write the JSONL here (else a temporary folder)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="chunkwise-identity-"))
    work.mkdir(parents=True, exist_ok=True)
    sides = {name: package(rev, work / f"pkg-{name}")
             for name, rev in (("base", args.base), ("head", args.head))}
    differing = 0
    for strategy in args.strategies.split(","):
        for label, budget in BUDGETS.items():
            outs = {}
            for name, entry in sides.items():
                outs[name] = work / f"{name}.{strategy}.{label}.jsonl"
                chunks(entry, strategy, budget, args.folders, outs[name])
            lines = compare(outs["base"], outs["head"])
            differing += bool(lines)
            print(f"{strategy} {label}: {len(lines)} documents differ", *lines, sep="\n",
                  flush=True)
    if args.keep is None:
        shutil.rmtree(work)
    return 1 if differing else 0


if __name__ == "__main__":
    raise SystemExit(main())
