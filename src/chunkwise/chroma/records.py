"""The records chunkwise writes to Chroma: the flat metadata stored with each chunk (its
contract fields, its place in the file, the hashes that make ingestion incremental and reuse
vectors) and, inside it, the node LlamaIndex's `ChromaVectorStore` reads back (its private
`_node_content` JSON). Bump `SCHEMA` when this layout changes: every file is then rewritten
once. No I/O here; `store` writes these records, `queries` reads them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from ..metadata import flatten_metadata
from ..model import Chunk

#: bump when the stored metadata layout changes: every file is then rewritten once
SCHEMA = "3"
#: metadata keys chunkwise writes; chunk meta keys equal to these are stored as `meta.<key>`
RESERVED_KEYS = frozenset({
    "source", "format", "start", "end", "chunk_index", "chunk_count", "record_count",
    "repeats", "repeat_starts", "repeat_ends", "tokens", "context",
    "section_path", "section_path_list", "kinds", "page_start", "page_end", "content_hash",
    "options", "embed_hash", "_node_content", "_node_type", "document_id", "doc_id",
    "ref_doc_id", "parent_id", "parent_start", "parent_end", "parent_path",
})
#: the chunk fields a LlamaIndex node read back from the store carries as its metadata
NODE_METADATA = ("source", "format", "section_path", "page_start", "page_end", "kinds",
                 "tokens", "context")


def embed_hash(text: str) -> str:
    """The key under which a vector is reused: sha256 of the exact text embedded."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


#: locations of a repeated chunk listed in its record at most (`repeats` counts them all)
MAX_REPEAT_LOCATIONS = 1000


def chunk_metadata(chunk: Chunk, *, index: int, count: int, content_hash: str,
                   options: str, prev_id: str | None = None,
                   next_id: str | None = None, embed_key: str | None = None,
                   records: int | None = None,
                   repeats: Sequence[Chunk] = ()) -> dict[str, Any]:
    """The flat metadata stored with a chunk: its contract fields, its position in the file,
    the file's hash and options (for incremental runs), the hash of its embed text (to reuse
    its vector), the chunk's own meta, and the keys through which LlamaIndex's
    `ChromaVectorStore` reads the record as a node (`llama_index_keys`).

    `repeats`: the file's later chunks with the same embed text, which this record stands
    for (`repeats` = how many chunks it stands for, `repeat_starts`/`repeat_ends` the spans
    of the others, at most `MAX_REPEAT_LOCATIONS`); `records`: how many records the file
    has, stored only when repeats make it fewer than its chunks."""
    meta: dict[str, Any] = {
        "source": chunk.source, "format": chunk.format, "start": chunk.start, "end": chunk.end,
        "chunk_index": index, "chunk_count": count, "tokens": chunk.tokens,
        "context": chunk.context, "section_path": " > ".join(chunk.section_path),
        "content_hash": content_hash, "options": options,
        "embed_hash": embed_key or embed_hash(chunk.embed_text),
    }
    if records is not None and records != count:
        meta["record_count"] = records
    if repeats:
        meta["repeats"] = 1 + len(repeats)
        meta["repeat_starts"] = [c.start for c in repeats[:MAX_REPEAT_LOCATIONS]]
        meta["repeat_ends"] = [c.end for c in repeats[:MAX_REPEAT_LOCATIONS]]
    if chunk.section_path:
        meta["section_path_list"] = list(chunk.section_path)
    if chunk.kinds:
        meta["kinds"] = list(chunk.kinds)
    if chunk.page_start is not None:
        meta["page_start"] = chunk.page_start
    if chunk.page_end is not None:
        meta["page_end"] = chunk.page_end
    if chunk.parent is not None:
        meta["parent_id"], meta["parent_start"], meta["parent_end"], path = chunk.parent
        meta["parent_path"] = " > ".join(path)
    extra = flatten_metadata(chunk.meta)
    for key, value in extra.items():
        meta[f"meta.{key}" if key in RESERVED_KEYS else key] = value
    meta.update(llama_index_keys(chunk, meta, prev_id, next_id))
    return meta


def llama_index_keys(chunk: Chunk, meta: Mapping[str, Any], prev_id: str | None,
                     next_id: str | None) -> dict[str, str]:
    """What LlamaIndex's vector stores write beside a node (`node_to_metadata_dict`), for a
    chunk: `_node_content` (the node as JSON, text left out: Chroma holds it) and
    `document_id`, what `ChromaVectorStore.delete(ref_doc_id)` filters on. A record written
    by `chunkwise ingest` is then read by `ChromaVectorStore` as the node
    `ChunkwiseNodeParser` makes of the chunk: `ref_doc_id` = the source,
    SOURCE/PREVIOUS/NEXT relationships, exact offsets, the chunk fields as metadata and the
    same embed text (`context` shown as its value alone).

    The JSON leaves out the fields whose value is the pydantic default LlamaIndex fills in
    (`embedding`, `text`, `mimetype`, `class_name`, and a relationship's `metadata`, `hash`,
    `class_name`): about a quarter less JSON a record, the same node (docs/ingest.md has the
    figures). Records written with them (chunkwise before 2026-11-27) read the same.
    `_node_type` ("TextNode", what LlamaIndex reads when it is missing) and the document id's
    two other names (`doc_id`, `ref_doc_id`, which LlamaIndex writes for other stores and
    reads only from records without `_node_content`) are left out too: each metadata key
    is a row of Chroma's metadata table, about 4% of a record's write time apiece."""
    node_meta = {k: meta[k] for k in NODE_METADATA if k in meta}
    if "kinds" in node_meta:
        node_meta["kinds"] = ", ".join(chunk.kinds)

    def related(node_id: str, node_type: str) -> dict[str, Any]:
        return {"node_id": node_id, "node_type": node_type}

    relationships = {"1": related(chunk.source, "4")}  # SOURCE: the document
    if prev_id is not None:
        relationships["2"] = related(prev_id, "1")  # PREVIOUS
    if next_id is not None:
        relationships["3"] = related(next_id, "1")  # NEXT
    # the separator and text template are written although they are the defaults: they
    # make the embed text, and LlamaIndex spelled the separator two ways
    node = {
        "id_": chunk.id, "metadata": node_meta,
        "excluded_embed_metadata_keys": [k for k in node_meta if k != "context"],
        "excluded_llm_metadata_keys": [k for k in node_meta if k != "context"],
        "relationships": relationships, "metadata_template": "{value}",
        "metadata_separator": "\n", "start_char_idx": chunk.start, "end_char_idx": chunk.end,
        "metadata_seperator": "\n", "text_template": "{metadata_str}\n\n{content}",
    }
    return {"_node_content": json.dumps(node, ensure_ascii=False), "document_id": chunk.source}

