"""Python: the row of `chunkwise.parsers.code.languages.LANGUAGES` whose headers print their own way.

Python is parsed by the same walk as every other language (`code_walk.CodeBuilder`, driven by
its row of the table: classes, functions, decorated definitions, blocks, decorators, imports,
parameters and base classes). This module is that row's dialect, what no table entry says:

- a module's docstring is a section of its own (`module_docstring`);
- headers in a context are Python that still parses: a long `if`/`for`/`while` header is
  put on one line, and when still too long becomes `if ...:  # cond…` (`...` is an
  expression; `for x in ...:` keeps its target); a long signature keeps its parameter
  names only (`def f(a, b, *, c):  # … 3 more parameters`), a long class header its name;
- (from the row) a statement with later clauses (`if` with `else`, `try`) ends its
  context header with an indented `...` standing for the elided block, so context + text
  still reads as, and parses as, Python when a chunk starts at `else:` or `except:`.

Sections, by level: class > function/method > compound statement (and its clauses, and an
import block) > simple statement. A definition's header (decorators, signature, up to the
colon) is a `signature` section glued by the core to the first statement of its body, cut
only between its parts (decorators, keyword and name, each parameter or base class) when it
alone exceeds the budget. Syntax errors, deep nesting and huge modules are handled by the
walk as for every language (ERROR nodes transparent, `_MAX_DEPTH`, slices).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chunkwise.parsers.code.walk import CodeBuilder
from chunkwise.parsers.code.treesitter import Item

if TYPE_CHECKING:
    from tree_sitter import Node

#: a compacted signature lists parameter names up to about this many characters
_COMPACT_NAMES = 100
_SPACES = re.compile(r"\s+")


class Builder(CodeBuilder):
    """The walk of `CodeBuilder` with Python's docstrings and header printing."""

    def _docstring(self, items: list[Item]) -> Item | None:
        first = next((it for it in items if it.node is not None), None)
        return first if first is not None and _is_docstring(first.node) else None

    def _items(self, nodes: list[Node]) -> list[Item]:
        """`CodeBuilder._items`, with an attribute docstring (a string right after an
        assignment, on the next line) joined to its assignment, as a doc comment above a
        definition is."""
        items = super()._items(nodes)
        out: list[Item] = []
        for item in items:
            prev = out[-1] if out else None
            if (prev is not None and prev.node is not None and item.node is not None
                    and _is_docstring(item.node) and item.row == prev.end_row + 1
                    and prev.node.type == "expression_statement" and prev.node.named_child_count
                    and prev.node.named_children[0].type == "assignment"):
                prev.end, prev.end_row = item.end, item.end_row
                continue
            out.append(item)
        return out

    def _header(self, start: int, end: int, node: Node, body: Node | None) -> str:
        if node.type in self.lang.definitions:
            return self._def_header(node, end)
        return self._statement_header(node, end)

    # -- headers --------------------------------------------------------------------------
    def _statement_header(self, node: Node, end: int) -> str:
        """`if cond:`, `except E as e:`, … — on one line when long, and when still too long,
        `if ...:  # cond…` (still Python: `...` is an expression; `for x in ...:` keeps its
        target)."""
        raw = self.slice(node.start_byte, end)
        if len(raw) <= self.lang.header_limit:
            return raw
        short = self._collapsed(node, end)
        if len(short) <= self.lang.header_limit:
            return short
        head, _, rest = short.partition(" ")
        if head == "async":
            word, _, rest = rest.partition(" ")
            head = f"async {word}"
        left = node.child_by_field_name("left") if node.type == "for_statement" else None
        right = node.child_by_field_name("right") if left is not None else None
        if right is not None and left.end_byte - left.start_byte < self.lang.header_limit // 2:
            head = f"{head} {_SPACES.sub(' ', self.node_text(left))} in"
            rest = _SPACES.sub(" ", self.src[right.start_byte:min(right.end_byte, end)]
                               .decode("utf-8", "surrogatepass"))
        room = max(20, self.lang.header_limit - len(head) - 10)
        return f"{head} ...:  # {rest[:room].rstrip()}…"

    def _def_header(self, node: Node, end: int) -> str:
        """The signature through its colon; long ones keep parameter names only."""
        raw = self.slice(node.start_byte, end)
        if len(raw) <= self.lang.header_limit:
            return raw
        name_node = node.child_by_field_name("name")
        name = self.node_text(name_node) if name_node is not None else "?"
        if node.type == "class_definition":
            return f"class {name}(...):"
        keyword = "async def" if self.src.startswith(b"async", node.start_byte) else "def"
        params = node.child_by_field_name("parameters")
        names = [] if params is None else [n for n in map(self._param, params.named_children) if n]
        shown: list[str] = []
        for n in names:
            if sum(len(s) + 2 for s in shown) + len(n) > _COMPACT_NAMES:
                break
            shown.append(n)
        while shown and shown[-1] in ("*", "/"):  # a bare `*` must not end the list
            shown.pop()
        more = len(names) - len(shown)
        tail = f"  # … {more} more parameter{'s' if more > 1 else ''}" if more else ""
        return f"{keyword} {name}({', '.join(shown)}):{tail}"

    def _param(self, node: Node) -> str:
        if node.type == "identifier":
            return self.node_text(node)
        if node.type in ("keyword_separator", "positional_separator"):
            return self.node_text(node)
        if node.type in ("list_splat_pattern", "dictionary_splat_pattern"):
            return self.node_text(node) if node.end_byte - node.start_byte < 80 else ""
        named = node.child_by_field_name("name")
        if named is not None:
            return self.node_text(named)
        for child in node.named_children:  # typed_parameter: first child is the name (or splat)
            if child.type in ("identifier", "list_splat_pattern", "dictionary_splat_pattern"):
                return self.node_text(child)
        return ""

    def _collapsed(self, node: Node, end: int) -> str:
        """The header on one line: comments dropped, whitespace runs made single spaces."""
        pieces, pos = [], node.start_byte
        stack = [node]
        comments = []
        while stack:  # comments inside the header only; blocks are not descended
            cur = stack.pop()
            for child in cur.children:
                if child.start_byte >= end or child.type == "block":
                    continue
                if child.type == "comment":
                    comments.append(child)
                elif child.child_count:
                    stack.append(child)
        for c in sorted(comments, key=lambda c: c.start_byte):
            pieces.append(self.slice(pos, c.start_byte))
            pos = c.end_byte
        pieces.append(self.slice(pos, end))
        return _SPACES.sub(" ", "".join(pieces).replace("\\\n", " ")).strip()


def _is_docstring(node: Node) -> bool:
    return (node.type == "expression_statement" and node.named_child_count == 1
            and node.named_children[0].type in ("string", "concatenated_string"))
