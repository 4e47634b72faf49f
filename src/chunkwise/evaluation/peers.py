"""Other libraries' chunkers as named baselines for `chunkwise eval --compare`.

A peer is named `library:splitter` and runs only when its package is installed
(`pip install 'chunkwise[compare]'`):

| name | what runs | budget counted with |
|---|---|---|
| `langchain:recursive` | `RecursiveCharacterTextSplitter(chunk_size=N, chunk_overlap=0, length_function=…, add_start_index=True)` | the chosen tokenizer (our sizer: minilm counts `[CLS]`/`[SEP]`) |
| `llamaindex:sentence` | `SentenceSplitter(chunk_size=N, chunk_overlap=0, tokenizer=…)` | the chosen tokenizer's token list |
| `llamaindex:markdown` | `MarkdownNodeParser` on Markdown files (one node per heading section, no size limit: what it does), `SentenceSplitter` on the rest | as above |
| `chonkie:recursive` | `RecursiveChunker(tokenizer=…, chunk_size=N)` | the chosen Hugging Face `tokenizer.json` (minilm by default) |
| `langchain:hybrid` | `langchain:recursive`'s chunks, searched by `EnsembleRetriever(BM25Retriever, Chroma)` (`peer_hybrid`, `--mode hybrid` only) | as `langchain:recursive` |
| `llamaindex:hybrid` | `llamaindex:sentence`'s chunks, searched by `QueryFusionRetriever(vector, BM25Retriever)` (`peer_hybrid`, `--mode hybrid` only) | as `llamaindex:sentence` |

**Reading the files as their users would.** There is no canonical text for a peer: each reads
the file itself. Text files (Markdown, code, CSV, plain text) are read as UTF-8 with universal
newlines, as `open()` does (LangChain's `TextLoader`, LlamaIndex's `SimpleDirectoryReader`).
PDF: `pypdf`'s `extract_text()` of each page, one document per page (LangChain's
`PyPDFLoader`, LlamaIndex's `PDFReader`); a chunk never crosses a page. HTML:
BeautifulSoup's `get_text()` of the whole page (LangChain's `BSHTMLLoader`), navigation and
footers included. Office files (docx, pptx, xlsx): MarkItDown's Markdown for LangChain and
Chonkie, `SimpleDirectoryReader`'s default readers for LlamaIndex (`peer_documents`). Scanned
PDF pages give pypdf no text, so the peers get nothing of them.

**Locating a peer's chunks** in chunkwise's canonical text, so that scoring is the same as for
chunkwise (exact spans, non-whitespace units): `offset` when the peer reports where the chunk
starts and the canonical text holds the chunk's text exactly there (text formats);
otherwise `search`: the chunk's non-whitespace characters are looked up in the canonical
text's non-whitespace characters, from where the previous chunk of the file ended, whole or,
failing that, by anchors of 32 units from its start and its end (`search-anchors`: PDF pages
whose running headers chunkwise removed, HTML whose tags glued words), extended to where the
chunk's words are; failing both, by words (`search-words`: the window of the canonical text
holding most of the chunk's words, for tables a reader rewrote). A chunk found nowhere
(`none`: navigation text that is not in the canonical text) is still stored and retrieved,
but is never relevant. `located` on the report counts each way.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..errors import ConfigError, MissingDependencyError

ANCHOR = 32  # units in a search anchor


@dataclass(frozen=True, slots=True)
class PeerChunk:
    """A peer's chunk of one file: its own text, and its span in chunkwise's canonical text
    (`start == end == 0` when it was not found), with how it was found."""

    source: str
    text: str
    start: int
    end: int
    located: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Peer:
    name: str
    package: str
    split: Callable[[str, str, int, Any], list[tuple[str, int | None]]]
    """(text, format, max_tokens, sizer) -> [(chunk text, start offset in text or None)]"""
    doc: str = ""


@dataclass
class PeerRun:
    """Every chunk a peer made of a corpus, and how they were located."""

    name: str
    chunks: list[PeerChunk] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0

    @property
    def located(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.chunks:
            out[c.located] = out.get(c.located, 0) + 1
        return out


# -- the splitters --------------------------------------------------------------------------
def _langchain(text: str, fmt: str, max_tokens: int, sizer: Any) -> list[tuple[str, int | None]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=max_tokens, chunk_overlap=0,
                                              length_function=sizer.count,
                                              add_start_index=True)
    docs = splitter.create_documents([text])
    return [(d.page_content, d.metadata.get("start_index")) for d in docs]


def _llama_tokenizer(sizer: Any) -> Callable[[str], list[int]]:
    # SentenceSplitter only takes len() of what the tokenizer returns
    return lambda s: [0] * sizer.count(s)


def _llama_sentence(text: str, fmt: str, max_tokens: int,
                    sizer: Any) -> list[tuple[str, int | None]]:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(chunk_size=max_tokens, chunk_overlap=0,
                                tokenizer=_llama_tokenizer(sizer), include_metadata=False)
    nodes = splitter.get_nodes_from_documents([Document(text=text)])
    return [(n.get_content(), n.start_char_idx) for n in nodes]


def _llama_markdown(text: str, fmt: str, max_tokens: int,
                    sizer: Any) -> list[tuple[str, int | None]]:
    if fmt != "markdown":
        return _llama_sentence(text, fmt, max_tokens, sizer)
    from llama_index.core import Document
    from llama_index.core.node_parser import MarkdownNodeParser

    nodes = MarkdownNodeParser(include_metadata=False).get_nodes_from_documents(
        [Document(text=text)])
    return [(n.get_content(), n.start_char_idx) for n in nodes]


def _chonkie(text: str, fmt: str, max_tokens: int, sizer: Any) -> list[tuple[str, int | None]]:
    from chonkie import RecursiveChunker

    return [(c.text, c.start_index)
            for c in RecursiveChunker(tokenizer=_hf_tokenizer(sizer.name),
                                      chunk_size=max_tokens).chunk(text)]


def _hf_tokenizer(name: str) -> Any:
    from ..sizing.sizers import hf_tokenizer, minilm_tokenizer_path

    if name == "minilm":
        return hf_tokenizer(minilm_tokenizer_path())
    path = Path(name)
    if path.suffix == ".json" and path.is_file():
        return hf_tokenizer(path)
    return name  # chonkie resolves tiktoken names (`cl100k_base`) and `character` itself


PEERS: dict[str, Peer] = {p.name: p for p in (
    Peer("langchain:recursive", "langchain_text_splitters", _langchain,
         "LangChain RecursiveCharacterTextSplitter"),
    Peer("llamaindex:sentence", "llama_index.core", _llama_sentence,
         "LlamaIndex SentenceSplitter"),
    Peer("llamaindex:markdown", "llama_index.core", _llama_markdown,
         "LlamaIndex MarkdownNodeParser (Markdown), SentenceSplitter (the rest)"),
    Peer("chonkie:recursive", "chonkie", _chonkie, "Chonkie RecursiveChunker"),
    # their own hybrid search over their default chunks (`peer_hybrid`; `--mode hybrid`)
    Peer("langchain:hybrid", "langchain_text_splitters", _langchain,
         "LangChain RecursiveCharacterTextSplitter, EnsembleRetriever(BM25Retriever, Chroma)"),
    Peer("llamaindex:hybrid", "llama_index.core", _llama_sentence,
         "LlamaIndex SentenceSplitter, QueryFusionRetriever(vector, BM25Retriever)"),
)}


def is_peer(name: str) -> bool:
    """Whether `name` names a peer (`library:splitter`) rather than a chunkwise strategy."""
    return ":" in name


def check_peer(name: str) -> Peer:
    """The peer `name`; `ConfigError` if unknown, `MissingDependencyError` if its package
    is not installed."""
    from .peer_hybrid import HYBRIDS, check_hybrid, installed

    peer = PEERS.get(name)
    if peer is None:
        raise ConfigError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
    if not installed(peer.package):
        raise MissingDependencyError(f"{peer.package} (peer {name})", "compare")

    if name in HYBRIDS:
        check_hybrid(name)
    return peer


# -- reading files as the peers' users do ---------------------------------------------------
OFFICE = ("docx", "pptx", "xlsx")


def peer_documents(path: Path, fmt: str, reader: str = "") -> list[str]:
    """The texts a peer's user would get from `path`: one per PDF page, else one. Office files
    (`fmt` docx, pptx, xlsx) as the peer's users read them, by `reader` (the peer's library):
    `llamaindex`: `SimpleDirectoryReader`'s default readers (`_llama_office`); any other:
    MarkItDown's Markdown (`MarkItDown().convert(path).text_content`), one text."""
    if fmt in OFFICE:
        if reader == "llamaindex":
            return _llama_office(path, fmt)
        try:
            from markitdown import MarkItDown
        except ImportError:
            raise MissingDependencyError("markitdown (peers reading Office files)",
                                         "compare") from None
        return [MarkItDown().convert(str(path)).text_content]
    if fmt == "pdf":
        from pypdf import PdfReader

        return [page.extract_text() or "" for page in PdfReader(str(path)).pages]
    if fmt == "html":
        from bs4 import BeautifulSoup

        return [BeautifulSoup(path.read_bytes(), "html.parser").get_text()]
    with open(path, encoding="utf-8", errors="replace") as f:
        return [f.read()]


