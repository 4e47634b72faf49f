"""Benchmark: how fast the inspector page and the collection map open in headless Chromium.

    python tests/bench/bench_inspect.py [--runs 7] [--mb 1.0] [--points 30000] [--file F]

Times in the browser itself (`performance.now()` at the second animation frame after the
load event: parsed, the page's script run, laid out and painted): the median of `--runs`
fresh pages, interleaved with the other pages run by run, and the median ratio to a reference
page opened in the same browser in the same run: the same text as one escaped `<pre>` (what
the browser needs just to show that much text).

- `inspect`: a document of `--mb` MB (`--file`, default the fixture alice-in-wonderland.txt,
  repeated; its extension gives the format), chunked with the default options and rendered by
  `chunkwise.pages.inspector.render` (acceptance: < 2 s);
- `map`: `--points` points with chunk-like text, by `chunkwise.pages.map.render_map`
  (acceptance: < 5 s);
- `reference`: `<pre>` of the same 1 MB text.

Needs playwright (the `test` extra) and a `chromium` on PATH; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import html
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ALICE = ROOT / "fixtures" / "alice-in-wonderland.txt"
#: milliseconds from the start of navigation to the second animation frame after the load
#: event: the page parsed, its script run, laid out and painted
FIRST_FRAME_MS = """() => new Promise(done => requestAnimationFrame(() =>
    requestAnimationFrame(() => done(performance.now()))))"""


def load_ms(browser, path: Path) -> float:
    page = browser.new_page()
    page.goto(path.resolve().as_uri(), wait_until="load")
    ms = page.evaluate(FIRST_FRAME_MS)
    page.close()
    return ms


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--points", type=int, default=30_000)
    ap.add_argument("--file", type=Path, default=ALICE,
                    help="the document repeated to --mb (default the Alice fixture); its "
                         "extension gives the format")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from chunkwise.pages.map import CollectionMap, pca_2d, render_map
    from chunkwise.pages.inspector import Inspector, render

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("no chromium on PATH", file=sys.stderr)
        return 2
    text = args.file.read_text(encoding="utf-8")
    size = int(args.mb * 1_000_000)
    big = (text * (size // len(text) + 1))[:size]
    t = time.perf_counter()
    report = Inspector(["structure"]).report(big.encode(), source=f"repeated{args.file.suffix}")
    chunked = time.perf_counter() - t
    t = time.perf_counter()
    page_html = render([report])
    rendered = time.perf_counter() - t

    rng = np.random.default_rng(7)
    words = ALICE.read_text(encoding="utf-8").split()
    n = args.points
    metas = [{"source": f"doc{i % 300}.md", "format": ("markdown", "pdf", "html")[i % 3],
              "section_path": f"Part {i % 7}", "tokens": 100 + i % 150} for i in range(n)]
    texts = [" ".join(words[i % 20_000:i % 20_000 + 50])[:280] for i in range(n)]
    xy, shares = pca_2d(rng.normal(size=(n, 32)).astype(np.float32))
    map_html = render_map(CollectionMap("bench", n, xy, [f"id{i}" for i in range(n)], metas,
                                        texts, shares))
    reference = f"<!DOCTYPE html><meta charset=utf-8><pre>{html.escape(big)}</pre>"

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        files = {}
        for name, content in (("reference", reference), ("inspect", page_html),
                              ("map", map_html)):
            files[name] = Path(tmp) / f"{name}.html"
            files[name].write_text(content, encoding="utf-8")
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        print(f"chromium {browser.version}; {len(big):,} characters, "
              f"{len(report.views[0].chunks):,} chunks (chunked in {chunked:.2f} s, page "
              f"built in {rendered:.2f} s); {n:,} map points; median of {args.runs}")
        # interleaved, run by run, so that a load spike on a shared machine hits the
        # reference and the pages alike; the ratio is the median of the per-run ratios
        names = ("reference", "inspect", "map")
        times = {name: [] for name in names}
        for _ in range(args.runs):
            for name in names:
                times[name].append(load_ms(browser, files[name]))
        print(f"{'page':<10} {'MB':>6} {'load ms':>9} {'vs ref':>7}   runs (ms)")
        for name in names:
            ms = statistics.median(times[name])
            ratio = statistics.median(t / r for t, r in zip(times[name], times["reference"]))
            mb = files[name].stat().st_size / 1e6
            runs = " ".join(f"{t:.0f}" for t in times[name])
            print(f"{name:<10} {mb:>6.2f} {ms:>9.0f} {ratio:>6.1f}x   {runs}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
