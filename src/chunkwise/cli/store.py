"""The `ingest` and `query` commands: files into a Chroma collection, questions out of it.

Registered on the main parser by `chunkwise.cli` through `register(subparsers)`. Library
errors are raised as `ChunkwiseError`s and turned into one line and an exit code by
`chunkwise.cli.main` (2 for bad options, 1 otherwise); a file that fails is printed as one
line on stderr and makes `ingest` exit 1 after the rest is ingested.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .options import (add_command, check_file_timeout, chunk_options, chunker_from,
                      file_timeout_option,
                      lexical_option, no_documents,
                      store_location, store_options, unreadable)
from ..errors import ConfigError
from ..text.textio import display_name

EXAMPLES = {
    "ingest": "chunkwise ingest docs/ papers/ --db chunkwise-db --collection docs --prune",
    "check": "chunkwise check --db chunkwise-db --repair",
    "query": "chunkwise query \"how do I rotate the API keys?\" --db chunkwise-db -k 5 "
             "--where '{\"format\": \"markdown\"}'",
}


def register(subparsers: Any) -> None:
    """Add `ingest`, `check` and `query` to the main parser's subcommands."""
    p = add_command(
        subparsers, "ingest", cmd_ingest, help="chunk, embed and write files into Chroma",
        description="Chunk files (folders are walked recursively), embed the chunks and "
                    "upsert them into a Chroma collection. Unchanged files are skipped, changed "
                    "files replace their chunks; rerunning after an interruption completes it.",
        examples=EXAMPLES["ingest"])
    p.add_argument("paths", nargs="+", metavar="PATH")
    store_options(p)
    p.add_argument("--prune", action="store_true",
                   help="delete the chunks of files under PATH that no longer exist")
    p.add_argument("--root", default=None, metavar="DIR",
                   help="the folder documents are named relative to (default: the folder "
                        "given, or the one the collection was built from)")
    p.add_argument("--rebuild", action="store_true",
                   help="empty the collection first (e.g. one written by an older chunkwise)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes that parse and chunk (default: one per core; 1: in this "
                        "process)")
    p.add_argument("--writers", type=int, default=1, metavar="N",
                   help="threads writing to the store at once (default 1; meant for a Chroma "
                        "server, --host, that writes concurrently: see docs/ingest.md)")
    p.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                   help="how long to wait for another process writing the same database "
                        "(default 10)")
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read symlinks that point outside the root (default: skipped)")
    p.add_argument("--max-file-size", default="512M", metavar="SIZE",
                   help="skip files larger than this (bytes, or with K/M/G; default 512M)")
    file_timeout_option(p)
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="minilm (default), chroma-default, a model directory with model.onnx "
                        "and tokenizer.json, or module:attr naming a Chroma embedding function "
                        "or LlamaIndex embed model")
    p.add_argument("--device", default="auto", metavar="DEVICE",
                   help="where the minilm embedder runs: auto (a GPU when there is one, "
                        "default), cpu, cuda or cuda:N")
    p.add_argument("--dry-run", action="store_true",
                   help="read, parse and chunk only: report the files, chunks and texts that "
                        "would be embedded, per format (texts per MB), without loading the "
                        "model or creating or writing the database")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress on stderr: a bar on a terminal, else a line every 5 s "
                        "(default: on; --no-progress: off)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress, notes, warnings or summary on stderr (errors still)")
    chunk_options(p)
    g = p.add_argument_group("Ray (pip install 'chunkwise[ray]')")
    g.add_argument("--ray", action="store_true",
                   help="parse+chunk in Ray Data tasks and embed in a pool of Ray actors "
                        "(one per GPU when the cluster has GPUs); this process writes to "
                        "--db or --host/--port as without --ray")
    g.add_argument("--ray-address", default=None, metavar="ADDRESS",
                   help="the cluster to join, e.g. auto or ray://head:10001 (implies --ray; "
                        "default: a local Ray on this machine's cores)")

    p = add_command(
        subparsers, "check", cmd_check,
        help="check that every stored chunk has its vector (and repair)",
        description="Read back every record's vector and query the index for all records; "
                    "report records whose vector is missing (e.g. after two writers at once "
                    "or a damaged index folder). With --repair, re-embed them from their "
                    "stored text and rebuild an index that no longer answers. Exit status 0 "
                    "healthy (or repaired), 1 damaged.",
        examples=EXAMPLES["check"])
    store_options(p)
    p.add_argument("--repair", action="store_true", help="re-embed what is missing")
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="--repair: the embedder, if the collection cannot name its own "
                        "(one given as module:attr); it must be the same model")
    p.add_argument("--wait", type=float, default=10.0, metavar="SECONDS",
                   help="--repair: how long to wait for another writer (default 10)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")

    p = add_command(
        subparsers, "query", cmd_query, help="search a Chroma collection",
        description="Search the collection for TEXT by meaning and by words (hybrid: the "
                    "nearest chunks by vector and the best by the word index, fused by "
                    "reciprocal rank) and print the best chunks with source, section path, "
                    "pages, the fused score and each search's rank.",
        examples=EXAMPLES["query"])
    p.add_argument("text", metavar="TEXT")
    store_options(p)
    p.add_argument("-k", type=int, default=5, metavar="N", help="number of results (default 5)")
    p.add_argument("--mode", choices=("hybrid", "dense", "lexical"), default="hybrid",
                   help="hybrid (default): vectors and words fused; dense: vectors only "
                        "(distance, cosine: smaller is closer); lexical: words only (BM25; "
                        "no model is loaded)")
    p.add_argument("--where", default=None, metavar="JSON",
                   help="Chroma metadata filter, e.g. '{\"source\": \"docs/a.md\"}'; "
                        "several keys must all match, e.g. '{\"format\": \"pdf\", "
                        "\"page_start\": {\"$gte\": 2}}' (their $and)")
    p.add_argument("--weights", default=None, metavar="DENSE,LEXICAL",
                   help="weights of the two searches in the hybrid fusion (default 1,1; "
                        "e.g. 1,0.5 halves the words' say)")
    p.add_argument("--contains", default=None, metavar="TEXT",
                   help="only chunks whose text contains TEXT (exactly, case-sensitive)")
    p.add_argument("--embedder", default=None, metavar="SPEC",
                   help="embedder for the query (default: the one the collection was built with)")
    p.add_argument("--full", action="store_true", help="print whole chunk texts")
    p.add_argument("--json", action="store_true", help="print the hits as JSON")
    p.add_argument("--expand", choices=("section",), default=None,
                   help="return each hit's enclosing section (its chunks around the hit, "
                        "within --expand-tokens) instead of the bare chunk")
    p.add_argument("--expand-tokens", type=int, default=512, metavar="N",
                   help="token budget of an expanded section (default 512)")




