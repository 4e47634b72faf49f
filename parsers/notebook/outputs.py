"""The format `notebook-outputs`: a Jupyter notebook with its code cells' text outputs kept
(see `chunkwise.parsers.notebook.reader`). No extension names it; ask for it with
`--format notebook-outputs` or `format="notebook-outputs"`."""

from __future__ import annotations

from chunkwise.model import ParsedDocument

from .reader import parse as _parse_notebook


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse a notebook, outputs included."""
    return _parse_notebook(data, source=source, outputs=True)
