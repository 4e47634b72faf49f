"""The inspector page, the semantic distance plot, the collection map and `chunk --color`,
opened in a real headless Chromium (Debian's `chromium`, driven by Playwright's Python package
with `executable_path`: nothing is downloaded). The browser tests skip, saying why, where
Playwright or Chromium cannot be had; `.ci/run` installs Chromium when it is missing.

Every page is opened with all requests intercepted: anything but the page's own file is
recorded (and refused), and the tests assert that nothing was asked for.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chunkwise.chunking.api import Chunker
from chunkwise.pages.map import CollectionMap, pca_2d, read_collection, render_map
from chunkwise.pages.inspector import Inspector, json_script, render, terminal_view

from conftest import CHUNKWISE_CLI, FIXTURES

#: one fixture per format (the acceptance's screenshot per format)
PER_FORMAT = {
    "markdown": "fastapi__features.md",
    "html": "httpd__mod__mod_dir.html",
    "pdf": "latex-two-column-sample.pdf",
    "python": "fastapi__fastapi__background.py",
    "csv": "538__trump-poll-tweets.csv",
    "text": "alice-in-wonderland.txt",
}

HOSTILE = ("# Title </script><script>window.__pwned = 1</script>\n\n"
           "A paragraph with <img src=x onerror=\"window.__pwned = 2\"> and "
           "</script><!-- and \u2028 a line separator & an ampersand.\n\n"
           "## <b onmouseover=\"window.__pwned = 3\">bold</b>\n\n"
           "```html\n<script>window.__pwned = 4</script>\n```\n")


# -- the browser -----------------------------------------------------------------------------
def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright (the `test` extra) is not installed")
    exe = _chromium()
    if exe is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium; .ci/run does it)")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        except Exception as e:  # a Chromium that cannot start here (no display libraries, ...)
            pytest.skip(f"{exe} does not start: {type(e).__name__}: {str(e)[:200]}")
        yield b
        b.close()


class Opened:
    """A page opened from disk with every request watched and console errors kept."""

    def __init__(self, browser, path: Path, width: int = 1400, height: int = 900) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.errors: list[str] = []
        self.requests: list[str] = []
        own = path.resolve().as_uri()

        def route(r):
            url = r.request.url
            if url == own:
                r.continue_()
            else:
                self.requests.append(url)
                r.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(own, wait_until="load")

    def close(self) -> None:
        self.context.close()

    def __enter__(self) -> "Opened":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: milliseconds from the start of navigation to the second animation frame after the load
#: event: the page parsed, its script run, laid out and painted
FIRST_FRAME_MS = """() => new Promise(done => requestAnimationFrame(() =>
    requestAnimationFrame(() => done(performance.now()))))"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def chunk_elements(page) -> list[dict]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.chunk'), e => ({
        id: e.dataset.chunkId, text: e.textContent,
        view: e.closest('.text').dataset.view, doc: e.closest('.text').dataset.doc}))""")


# -- the page per format ----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", sorted(PER_FORMAT))
def test_page_per_format(browser, tmp_path, fmt):
    path = FIXTURES / PER_FORMAT[fmt]
    report = Inspector(["structure"]).report(path.read_bytes(), source=path.name)
    chunks = report.views[0].chunks
    # the same chunks `chunkwise chunk` prints
    assert [c.to_dict() for c in chunks] == [c.to_dict() for c in
                                            Chunker().chunk_file(path, source=path.name)]
    assert report.doc.format == fmt and chunks
    page_file = write(tmp_path, f"{fmt}.html", render([report]))
    with Opened(browser, page_file) as o:
        got = chunk_elements(o.page)
        assert len(got) == len(chunks)
        assert [g["id"] for g in got] == [c.id for c in chunks]
        assert [g["text"] for g in got] == [c.text for c in chunks]
        # click a chunk in the middle: the panel shows its metadata
        k = len(chunks) // 2
        o.page.locator(".chunk").nth(k).click()
        panel = o.page.inner_text("#panel")
        c = chunks[k]
        assert c.id in panel and f"{c.tokens} / 256" in panel
        assert " > ".join(c.section_path) in panel
        assert ", ".join(c.kinds) in panel
        if c.context:
            assert o.page.locator("#panel pre.context").text_content() == c.context
        assert o.page.locator(".chunk.sel").get_attribute("data-chunk-id") == c.id
        shot = tmp_path / f"{fmt}.png"
        o.page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 20_000  # a blank or broken page compresses far smaller
        # the figures on the page are the chunks'
        assert o.page.locator(".column .count").inner_text() == str(len(chunks))
        assert o.errors == [] and o.requests == []


def test_many_documents_on_one_page(browser, tmp_path):
    """Documents out of view are not laid out (content-visibility), yet all are there and a
    chunk of the last one is found from the navigation and answers a click."""
    inspector = Inspector(["structure"])
    paths = [FIXTURES / PER_FORMAT[f] for f in sorted(PER_FORMAT)]
    reports = [inspector.report(p.read_bytes(), source=p.name) for p in paths]
    with Opened(browser, write(tmp_path, "all.html", render(reports))) as o:
        got = chunk_elements(o.page)
        want = [c for r in reports for c in r.views[0].chunks]
        assert [(g["id"], g["text"]) for g in got] == [(c.id, c.text) for c in want]
        last = len(reports) - 1
        o.page.click(f'header nav a[href="#doc{last}"]')
        chunk = o.page.locator(f"#doc{last} .chunk").nth(3)
        chunk.click()
        assert reports[last].views[0].chunks[3].id in o.page.inner_text("#panel")
        assert o.errors == [] and o.requests == []


def test_pdf_page_boundaries_and_code_line_numbers(browser, tmp_path):
    inspector = Inspector(["structure"])
    pdf = FIXTURES / PER_FORMAT["pdf"]
    code = FIXTURES / PER_FORMAT["python"]
    reports = [inspector.report(p.read_bytes(), source=p.name) for p in (pdf, code)]
    page_file = write(tmp_path, "two.html", render(reports))
    with Opened(browser, page_file) as o:
        pages = o.page.eval_on_selector_all('#doc0 .pb', "es => es.map(e => e.dataset.page)")
        n_pages = len(reports[0].doc.page_starts)
        assert n_pages >= 2 and pages == [str(p) for p in range(2, n_pages + 1)]
        # each marker sits where its page starts in the text: the text before it is the
        # canonical text up to that page's start
        before = o.page.evaluate("""() => { const m = document.querySelector('#doc0 .pb');
            const r = document.createRange(); const box = m.closest('.text');
            r.setStart(box, 0); r.setEndBefore(m); return r.toString().length; }""")
        assert before == reports[0].doc.page_starts[1]
        code = reports[1]
        lines = code.doc.text.count("\n") + (not code.doc.text.endswith("\n"))
        gutter = o.page.locator("#doc1 .gutter").text_content()
        assert gutter.split("\n") == [str(n) for n in range(1, lines + 1)]
        # each chunk starts on the row of its first line's number
        rows = o.page.evaluate("""() => { const box = document.querySelector('#doc1 .src');
            const top = box.getBoundingClientRect().top;
            const h = parseFloat(getComputedStyle(box).lineHeight);
            return Array.from(box.querySelectorAll('.chunk'), e => {
                const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
                let t = w.nextNode(); while (!t.data.length) t = w.nextNode();
                const r = document.createRange(); r.setStart(t, 0); r.setEnd(t, 1);
                return Math.round((r.getClientRects()[0].top - top) / h) + 1;
            }); }""")
        assert rows == [c.meta["line_start"] for c in code.views[0].chunks]
        assert o.errors == [] and o.requests == []


def test_strategies_side_by_side(browser, tmp_path):
    path = FIXTURES / "mkdocs-material__reference__data-tables.md"
    names = ["structure", "fixed", "sentence", "recursive"]
    report = Inspector(names, max_tokens=128).report(path.read_bytes(), source=path.name)
    assert [v.label for v in report.views] == names
    for v in report.views:
        assert [c.to_dict() for c in v.chunks] == [c.to_dict() for c in Chunker(
            max_tokens=128, strategy=v.label).chunk_file(path, source=path.name)]
    page_file = write(tmp_path, "side.html", render([report]))
    with Opened(browser, page_file, width=1800) as o:
        assert o.page.locator(".column").count() == 4
        heads = o.page.eval_on_selector_all(".column h3", "es => es.map(e => e.textContent)")
        assert heads == names
        counts = o.page.eval_on_selector_all(".column .count", "es => es.map(e => +e.textContent)")
        assert counts == [len(v.chunks) for v in report.views]
        # one histogram per column, its bars adding up to the column's chunks
        bars = o.page.evaluate("""() => Array.from(document.querySelectorAll('.column'), col =>
            Array.from(col.querySelectorAll('svg.hist rect title'),
                t => +t.textContent.split(': ').pop()).reduce((a, b) => a + b, 0))""")
        assert bars == counts
        got = chunk_elements(o.page)
        for v, view in enumerate(report.views):
            mine = [g for g in got if g["view"] == str(v)]
            assert [(g["id"], g["text"]) for g in mine] == [(c.id, c.text) for c in view.chunks]
        # the columns lie side by side
        xs = o.page.eval_on_selector_all(".column", "es => es.map(e => e.getBoundingClientRect().x)")
        assert xs == sorted(xs) and len(set(xs)) == 4
        o.page.screenshot(path=str(tmp_path / "side.png"))
        assert o.errors == [] and o.requests == []


def test_overlap_is_hatched_and_chunks_keep_their_text(browser, tmp_path):
    path = FIXTURES / "fastapi__features.md"
    report = Inspector(["structure"], overlap=32).report(path.read_bytes(), source=path.name)
    chunks = report.views[0].chunks
    repeated = [c for p, c in zip(chunks, chunks[1:]) if c.start < p.end]
    assert repeated  # the fixture has overlaps at this budget
    with Opened(browser, write(tmp_path, "ov.html", render([report]))) as o:
        got = chunk_elements(o.page)
        assert [(g["id"], g["text"]) for g in got] == [(c.id, c.text) for c in chunks]
        hatched = o.page.eval_on_selector_all(
            ".chunk .ov", "es => es.map(e => [e.parentElement.dataset.chunkId, e.textContent])")
        prev = {c.id: p for p, c in zip(chunks, chunks[1:])}
        assert len(hatched) == len(repeated)
        for cid, text in hatched:
            c = next(c for c in chunks if c.id == cid)
            assert text == c.text[:prev[cid].end - c.start]
        assert o.errors == [] and o.requests == []


def test_section_tree_scrolls_to_the_heading(browser, tmp_path):
    path = FIXTURES / "fastapi__features.md"
    report = Inspector(["structure"]).report(path.read_bytes(), source=path.name)
    with Opened(browser, write(tmp_path, "tree.html", render([report])), height=700) as o:
        links = o.page.locator(".tree a")
        assert links.count() >= 5
        last = links.nth(links.count() - 1)
        label = last.inner_text()
        last.click()
        mark = o.page.locator(f'.sb[data-sec-mark="{last.get_attribute("data-sec")}"]')
        assert "hit" in mark.get_attribute("class")
        # the heading is now in view inside its scrolled text box, and is the heading clicked
        inside = o.page.evaluate("""(k) => { const m = document.querySelector(
            '.sb[data-sec-mark="' + k + '"]'); const box = m.closest('.text').getBoundingClientRect();
            const r = m.getBoundingClientRect(); return r.top >= box.top && r.top <= box.bottom; }""",
            last.get_attribute("data-sec"))
        assert inside
        after = o.page.evaluate("""(k) => { const m = document.querySelector(
            '.sb[data-sec-mark="' + k + '"]'); const r = document.createRange();
            r.setStartAfter(m); r.setEnd(m.closest('.text'), m.closest('.text').childNodes.length);
            return r.toString().slice(0, 200); }""", last.get_attribute("data-sec"))
        assert label in after
        assert o.errors == [] and o.requests == []


def test_hostile_document_text_is_only_text(browser, tmp_path):
    reports = [Inspector(["structure"]).report(HOSTILE.encode(), source=f"evil</script>.{ext}",
                                               format=fmt)
               for ext, fmt in (("md", "markdown"), ("txt", "text"))]
    html = render(reports, errors=["<img src=x onerror=alert(1)>: bad"])
    assert "<script>window" not in html and "<img src=x" not in html
    with Opened(browser, write(tmp_path, "evil.html", html)) as o:
        assert o.page.evaluate("window.__pwned") is None
        got = chunk_elements(o.page)
        want = [c for r in reports for c in r.views[0].chunks]
        assert [g["text"] for g in got] == [c.text for c in want]
        o.page.locator(".chunk").first.hover()
        o.page.locator(".chunk").first.click()
        assert o.page.evaluate("window.__pwned") is None
        assert o.page.locator("#panel img").count() == 0
        assert o.errors == [] and o.requests == []


def test_semantic_trace_reuses_the_chunking_pass():
    """The curve is the one chunking computed: with a counting embedder (what the vectors
    mean does not matter here), every sentence is embedded once for chunks and curve
    together, and the strategy options reach `semantic` only."""
    seen: list[str] = []

    def embed(texts):
        seen.extend(texts)
        return hash_vectors(texts)

    path = FIXTURES / "fastapi__features.md"
    inspector = Inspector(["structure", "semantic"], semantic_threshold="stddev",
                          semantic_amount=1.0, embedder=embed)
    report = inspector.report(path.read_bytes(), source=path.name)
    trace = report.views[1].trace
    assert len(seen) == len(trace.sentences) > 20
    assert trace.method == "stddev" and trace.amount == 1.0
    d = trace.distances.astype(np.float64)
    assert trace.threshold == pytest.approx(d.mean() + d.std())
    again = Chunker(strategy="semantic", semantic_threshold="stddev", semantic_amount=1.0,
                    embedder=embed).chunk_file(path, source=path.name)
    assert [c.id for c in again] == [c.id for c in report.views[1].chunks]
    assert [c.id for c in report.views[0].chunks] == [c.id for c in Chunker().chunk_file(
        path, source=path.name)]


def test_semantic_distance_curve(browser, tmp_path):
    """The real model (about 12 s here): the curve is what the strategy cut by."""
    path = FIXTURES / "fastapi__features.md"
    report = Inspector(["structure", "semantic"]).report(path.read_bytes(), source=path.name)
    sem = report.views[1]
    trace = sem.trace
    n = len(trace.distances)
    assert n == len(trace.sentences) - 1 > 20
    assert np.all((trace.distances >= 0) & (trace.distances <= 2))
    assert int(trace.breaks.sum()) == int((trace.scores > trace.threshold).sum()) > 0
    # the chunks are those of `chunk --strategy semantic`
    assert [c.id for c in sem.chunks] == [c.id for c in Chunker(strategy="semantic").chunk_file(
        path, source=path.name)]
    with Opened(browser, write(tmp_path, "sem.html", render([report]))) as o:
        plots = o.page.locator('.column[data-view="1"] figure.plot')
        assert plots.count() >= 2  # the whole document, then its sections
        whole = plots.first
        points = whole.locator("polyline").get_attribute("points").split()
        assert len(points) == n
        assert whole.locator("circle.bp").count() == int(trace.breaks.sum())
        assert whole.locator("line.thr").count() == 1
        # dots above the line: a breakpoint's y is above (smaller than) the threshold's
        thr_y = float(whole.locator("line.thr").get_attribute("y1"))
        ys = [float(y) for y in whole.locator("circle.bp").evaluate_all("es => es.map(e => e.getAttribute('cy'))")]
        assert ys and all(y <= thr_y for y in ys)
        # the boundaries where a chunk starts are drawn, and there are as many as chunks - 1
        # that start at a sentence boundary
        cuts = whole.locator("line.cut").count()
        assert 0 < cuts <= len(sem.chunks) - 1
        assert o.page.locator('.column[data-view="0"] figure.plot').count() == 0
        o.page.screenshot(path=str(tmp_path / "semantic.png"), full_page=True)
        assert o.errors == [] and o.requests == []


def test_one_megabyte_document_renders_fast(browser, tmp_path):
    """The acceptance asks < 2 s; asserted with a wide margin for a shared CI machine, the
    figure itself is tests/bench/bench_inspect.py's."""
    text = (FIXTURES / "alice-in-wonderland.txt").read_text(encoding="utf-8")
    big = (text * (1_050_000 // len(text) + 1))[:1_050_000]
    report = Inspector(["structure"]).report(big.encode(), source="alice-x7.txt")
    page_file = write(tmp_path, "big.html", render([report]))
    with Opened(browser, page_file) as o:
        ms = o.page.evaluate(FIRST_FRAME_MS)
        assert o.page.locator(".chunk").count() == len(report.views[0].chunks)
        assert ms < 6000, f"1 MB document took {ms:.0f} ms to load"
        assert o.errors == [] and o.requests == []


# -- the collection map -----------------------------------------------------------------------
def hash_vectors(texts) -> np.ndarray:
    """Deterministic 16-d unit vectors from a hash of each text (as test_corpus_ingest.py):
    what the map must show does not depend on what the vectors mean."""
    raw = [np.frombuffer(hashlib.blake2b(t.encode("utf-8", "surrogatepass"),
                                         digest_size=64).digest(), dtype=np.uint32)[:16]
           for t in texts]
    out = np.asarray(raw, dtype=np.float32).reshape(len(texts), 16) + 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory) -> Path:
    from chunkwise.embeddings.functions import Embedder
    from chunkwise.pipeline.runner import ingest

    db = tmp_path_factory.mktemp("map") / "db"
    report = ingest([str(FIXTURES)], db_path=db,
                    embedder=Embedder(identity="test:blake2b-16", embed=hash_vectors))
    assert not report.failed and report.written > 100
    return db


def test_pca_projects_onto_the_leading_axes():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(500, 3)) * [10.0, 3.0, 0.1]
    rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    xy, shares = pca_2d(base @ rot.T + 5.0)
    assert xy.shape == (500, 2)
    assert shares[0] > shares[1] > 0.05 and shares[0] + shares[1] > 0.99
    # the axes recover the first two coordinates up to sign
    assert abs(np.corrcoef(xy[:, 0], base[:, 0])[0, 1]) > 0.999
    assert abs(np.corrcoef(xy[:, 1], base[:, 1])[0, 1]) > 0.999
    assert np.allclose(pca_2d(base @ rot.T + 5.0)[0], xy)  # deterministic, signs included


