"""The lexical leg of a collection: a word index beside its vectors, in SQLite FTS5.

Chroma has no word search for a local database (a sparse index is "not enabled in local",
`Collection.search` is Chroma Cloud's), so chunkwise keeps one itself, in one SQLite file in
the database's folder (`chunkwise-lexical.sqlite3`), one FTS5 table per collection, ranked
by FTS5's own BM25. The engine was chosen by measurement against Tantivy and bm25s
(`tests/bench/lexical_engines.py`, docs/retrieval.md): FTS5 ranks the same, is in the
standard library, updates in place inside transactions (bm25s rebuilds its whole index for
every change), and a process killed mid-write leaves the last commit.

What is indexed: the terms (`chunkwise.text.terms`) of each record's `context` (title,
heading path, table header, enclosing signature) and of its document (the chunk's text),
under the record's Chroma id. The store writes both legs in the same call (`Store.upsert`,
`Store.delete`) under the database's write lock, Chroma first; `sync` makes the index hold
exactly the collection's ids (a run killed between the two writes, a collection written by
another program or by a chunkwise from before this index, a new `terms` version), reading
the stored documents, embedding nothing.

For a `chroma run` server the index is a file the caller names (`lexical_path`): the server
cannot hold it. Without one, a server collection has no lexical leg and a query says so.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import StoreError, no_space_message
from ..text.terms import VERSION, iter_terms, query_terms

log = logging.getLogger(__name__)

LEXICAL_FILE = "chunkwise-lexical.sqlite3"
#: rows written per transaction
_BATCH = 2000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS collections (
    key INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, terms_version TEXT NOT NULL);
"""


def default_path(folder: str | os.PathLike) -> Path:
    """Where the lexical index of an embedded database in `folder` lives."""
    return Path(folder) / LEXICAL_FILE


def record_terms(document: str, context: str) -> str:
    """What the index holds for one record: the terms of its context and text, space
    separated (each is letters and digits only: FTS5's `unicode61` splits on the spaces)."""
    head = " ".join(iter_terms(context)) if context else ""
    body = " ".join(iter_terms(document or ""))
    return f"{head} {body}" if head else body


