"""Which parsed document a LlamaIndex document stands for: its format, its identity, and
whether its text is chunkwise's canonical text (then node offsets index it exactly).

**Routing.** The parser picks a document's format from the node parser's `format` option, else
the `format` metadata key (set by `ChunkwiseReader`), else the extension of `file_path` /
`file_name`, else by sniffing the text. Then, in this order:

- text formats (Markdown, Python, CSV, plain text): the document's text is the file, so it is
  parsed as that format;
- HTML and PDF: when `file_path` names a readable file whose canonical text equals the
  document's text (a `ChunkwiseReader` document), the file is parsed again, which keeps
  headings, tables and pages;
- a document holding raw HTML markup (what `SimpleDirectoryReader` reads from a `.html` file)
  is parsed as HTML; one holding raw PDF bytes decoded as text (`SimpleDirectoryReader`
  without `llama-index-readers-file`) is replaced by its file, parsed as PDF;
- anything else is derived text whose origin is unknown, and is chunked as plain text. This
  covers `SimpleDirectoryReader` PDFs read by `PDFReader` (one Document per page holding
  pypdf's text, not chunkwise's canonical text): re-reading the whole file would give every
  page document the chunks of all pages, under offsets that index another string. The page
  number comes from the `page_label` metadata instead.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from llama_index.core.schema import BaseNode

from chunkwise.parsers import MODULES, detect_format

from ..chunking.api import parse_bytes, parse_file
from ..errors import ParseError
from ..model import ParsedDocument
from ..pipeline.discover import relative_source, resolve_root

log = logging.getLogger(__name__)

#: formats whose document text is the file's text
_TEXT_FORMATS = frozenset({"markdown", "text", "python", "csv",
                           *(fmt for fmt, module in MODULES.items() if module == "code.languages")})


def route(doc: BaseNode, text: str, files: dict, *, format: str | None = None,
          root: str | None = None) -> tuple[ParsedDocument, bool, str]:
    """(parsed document, whether its canonical text is `text`, the document's format), by the
    rules of the module docstring: `format` overrides the metadata's; `files` holds the
    files parsed so far in this call (a PDF read per page comes as many documents); `root`
    names documents by `file_path` (see `source_of`)."""
    meta = doc.metadata
    fmt = format or _format_of(meta, text)
    source = source_of(doc, root)
    data = text.encode("utf-8", "surrogatepass")
    if fmt in _TEXT_FORMATS:
        parsed = parse_bytes(data, source=source, format=fmt)
        return parsed, parsed.text == text, fmt
    path = _local_file(meta)
    from_file = _parse_once(files, path, fmt, source) if path is not None else None
    if from_file is not None and from_file.text == text:
        return from_file, True, fmt
    if fmt == "html" and detect_format(None, data) == "html":
        parsed = parse_bytes(data, source=source, format="html")
        return parsed, parsed.text == text, fmt
    if detect_format(None, data) == "pdf":
        if from_file is None:
            raise ParseError(source, "the document holds raw PDF bytes and its file "
                                     "cannot be read (set file_path, or use ChunkwiseReader)")
        return from_file, False, fmt
    parsed = parse_bytes(data, source=source, format="text")
    return parsed, parsed.text == text, fmt


def check_format(value: str | None) -> str | None:
    """`value` itself when it is None or a known format, else a `ValueError` (pydantic
    reports it as a validation error) naming the known ones."""
    if value is not None and value not in MODULES:
        raise ValueError(f"unknown format {value!r}; known: {', '.join(sorted(MODULES))}")
    return value


def _format_of(meta: dict[str, Any], text: str) -> str:
    """The `format` the metadata declares, else what `detect_format` makes of the first file
    name in it that has a known extension, else of the text."""
    fmt = meta.get("format")
    if isinstance(fmt, str) and fmt in MODULES:
        return fmt
    for key in ("file_path", "file_name", "filename", "source"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            fmt = detect_format(value)
            if fmt:
                return fmt
    return detect_format(None, text[:8192].encode("utf-8", "surrogatepass"))


def source_of(doc: BaseNode, root: str | None = None) -> str:
    """A document's identity: its `source` (the reader's), else its `file_path` (relative to
    `root` when given and inside it), else its id."""
    value = doc.metadata.get("source")
    if isinstance(value, str) and value:
        return value
    value = doc.metadata.get("file_path")
    if isinstance(value, str) and value:
        if root is not None:
            rel = relative_source(Path(os.path.abspath(value)), resolve_root(root))
            if rel:
                return rel
        return value
    return doc.node_id


def _local_file(meta: dict[str, Any]) -> Path | None:
    value = meta.get("file_path")
    if not isinstance(value, str) or not value:
        return None
    path = Path(value)
    return path if path.is_file() else None


def _parse_once(files: dict, path: Path, fmt: str, source: str) -> ParsedDocument | None:
    """Parse a file once per `_parse_nodes` call (a PDF read per page comes as many
    documents); None if it cannot be parsed (the document's own text is used then)."""
    key = (str(path), fmt, source)
    if key not in files:
        try:
            files[key] = parse_file(path, format=fmt, source=source)
        except ParseError as e:
            log.info("%s: file not usable, chunking the document text: %s", source, e)
            files[key] = None
    return files[key]