def parse_size(text: str) -> int:
    """Bytes from `123`, `64K`, `512M`, `2G` (powers of 1024)."""
    units = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}
    raw = text.strip().upper().removesuffix("B").removesuffix("I")
    number, unit = (raw[:-1], raw[-1]) if raw and raw[-1] in units else (raw, "")
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(f"invalid size {text!r}: use bytes or a number with K, M or G") from None
    if not value > 0:
        raise ConfigError(f"invalid size {text!r}: it must be positive")
    return int(value * units[unit])


# -- ingest ---------------------------------------------------------------------------------
def cmd_ingest(args: argparse.Namespace) -> int:
    from .progress import Progress
    from ..pipeline.runner import ingest

    chunker = chunker_from(args)
    show = args.progress if args.progress is not None else not args.quiet
    bars: list[Progress] = []

    def bar(p: Any) -> None:  # the pipeline's progress callback (`IngestProgress`)
        if not bars:
            bars.append(Progress("ingest", p.files_total, sys.stderr))
        show_ingest(bars[0], p)
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers must be >= 1")
    check_file_timeout(args)

    def waiting(holder: str) -> None:
        print(f"chunkwise: the database is being written by {holder}; waiting up to "
              f"{args.wait:g} s", file=sys.stderr)

    if args.dry_run and (args.ray or args.ray_address is not None):
        raise ConfigError("--dry-run chunks here, as Ray would, and embeds nothing: leave out "
                          "--ray")
    if args.ray or args.ray_address is not None:  # same arguments, on Ray: chunkwise.ray
        from functools import partial

        from ..pipeline.ray import available
        from ..pipeline.ray import ingest as ray_ingest
        if not available():
            raise ConfigError("--ray needs Ray Data, which is not installed: "
                              "pip install 'chunkwise[ray]'")
        ingest = partial(ray_ingest, ray_address=args.ray_address)
    try:
        report = ingest(args.paths, chunker=chunker, format=args.format,
                        embedder=args.embedder, device=args.device, prune=args.prune,
                        progress=bar if show else None,
                        root=args.root, workers=args.workers, writers=args.writers,
                        wait=args.wait,
                        follow_symlinks=args.follow_symlinks, rebuild=args.rebuild,
                        dry_run=args.dry_run,
                        max_file_size=parse_size(args.max_file_size),
                        file_timeout=args.file_timeout, on_wait=waiting,
                        lexical=lexical_option(args), **store_location(args))
    finally:
        for b in bars:
            b.close()
    failed = len(report.failed)
    for source, reason in report.ignored:  # a folder that cannot be listed is a failure
        failed += unreadable(reason)
        print(f"{display_name(source)}: {'' if unreadable(reason) else 'skipped: '}{reason}",
              file=sys.stderr)
    for source, reason in report.failed:
        print(f"{display_name(source)}: {display_name(reason)}", file=sys.stderr)
    if not report.files and (report.unsupported or not (failed or args.quiet)):
        # nothing to ingest: an error where files were there and none could be read
        print(display_name(no_documents(args.paths, report.unsupported_note)), file=sys.stderr)
        failed += bool(report.unsupported)
    if not args.quiet:
        for source, reason in report.no_text:
            print(f"{display_name(source)}: {display_name(reason)}", file=sys.stderr)
    if report.truncated:
        print(f"warning: {report.truncated} of the {report.written} chunks embedded are longer "
              f"than the embedding model's window ({report.window} of its tokens): the rest "
              "of each is stored but not embedded, so retrieval cannot find it. Chunk with a "
              f"smaller --max-tokens ({report.window} with the minilm tokenizer).",
              file=sys.stderr)
    # nothing to ingest (no file, nothing pruned or repaired): the line above says all
    nothing = not (report.files or report.pruned_files or report.repaired)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    elif not args.quiet and not nothing:
        print(_summary(report))
    return 1 if failed else 0


