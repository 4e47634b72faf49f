"""CSV at 512 `cl100k_base`: chunkwise's chunking CPU time (parse included) over one tiktoken
`encode_ordinary` pass, summed over corpus/csv, per run, and their median (issue 42's CSV
figure). To time another revision, lay its package out with `identity.py`'s `package` and
run this with `PYTHONPATH` set to it; alternate the two processes a few times.

    python tests/bench/csv_ratio.py [RUNS]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import chunkwise
from chunkwise import Chunker
from chunkwise.sizing.sizers import tiktoken_encoding

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "csv"


def cpu(fn) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def main() -> None:
    files = sorted(CORPUS.glob("*.csv"))
    datas = [f.read_bytes() for f in files]
    texts = [d.decode("utf-8", "replace") for d in datas]
    enc = tiktoken_encoding("cl100k_base")
    chunker = Chunker(max_tokens=512, tokenizer="cl100k_base")
    ratios = []
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
        ref = cpu(lambda: [enc.encode_ordinary(t) for t in texts])
        got = cpu(lambda: [chunker.chunk_bytes(d, source=f.name) for d, f in zip(datas, files)])
        ratios.append(got / ref)
    print(Path(chunkwise.__file__).parent, " ".join(f"{r:.2f}x" for r in ratios),
          f"median {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
