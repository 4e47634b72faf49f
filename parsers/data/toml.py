"""TOML (`.toml`): tables and key/value pairs as sections, keys as the section path.

See `chunkwise.parsers.data.tree` (the walk) and `chunkwise.parsers.data.json` (the sections).
`[[products]]` elements are `products[0]`, `products[1]`, … in the path. The file is first
read by `tomllib` (Python 3.11+): a file it refuses is chunked as text, by lines, with a
warning giving its reason (a templated `pyproject.toml` stays searchable).
"""

from __future__ import annotations

from chunkwise.model import ParsedDocument

from .tree import TOML, parse_tree


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse TOML into table/entry sections."""
    return parse_tree(data, source=source, grammar=TOML, invalid=_invalid(data))


def _invalid(data: bytes) -> str | None:
    """Why `tomllib` refuses the file ("Invalid value (at line 3, column 5)"); None when it
    reads it, or when there is no `tomllib` (Python 3.10: tree-sitter alone decides)."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        return None
    try:
        tomllib.loads(data.decode("utf-8-sig").replace("\r\n", "\n"))
    except UnicodeDecodeError:
        return "not UTF-8, as TOML must be"
    except tomllib.TOMLDecodeError as e:
        return f"not valid TOML: {e}"
    except RecursionError:
        return "not read by tomllib: nested too deeply"
    return None