def test_map_of_a_real_collection(browser, tmp_path, fixture_db):
    from chunkwise.chroma.queries import iter_collection

    stored = {i: m for i, _, m in iter_collection(db_path=fixture_db)}
    cmap = read_collection(db_path=fixture_db)
    assert sorted(cmap.ids) == sorted(stored) and not cmap.sampled
    with Opened(browser, write(tmp_path, "map.html", render_map(cmap)), width=1300) as o:
        assert o.page.evaluate("window.chunkwiseMap.count") == len(stored)
        assert f"{len(stored):,} chunks" in o.page.inner_text("#note")
        legend = o.page.eval_on_selector_all("#legend li", "es => es.map(e => e.textContent)")
        assert legend == sorted({m["source"] for m in stored.values()})
        o.page.select_option("#by", "format")
        legend = o.page.eval_on_selector_all("#legend li", "es => es.map(e => e.textContent)")
        assert legend == sorted({m["format"] for m in stored.values()})
        # click where a point is drawn: the panel shows a chunk drawn at that spot
        for i in (0, len(cmap.ids) // 2, len(cmap.ids) - 1):
            x, y = o.page.evaluate(f"window.chunkwiseMap.position({i})")
            o.page.mouse.click(x, y)
            shown = o.page.locator("#panel dd").first.inner_text()
            j = cmap.ids.index(shown)
            xj, yj = o.page.evaluate(f"window.chunkwiseMap.position({j})")
            assert abs(xj - x) <= 1.5 and abs(yj - y) <= 1.5
            assert stored[shown]["source"] in o.page.inner_text("#panel")
        o.page.screenshot(path=str(tmp_path / "map.png"))
        assert (tmp_path / "map.png").stat().st_size > 20_000
        assert o.errors == [] and o.requests == []


def test_map_samples_above_the_limit(fixture_db):
    cmap = read_collection(db_path=fixture_db, max_points=50)
    assert cmap.sampled and len(cmap.ids) == 50 and len(set(cmap.ids)) == 50
    assert cmap.total > 100
    assert read_collection(db_path=fixture_db, max_points=50).ids == cmap.ids  # fixed seed
    html = render_map(cmap)
    assert f"random sample of 50 of {cmap.total:,}" in html


def test_map_with_30000_points_renders_fast(browser, tmp_path):
    """The acceptance asks < 5 s; a generous bound here, the figure is the bench's."""
    rng = np.random.default_rng(7)
    n = 30_000
    words = (FIXTURES / "alice-in-wonderland.txt").read_text(encoding="utf-8").split()
    texts = [" ".join(words[i % 20_000:i % 20_000 + 50]) for i in range(n)]
    metas = [{"source": f"doc{i % 300}.md", "format": ("markdown", "pdf", "html")[i % 3],
              "section_path": f"Part {i % 7}", "tokens": 100 + i % 150} for i in range(n)]
    xy, shares = pca_2d(rng.normal(size=(n, 32)).astype(np.float32))
    cmap = CollectionMap("big", n, xy, [f"id{i}" for i in range(n)], metas,
                         [t[:280] for t in texts], shares)
    with Opened(browser, write(tmp_path, "map30k.html", render_map(cmap))) as o:
        ms = o.page.evaluate(FIRST_FRAME_MS)
        assert o.page.evaluate("window.chunkwiseMap.count") == n
        assert o.page.get_attribute("body", "data-ready") == "1"
        assert ms < 15000, f"30,000-point map took {ms:.0f} ms to load"
        assert o.errors == [] and o.requests == []


# -- without a browser ------------------------------------------------------------------------
def test_json_in_a_script_element_cannot_close_it():
    s = json_script("x", {"t": "</script><script>alert(1)</script><!-- & \u2028"})
    assert s.count("<") == 2 and s.count(">") == 2  # the element's own tags only
    body = s[s.index(">") + 1:s.rindex("<")]
    assert json.loads(body) == {"t": "</script><script>alert(1)</script><!-- & \u2028"}


def test_page_loads_nothing():
    path = FIXTURES / "httpd__mod__mod_dir.html"
    html = render([Inspector(["structure"]).report(path.read_bytes(), source=path.name)])
    tags = re.findall(r"<(?:script|link|img|iframe|object|embed|source)\b[^>]*>", html)
    assert all("src=" not in t and "href=" not in t for t in tags), tags
    assert "@import" not in html and "url(" not in html


ANSI = re.compile("\x1b\\[[0-9;]*m")


def test_terminal_view_marks_chunks_and_keeps_the_text():
    text = "Intro line.\n\nSecond \x1b[31mred\x1b[0m paragraph with more words.\n"
    chunks = Chunker(max_tokens=16, tokenizer="chars").chunk_text(text, format="text")
    assert len(chunks) >= 3
    out = terminal_view(text, chunks)
    plain = ANSI.sub("", out)
    assert plain == text.replace("\x1b", "\\x1b")  # the document's own escapes are shown, inert
    colours = re.findall("\x1b\\[30;48;5;(\\d+)m", out)
    assert set(colours) == {"223", "152"}


def test_cli_chunk_color_and_inspect(tmp_path):
    md = FIXTURES / "fastapi__features.md"
    env_run = dict(capture_output=True, text=True, timeout=300)
    forced = subprocess.run([*CHUNKWISE_CLI, "chunk", str(md), "--color", "always"], **env_run)
    assert forced.returncode == 0, forced.stderr
    head, _, body = forced.stdout.partition("\n")
    chunks = Chunker().chunk_file(md, source=md.name)
    assert head == f"=== {md.name}: {len(chunks)} chunks"
    from chunkwise.chunking.api import parse_file

    assert ANSI.sub("", body) == parse_file(md).text + "\n"
    assert body.count("\x1b[0m") >= len(chunks)
    auto = subprocess.run([*CHUNKWISE_CLI, "chunk", str(md), "--color"], **env_run)
    assert "\x1b[" not in auto.stdout and auto.stdout.startswith("--- ")  # not a terminal
    if sys.platform.startswith("linux"):  # on a terminal, `--color` alone colours
        import os
        import pty

        main_fd, tty_fd = pty.openpty()
        proc = subprocess.Popen([*CHUNKWISE_CLI, "chunk", str(md), "--color"], stdout=tty_fd,
                                stderr=subprocess.DEVNULL)
        os.close(tty_fd)
        got = b""
        while True:
            try:
                part = os.read(main_fd, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not part:
                break
            got += part
        os.close(main_fd)
        assert proc.wait(timeout=300) == 0
        assert got.startswith(f"=== {md.name}".encode()) and b"\x1b[30;48;5;223m" in got
    out = tmp_path / "r.html"
    broken = tmp_path / "broken.pdf"
    broken.write_bytes((FIXTURES / PER_FORMAT["pdf"]).read_bytes()[:3000])  # cut short
    done = subprocess.run([*CHUNKWISE_CLI, "inspect", str(md), str(tmp_path / "missing.md"),
                           str(broken), "--strategy", "structure,fixed", "--max-tokens", "128",
                           "-o", str(out)], **env_run)
    assert done.returncode == 1 and "missing.md: no such file or directory" in done.stderr
    assert re.search(r"broken\.pdf: .+", done.stderr) and "Traceback" not in done.stderr
    page = out.read_text(encoding="utf-8")
    assert "broken.pdf: " in page and "missing.md: no such file" in page
    n128 = len(Chunker(max_tokens=128).chunk_file(md, source=md.name))
    assert page.count('class="chunk ') == n128 + len(Chunker(
        max_tokens=128, strategy="fixed").chunk_file(md))
    bad = subprocess.run([*CHUNKWISE_CLI, "inspect", str(md), "--strategy", "structure,nope"],
                         **env_run)
    assert bad.returncode == 2 and "unknown strategy nope" in bad.stderr


def test_cli_map(tmp_path, fixture_db):
    out = tmp_path / "m.html"
    done = subprocess.run([*CHUNKWISE_CLI, "map", "--db", str(fixture_db), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"ids":[' in out.read_text(encoding="utf-8")
    missing = subprocess.run([*CHUNKWISE_CLI, "map", "--db", str(tmp_path / "none")],
                             capture_output=True, text=True, timeout=300)
    assert missing.returncode == 1 and "no Chroma database" in missing.stderr


def test_inspector_chunks_with_the_views_asked_for():
    """`inspect --views none` shows the chunks `chunk --views none` gives (the option was
    accepted and ignored)."""
    path = FIXTURES / "538__trump-poll-tweets.csv"
    for views in ("default", "none"):
        (view,) = Inspector(["structure"], views=views).report(
            path.read_bytes(), source=path.name).views
        want = Chunker(views=views).chunk_bytes(path.read_bytes(), source=path.name)
        assert [(c.start, c.end, c.view) for c in view.chunks] == \
            [(c.start, c.end, c.view) for c in want]
        assert any(c.view for c in view.chunks) == (views == "default")


# -- where you are: a 1,400 x 1,000 window ----------------------------------------------------
#: the header's bottom, the panel's left edge, and every file link: its box, whether its text
#: fits it, and its title
LAYOUT = """() => {
  const head = document.querySelector('body>header').getBoundingClientRect();
  const panel = document.getElementById('panel').getBoundingClientRect();
  const links = Array.from(document.querySelectorAll('header nav a'), a => {
    const r = a.getBoundingClientRect();
    return {text: a.textContent, title: a.title, right: r.right,
            fits: a.scrollWidth <= a.clientWidth};
  });
  return {scrollWidth: document.documentElement.scrollWidth, innerWidth: innerWidth,
          innerHeight: innerHeight, headBottom: head.bottom, panelLeft: panel.left, links};
}"""
#: the top of document `d`'s title, and the header's bottom
TITLE_TOP = """(d) => [document.querySelector('#doc' + d + ' h2').getBoundingClientRect().top,
                       document.querySelector('body>header').getBoundingClientRect().bottom]"""
LONG_NAME = "reports/" + "quarterly_operations_review_" * 6 + "final.md"


def _title_in_view(page, d: int) -> None:
    page.evaluate(FIRST_FRAME_MS)  # laid out after the jump
    top, head_bottom = page.evaluate(TITLE_TOP, d)
    height = page.evaluate("innerHeight")
    assert head_bottom <= top < height / 2, (d, top, head_bottom)


def test_the_page_fits_1400px_and_jumps_stop_below_the_header(browser, tmp_path):
    """Every fixture on one page, with a name longer than the header: no horizontal overflow,
    every file link inside the header (not under the side panel) and readable (its text fits,
    or its title carries the whole name), and a jump to a document (a file link, the page
    opened at its anchor, a heading in the section tree) leaves its title below the sticky
    header."""
    inspector = Inspector(["structure", "fixed"])
    paths = sorted(p for p in FIXTURES.iterdir() if p.is_file() and p.name != "SOURCES.md")
    reports = [inspector.report(p.read_bytes(), source=p.name) for p in paths]
    md = FIXTURES / PER_FORMAT["markdown"]
    reports.append(inspector.report(md.read_bytes(), source=LONG_NAME))
    page_file = write(tmp_path, "all.html", render(reports))
    with Opened(browser, page_file, width=1400, height=1000) as o:
        got = o.page.evaluate(LAYOUT)
        assert got["scrollWidth"] <= got["innerWidth"] == 1400
        assert [link["text"] for link in got["links"]] == [r.doc.source for r in reports]
        assert all(link["right"] <= got["panelLeft"] for link in got["links"])
        assert all(link["fits"] or link["title"] == link["text"] for link in got["links"])
        assert not got["links"][-1]["fits"]  # the long name is cut, and whole in its title
        last = len(reports) - 1
        for d in (0, len(reports) // 2, last - 1, last):
            o.page.click(f'header nav a[href="#doc{d}"]')
            _title_in_view(o.page, d)
        # a heading of the section tree scrolls its document up to the header, not under it
        o.page.locator(f"#doc{last} .tree a[data-sec]").nth(1).click()
        _title_in_view(o.page, last)
        assert got["scrollWidth"] == o.page.evaluate("document.documentElement.scrollWidth")
        shot = tmp_path / "inspect-1400.png"
        o.page.screenshot(path=str(shot))
        assert shot.stat().st_size > 50_000
        assert o.errors == [] and o.requests == []
    with Opened(browser, page_file, width=1400, height=1000) as o:  # opened at an anchor
        o.page.goto(page_file.resolve().as_uri() + f"#doc{len(reports) // 3}")
        _title_in_view(o.page, len(reports) // 3)


def test_the_map_fits_1400px(browser, tmp_path, fixture_db):
    """No horizontal overflow at 1,400 px, and source names in the legend readable: whole, or
    cut with the whole name in the title (one source renamed to a name longer than the
    legend)."""
    cmap = read_collection(db_path=fixture_db)
    cmap.metas[0]["source"] = LONG_NAME
    html = render_map(cmap)
    with Opened(browser, write(tmp_path, "map.html", html), width=1400, height=1000) as o:
        x, y = o.page.evaluate("window.chunkwiseMap.position(0)")
        o.page.mouse.click(x, y)  # a chunk's text in the side panel
        assert o.page.evaluate("document.documentElement.scrollWidth") <= 1400
        legend = o.page.eval_on_selector_all(
            "#legend li", "es => es.map(e => [e.textContent, e.title, e.scrollWidth <= e.clientWidth])")
        assert legend and all(fits or title == text for text, title, fits in legend)
        assert [fits for text, _, fits in legend if text == LONG_NAME] == [False]
        assert o.errors == [] and o.requests == []
