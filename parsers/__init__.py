"""Format parsers: one module per format, each a pure function
`parse(data: bytes, *, source: str) -> ParsedDocument`.

Modules are imported lazily, so that `import chunkwise` does not pay for lxml, pypdf or
tree-sitter until a document of that format is parsed.
"""

from __future__ import annotations

import importlib
import re
from pathlib import PurePath
from typing import Callable, overload

from chunkwise.errors import ConfigError
from chunkwise.model import ParsedDocument

Parser = Callable[..., ParsedDocument]

#: format name -> module under chunkwise.parsers
MODULES: dict[str, str] = {
    "markdown": "markdown.reader",
    "text": "text",
    "html": "html",
    "pdf": "pdf.reader",
    "csv": "csv",
    # code: one parser driven by `code.languages.LANGUAGES` (Python's dialect in `code/python.py`)
    **{lang: "code.languages" for lang in ("python", "javascript", "typescript", "tsx", "go",
                                           "rust", "java", "c", "cpp", "csharp", "ruby", "php",
                                           "bash", "kotlin", "swift", "scala", "lua")},
    "json": "data.json", "jsonl": "data.jsonl", "yaml": "data.yaml", "toml": "data.toml",
    "notebook": "notebook.reader", "notebook-outputs": "notebook.outputs",
    "docx": "office.docx", "pptx": "office.pptx", "xlsx": "office.xlsx",
}

#: file extension (lower case, with dot) -> format name
EXTENSIONS: dict[str, str] = {
    ".md": "markdown", ".markdown": "markdown", ".mdown": "markdown", ".mkd": "markdown",
    ".txt": "text", ".text": "text", ".rst": "text", ".log": "text",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".pdf": "pdf",
    ".py": "python", ".pyi": "python",
    ".csv": "csv", ".tsv": "csv",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp",
    ".hxx": "cpp", ".cs": "csharp", ".rb": "ruby", ".rake": "ruby", ".php": "php",
    ".sh": "bash", ".bash": "bash", ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".scala": "scala", ".sc": "scala", ".lua": "lua",
    ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ipynb": "notebook",
    # Office Open XML (the macro-enabled and template variants are the same containers)
    ".docx": "docx", ".docm": "docx", ".dotx": "docx", ".pptx": "pptx", ".pptm": "pptx",
    ".ppsx": "pptx", ".potx": "pptx", ".xlsx": "xlsx", ".xlsm": "xlsx", ".xltx": "xlsx",
}


def get_parser(fmt: str) -> Parser:
    """The `parse` function of a format; `ConfigError` for an unknown one."""
    mod = MODULES.get(fmt)
    if mod is None:
        raise ConfigError(f"unknown format {fmt!r}; known: {', '.join(sorted(MODULES))}")
    try:
        module = importlib.import_module(f"chunkwise.parsers.{mod}")
    except ModuleNotFoundError as e:
        if e.name == f"chunkwise.parsers.{mod}":
            raise ConfigError(f"format {fmt!r} is not available in this installation") from e
        raise
    # one module for many formats (code languages) gives each its own parse function
    parser_for = getattr(module, "parser_for", None)
    return parser_for(fmt) if parser_for is not None else module.parse


@overload
def detect_format(path: str | PurePath | None, data: bytes) -> str: ...
@overload
def detect_format(path: str | PurePath | None, data: None = None) -> str | None: ...


def detect_format(path: str | PurePath | None, data: bytes | None = None) -> str | None:
    """The one answer to "which format is this file?", asked by `parse_bytes`, the folder walk
    (`chunkwise.pipeline.discover`, which keeps the files this names) and the LlamaIndex parser: the
    format its name's extension names, else, given its content, a guess from the first bytes
    (`sniff`); None for a name with no known extension and no content to look at."""
    if path is not None:
        fmt = EXTENSIONS.get(PurePath(str(path)).suffix.lower())
        if fmt:
            return fmt
    return sniff(data) if data is not None else None


def sniff(data: bytes) -> str:
    """Guess a format from the first bytes."""
    head = data[:4096].lstrip()
    low = head.lower()
    if head.startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):  # a zip: an Office container, or no text format
        from .office.ooxml import sniff as office

        return office(data) or "text"
    if low.startswith((b"<!doctype html", b"<html")) or b"<body" in low or b"<head" in low:
        return "html"
    if low.startswith(b"<?xml") and b"<html" in low:
        return "html"
    if head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]:
        return "python"
    if head.startswith(b"#!"):
        shebang = head.split(b"\n", 1)[0]
        if re.search(rb"\b(?:ba|z|k|da)?sh\b", shebang):
            return "bash"
        if b"node" in shebang:
            return "javascript"
    text = head.decode("utf-8", "replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and (lines[0].startswith(("# ", "## ", "---")) or any(
        ln.startswith(("```", "## ", "### ")) for ln in lines[:50]
    )):
        return "markdown"
    if len(lines) >= 3:
        for sep in (",", "\t", ";"):
            counts = {ln.count(sep) for ln in lines[:20]}
            if len(counts) == 1 and counts.pop() >= 1:
                return "csv"
    return "text"