def _llama_office(path: Path, fmt: str) -> list[str]:
    """What `SimpleDirectoryReader` gives for an Office file: `DocxReader` (docx2txt, one text),
    `PptxReader()` (one text per slide: title, shapes, table narrative, speaker notes; no image
    captions), `PandasExcelReader()` (one text per sheet, each row as `header: value, …`).
    Those readers live in `llama-index-readers-file`, which pins pypdf below 7; when it is not
    installed, the same libraries are called here: docx2txt, python-pptx (every shape's text
    per slide, table cells, notes), pandas with openpyxl."""
    try:
        from llama_index.readers.file import DocxReader, PandasExcelReader, PptxReader
    except ImportError:
        pass
    else:
        cls = {"docx": DocxReader, "pptx": PptxReader, "xlsx": PandasExcelReader}[fmt]
        return [d.text for d in cls().load_data(path)]
    if fmt == "docx":
        import docx2txt

        return [docx2txt.process(str(path))]
    if fmt == "pptx":
        from pptx import Presentation

        out = []
        for slide in Presentation(str(path)).slides:
            parts = [sh.text for sh in slide.shapes if getattr(sh, "has_text_frame", False)]
            for sh in slide.shapes:
                if getattr(sh, "has_table", False):
                    parts += [", ".join(c.text for c in row.cells) for row in sh.table.rows]
            if slide.has_notes_slide:
                parts.append(slide.notes_slide.notes_text_frame.text)
            out.append("\n".join(parts))
        return out
    import pandas as pd

    return ["\n".join(", ".join(f"{h}: {v}" for h, v in zip(df.columns, row))
                      for row in df.fillna("").itertuples(index=False))
            for df in pd.read_excel(path, sheet_name=None).values()]


