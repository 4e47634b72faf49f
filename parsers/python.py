"""Python source: classes, functions, methods and statements, from a tree-sitter parse.

Sections, by level (a total order): class > function/method > compound statement (and its
clauses, and an import block) > simple statement. A definition's body statements are its
children, and so are the statements of every compound statement (`if`, `for`, `try`, …), so
the fitter can split an oversized definition at statement boundaries, recursively. Decorators
and comments directly above a definition belong to it.

A definition's header (decorators, signature, up to the colon) is a `signature` section that
the core glues to the first statement of the body (see `chunkwise.structure`): a header is
never cut from its body nor in two, unless it alone exceeds the budget; then it is cut only
between its parts, its decorators and the parameters (or base classes) of a multi-line
signature, which are the signature's children.

Every definition and compound statement carries its own header (signature, `if cond:`) as
`context`; the core joins the contexts of the sections enclosing a chunk, so a piece from the
middle of a method is embedded after `class Parser:` / `    def parse(self, data):`, indented
as in the source. Headers of statements with later clauses (`if` with `else`, `try`) end with
an indented `...` that stands for the elided part of the block, so that context + text still
reads as (and parses as) Python when a chunk starts at an `else:` or `except:`.

Syntax errors: tree-sitter recovers, but often wraps a stretch of valid code in an ERROR
node; such a node is transparent (the statements and definitions in it are sections) and
the fragments in it become leaf sections flagged `syntax_error`, sized by lines.

The walk is an explicit stack, never recursion, and stops descending below `_MAX_DEPTH`
nested blocks; big modules are parsed slice by slice. Deep or huge generated modules stay
bounded in time and memory.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Iterator

from chunkwise.errors import MissingDependencyError, ParseError
from chunkwise.model import ParsedDocument
from chunkwise.parsers.treesitter import (LEVEL_CLASS, LEVEL_COMPOUND, LEVEL_FUNCTION,
                                          LEVEL_SIMPLE, Item, Scope,
                                          SectionBuilder, line_runs)
from chunkwise.textio import declared_encoding, decode

if TYPE_CHECKING:
    from tree_sitter import Node

log = logging.getLogger(__name__)

_DEFINITIONS = frozenset({"function_definition", "class_definition"})
_COMPOUND = frozenset({"if_statement", "for_statement", "while_statement", "try_statement",
                       "with_statement", "match_statement"})
_CLAUSES = frozenset({"elif_clause", "else_clause", "except_clause", "except_group_clause",
                      "finally_clause", "case_clause"})
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_NOT_STATEMENTS = frozenset({"comment", "line_continuation"})
#: headers (signatures, conditions) longer than this are compacted for the context
_HEADER_LIMIT = 160
#: a compacted signature lists parameter names up to about this many characters
_COMPACT_NAMES = 100
#: nested blocks below this depth are leaves (CPython itself refuses 100 indentation levels)
_MAX_DEPTH = 100
_SPACES = re.compile(r"\s+")
#: modules bigger than twice this are parsed slice by slice
_SLICE = 1 << 21
#: a slice this big is not given to tree-sitter (a single giant statement, or a syntax error
#: the slice could not be cut around): it is kept as plain text, sized by lines
_MAX_TREE = 1 << 23
_TOP_LEVEL = re.compile(
    rb"^(?!(?:else|elif|except|finally|import|from)\b)[A-Za-z_@]", re.MULTILINE)


@lru_cache(maxsize=1)
def _language() -> Any:
    try:
        import tree_sitter_python
        from tree_sitter import Language
    except ImportError as e:  # pragma: no cover - both are core dependencies
        raise MissingDependencyError("tree-sitter-python", "code") from e
    return Language(tree_sitter_python.language())


def parse(data: bytes, *, source: str) -> ParsedDocument:
    """Parse Python source bytes into definition and statement sections."""
    text, warnings = decode(data, source, declared=declared_encoding(data, "python"))
    if "\x00" in text:  # NUL past the binary sniff window: not a source file
        raise ParseError(source, "binary data, not Python source", position=text.index("\x00"))
    src = text.encode("utf-8", "surrogatepass")
    builder = _Builder(text, src)
    errors = unparsed = False
    for root, start, end in _roots(src):  # one tree at a time: big modules' trees never coexist
        if root is None:
            unparsed = True
            builder.add_plain(start, end)
        else:
            errors = errors or root.has_error
            builder.add_module(root)
    if errors:
        warnings.append("syntax errors; unparsable regions are kept as plain text")
    if unparsed:
        warnings.append(f"a stretch of over {_MAX_TREE >> 20} MB without top-level statement "
                        "boundaries is kept as plain text")
    return ParsedDocument(source=source, format="python", text=text,
                          sections=tuple(builder.sections), title=PurePath(source).name,
                          path_in_context=False, context=f"# {PurePath(source).name}",
                          warnings=tuple(warnings),
                          meta=(("language", "python"),), views=(("*", "code"),))


def _roots(src: bytes) -> Iterator[tuple[Node | None, int, int]]:
    """(module root, start byte, end byte) of slices covering the source, parsed one at a
    time so that memory follows the slice, not the file (tree-sitter takes some 40 bytes per
    source byte). Small modules are one slice. A slice with a syntax error may have been cut
    inside a string or brackets (tree-sitter then reports an error in it, though not always
    near the cut): it is extended, doubling the step so the total work stays linear, and
    parsed again; a real syntax error thus costs at most the single parse it would have cost
    anyway. A slice over `_MAX_TREE` bytes is not parsed at all (root None)."""
    from tree_sitter import Parser, Point, Range

    parser = Parser(_language())
    bounds = _slice_bounds(src)
    rows = [0]
    for a, b in zip(bounds, bounds[1:]):
        rows.append(rows[-1] + src.count(b"\n", a, b))
    tail = len(src) - (src.rfind(b"\n") + 1)  # column of the end of the file
    last, i = len(bounds) - 1, 0
    while i < last:
        step = 1
        while True:
            j = min(i + step, last)
            if bounds[j] - bounds[i] > _MAX_TREE:
                log.debug("bytes %d-%d not parsed: over %d bytes without a cut", bounds[i],
                          bounds[j], _MAX_TREE)
                yield None, bounds[i], bounds[j]
                break
            # parse only the slice's range; node offsets stay absolute
            end_point = Point(rows[j], tail if j == last else 0)
            parser.included_ranges = [Range(Point(rows[i], 0), end_point, bounds[i], bounds[j])]
            root = parser.parse(src).root_node
            if j == last or not root.has_error:
                yield root, bounds[i], bounds[j]
                break
            step *= 2
        i = j


def _slice_bounds(src: bytes) -> list[int]:
    """0, the cut points, len(src): cuts about every `_SLICE` bytes, each at a line that
    starts a top-level statement (column 0), moved up over the comment and decorator lines
    right above it. Lines that continue a statement (`else:`, `except`, closing brackets) or
    an import block are never cut at."""
    n, bounds, pos = len(src), [0], 0
    while n - bounds[-1] > 2 * _SLICE:
        m = _TOP_LEVEL.search(src, max(pos, bounds[-1] + _SLICE))
        if m is None:
            break
        pos, cut = m.end(), m.start()
        while cut > bounds[-1] + 1:  # keep decorators and comments with their definition
            prev = src.rfind(b"\n", 0, cut - 1) + 1
            if src[prev:prev + 1] not in (b"@", b"#"):
                break
            cut = prev
        if cut > bounds[-1] and src[cut - 2:cut - 1] != b"\\":  # not after a continuation
            bounds.append(cut)
    bounds.append(n)
    return bounds


class _Builder(SectionBuilder):
    """Turns a tree-sitter tree into sections with an explicit work stack."""

    def __init__(self, text: str, src: bytes) -> None:
        super().__init__(text, src)
        self.todo: list[tuple[list[Node], Scope]] = []

    def add_plain(self, start_byte: int, end_byte: int) -> None:
        """A stretch kept as plain text (the fitter sizes it by lines)."""
        self.add(start_byte, end_byte, LEVEL_SIMPLE, "statement", meta=(("kind", "module"),))

    def add_module(self, root: Node) -> None:
        """Sections of one parsed module (or slice of one)."""
        self._module(root.children, docstring=not self.sections)
        while self.todo:
            nodes, scope = self.todo.pop()
            for item in _items(nodes, self.src):
                self._item(item, scope)

    # -- module level -------------------------------------------------------------------
    def _module(self, children: list[Node], *, docstring: bool) -> None:
        """Module docstring and import blocks, then every other top-level statement."""
        scope = Scope((), "module", 0)
        items = _items(children, self.src)
        module = (("kind", "module"),)
        first = next((k for k, it in enumerate(items) if it.node is not None), None)
        if docstring and first is not None and _is_docstring(items[first].node):
            doc = items.pop(first)
            self.add(doc.start, doc.end, LEVEL_SIMPLE, "module_docstring", meta=module)
        self.module_items(items, scope, _IMPORTS, module)

    # -- statements ---------------------------------------------------------------------
    def _item(self, item: Item, scope: Scope) -> None:
        node = item.node
        module = (("kind", "module"),) if scope.owner == "module" else ()
        if node is None:
            self.add(item.start, item.end, LEVEL_SIMPLE, "comment", meta=module)
            return
        kind = node.type
        target = node.child_by_field_name("definition") if kind == "decorated_definition" else node
        if target is not None and target.type in _DEFINITIONS:
            self._definition(item, target, scope)
        elif kind in _COMPOUND and scope.depth < _MAX_DEPTH:
            self._compound(item, scope)
        elif kind in _CLAUSES:  # `case` clauses sit in the match statement's block
            self._clause(node, scope)
        elif node.is_error and node.named_child_count and scope.depth < _MAX_DEPTH:
            # tree-sitter wraps whole stretches of valid code in an ERROR node: it is not a
            # section, its statements and definitions are (fragments become flagged leaves)
            self.todo.append((node.children, Scope(scope.path, scope.owner, scope.depth + 1,
                                                    broken=True)))
        else:
            error = (("syntax_error", True),) if scope.broken or node.has_error else ()
            self.add(item.start, item.end, LEVEL_SIMPLE, "statement", meta=error + module)

    def _definition(self, item: Item, node: Node, scope: Scope) -> None:
        name_node = node.child_by_field_name("name")
        name = self.node_text(name_node) if name_node is not None else "?"
        path = (*scope.path, name)
        is_class = node.type == "class_definition"
        kind = "class" if is_class else "method" if scope.owner == "class" else "function"
        body = node.child_by_field_name("body")
        context = self._indent(node) + self._def_header(node, body)
        meta = (("symbol", ".".join(path)), ("kind", kind),
                ("line_start", item.row + 1), ("line_end", item.end_row + 1))
        self.add(item.start, item.end, LEVEL_CLASS if is_class else LEVEL_FUNCTION,
                  kind, path=path, context=context, meta=meta)
        if scope.depth >= _MAX_DEPTH or body is None or _inline(node, body):
            return
        self._signature(item, node, body)
        self.todo.append((body.children, Scope(path, "class" if is_class else "function",
                                                scope.depth + 1)))

    def _signature(self, item: Item, node: Node, body: Node) -> None:
        """The header of a definition with a block body, from its first decorator to the
        colon (comments above it are a section before it): the core glues it to the body's
        first statement.
        Its parts are its children: each decorator, the keyword and name, and each parameter
        (or base class), so a header too long for one chunk is cut between them, never
        inside one."""
        end = _colon_end(node, body)
        line = self.src[end:self.src.find(b"\n", end) % (len(self.src) + 1)]
        if line.lstrip().startswith(b"#"):  # a comment after the colon ends the header
            end += len(line.rstrip())
        outer = item.node
        first = outer.start_byte if outer is not None else item.start
        decorators = [c for c in outer.children if c.type == "decorator"] \
            if outer is not None and outer.type == "decorated_definition" else []
        field = "superclasses" if node.type == "class_definition" else "parameters"
        params = node.child_by_field_name(field)
        # (on one line too: a long one is cut between them)
        spans = self._parameters(params) if params is not None else []
        self.header(item.start, first, end, decorators, node.start_byte, spans)

    def _parameters(self, params: Node) -> list[list[int]]:
        """[start, end, end row] of each parameter, with its comma and trailing comment (a
        bare `*` with the parameter after it, a `/` with the one before it)."""
        spans: list[list[int]] = []  # [start_byte, end_byte, end_row]
        separator = None  # the start of a bare `*` not yet followed by its parameter
        for child in params.children:
            if child.type == ",":
                if spans and separator is None:
                    spans[-1][1] = child.end_byte
            elif child.type == "comment":
                if spans and child.start_point.row == spans[-1][2]:
                    spans[-1][1] = child.end_byte
            elif child.type == "positional_separator":  # `/` ends the parameters before it
                if spans:
                    spans[-1][1] = child.end_byte
            elif child.type == "keyword_separator":
                separator = child.start_byte
            elif child.is_named:
                start = child.start_byte if separator is None else separator
                spans.append([start, child.end_byte, child.end_point.row])
                separator = None
        return spans

    def _compound(self, item: Item, scope: Scope) -> None:
        """An if/for/while/try/with/match statement: its blocks' statements and its clauses
        become children, unless its body sits on the header line."""
        node = item.node
        block = _first_block(node)
        if block is None or _inline(node, block):
            self.add(item.start, item.end, LEVEL_SIMPLE, "statement")
            return
        clauses = [c for c in node.children if c.type in _CLAUSES]
        context = self._indent(node) + self._header(node, block)
        if clauses:  # `...` stands for the elided block, so a following clause still parses
            context += "\n" + self._indent(_first_statement(block) or block) + "..."
        self.add(item.start, item.end, LEVEL_COMPOUND, "statement", context=context)
        inner = Scope(scope.path, scope.owner, scope.depth + 1)
        for child in node.children:
            if child.type == "block":
                self.todo.append((child.children, inner))
            elif child.type in _CLAUSES:
                self._clause(child, inner)

    def _clause(self, node: Node, scope: Scope) -> None:
        block = _first_block(node)
        if block is None or _inline(node, block) or scope.depth >= _MAX_DEPTH:
            self.add(node.start_byte, node.end_byte, LEVEL_SIMPLE, "statement")
            return
        context = self._indent(node) + self._header(node, block)
        self.add(node.start_byte, node.end_byte, LEVEL_COMPOUND, "statement", context=context)
        self.todo.append((block.children, Scope(scope.path, scope.owner, scope.depth + 1)))

    # -- headers --------------------------------------------------------------------------
    def _header(self, node: Node, block: Node) -> str:
        """`if cond:`, `except E as e:`, … — on one line when long, and when still too long,
        `if ...:  # cond…` (still Python: `...` is an expression; `for x in ...:` keeps its
        target)."""
        end = _colon_end(node, block)
        raw = self.slice(node.start_byte, end)
        if len(raw) <= _HEADER_LIMIT:
            return raw
        short = self._collapsed(node, end)
        if len(short) <= _HEADER_LIMIT:
            return short
        head, _, rest = short.partition(" ")
        if head == "async":
            word, _, rest = rest.partition(" ")
            head = f"async {word}"
        left = node.child_by_field_name("left") if node.type == "for_statement" else None
        right = node.child_by_field_name("right") if left is not None else None
        if right is not None and left.end_byte - left.start_byte < _HEADER_LIMIT // 2:
            head = f"{head} {_SPACES.sub(' ', self.node_text(left))} in"
            rest = _SPACES.sub(" ", self.src[right.start_byte:min(right.end_byte, end)]
                               .decode("utf-8", "surrogatepass"))
        room = max(20, _HEADER_LIMIT - len(head) - 10)
        return f"{head} ...:  # {rest[:room].rstrip()}…"

    def _def_header(self, node: Node, body: Node | None) -> str:
        """The signature through its colon; long ones keep parameter names only."""
        end = _colon_end(node, body) if body is not None else node.end_byte
        raw = self.slice(node.start_byte, end)
        if len(raw) <= _HEADER_LIMIT:
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

    # -- helpers --------------------------------------------------------------------------
    def _indent(self, node: Node) -> str:
        """The source indentation of the node's line (spaces if code precedes it)."""
        line_start = self.src.rfind(b"\n", 0, node.start_byte) + 1
        prefix = self.src[line_start:node.start_byte]
        return prefix.decode("utf-8", "surrogatepass") if not prefix.strip() else " " * len(prefix)


