"""`ChunkwiseReader`: files and folders to LlamaIndex Documents whose text is chunkwise's
canonical text, named as `chunkwise ingest` names them."""

from __future__ import annotations

import logging
import os
from pathlib import Path, PurePath
from typing import Any, Iterable, Iterator

from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.readers.base import BasePydanticReader
from llama_index.core.schema import Document

from ..chunking.api import parse_bytes, parse_file
from ..errors import ParseError
from ..pipeline.discover import discover, resolve_root
from ..text.textio import file_source
from .routing import check_format

log = logging.getLogger(__name__)

#: reader metadata shown to the LLM (the rest is bookkeeping)
_READER_LLM_KEYS = ("file_name", "title")


class ChunkwiseReader(BasePydanticReader):
    """Files and folders to Documents whose text is chunkwise's canonical text.

        >>> reader = ChunkwiseReader()
        >>> documents = reader.load_data("docs/")          # or a file, or a list of paths
        >>> reader.failures                                # [(source, reason), ...]

    Folders are walked recursively (sorted, known extensions, hidden entries skipped). HTML
    becomes its visible main content, PDF its pages joined by blank lines. Each Document has
    `id_` = its path relative to the root (`root`, default the folder given), the name
    `chunkwise ingest` gives it: stable across runs and working directories, so a docstore
    recognises it. Only regular files are read (see `chunkwise.pipeline.discover`). Metadata:
    `source`, `file_path` (absolute), `file_name`, `format`, and `title` / `page_count` where
    known; all of it is excluded from the embed text (the title is in every chunk's context)
    and all but `file_name` and `title` from the LLM text. `ChunkwiseNodeParser` re-parses the
    file behind `file_path` to recover the structure (headings, tables, pages).

    A file that cannot be read or parsed is logged with its reason, listed in `failures`, and
    skipped; with `raise_on_error=True` its `ParseError` is raised. Files without text are
    skipped. Also usable as a `SimpleDirectoryReader` `file_extractor`.
    """

    is_remote: bool = False
    format: str | None = Field(default=None,
                               description="Parse every file as this format.")
    root: str | None = Field(
        default=None,
        description="Name documents by their path relative to this folder (default: the "
                    "folder given, or for several paths the folder holding them all).")
    raise_on_error: bool = Field(default=False,
                                 description="Raise on a bad file instead of skipping it.")

    _failures: list[tuple[str, str]] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "ChunkwiseReader"

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str | None) -> str | None:
        return check_format(value)

    @property
    def failures(self) -> list[tuple[str, str]]:
        """(source, reason) of every file the last load skipped because it failed."""
        return list(self._failures)

    def load_data(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
                  extra_info: dict[str, Any] | None = None, fs: Any = None) -> list[Document]:
        """Documents of `paths` (files or folders); `extra_info` is added to their metadata."""
        return list(self.lazy_load_data(paths, extra_info=extra_info, fs=fs))

    def lazy_load_data(self, paths: str | os.PathLike | Iterable[str | os.PathLike],
                       extra_info: dict[str, Any] | None = None,
                       fs: Any = None) -> Iterator[Document]:
        self._failures = []
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        if fs is not None:  # SimpleDirectoryReader's file_extractor: paths as it names them
            files = [(p, file_source(p)) for p in paths]
        else:
            found = discover(list(paths), root=resolve_root(self.root) if self.root else None)
            for name, reason in found.skipped:
                log.warning("skipped %s: %s", name, reason)
            for name in found.missing:
                self._fail(name, "no such file or directory")
            files = [(f.path, f.source) for f in found.files]
        for path, source in files:
            doc = self._load(path, source, extra_info or {}, fs)
            if doc is not None:
                yield doc

    def _fail(self, source: str, reason: str) -> None:
        log.warning("skipped %s: %s", source, reason)
        self._failures.append((source, reason))
        if self.raise_on_error:
            raise ParseError(source, reason)

    def _load(self, path: str | os.PathLike, source: str, extra_info: dict[str, Any],
              fs: Any) -> Document | None:
        try:
            if fs is not None:  # SimpleDirectoryReader passes a non-local filesystem
                parsed = parse_bytes(_read_fs(fs, os.fspath(path)), source=source,
                                     format=self.format)
            else:
                parsed = parse_file(path, format=self.format, source=source)
        except ParseError as e:
            log.warning("skipped %s: %s", source, e.reason)
            self._failures.append((source, e.reason))
            if self.raise_on_error:
                raise
            return None
        if not parsed.text.strip():
            log.info("skipped %s: no text", source)
            return None
        # (a name that is not UTF-8 is escaped, see `source_name`: it cannot be stored, and
        # the node parser then chunks such a file from this document's text)
        file_path = source if fs is not None else file_source(Path(path).resolve())
        meta: dict[str, Any] = {**extra_info, "source": source, "file_path": file_path,
                                "file_name": PurePath(source).name, "format": parsed.format}
        if parsed.title:
            meta["title"] = parsed.title
        if parsed.page_starts:
            meta["page_count"] = len(parsed.page_starts)
        return Document(
            id_=source, text=parsed.text, metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=[k for k in meta if k not in _READER_LLM_KEYS])


def _read_fs(fs: Any, path: str) -> bytes:
    try:
        with fs.open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ParseError(path, f"cannot read: {e.strerror or e}") from e
