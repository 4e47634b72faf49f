"""The code views: identifiers in words, the qualified name first, and the definition a
chunk lies in named with its first doc line.

- `code`: identifiers split into words (`get_max_batch_size` -> `get max batch size`,
  `ReadingOrderModel` -> `Reading Order Model`), after a first line naming the chunk's
  qualified name in words when the chunk's owner has one (`ReadingOrderModel._merge_elements`
  -> `Reading Order Model merge elements`). Natural-language questions ask with words; a
  WordPiece tokenizer cuts `snake_case` into pieces and underscores that carry little.
- `code-doc` (a variant, the default): the text as it is; a chunk that starts inside a
  documented definition (past its first character) adds to its context a comment line naming
  the definition with the first line of its documentation (`chunkwise.text.doclines`), read
  as the definition's parser says its language writes it (`line_comment`, `docstrings` in
  the definition's meta: the parser knows its language's comments and docstrings).
- `code-split`, `code-name`: the two halves of `code`, for measuring.
"""

from __future__ import annotations

import re

from ...model import ParsedDocument
from ...text.doclines import DEFINITIONS, doc_line
from ...text.splitting import trim
from ..structure import Node
from ..work import Piece
from .base import BaseView, DocumentViews, Rendered

__all__ = ["split_identifiers", "code_view", "CodeView", "CodeDocView", "CodeSplitView",
           "CodeNameView"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _words(ident: str) -> str:
    if "_" not in ident.strip("_") and not _CAMEL.search(ident):
        return ident
    parts = [p for chunk in ident.split("_") for p in _CAMEL.split(chunk) if p]
    return " ".join(parts) if parts else ident


def split_identifiers(text: str) -> str:
    """`text` with every snake_case or CamelCase identifier written as words."""
    return _IDENT.sub(lambda m: _words(m.group(0)), text)


def code_view(text: str, qualified: str = "") -> str:
    """The `code` view: the qualified name in words on a first line (when given), then the
    text with its identifiers split into words."""
    body = split_identifiers(text)
    if qualified:
        return f"{split_identifiers(qualified.replace('.', ' '))}\n{body}"
    return body


def _qualified(piece: Piece, doc: ParsedDocument) -> str:
    """The chunk's owner's qualified name ("" for the document itself)."""
    path = piece.owner.path if piece.owner is not None else ()
    return ".".join(path) if path and path != (doc.title,) else ""


class CodeView(BaseView):
    name = "code"
    about = "identifiers split into words, qualified name first"

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        return piece.context, code_view(doc.text[piece.start:piece.end], _qualified(piece, doc))


class CodeSplitView(BaseView):
    name, stands_for = "code-split", "code"
    about = "identifiers split into words, no qualified-name line"

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        return piece.context, split_identifiers(doc.text[piece.start:piece.end])


class CodeNameView(BaseView):
    name, stands_for = "code-name", "code"
    about = "qualified name first, identifiers as they are"

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        text = doc.text[piece.start:piece.end]
        qualified = _qualified(piece, doc)
        return piece.context, f"{qualified}\n{text}" if qualified else text


class CodeDocView(BaseView):
    name, stands_for = "code-doc", "code"
    about = ("text as is; a chunk inside a definition adds its qualified name and first doc "
             "line to the context")

    def render(self, piece: Piece, doc: ParsedDocument, tree: DocumentViews,
               within: Node | None = None) -> Rendered | None:
        context = definition_context(piece, doc, tree)
        return (context, doc.text[piece.start:piece.end]) if context else None


def definition_context(piece: Piece, doc: ParsedDocument, tree: DocumentViews) -> str:
    """`code-doc`: the chunk's context, then a comment line naming the innermost definition
    the chunk starts inside (past its first character) with the first line of its
    documentation, or "" when there is no such definition or it has no
    documentation."""
    text = doc.text
    for node in reversed(tree.chain(piece.start, piece.end)):
        if node.kind not in DEFINITIONS:
            continue
        if piece.start <= trim(text, node.start, node.end)[0]:
            return ""  # the definition's own start: its documentation is in the text
        meta = dict(node.meta)
        # over the definition's span in the tree (its parser's span and the text before it
        # no section holds, such as a doc comment left out after a syntax error), read as
        # its parser says its language writes documentation
        line = doc_line(text, node.start, node.end,
                        hash_comments=meta.get("line_comment") == "#",
                        docstrings=bool(meta.get("docstrings")))
        if not line:
            return ""
        symbol = meta.get("symbol") or ".".join(node.path[1:] or node.path)
        # a line comment, as the document's own line is (`# file.py`), so that the
        # context followed by the text still parses
        mark = doc.context.split(" ", 1)[0] if " " in doc.context else ""
        return "\n".join(p for p in (piece.context, f"{mark} {symbol}: {line}".strip()) if p)
    return ""
