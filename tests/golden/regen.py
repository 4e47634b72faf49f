"""Golden chunks: `chunkwise chunk --jsonl fixtures` for each strategy at two budgets, kept as
`<strategy>.<budget>.jsonl.gz` beside this file and compared by tests/test_golden.py, so
that any change of output is a visible, reviewed diff.

After a change whose new output you have reviewed (`zdiff` an old and a new file, or
`python tests/golden/regen.py --diff`), regenerate and commit the files:

    python tests/golden/regen.py

`semantic` and `llm` are left out: they need an embedding model or an LLM.
"""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STRATEGIES = ("structure", "fixed", "sentence", "recursive")
#: budget label -> chunk options (the default is minilm, 256 tokens)
BUDGETS = {"t256": [], "t64": ["--max-tokens", "64"]}


def golden_path(strategy: str, budget: str) -> Path:
    return HERE / f"{strategy}.{budget}.jsonl.gz"


def current(strategy: str, budget: str) -> bytes:
    """The JSONL the working tree prints now for the fixtures."""
    return subprocess.run(
        [sys.executable, "-m", "chunkwise.cli", "chunk", "--jsonl", "-q", "--strategy", strategy,
         *BUDGETS[budget], "fixtures"], cwd=ROOT, check=True, capture_output=True).stdout


def stored(strategy: str, budget: str) -> bytes:
    return gzip.decompress(golden_path(strategy, budget).read_bytes())


def write(strategy: str, budget: str, data: bytes) -> None:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:  # reproducible
        f.write(data)
    golden_path(strategy, budget).write_bytes(buf.getvalue())


def main() -> int:
    diff_only = "--diff" in sys.argv[1:]
    changed = 0
    for strategy in STRATEGIES:
        for budget in BUDGETS:
            data = current(strategy, budget)
            old = stored(strategy, budget) if golden_path(strategy, budget).exists() else b""
            if data != old:
                changed += 1
                print(f"{strategy} {budget}: {len(old.splitlines())} -> "
                      f"{len(data.splitlines())} chunks, changed")
                if not diff_only:
                    write(strategy, budget, data)
    print(f"{changed} golden file(s) {'differ' if diff_only else 'written'}")
    return 1 if diff_only and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