# -- locating chunks in the canonical text --------------------------------------------------
class Locator:
    """Finds texts in one canonical text by their non-whitespace characters, in order."""

    def __init__(self, canonical: str) -> None:
        self.canonical = canonical
        self.pos = [i for i, c in enumerate(canonical) if not c.isspace()]
        self.units = "".join(canonical[i] for i in self.pos)
        self.cursor = 0  # in units

    def at_offset(self, text: str, start: int | None) -> tuple[int, int] | None:
        if start is None or start < 0:
            return None
        if self.canonical[start:start + len(text)] != text or not text.strip():
            return None
        end = start + len(text)
        self.cursor = bisect_right(self.pos, end - 1)
        return start, end

    def search(self, text: str) -> tuple[tuple[int, int] | None, str]:
        u = "".join(text.split())
        if not u:
            return None, "none"
        i = self._find(u)
        if i >= 0:
            return self._span(i, i + len(u)), "search"
        anchors = [u[k:k + ANCHOR] for k in range(0, max(1, len(u) - ANCHOR + 1), ANCHOR)]
        if len(u) > ANCHOR:
            anchors.append(u[-ANCHOR:])
        first = next((i for i in map(self._find, anchors[:8]) if i >= 0), -1)
        if first < 0:
            span = self._search_words(text)
            return (span, "search-words") if span else (None, "none")
        a = b = at = first
        limit = first + 2 * len(u)  # the rest is searched near the first anchor only
        for t in anchors:
            j = self.units.find(t, at, limit)
            if j >= 0:
                at, b = j, max(b, j + len(t))
        lo, hi = self._span(a, max(b, a + 1))
        self.cursor = a  # the anchors can stop short where the reader rewrote the text:
        words = self._search_words(text)  # extend by where the chunk's words are, if it meets
        if words and words[0] < hi and words[1] > lo:
            lo, hi = min(lo, words[0]), max(hi, words[1])
        self.cursor = bisect_right(self.pos, hi - 1)
        return (lo, hi), "search-anchors"

    def _search_words(self, text: str) -> tuple[int, int] | None:
        """Where the chunk's words are, when its characters are not: a reader that rewrote a
        table (MarkItDown's `| --- |` lines and `NaN` cells, LlamaIndex's `header: value`
        rows) keeps the cells' words. The window of the canonical text's words (as many as
        the chunk has words found in it) that holds most of them, near the previous chunk
        first, then anywhere; at least 3 and 30% of them, else not found."""
        import re
        from collections import Counter

        if not hasattr(self, "_words"):
            self._words = [(m.group().lower(), m.start(), m.end())
                           for m in re.finditer(r"\w+", self.canonical)]
            self._vocab = {w for w, _, _ in self._words}
            self._starts = [a for _, a, _ in self._words]
        want = [w for w in (m.lower() for m in re.findall(r"\w+", text)) if w in self._vocab]
        need, n, words = Counter(want), len(want), self._words
        if n < 3:
            return None
        here = bisect_right(self._starts, self.pos[min(self.cursor, len(self.pos) - 1)])
        for lo, hi in ((max(0, here - n), min(len(words), here + 4 * n + 500)), (0, len(words))):
            have: Counter = Counter()
            score = best = 0
            at = lo
            for k in range(lo, hi):
                w = words[k][0]
                score += have[w] < need[w]
                have[w] += 1
                if k - lo >= n:
                    old = words[k - n][0]
                    have[old] -= 1
                    score -= have[old] < need[old]
                if score > best:
                    best, at = score, max(lo, k - n + 1)
            if best >= max(3, 0.3 * n):
                hit = [k for k in range(at, min(at + n, hi)) if words[k][0] in need]
                a, b = words[hit[0]][1], words[hit[-1]][2]
                self.cursor = bisect_right(self.pos, b - 1)
                return a, b
        return None

    def _find(self, u: str) -> int:
        i = self.units.find(u, self.cursor)
        return i if i >= 0 else self.units.find(u)

    def _span(self, a: int, b: int) -> tuple[int, int]:
        self.cursor = b
        return self.pos[a], self.pos[b - 1] + 1