def show_ingest(bar: Any, p: Any) -> None:
    """Draw an `IngestProgress` on a `Progress` bar. Its rates (chunks written, texts
    embedded) are per second of the run so far, not per second of embedding: where the
    embedder waits for the store (a GPU, a fast embedder) the run goes at the store's pace,
    and a rate over embedding time alone would overstate it many times (a hash embedder's
    run showed 16,000 chunks/s for 770) and give a time left that is too short. While files
    are read it counts the chunks made; while texts are embedded, the records written."""
    bar.update(files=p.files_done, chunks=p.chunks_made, texts=p.texts_embedded,
               texts_total=p.texts_to_embed, written=p.chunks_written)


def _summary(r: Any) -> str:
    s = r.seconds
    if r.dry_run:
        return _dry_summary(r)
    text = (f"{r.files} files ({r.skipped} unchanged, {r.changed} written, {len(r.failed)} "
            f"failed{_passed_over(r)}), {r.records} records: {r.written} written ({r.embedded} "
            f"embedded, {r.reused} reused), {r.updated} updated, {r.deleted} deleted")
    if r.pruned_files:
        text += f"; pruned {r.pruned_files} files ({r.pruned_chunks} chunks)"
    if r.repaired:
        text += f"; repaired a damaged index ({r.repaired} records re-embedded)"
    text += _notes(r) + _bill(r)
    return (f"{text}\ntime {s.get('total', 0):.1f}s (parse+chunk {s.get('parse_chunk', 0):.1f}s "
            f"on {r.workers} worker{'s' if r.workers > 1 else ''}, embed "
            f"{s.get('embed', 0):.1f}s, embedder idle {s.get('embed_idle', 0):.1f}s, store "
            f"{s.get('write', 0):.1f}s)") + _store_note(r)