class LexicalIndex:
    """The word index of one collection in one SQLite file.

        >>> lex = LexicalIndex("chunkwise-db/chunkwise-lexical.sqlite3", "chunkwise")
        >>> lex.search("CHUNKWISE_MAX_BYTES", limit=10)   # [(id, bm25 score), ...]

    `readonly` opens an existing file for queries only (a missing file or collection is then
    an empty index); a writer creates what is missing. Safe to share between threads (one
    connection, serialised)."""

    def __init__(self, path: str | os.PathLike, collection: str, *,
                 readonly: bool = False) -> None:
        self.path = Path(path)
        self.collection = collection
        self.readonly = readonly
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None
        self._key: int | None = None
        self.stale_version = False
        """The index was written with another `terms` version (`sync` rebuilds it)."""
        self._open()

    # -- opening ------------------------------------------------------------------------
    def _open(self) -> None:
        try:
            if self.readonly:
                if not self.path.is_file():
                    return
                self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                           check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.executescript(_SCHEMA)
            self._find_collection()
        except sqlite3.Error as e:
            raise self._error("open", e) from e

    def _find_collection(self) -> None:
        db = self._db
        assert db is not None
        try:
            row = db.execute("SELECT key, terms_version FROM collections WHERE name = ?",
                             (self.collection,)).fetchone()
        except sqlite3.OperationalError:  # a read-only open of a file without the schema
            row = None
        if row is None and not self.readonly:
            with db:
                cur = db.execute("INSERT INTO collections(name, terms_version) VALUES (?, ?)",
                                 (self.collection, VERSION))
                row = (cur.lastrowid, VERSION)
        if row is None:
            return
        self._key = int(row[0])
        self.stale_version = row[1] != VERSION
        if not self.readonly:
            self._create_tables()

    def _create_tables(self) -> None:
        assert self._db is not None
        with self._db:
            self._db.execute(f"CREATE TABLE IF NOT EXISTS {self._ids} ("
                             "rowid INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL)")
            self._db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {self._fts} USING fts5("
                             "terms, tokenize = 'unicode61 remove_diacritics 2')")

    @property
    def _ids(self) -> str:
        return f"ids_{self._key}"

    @property
    def _fts(self) -> str:
        return f"fts_{self._key}"

    @property
    def exists(self) -> bool:
        """Whether the file holds an index for this collection (a read-only open may not)."""
        return self._key is not None

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _error(self, what: str, e: BaseException) -> StoreError:
        if isinstance(e, sqlite3.OperationalError) and "full" in str(e).lower():
            return StoreError(no_space_message(self.path.parent))
        return StoreError(f"the lexical index {self.path} could not {what}: {e}")

    def _run(self, what: str, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        with self._lock:
            if self._db is None or self._key is None:
                return None
            try:
                return fn(self._db)
            except sqlite3.Error as e:
                raise self._error(what, e) from e

    # -- reads --------------------------------------------------------------------------
    def count(self) -> int:
        return int(self._run("count", lambda db: db.execute(
            f"SELECT count(*) FROM {self._ids}").fetchone()[0]) or 0)

    def ids(self) -> set[str]:
        return self._run("read its ids", lambda db: {r[0] for r in db.execute(
            f"SELECT id FROM {self._ids}")}) or set()

    def search(self, text: str, limit: int) -> list[tuple[str, float]]:
        """The ids of the `limit` best records for `text` by BM25, best first, with their
        score (larger is better; FTS5's `bm25()` negated). A query without terms (only
        punctuation, say) matches nothing."""
        words = query_terms(text)
        if not words or limit < 1:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        return self._run("search", lambda db: [(i, -s) for i, s in db.execute(
            f"SELECT i.id, f.rank FROM {self._fts} f JOIN {self._ids} i ON i.rowid = f.rowid "
            f"WHERE {self._fts} MATCH ? ORDER BY f.rank LIMIT ?", (match, limit))]) or []

    # -- writes -------------------------------------------------------------------------
    def upsert(self, ids: Sequence[str], documents: Sequence[str | None],
               contexts: Sequence[str]) -> None:
        """Index (or index again) these records."""
        rows = [(i, record_terms(d or "", c or "")) for i, d, c in zip(ids, documents, contexts)]
        for lo in range(0, len(rows), _BATCH):
            part = rows[lo:lo + _BATCH]
            self._run("write", lambda db: self._write(db, part))

    def _write(self, db: sqlite3.Connection, rows: Sequence[tuple[str, str]]) -> None:
        with db:
            db.executemany(f"INSERT INTO {self._ids}(id) VALUES (?) ON CONFLICT(id) DO NOTHING",
                           [(i,) for i, _ in rows])
            keys = self._rowids(db, [i for i, _ in rows])
            db.executemany(f"DELETE FROM {self._fts} WHERE rowid = ?",
                           [(keys[i],) for i, _ in rows])
            db.executemany(f"INSERT INTO {self._fts}(rowid, terms) VALUES (?, ?)",
                           [(keys[i], t) for i, t in rows])

    def _rowids(self, db: sqlite3.Connection, ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for lo in range(0, len(ids), 500):
            part = list(ids[lo:lo + 500])
            marks = ",".join("?" * len(part))
            out.update(db.execute(f"SELECT id, rowid FROM {self._ids} WHERE id IN ({marks})",
                                  part).fetchall())
        return out

    def delete(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        for lo in range(0, len(ids), _BATCH):
            part = ids[lo:lo + _BATCH]
            self._run("delete", lambda db: self._remove(db, part))

    def _remove(self, db: sqlite3.Connection, ids: Sequence[str]) -> None:
        with db:
            keys = list(self._rowids(db, ids).values())
            db.executemany(f"DELETE FROM {self._fts} WHERE rowid = ?", [(k,) for k in keys])
            db.executemany(f"DELETE FROM {self._ids} WHERE rowid = ?", [(k,) for k in keys])

    def clear(self) -> None:
        """Empty the index and mark it as written with today's `terms`."""
        def run(db: sqlite3.Connection) -> None:
            with db:
                db.execute(f"DELETE FROM {self._ids}")
                db.execute(f"DELETE FROM {self._fts}")
                db.execute("UPDATE collections SET terms_version = ? WHERE key = ?",
                           (VERSION, self._key))
        self._run("clear", run)
        self.stale_version = False

    def drop(self) -> None:
        """Remove this collection's index from the file (the collection was deleted)."""
        def run(db: sqlite3.Connection) -> None:
            with db:
                db.execute(f"DROP TABLE IF EXISTS {self._fts}")
                db.execute(f"DROP TABLE IF EXISTS {self._ids}")
                db.execute("DELETE FROM collections WHERE key = ?", (self._key,))
        self._run("drop", run)
        self._key = None


# -- keeping the index equal to the collection ---------------------------------------------
class SyncReport:
    """What `sync` found and did."""

    def __init__(self, added: int = 0, removed: int = 0, rebuilt: bool = False) -> None:
        self.added, self.removed, self.rebuilt = added, removed, rebuilt

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.rebuilt)

    def summary(self) -> str:
        if self.rebuilt:
            return f"rebuilt from the stored records ({self.added} indexed)"
        return f"{self.added} records indexed, {self.removed} stale removed"


def differences(lex: LexicalIndex, collection_ids: set[str]) -> tuple[list[str], list[str]]:
    """(ids the collection holds and the index lacks, ids the index holds and the
    collection does not), each sorted."""
    held = lex.ids()
    return sorted(collection_ids - held), sorted(held - collection_ids)


def sync(lex: LexicalIndex, collection_ids: set[str],
         read: Callable[[list[str]], Iterator[tuple[str, str | None, str]]]) -> SyncReport:
    """Make `lex` hold exactly `collection_ids`: stale entries removed, missing ones indexed
    from `read(ids)` (yielding id, document, context, from the store). An index written with
    another `terms` version is rebuilt whole."""
    rebuilt = lex.stale_version
    if rebuilt or not collection_ids:
        removed = 0 if rebuilt else lex.count()
        lex.clear()
        if not collection_ids:
            return SyncReport(0, removed, rebuilt)
    missing, stale = differences(lex, collection_ids)
    if stale:
        lex.delete(stale)
    added = 0
    for lo in range(0, len(missing), _BATCH):
        got = list(read(missing[lo:lo + _BATCH]))
        lex.upsert([g[0] for g in got], [g[1] for g in got], [g[2] for g in got])
        added += len(got)
    return SyncReport(added, len(stale), rebuilt)
