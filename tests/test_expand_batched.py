"""`query -k 100000 --expand section` (issue 44, item 8): the sections of all hits are read
in a few bounded store reads, not one read per hit, and give what one read per hit gave."""

from __future__ import annotations

import time

from chunkwise.chroma.expand import Member, expand, section_of
from chunkwise.chroma.queries import expand_hits, iter_collection, query
from chunkwise.pipeline.runner import ingest

from hashembed import HASH


def _corpus(folder) -> None:
    folder.mkdir()
    for f in range(4):
        parts = [f"# Manual {f}\n"]
        for s in range(20):
            parts.append(f"## Section {f}.{s}\n")
            for p in range(6):
                parts.append(f"Paragraph {p} of section {s} in manual {f}: the pump {p} "
                             f"keeps valve {s} open while pressure {f * s + p} holds steady.\n")
        (folder / f"manual{f}.md").write_text("\n".join(parts))


def _one_read_per_hit(hits, tokens, db):
    """The old rule, from a full read of the collection: each hit's section members."""
    rows = list(iter_collection(db_path=db))
    out = []
    for h in hits:
        sec = section_of(h.metadata)
        if sec is None:
            out.append((h.id, h.text))
            continue
        members = sorted((Member(int(m["start"]), int(m["end"]), int(m.get("tokens", 0)), d)
                          for _, d, m in rows if m["source"] == h.source
                          and m["start"] >= sec[1] and m["end"] <= sec[2]),
                         key=lambda m: m.start)
        at = next(i for i, m in enumerate(members) if m.start == h.metadata["start"])
        out.append((h.id, expand(members, at, max(tokens, members[at].tokens)).text))
    return out


def test_expand_reads_the_store_a_few_times_per_query(tmp_path, monkeypatch):
    from chromadb.api.models.Collection import Collection

    _corpus(tmp_path / "docs")
    db = tmp_path / "db"
    report = ingest([tmp_path / "docs"], db_path=db, embedder=HASH, workers=1, max_tokens=48)
    assert report.written >= 400
    hits = query("pump valve pressure", k=100_000, db_path=db, embedder=HASH)
    assert len(hits) == report.written  # k beyond the collection: every record, once
    reads = []
    real_get = Collection.get
    monkeypatch.setattr(Collection, "get", lambda self, *a, **k: reads.append(1) or
                        real_get(self, *a, **k))
    t0 = time.process_time()
    wide = expand_hits(hits, tokens=200, db_path=db)
    took = time.process_time() - t0
    monkeypatch.undo()
    sections = {(h.source, *section_of(h.metadata)[1:]) for h in hits}
    assert len(reads) <= -(-len(sections) // 64), (len(reads), len(sections))
    assert [(w.id, w.text) for w in wide] == _one_read_per_hit(hits, 200, db)
    assert sum(w.metadata.get("expanded", 1) > 1 for w in wide) > len(wide) / 2
    assert all(w.space == h.space for w, h in zip(wide, hits))
    assert took < 30, took  # CPU seconds; one read per hit took 61-109 s of wall time
    print(f"{len(hits)} hits, {len(sections)} sections, {len(reads)} reads, {took:.2f} s CPU")