#: a run of at least `STORE_BOUND_RECORDS` chunks whose writes took `STORE_BOUND` of its
#: time or more, and `STORE_OVER_EMBED` times the embedder's, went at the store's pace: its
#: summary says so, and what makes it faster
STORE_BOUND, STORE_OVER_EMBED, STORE_BOUND_RECORDS = 0.5, 2.0, 2000


def _store_note(r: Any) -> str:
    """A note when the store, not the embedder, set the run's pace (a GPU, a fast embedder:
    Chroma writes some hundreds to a few thousand records a second, docs/ingest.md)."""
    s = r.seconds
    total, write, embed = s.get("total", 0.0), s.get("write", 0.0), s.get("embed", 0.0)
    if r.written < STORE_BOUND_RECORDS or total <= 0 or write < STORE_BOUND * total \
            or write < STORE_OVER_EMBED * embed:
        return ""
    return (f"\nnote: the store set this run's pace: it wrote {r.written} chunks in "
            f"{write:.1f}s ({r.written / write:.0f}/s) of the run's {total:.1f}s, the "
            f"embedder worked {embed:.1f}s. Fewer records write sooner: --table-rows grouped "
            "puts several rows of a table in one chunk (docs/ingest.md)")


def _dry_summary(r: Any) -> str:
    text = (f"dry run, nothing written: {r.files} files ({r.skipped} unchanged, {r.changed} "
            f"to write, {len(r.failed)} failed{_passed_over(r)}), {r.chunks} chunks: "
            f"{r.written} to write ({r.embedded} texts to embed, {r.reused} reused), "
            f"{r.updated} to update, {r.deleted} to delete")
    if r.pruned_files:
        text += f"; {r.pruned_files} files gone ({r.pruned_chunks} chunks) to prune"
    return text + _notes(r) + _bill(r) + f"\ntime {r.seconds.get('total', 0):.1f}s"


def _passed_over(r: Any) -> str:
    """The files a run (or a dry run) did not read, in the summary's count: skipped paths,
    files of no supported format, files with no text."""
    return ((f", {len(r.ignored)} skipped" if r.ignored else "")
            + (f", {r.unsupported} unsupported" if r.unsupported else "")
            + (f", {len(r.no_text)} no text" if r.no_text else ""))


def _notes(r: Any) -> str:
    """A line per missing optional part: once per run, however many files met it."""
    return "".join(f"\nnote: {display_name(note)}" for note in r.missing_parts)


def _bill(r: Any) -> str:
    """The embedding bill per format, one row each (the formats of the files chunked)."""
    if not r.formats:
        return ""
    verb = "to embed" if r.dry_run else "embedded"
    rows = [f"\n{'format':<12}{'files':>7}{'MB':>9}{'chunks':>9}{'texts ' + verb:>16}"
            f"{'per MB':>9}"]
    for fmt, b in sorted(r.formats.items()):
        per = b.texts_per_mb
        rows.append(f"\n{fmt:<12}{b.files:>7}{b.mb:>9.2f}{b.chunks:>9}{b.texts:>16}"
                    f"{'' if per is None else f'{per:.0f}':>9}")
    return "".join(rows)


