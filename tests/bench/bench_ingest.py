"""End-to-end ingest throughput: chunks/s and MB/s, the split of time per stage, and how much
of the run the embedder waited for work, for the serial runner, a process pool and Ray.

Each configuration ingests the same folders into a fresh embedded Chroma (`ray-server`, and
a name with `-server`: a fresh `chroma run` server on 127.0.0.1) in a fresh process, so that no model, client or cache
is shared between runs; peak RSS is the largest of that process and its children (parsing
workers, the model's process), and "all processes together" the peak of their sum, sampled
every 0.2 s from /proc.

    python tests/bench/bench_ingest.py [--corpus ../shared/corpus] [--folders markdown html ...]
        [--configs serial,workers2,ray,ray-server,workers2-server-w4] [--embedder minilm|hash]
        [--device cpu|cuda|auto]
        [--runs 1] [--copies 1] [--json OUT.json] [--table-rows row|grouped|auto]

A configuration is `serial`, `workersN` (N parsing processes), `ray` or `ray-server`; with
`-server` it writes into a `chroma run` server instead of an embedded database, with `-wN`
through N writer threads (`--writers`).

`--embedder hash` measures the pipeline without the model (tests/hashembed.py: a hash of
each text; the store and the chunker are real). `--copies 3` ingests three copies of the
folders (to see whether memory grows with the corpus). Figures are medians over `--runs`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r'''
import json, os, resource, sys, threading, time
from pathlib import Path
from chunkwise.pipeline.runner import ingest
args = json.loads(sys.argv[1])
PAGE = os.sysconf("SC_PAGE_SIZE")
tree_peak = [0]


def tree_rss(pid):
    """Resident bytes of `pid` and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
            for t in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (t / "children").read_text().split()]
        except (OSError, ValueError):
            pass
    return total


def sample():
    while True:
        tree_peak[0] = max(tree_peak[0], tree_rss(os.getpid()))
        time.sleep(0.2)


if Path("/proc/self/task").is_dir():
    threading.Thread(target=sample, daemon=True).start()
t0 = time.perf_counter()
if "table_rows" in args:  # a chunker of its own: the table-rows policy
    from chunkwise.chunking.api import Chunker
    args["chunker"] = Chunker(table_rows=args.pop("table_rows"))
if args.pop("ray", False):
    from chunkwise.pipeline.ray import ingest as ray_ingest
    report = ray_ingest(args.pop("paths"), **args)
else:
    report = ingest(args.pop("paths"), **args)
out = report.to_dict()
out["wall"] = time.perf_counter() - t0
out["rss_mb"] = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                    resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
out["tree_rss_mb"] = tree_peak[0] / 2**20
print("RESULT " + json.dumps(out))
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: `chroma run` without the console script (a `pip install --target` has none on PATH)
CHROMA_RUN = "import sys, chromadb_rust_bindings as r; r.cli(['chroma', *sys.argv[1:]])"


def start_server(work: Path) -> tuple[subprocess.Popen, int]:
    """A fresh `chroma run` on 127.0.0.1, once it answers its heartbeat."""
    import httpx

    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", CHROMA_RUN, "run", "--path",
                               str(work / f"srv-{port}"), "--host", "127.0.0.1", "--port",
                               str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).is_success:
                return server, port
        except httpx.TransportError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("`chroma run` did not start")


def run_config(name: str, paths: list[str], work: Path, embedder: str, device: str | None,
               env: dict[str, str], table_rows: str | None = None) -> dict:
    args: dict = {"paths": paths, "embedder": embedder, "prune": False}
    if table_rows:
        args["table_rows"] = table_rows
    if device:
        args["device"] = device
    base, *flags = name.split("-")
    server = None
    if "server" in flags:
        server, port = start_server(work)
        args.update(host="127.0.0.1", port=port)
    else:
        args.update(db_path=str(work / f"db-{name}-{time.monotonic_ns()}"))
    for flag in flags:
        if flag.startswith("w") and flag[1:].isdigit():
            args["writers"] = int(flag[1:])
    if base == "ray":
        args.update(ray=True, num_cpus=2)
    else:
        args.update(workers=1 if base == "serial" else int(base.removeprefix("workers")))
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(args)], env=env,
                           capture_output=True, text=True, timeout=6 * 3600)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{name} failed:\n{p.stderr[-2000:]}")
    return json.loads(line[len("RESULT "):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--folders", nargs="+", default=["markdown", "html", "pdf", "code", "text"])
    ap.add_argument("--configs", default="serial,workers2")
    ap.add_argument("--embedder", default="minilm", choices=("minilm", "hash"))
    ap.add_argument("--device", default=None)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--table-rows", default=None, choices=("row", "grouped", "auto"),
                    help="the chunker's table-rows policy (default: the Chunker's)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        work = Path(tmp)
        src = work / "corpus"
        for c in range(a.copies):
            for f in a.folders:
                shutil.copytree(a.corpus / f, src / f"copy{c}" / f)
        size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
        # tests/hashembed.py, importable by spec in the child and its workers
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
        embedder = "hashembed:HASH" if a.embedder == "hash" else "minilm"
        rows = {}
        for name in a.configs.split(","):
            runs = [run_config(name, [str(src)], work, embedder, a.device, env, a.table_rows)
                    for _ in range(a.runs)]
            wall = statistics.median(r["wall"] for r in runs)
            r = runs[0]
            s = r["seconds"]
            rows[name] = {
                "chunks": r["chunks"], "files": r["files"], "mb": round(size / 1e6, 2),
                "wall_s": round(wall, 1), "chunks_per_s": round(r["chunks"] / wall, 1),
                "mb_per_s": round(size / 1e6 / wall, 3),
                "embed_busy_share": round(s.get("embed", 0) / s["total"], 3),
                "embed_idle_s": s.get("embed_idle"), "seconds": s,
                "peak_rss_mb": round(max(x["rss_mb"] for x in runs)),
                "peak_tree_rss_mb": round(max(x.get("tree_rss_mb", 0) for x in runs)),
                "embedded": r["embedded"], "reused": r["reused"],
                "failed": len(r.get("failed", [])),
            }
            print(f"{name:9} {r['chunks']:6d} chunks {wall:7.1f}s  {rows[name]['chunks_per_s']:7.1f} "
                  f"chunks/s  {rows[name]['mb_per_s']:.3f} MB/s  embedder busy "
                  f"{rows[name]['embed_busy_share']:.0%}  peak RSS {rows[name]['peak_rss_mb']} MB "
                  f"(all processes together {rows[name]['peak_tree_rss_mb']} MB)",
                  flush=True)
        if a.json:
            a.json.write_text(json.dumps({"folders": a.folders, "copies": a.copies,
                                          "embedder": a.embedder, "device": a.device,
                                          "table_rows": a.table_rows,
                                          "cpus": os.cpu_count(), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