def _items(nodes: list[Node], src: bytes) -> list[Item]:
    """The statements of a block with their comments: a comment trailing a statement's last
    line joins it, comment lines directly above a statement (no blank line) join it, and
    other runs of comment lines become items of their own."""
    items: list[Item] = []
    pending: list[Node] = []  # own-line comments not yet placed
    for node in nodes:
        if not node.is_named or node.type == "line_continuation":
            continue
        if node.type == "comment":
            last = items[-1] if items else None
            if (not pending and last is not None and last.node is not None
                    and node.start_point.row == last.end_row):
                last.end, last.end_row = node.end_byte, node.end_point.row
            elif _own_line(node, src):
                pending.append(node)
            continue
        start, row = node.start_byte, node.start_point.row
        runs = line_runs(pending)
        if runs and runs[-1][-1].end_point.row == row - 1:
            above = runs.pop()
            start, row = above[0].start_byte, above[0].start_point.row
        items.extend(Item(None, r[0].start_byte, r[0].start_point.row, r[-1].end_byte,
                           r[-1].end_point.row) for r in runs)
        items.append(Item(node, start, row, node.end_byte, node.end_point.row))
        pending = []
    items.extend(Item(None, r[0].start_byte, r[0].start_point.row, r[-1].end_byte,
                       r[-1].end_point.row) for r in line_runs(pending))
    return items


def _own_line(node: Node, src: bytes) -> bool:
    line_start = src.rfind(b"\n", 0, node.start_byte) + 1
    return not src[line_start:node.start_byte].strip()


def _is_docstring(node: Node) -> bool:
    return (node.type == "expression_statement" and node.named_child_count == 1
            and node.named_children[0].type in ("string", "concatenated_string"))


def _first_block(node: Node) -> Node | None:
    for child in node.children:
        if child.type == "block":
            return child
    return None


def _first_statement(block: Node) -> Node | None:
    for child in block.children:
        if child.is_named and child.type not in _NOT_STATEMENTS:
            return child
    return None


def _inline(header: Node, block: Node) -> bool:
    """True when the block's first statement sits on the header's line (`if x: return`)."""
    first = _first_statement(block)
    return first is None or first.start_point.row == header.start_point.row


def _colon_end(node: Node, block: Node | None) -> int:
    """End byte of the `:` that closes a header: the `:` token before the block (comments
    may sit between them)."""
    if block is None:
        return node.end_byte
    prev = block.prev_sibling
    while prev is not None and prev.type != ":" and prev.type == "comment":
        prev = prev.prev_sibling
    if prev is not None and prev.type == ":":
        return prev.end_byte
    return block.start_byte