# -- check ----------------------------------------------------------------------------------
def cmd_check(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from ..chroma.store import (HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH, HNSW_MAX_NEIGHBORS, Store,
                                connect, open_embedder, persist_directory)
    from ..chroma.health import check, check_lexical, heal
    from ..chroma.locking import WriteLock

    loc = store_location(args)
    c = connect(db_path=loc["db_path"], host=loc["host"], port=loc["port"], create=False,
                retry_delays=loc["retry_delays"], timeout=loc["timeout"])
    folder = persist_directory(c)
    guard = WriteLock(folder, wait=args.wait) if args.repair and folder else nullcontext()
    with guard:
        embedder = open_embedder(c, loc["collection"], args.embedder, load=args.repair)
        store = Store(c, loc["collection"], embedder, create=False,
                      retry_delays=loc["retry_delays"], lexical=lexical_option(args))
        health, after = heal(store, store.embedder) if args.repair else (check(store),) * 2
        words = check_lexical(store)
        if args.repair and not words.ok:
            store.sync_lexical()
        words_after = check_lexical(store) if args.repair and not words.ok else words
        from ..pipeline.freshness import check_folder

        folder = check_folder(store)
        store.close()
    out = health.to_dict()
    out["lexical"] = words.to_dict()
    out["folder"] = folder.to_dict()
    if args.repair:
        out["repaired"] = after.ok and words_after.ok
        out["after"] = {**after.to_dict(), "lexical": words_after.to_dict()}
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{display_name(loc['collection'])}: {health.records} records, "
              f"{health.summary()}")
        if args.repair and not health.ok:
            print(f"repaired: {after.records} records, healthy" if after.ok else
                  f"not repaired: {after.summary()}")
        print(f"lexical index: {words.summary()}")
        print(f"folder: {folder.summary()}")
        if not words.ok:
            print(f"lexical index rebuilt from the stored records: {words_after.summary()}"
                  if args.repair else "`chunkwise check --repair` indexes the stored records "
                  "again (nothing is embedded)")
        if health.narrow_graph:
            print(f"the index graph was built with max_neighbors {health.graph[0]} and "
                  f"ef_construction {health.graph[1]}: "
                  + (f"rebuilt with {after.graph[0]} and {after.graph[1]}" if args.repair else
                     f"a query can miss the nearest chunks; check --repair rebuilds it with "
                     f"{HNSW_MAX_NEIGHBORS} and {HNSW_EF_CONSTRUCTION} (nothing is embedded "
                     f"again)"))
        if health.narrow_search:
            print(f"the index searches with ef_search {health.ef_search}: "
                  + (f"raised to {after.ef_search}" if args.repair else
                     f"on large collections a query can miss the nearest chunks; check "
                     f"--repair or the next ingest raises it to {HNSW_EF_SEARCH}"))
    # --repair fails while anything is still wrong; a plain check only when the collection
    # is not usable (a vector lost, an index that does not answer, or more unreachable
    # records than an approximate graph leaves)
    return 0 if (after.ok and words_after.ok if args.repair else health.usable and words.ok) \
        else 1


