"""Which engine holds chunkwise's lexical index: SQLite FTS5, Tantivy or bm25s, measured on
the records of a real collection with the same terms (`chunkwise.text.terms`) fed to each.

    pip install tantivy bm25s        # the two others; FTS5 is in Python's sqlite3
    python tests/bench/lexical_engines.py --db /tmp/realdb --root ../shared/corpus \
        --questions tests/data/questions.jsonl tests/data/questions_office.jsonl ... \
        [--repeat 3] > engines.json

For each engine: build seconds per 10k records (median of `--repeat` builds), the cost of
replacing 100 records in the built index, disk bytes, query latency p50/p95 over the
questions (the questions' terms, top 50), and ranking quality of the lexical leg alone over
the questions whose source is in the collection: hit@5 and MRR@10 (a hit: a record of the
question's source overlapping its reference span, as `chunkwise eval --relevance overlap`).
Crash safety is not measured here: FTS5 commits in SQLite transactions (WAL), Tantivy at
each `commit()`, bm25s saves a whole index at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from chunkwise.chroma.lexical import LexicalIndex, record_terms
from chunkwise.chroma.queries import iter_collection
from chunkwise.evaluation.questions import load_questions, match_sources
from chunkwise.text.terms import query_terms


def records(db: str, collection: str) -> list[dict]:
    return [{"id": i, "doc": d or "", "context": str(m.get("context") or ""),
             "source": str(m.get("source", "")), "start": int(m.get("start", 0)),
             "end": int(m.get("end", 0))}
            for i, d, m in iter_collection(db_path=db, collection=collection)]


def disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size + sum(
            p.stat().st_size for p in path.parent.glob(path.name + "-*"))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Fts5:
    name = "sqlite-fts5"

    def build(self, recs, folder):
        self.path = Path(folder) / "lex.sqlite3"
        self.lex = LexicalIndex(self.path, "bench")
        self.lex.upsert([r["id"] for r in recs], [r["doc"] for r in recs],
                        [r["context"] for r in recs])

    def replace(self, recs):
        self.lex.upsert([r["id"] for r in recs], [r["doc"] + " x" for r in recs],
                        [r["context"] for r in recs])

    def search(self, text, k):
        return [i for i, _ in self.lex.search(text, k)]

    def size(self):
        self.lex.close()
        n = disk(self.path)
        self.lex = LexicalIndex(self.path, "bench")
        return n


class Tantivy:
    name = "tantivy"

    def build(self, recs, folder):
        import tantivy

        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw")
        sb.add_text_field("terms", stored=False, tokenizer_name="whitespace")
        self.schema = sb.build()
        self.path = Path(folder) / "tantivy"
        self.path.mkdir()
        self.index = tantivy.Index(self.schema, path=str(self.path))
        w = self.index.writer()
        for r in recs:
            w.add_document(tantivy.Document(id=r["id"],
                                            terms=record_terms(r["doc"], r["context"])))
        w.commit()
        w.wait_merging_threads()
        self.index.reload()

    def replace(self, recs):
        import tantivy

        w = self.index.writer()
        for r in recs:
            w.delete_documents("id", r["id"])
            w.add_document(tantivy.Document(id=r["id"], terms=record_terms(
                r["doc"] + " x", r["context"])))
        w.commit()
        w.wait_merging_threads()
        self.index.reload()

    def search(self, text, k):
        import tantivy

        words = query_terms(text)
        if not words:
            return []
        q = tantivy.Query.boolean_query([
            (tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "terms", w))
            for w in words])
        s = self.index.searcher()
        return [s.doc(addr)["id"][0] for _, addr in s.search(q, k).hits]

    def size(self):
        return disk(self.path)


class Bm25s:
    name = "bm25s"

    def build(self, recs, folder):
        import bm25s

        self.recs = list(recs)
        self.folder = Path(folder) / "bm25s"
        self._index()

    def _index(self):
        import bm25s

        self.ids = [r["id"] for r in self.recs]
        corpus = [record_terms(r["doc"], r["context"]).split() for r in self.recs]
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenization.Tokenized(*_vocab(corpus)), show_progress=False)
        self.model.save(str(self.folder))

    def replace(self, recs):
        by_id = {r["id"]: i for i, r in enumerate(self.recs)}
        for r in recs:  # bm25s has no update: the whole index is built again
            self.recs[by_id[r["id"]]] = {**r, "doc": r["doc"] + " x"}
        self._index()

    def search(self, text, k):
        words = [w for w in query_terms(text) if w in self.vocab_of]
        if not words:
            return []
        ids = [[self.vocab_of[w] for w in words]]
        import bm25s

        docs, _ = self.model.retrieve(bm25s.tokenization.Tokenized(ids, self.vocab_of),
                                      k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[j] for j in docs[0]]

    @property
    def vocab_of(self):
        return self.model.vocab_dict

    def size(self):
        return disk(self.folder)


def _vocab(corpus):
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in doc] for doc in corpus]
    return ids, vocab


def quality(engine, qs, matched, by_source) -> dict:
    hits5, rr = [], []
    for i, q in enumerate(qs.questions):
        relevant = {r["id"] for r in by_source.get(matched[i], ())
                    if q.start is None or (r["start"] < q.end and q.start < r["end"])}
        got = engine.search(q.question, 10)
        rank = next((n for n, g in enumerate(got, 1) if g in relevant), None)
        hits5.append(rank is not None and rank <= 5)
        rr.append(1.0 / rank if rank else 0.0)
    return {"questions": len(rr), "hit@5": sum(hits5) / len(rr), "mrr@10": sum(rr) / len(rr)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True)
    ap.add_argument("--collection", default="chunkwise")
    ap.add_argument("--root", required=True)
    ap.add_argument("--questions", nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engines", default="sqlite-fts5,tantivy,bm25s")
    args = ap.parse_args(argv)
    recs = records(args.db, args.collection)
    by_source: dict[str, list[dict]] = {}
    for r in recs:
        by_source.setdefault(r["source"], []).append(r)
    sets = []
    for path in args.questions:
        qs = load_questions(path, root=args.root)
        keep = [q for q in qs.questions if any(
            s.endswith(q.source) or q.source.endswith(s) for s in by_source)]
        qs.questions = keep
        sets.append((Path(path).name, qs, match_sources(qs, by_source)))
    out = {"records": len(recs), "engines": {}}
    for cls in (Fts5, Tantivy, Bm25s):
        if cls.name not in args.engines.split(","):
            continue
        builds, engine = [], None
        for _ in range(args.repeat):
            folder = tempfile.mkdtemp(prefix="lexbench-")
            engine = cls()
            t0 = time.perf_counter()
            engine.build(recs, folder)
            builds.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine.replace(recs[:100])
        replace_s = time.perf_counter() - t0
        engine.replace([{**r, "doc": r["doc"][:-2] if r["doc"].endswith(" x") else r["doc"]}
                        for r in recs[:100]])
        lat = []
        for _, qs, _ in sets:
            for q in qs.questions:
                t0 = time.perf_counter()
                engine.search(q.question, 50)
                lat.append(time.perf_counter() - t0)
        lat.sort()
        res = {"build_s_per_10k": statistics.median(builds) / len(recs) * 10_000,
               "builds_s": builds, "replace_100_s": replace_s, "disk_bytes": engine.size(),
               "query_ms_p50": 1000 * lat[len(lat) // 2],
               "query_ms_p95": 1000 * lat[int(len(lat) * 0.95)],
               "quality": {name: quality(engine, qs, m, by_source) for name, qs, m in sets}}
        out["engines"][cls.name] = res
        print(cls.name, json.dumps(res), file=sys.stderr)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