# -- running a peer over a corpus -----------------------------------------------------------
def run_peer(name: str, files: Iterable[tuple[Path, str]], *, max_tokens: int = 256,
             tokenizer: str = "minilm",
             canonical: Callable[[Path], tuple[str, str]] | None = None) -> PeerRun:
    """Chunk every `(path, source)` of `files` with the peer `name` and locate its chunks in
    chunkwise's canonical text (`canonical(path)` -> (text, format); default: the parser's).
    A file the peer or the parser cannot read is listed in `failed`."""
    from ..errors import ChunkwiseError
    from ..sizing.sizers import get_sizer

    peer = check_peer(name)
    sizer = get_sizer(tokenizer)
    canonical = canonical or _canonical
    run = PeerRun(name)
    for path, source in files:
        try:
            text, fmt = canonical(path)
            docs = peer_documents(path, fmt, name.split(":")[0])
        except (ChunkwiseError, OSError, ValueError) as e:
            run.failed.append((source, str(e)))
            continue
        run.files += 1
        loc = Locator(text)
        for doc in docs:
            if not doc.strip():
                continue
            pieces = peer.split(doc, fmt, max_tokens, sizer)
            use_offsets = len(docs) == 1 and fmt not in ("pdf", "html")
            for chunk_text, start in pieces:
                if not chunk_text.strip():
                    continue
                span = loc.at_offset(chunk_text, start) if use_offsets else None
                how = "offset"
                if span is None:
                    span, how = loc.search(chunk_text)
                a, b = span or (0, 0)
                run.chunks.append(PeerChunk(source, chunk_text, a, b, how,
                                            sizer.count(chunk_text)))
    return run


def _canonical(path: Path) -> tuple[str, str]:
    from ..chunking.api import parse_file

    doc = parse_file(path)
    return doc.text, doc.format


def corpus_files(corpus: Sequence[str | os.PathLike]) -> list[tuple[Path, str]]:
    """Every file of `corpus` with its source as `ingest` names it (`chunkwise.pipeline.discover`)."""
    from ..pipeline.discover import discover

    return [(Path(f.path), f.source) for f in discover([os.fspath(c) for c in corpus]).files]


def peer_records(run: PeerRun) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """The ids, texts and metadata `store_peer` writes for a peer's chunks."""
    texts = [c.text for c in run.chunks]
    ids = [hashlib.sha256(f"{run.name}\0{c.source}\0{i}".encode()).hexdigest()[:32]
           for i, c in enumerate(run.chunks)]
    metas: list[dict[str, Any]] = [{"source": c.source, "start": c.start, "end": c.end,
                                    "tokens": c.tokens, "located": c.located}
                                   for c in run.chunks]
    return ids, texts, metas


def store_peer(run: PeerRun, *, db_path: str | os.PathLike, collection: str,
               embedder: Any) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """Embed a peer's chunks (their own text, as the peer's user embeds it) into a new
    collection that `chunkwise.evaluation.eval.evaluate` can score; the records written
    (`peer_records`)."""
    from ..chroma.store import Store, connect

    client = connect(db_path=db_path)
    try:
        client.delete_collection(collection)
    except Exception:  # noqa: BLE001 - absent is fine
        pass
    store = Store(client, collection, embedder, create=True, lexical=False)
    ids, texts, metas = peer_records(run)
    for lo in range(0, len(texts), 1000):
        vectors = embedder.embed(texts[lo:lo + 1000])
        store.upsert(ids[lo:lo + 1000], texts[lo:lo + 1000], vectors, metas[lo:lo + 1000])
    return ids, texts, metas


__all__ = ["PEERS", "Peer", "PeerChunk", "PeerRun", "Locator", "check_peer", "corpus_files",
           "is_peer", "peer_documents", "peer_records", "run_peer", "store_peer"]