# -- query ----------------------------------------------------------------------------------
def cmd_query(args: argparse.Namespace) -> int:
    from ..chroma.search import search

    where = where_filter(args.where)
    if args.expand == "section" and args.expand_tokens < 1:  # bad usage before any work
        raise ConfigError("--expand-tokens must be a positive integer")
    if args.contains is not None and not args.contains:
        raise ConfigError("--contains needs a text")
    from ..chroma.search import parse_weights

    weights = parse_weights(args.weights) if args.weights is not None else None
    hits = search(args.text, k=args.k, mode=args.mode, where=where, contains=args.contains,
                  weights=weights, embedder=args.embedder, lexical=lexical_option(args),
                  **store_location(args))
    if args.expand == "section":
        from ..chroma.queries import expand_hits

        location = {k: v for k, v in store_location(args).items()
                    if k in ("db_path", "host", "port", "collection", "timeout")}
        hits = expand_hits(hits, tokens=args.expand_tokens, **location)
    if args.json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False))
        return 0
    for rank, h in enumerate(hits, 1):
        where_in = " > ".join(h.section_path) or "-"
        pages = ""
        if h.page_start is not None:
            pages = (f" p.{h.page_start}" if h.page_start == h.page_end
                     else f" p.{h.page_start}-{h.page_end}")
        print(f"{rank}. {display_name(h.source)}{pages}  ({how_found(h)})  "
              f"{display_name(where_in)}")
        text = h.text if args.full else preview(h.text, 300, keep_lines=_is_code(h))
        print("   " + "\n   ".join(display_name(line.expandtabs(4)) for line in text.split("\n")))
    if not hits:
        print("no results", file=sys.stderr)
    return 0


def how_found(h: Any) -> str:
    """A hit's scores in one line: `score 0.0325: dense #3, lexical #1; distance 0.456,
    cosine` (hybrid), `distance 0.456, cosine` (dense), `BM25 7.20` (lexical)."""
    distance = "" if h.distance is None else f"distance {h.distance:.3f}, {h.space}"
    if h.score is None:
        return distance
    if h.distance is None:
        return f"BM25 {h.score:.2f}"
    legs = ", ".join(f"{leg} #{h.ranks[leg]}" for leg in ("dense", "lexical") if leg in h.ranks)
    return f"score {h.score:.4f}: {legs}; {distance}"


def where_filter(text: str | None) -> dict[str, Any] | None:
    """`--where`'s JSON as a Chroma metadata filter (several keys: all of them, see
    `chroma_where`), checked by Chroma's own validator before the store is opened: bad JSON
    or an operator Chroma does not know (`$bogus`) is bad usage (`ConfigError`, exit 2), not
    a failed query."""
    if not text:
        return None
    from ..chroma.queries import MAX_WHERE_DEPTH, check_where

    try:
        where = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"--where is not valid JSON: {e}") from e
    except RecursionError:  # nested deeper than the JSON decoder goes
        raise ConfigError(f"--where nests more than {MAX_WHERE_DEPTH} levels") from None
    if not isinstance(where, dict):
        raise ConfigError("--where must be a JSON object, e.g. '{\"format\": \"pdf\"}'")
    try:
        check_where(where)
    except ConfigError:
        raise ConfigError(f"--where nests more than {MAX_WHERE_DEPTH} levels") from None
    if where:  # {} is no filter
        from chromadb.api.types import validate_where

        from ..chroma.queries import chroma_where

        where = chroma_where(where)
        try:
            validate_where(where)
        except ValueError as e:
            raise ConfigError(f"--where is not a Chroma filter: {e}") from e
    return where


_CODE_KINDS = frozenset({"code", "function", "class", "method", "statement", "rows", "row",
                         "table"})


def _is_code(hit: Any) -> bool:
    """Whether a hit's lines and indentation carry meaning (code, tables)."""
    kinds = hit.metadata.get("kinds") or []
    kinds = kinds.split(", ") if isinstance(kinds, str) else kinds
    return hit.metadata.get("format") not in ("markdown", "html", "pdf", "text") \
        or not _CODE_KINDS.isdisjoint(kinds)


def preview(text: str, limit: int, *, keep_lines: bool = False) -> str:
    """At most `limit` characters of `text` for a one-screen listing: prose with its
    whitespace folded to single spaces; code and tables (`keep_lines`) line by line with their
    indentation, cut after the last whole line that fits. Control characters are escaped
    by the caller (`display_name`)."""
    if not keep_lines:
        text = " ".join(text.split())
        return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
    text = text.strip("\n").expandtabs(4)
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return (text[:cut] if cut > 0 else text[:limit - 1]).rstrip() + "\n…"
