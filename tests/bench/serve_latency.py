"""Warm latency of `chunkwise serve`: the time a client waits for an answer from a server
that has the model and the collection open, against `chunkwise query`, which loads both
for every question.

    python tests/bench/serve_latency.py                    # ingests fixtures/ into a temp db
    python tests/bench/serve_latency.py --db chunkwise-db  # an existing collection
        [--queries 100] [--k 5] [--cli 3]

The server is `chunkwise serve` in its own process on a free port of 127.0.0.1; the client
is this process, one request at a time, a new connection each (as `curl` makes). The
questions: the fixture question set (tests/data/fixture_questions.jsonl) and, to reach
`--queries`, each again with a number appended (so no answer is a repeat of the one
before). One untimed request first (the server's first search opens the word index).
Reported per mode (hybrid, dense, lexical) and for `/fetch` of a hit with its section:
p50, p95 and max in ms, wall-clock time. `--cli N` also times N runs of `chunkwise query`
(the cold path) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "tests" / "data" / "fixture_questions.jsonl"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read())


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def percentiles(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return (f"p50 {statistics.median(ms):6.1f}  p95 {p95:6.1f}  max {ms[-1]:6.1f}  "
            f"(n={len(ms)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default=None, help="an existing chunkwise database")
    ap.add_argument("--collection", default="chunkwise")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--cli", type=int, default=0, metavar="N",
                    help="also time N runs of `chunkwise query`")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "chunkwise.cli"]
    tmp = tempfile.TemporaryDirectory()
    db = args.db
    if db is None:
        db = str(Path(tmp.name) / "db")
        t = time.perf_counter()
        subprocess.run([*cli, "ingest", str(ROOT / "fixtures"), "--db", db, "-q"], check=True)
        print(f"ingested fixtures/ in {time.perf_counter() - t:.1f}s")
    base = [q["question"] for q in map(json.loads, QUESTIONS.read_text().splitlines()) if q]
    questions = [base[i % len(base)] + ("" if i < len(base) else f" {i}")
                 for i in range(args.queries)]
    port = free_port()
    t = time.perf_counter()
    proc = subprocess.Popen([*cli, "serve", "--db", db, "--collection", args.collection,
                             "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        print(f"server up in {time.perf_counter() - t:.1f}s: {line.strip()}")
        url = f"http://127.0.0.1:{port}"
        health = get(f"{url}/health")
        print(f"{health['records']} records, {health['embedder']}; {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}")
        get(f"{url}/search?" + urllib.parse.urlencode({"query": "warm up"}))
        ids = []
        for mode in ("hybrid", "dense", "lexical"):
            ms = []
            for q in questions:
                t = time.perf_counter()
                out = post(f"{url}/search", {"query": q, "k": args.k, "mode": mode})
                ms.append((time.perf_counter() - t) * 1000)
                if mode == "hybrid" and out["hits"]:
                    ids.append(out["hits"][0]["id"])
            print(f"search {mode:<8} k={args.k}: {percentiles(ms)}")
        ms = []
        for id_ in ids:
            t = time.perf_counter()
            post(f"{url}/fetch", {"id": id_})
            ms.append((time.perf_counter() - t) * 1000)
        print(f"fetch + section  : {percentiles(ms)}")
    finally:
        proc.terminate()
        proc.wait(30)
    if args.cli:
        s = []
        for q in base[:args.cli]:
            t = time.perf_counter()
            subprocess.run([*cli, "query", q, "--db", db, "--collection", args.collection,
                            "-k", str(args.k)], check=True, capture_output=True)
            s.append(time.perf_counter() - t)
        print(f"chunkwise query (cold, a process each): median {statistics.median(s):.2f}s "
              f"over {len(s)}")
    tmp.cleanup()


if __name__ == "__main__":
    main()
