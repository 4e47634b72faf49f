"""The walk of a tree-sitter tree into code sections (`CodeBuilder`) and the row of the
language table it is driven by (`Lang`): what every code parser shares. `code` holds the table
and the entry points; a dialect (`python`) subclasses `CodeBuilder` here, so neither of those
two imports the other's walk."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from chunkwise.parsers.code.treesitter import (LEVEL_CLASS, LEVEL_COMPOUND, LEVEL_FUNCTION,
                                          LEVEL_PART, LEVEL_SIMPLE, Item, Scope,
                                          SectionBuilder, line_runs)

if TYPE_CHECKING:
    from tree_sitter import Node

#: a statement at most this many lines long, directly above a definition that names what it
#: declares, belongs to that definition (`#define KILO_QUIT_TIMES 3` above the function using it)
_LEAD_LINES = 3
#: nested blocks below this depth are leaves (CPython itself refuses 100 indentation levels)
_MAX_DEPTH = 100
_SPACES = re.compile(r"\s+")
#: a statement bigger than this (bytes) with no block of its own is searched for a block up to
#: `_DEEP_LEVELS` below it (callbacks, immediately invoked functions)
_DEEP_MIN, _DEEP_LEVELS = 1024, 6


@dataclass(frozen=True)
class Lang:
    """One row of the language table: a grammar and the node types the walk needs."""

    name: str
    """The format name (`go`, `typescript`, …): chunks' `format`."""
    package: str
    """The PyPI package of the grammar (`tree-sitter-go`)."""
    function: str = "language"
    """The grammar module's function that returns the language pointer."""
    classes: frozenset[str] = frozenset()
    """Containers whose members are sections: classes, structs, interfaces, impls, modules."""
    functions: frozenset[str] = frozenset()
    """Functions and methods (with or without a body)."""
    others: frozenset[str] = frozenset()
    """Other named definitions kept whole (type aliases, Go type declarations)."""
    wrappers: frozenset[str] = frozenset()
    """Nodes around a definition (`export`, `template<…>`): the span of the definition."""
    blocks: frozenset[str] = frozenset()
    """Bodies and blocks: their named children are members or statements."""
    transparent: frozenset[str] = frozenset()
    """Nodes in a block whose children are the statements (Go's `statement_list`)."""
    comments: frozenset[str] = frozenset({"comment"})
    attributes: frozenset[str] = frozenset()
    """Attributes and decorators: above a definition (or in it) they belong to its header."""
    imports: frozenset[str] = frozenset()
    packages: frozenset[str] = frozenset()
    """A declaration of the file's package or namespace: it prefixes every symbol."""
    value_functions: frozenset[str] = frozenset()
    """JavaScript: function and class expressions that define a name when assigned."""
    parameters: tuple[str, ...] = ("parameters",)
    """Field names of a function's parameter list."""
    line_comment: str = "//"
    """How a line comment starts: the file name line of the context is one."""
    compound: frozenset[str] = frozenset()
    """The statements and clauses that may hold blocks (`if`, `else`, …), where the grammar
    says so (Python: no expression holds a block); empty: every statement is looked into."""
    skipped: frozenset[str] = frozenset()
    """Nodes among statements that are not statements (Python's `line_continuation`)."""
    elision: str = ""
    """Written, indented as the block, after the context header of a statement with later
    clauses (Python's `...`: the context still parses when a chunk starts at `else:`)."""
    header_limit: int = 120
    """Headers longer than this (characters) are compacted for the context."""
    encoding: str = ""
    """The kind of encoding declaration the language has (`textio.declared_encoding`)."""
    views: tuple[tuple[str, str], ...] = (("*", "code"),)
    """The views (`chunkwise.chunking.views`) the language's chunks are embedded through."""
    sliced: bool = True
    """Big files may be parsed slice by slice (not PHP: code before `<?php` is text)."""
    dialect: str = ""
    """A module of `chunkwise.parsers` whose `Builder` (a `CodeBuilder`) prints the
    language's headers its own way (Python's compact signatures, docstrings)."""

    @property
    def module(self) -> str:
        return self.package.replace("-", "_")

    @cached_property
    def definitions(self) -> frozenset[str]:
        return self.classes | self.functions | self.others


# -- the walk ---------------------------------------------------------------------------------
class CodeBuilder(SectionBuilder):
    """Turns a tree-sitter tree into sections with an explicit work stack."""

    def __init__(self, text: str, src: bytes, lang: Lang) -> None:
        super().__init__(text, src)
        self.lang = lang
        self.todo: list[tuple[list[Item], Scope]] = []
        self.package: tuple[str, ...] = ()

    def add_plain(self, start_byte: int, end_byte: int) -> None:
        self.add(start_byte, end_byte, LEVEL_SIMPLE, "statement", meta=(("kind", "module"),))

    def add_module(self, root: Node) -> None:
        self._module(self._members(root))
        while self.todo:
            items, scope = self.todo.pop()
            for item in items:
                self._item(item, scope)

    def _module(self, children: list[Node]) -> None:
        """The module's docstring, import runs as one section each, then every other
        top-level statement."""
        scope = Scope((), "module", 0)
        items = self._items(children)
        module = (("kind", "module"),)
        doc = self._docstring(items) if not self.sections else None  # (the first slice's)
        if doc is not None:
            self.add(doc.start, doc.end, LEVEL_SIMPLE, "module_docstring", meta=module)
            items.remove(doc)
        self.module_items(items, scope, self.lang.imports, module)

    def _docstring(self, items: list[Item]) -> Item | None:
        """The module's docstring among its top-level items, in languages that have one."""
        return None

    # -- statements ---------------------------------------------------------------------------
    def _item(self, item: Item, scope: Scope) -> None:
        node = item.node
        module = (("kind", "module"),) if scope.owner == "module" else ()
        if node is None:
            self.add(item.start, item.end, LEVEL_SIMPLE, "comment", meta=module)
            return
        lang = self.lang
        if node.type in lang.packages and self._package(node):
            self.add(item.start, item.end, LEVEL_SIMPLE, "statement", meta=module)
            return
        target, body_owner = self._definition_of(node)
        if target is not None and scope.depth < _MAX_DEPTH:
            self._definition(item, target, body_owner, scope)
        elif node.is_error and node.named_child_count and scope.depth < _MAX_DEPTH:
            broken = Scope(scope.path, scope.owner, scope.depth + 1, broken=True)
            self.todo.append((self._items(node.children), broken))
        elif scope.depth < _MAX_DEPTH and self._compound(item, node, scope):
            return
        else:
            error = (("syntax_error", True),) if scope.broken or syntax_errors(node) else ()
            literal = None if error else self._table(node)
            if literal is None:
                self.add(item.start, item.end, LEVEL_SIMPLE, "statement", meta=error + module)
            else:
                self._table_sections(item, node, literal, module)

    def _table(self, node: Node) -> Node | None:
        """The literal table a statement is made of (a list, map or array literal of at least
        `_TABLE_ENTRIES` entries holding most of it), or None."""
        size = node.end_byte - node.start_byte
        todo = [node]
        for _ in range(5):
            todo = [c for n in todo for c in n.named_children
                    if 2 * (c.end_byte - c.start_byte) >= size]
            for c in todo:
                if (c.type in _LITERALS and c.named_child_count >= _TABLE_ENTRIES
                        and c.end_point.row - c.start_point.row >= _TABLE_ENTRIES):
                    return c
        return None

    def _table_entries(self, literal: Node) -> None:
        """The entries of a literal table as parts, `_TABLE_GROUP` at a time (`CHUNK_STARTS`):
        each entry with its comma and a comment trailing it on its line; a key and its value
        are one entry (Swift's `"k": v` are two children)."""
        spans: list[list[int]] = []
        joined = False  # the last token was a `:` between a key and its value
        for child in literal.children:
            if child.type in (",", ";"):
                if spans:
                    spans[-1][1] = child.end_byte
            elif child.type == ":":
                joined = True
            elif child.type in self.lang.comments:
                if spans and child.start_point.row == spans[-1][2]:
                    spans[-1][1] = child.end_byte
            elif child.is_named:
                if joined and spans:
                    spans[-1][1:] = [child.end_byte, child.end_point.row]
                else:
                    spans.append([child.start_byte, child.end_byte, child.end_point.row])
                joined = False
        for k in range(0, len(spans), _TABLE_GROUP):
            part = spans[k:k + _TABLE_GROUP]
            self.add(part[0][0], part[-1][1], LEVEL_PART, "entries")

    def _table_sections(self, item: Item, node: Node, literal: Node,
                        meta: tuple[tuple[str, object], ...]) -> None:
        """A literal table: one statement whose context names it (its first line, after its
        documentation's first line), with its entries as parts, in groups (`_TABLE_GROUP`)."""
        lang = self.lang
        head = _SPACES.sub(" ", self.slice(node.start_byte, literal.start_byte + 1)).strip()
        if len(head) > lang.header_limit:
            head = head[:lang.header_limit - 6].rstrip() + " … " + head[-1]
        doc = self._table_doc(item, node)
        indent = self._indent(node)
        context = (f"{indent}{lang.line_comment} {doc}\n" if doc else "") + indent + head
        self.add(item.start, item.end, LEVEL_SIMPLE, "statement", context=context, meta=meta)
        self._table_entries(literal)

    def _table_doc(self, item: Item, node: Node) -> str:
        """The first line of words of the comments directly above a statement (in Python, of
        the string after it, joined to it as its attribute docstring), or ""."""
        spans = [(c.start_byte, c.end_byte) for c in item.above if c.type in self.lang.comments]
        if item.end > node.end_byte:
            spans.append((node.end_byte, item.end))
        for a, b in spans:
            for line in self.slice(a, b).split("\n"):
                words = _DOC_MARKS.sub("", line.strip()).strip(" *\"'/")
                if re.search(r"[A-Za-z]{2}", words):
                    return words[:_DOC_CHARS]
        return ""

    def _definition_of(self, node: Node) -> tuple[Node | None, Node | None]:
        """(the definition a statement is, the node whose body holds its members): itself, the
        definition inside a wrapper, or a JavaScript function or class assigned to a name."""
        lang = self.lang
        for _ in range(3):  # `export default`, `template <…>`, `export declare`
            if node.type not in lang.wrappers:
                break
            inner = node.child_by_field_name("declaration")
            if inner is None:
                inner = next((c for c in node.named_children
                              if c.type in lang.definitions or c.type in lang.wrappers), None)
            if inner is None:
                return None, None
            node = inner
        if node.type in lang.definitions:
            return node, node
        if lang.value_functions:
            value = _assigned_value(node)
            if value is not None and value.type in lang.value_functions:
                return node, value
        return None, None

    def _definition(self, item: Item, node: Node, owner: Node, scope: Scope) -> None:
        lang = self.lang
        name, label = self._name(node)
        is_class = node.type in lang.classes or owner.type == "class"
        kind = "class" if is_class else "method" if scope.owner == "class" else "function"
        if node.type in lang.others:
            kind = "type"
        path = (*scope.path, name) if name else scope.path
        body = self._body(owner)
        header_end = self._header_end(owner if owner is not node else node, body)
        start = self._header_start(item.node, node)
        context = self._indent(item.node) + self._header(start, header_end, node, body)
        symbol = label or ".".join((*self.package, *path))
        meta = (("symbol", symbol), ("kind", kind),
                ("line_start", item.row + 1), ("line_end", item.end_row + 1))
        level = LEVEL_CLASS if is_class else LEVEL_FUNCTION
        self.add(item.start, item.end, level, kind, path=path, context=context, meta=meta)
        if body is None or node.type in lang.others and not is_class:
            literal = self._table(node) if node.type in lang.others else None
            if literal is not None:  # Rust's `const NAMES: [&str; 9] = [ … ];`
                self._table_entries(literal)
            return
        members = self._members(body)
        if not members or (item.end - item.start <= _DEEP_MIN
                           and members[0].start_point.row == node.start_point.row):
            return  # `int f() { return 1; }`, `def f(): pass`: a one-line definition is a leaf
        owner_kind = "class" if is_class else "function"
        inner = Scope(path, owner_kind, scope.depth + 1)
        items = self._items(members)
        if items and items[0].start >= header_end:
            self._signature(item, header_end, node)
        self.todo.append((items, inner))

    def _signature(self, item: Item, end: int, node: Node) -> None:
        """The header, from its first attribute or decorator (or the definition's first
        token) to its opening brace or colon, and a comment after that on its line; comments
        above it are a section before it. Glued by the core to the first member. Its parts
        are its children: each attribute, the rest to the first parameter, and each parameter
        (or base class), so a header too long for one chunk is cut between them, never inside
        one."""
        lang = self.lang
        attributes = [a for a in item.above if a.type in lang.attributes]
        wrapper = [] if item.node is node else _attribute_children(item.node, lang)
        attributes += [a for a in wrapper + _attribute_children(node, lang) if a.end_byte <= end]
        first = min([a.start_byte for a in attributes] + [item.node.start_byte, node.start_byte])
        line = self.src[end:self.src.find(b"\n", end) % (len(self.src) + 1)]
        if line.lstrip().startswith(lang.line_comment.encode()):  # `{  // why`
            end += len(line.rstrip())
        params = self._parameters(node)
        spans = self._parameter_spans(params) if params is not None and params.end_byte <= end \
            else []  # (one-line lists too)
        name = max((a.end_byte for a in attributes), default=first)  # after the attributes
        while name < end and self.src[name:name + 1].isspace():
            name += 1
        self.header(item.start, first, end, attributes, name, spans)

    def _parameter_spans(self, params: Node) -> list[list[int]]:
        """[start, end, end row] of each parameter, with its comma and a comment trailing it
        on its line (Python: a bare `*` with the parameter after it, a `/` with the one
        before it)."""
        spans: list[list[int]] = []
        separator = None  # the start of a bare `*` not yet followed by its parameter
        for child in params.children:
            if child.type == ",":
                if spans and separator is None:
                    spans[-1][1] = child.end_byte
            elif child.type in self.lang.comments:
                if spans and child.start_point.row == spans[-1][2]:
                    spans[-1][1] = child.end_byte
            elif child.type == "positional_separator":
                if spans:
                    spans[-1][1] = child.end_byte
            elif child.type == "keyword_separator":
                separator = child.start_byte
            elif child.is_named:
                start = child.start_byte if separator is None else separator
                spans.append([start, child.end_byte, child.end_point.row])
                separator = None
        return spans

    def _compound(self, item: Item, node: Node, scope: Scope) -> bool:
        """A statement with blocks (`if`, `for`, `try`, a bare `{ … }`): the statements of its
        blocks and its clauses (`else`, `catch`) become its children. False when it has no
        block, or its first block's first statement is on the header's line."""
        lang = self.lang
        if lang.compound and node.type not in lang.compound:
            return False
        if node.type in lang.blocks:  # a bare block: `{ … }`
            blocks, clauses = [node], []
        else:
            blocks = [c for c in node.children if c.type in lang.blocks]
            clauses = [c for c in node.named_children
                       if c.type not in lang.blocks and _has_block(c, lang.blocks)]
        if not blocks and not clauses and node.end_byte - node.start_byte > _DEEP_MIN:
            # a big statement whose block sits deeper: a callback (`describe('x', () => {`),
            # an immediately invoked function (`!function(){ … }()`, a minified bundle)
            deep = _deep_block(node, lang.blocks)
            blocks = [deep] if deep is not None else []
        if not blocks and not clauses:
            return False
        first = blocks[0] if blocks else clauses[0]
        members = [m for m in self._members(first) if m.type not in lang.comments] \
            if blocks else []
        small = node.end_byte - node.start_byte <= _DEEP_MIN  # (minified code is one line)
        if blocks and not clauses and (not members or small and members[0].start_point.row
                                       == node.start_point.row):
            return False
        end = self._header_end(node, first) if blocks else first.start_byte
        context = self._indent(node) + self._header(node.start_byte, end, node, first)
        if clauses and lang.elision:  # stands for the elided block before a clause
            context += "\n" + self._indent(members[0] if members else first) + lang.elision
        self.add(item.start, item.end, LEVEL_COMPOUND, "statement", context=context)
        inner = Scope(scope.path, scope.owner, scope.depth + 1, scope.broken)
        for block in blocks:
            self.todo.append((self._items(self._members(block)), inner))
        for clause in clauses:
            row, end_row = clause.start_point.row, clause.end_point.row
            self._item(Item(clause, clause.start_byte, row, clause.end_byte, end_row), inner)
        return True

    # -- names and headers ----------------------------------------------------------------------
    def _package(self, node: Node) -> bool:
        """Record the package a file declares (`package x`, `namespace A.B;`); True if it has
        no body of its own (a PHP or C# namespace with braces is a container instead)."""
        if node.child_by_field_name("body") is not None:
            return False
        named = node.child_by_field_name("name")
        if named is None:
            named = next((c for c in node.named_children
                          if c.type not in self.lang.comments), None)
        if named is not None:
            self.package = tuple(p for p in re.split(r"[.\\:]+", self.node_text(named).strip()) if p)
        return True

    def _name(self, node: Node) -> tuple[str, str]:
        """(the name that goes into paths, a symbol that replaces the qualified name or "")."""
        t = node.type
        if t == "impl_item":  # Rust: `impl Trait for Type` is the symbol, `Type` the path
            typ = node.child_by_field_name("type")
            trait = node.child_by_field_name("trait")
            name = _strip_generics(self.node_text(typ)) if typ is not None else "?"
            label = f"impl {_strip_generics(self.node_text(trait))} for {name}" if trait is not None \
                else f"impl {name}"
            return name, label
        if t == "method_declaration" and self.lang.name == "go":
            receiver = node.child_by_field_name("receiver")
            recv = ""
            if receiver is not None:
                types = [c.child_by_field_name("type") for c in receiver.named_children]
                types = [x for x in types if x is not None]
                if types:
                    recv = _strip_generics(self.node_text(types[0]).lstrip("*"))
            own = node.child_by_field_name("name")
            name = self.node_text(own) if own is not None else "?"
            return (f"{recv}.{name}" if recv else name), ""
        named = node.child_by_field_name("name")
        if named is None and t == "type_declaration":
            spec = next((c for c in node.named_children if c.type in ("type_spec",
                                                                      "type_alias")), None)
            named = spec.child_by_field_name("name") if spec is not None else None
        if named is None:
            named = _declarator_name(node)
        if named is None:
            value = _assigned_value(node)
            if value is not None:
                left = _assigned_name(node)
                if left is not None:
                    named = left
        if named is None:
            named = next((c for c in node.named_children if c.type in _NAME_TYPES), None)
        if named is None:
            return "", ""
        # (a TypeScript `declare module '../vanilla'` is named by a string)
        name = _SPACES.sub(" ", self.node_text(named)).strip().strip("'\"`")
        return name[:self.lang.header_limit], ""

    def _body(self, node: Node) -> Node | None:
        body = node.child_by_field_name("body")
        if body is not None and body.type not in self.lang.blocks:
            # an expression body (`= expr`, `=> expr`): a block right inside it, or none
            return next((c for c in body.children if c.type in self.lang.blocks), None)
        if body is None:  # a block among the children or grandchildren (Go's struct type)
            todo, depth = list(node.children), 0
            while todo and depth < 3:
                body = next((c for c in todo if c.type in self.lang.blocks), None)
                if body is not None:
                    break
                todo = [g for c in todo for g in c.children]
                depth += 1
        return body

    def _header_end(self, node: Node, body: Node | None) -> int:
        """Where a definition's header ends: after the opening brace of its body, or at the
        end of what precedes a body without braces (Ruby, Lua), or the definition's end."""
        if body is None:  # to the end of its first line (a declaration, `def f = expr`)
            line_end = self.src.find(b"\n", node.start_byte, node.end_byte)
            return node.end_byte if line_end < 0 else line_end
        first = body.children[0] if body.children else None
        if first is not None and first.type == "{":
            return first.end_byte
        if self.src[body.start_byte:body.start_byte + 1] == b"{" and (
                first is None or first.start_byte > body.start_byte
                or first.type in self.lang.blocks):  # (not Python's `{}` statement)
            return body.start_byte + 1
        end = node.start_byte
        for child in node.children:
            if child.start_byte >= body.start_byte:
                break
            if child.type not in self.lang.comments:
                end = child.end_byte
        return end if end > node.start_byte else body.start_byte

    def _header_start(self, outer: Node, node: Node) -> int:
        """Where the header shown in the context starts: the statement (`export …`), past
        the definition's own attributes and decorators (Java's sit in its `modifiers`)."""
        skip = self.lang.attributes | self.lang.comments
        if outer.start_byte != node.start_byte:  # past a wrapper's decorators (Python)
            return next((c.start_byte for c in outer.children if c.type not in skip),
                        outer.start_byte)
        for child in node.children:
            if child.type in skip:
                continue
            if child.type == "modifiers":
                rest = [c for c in child.children if c.type not in skip]
                if not rest:
                    continue
                child = rest[0]
            return child.start_byte
        return node.start_byte

    def _header(self, start: int, end: int, node: Node, body: Node | None) -> str:
        """The header text for a context: as in the source when short, else on one line,
        else with its parameter list elided, else cut."""
        raw = self.slice(start, end).rstrip()
        if len(raw) <= self.lang.header_limit:
            return raw
        short = _SPACES.sub(" ", raw).strip()
        if len(short) <= self.lang.header_limit:
            return short
        params = self._parameters(node)
        if params is not None and start <= params.start_byte and params.end_byte <= end:
            short = _SPACES.sub(" ", self.slice(start, params.start_byte) + "(…)"
                                + self.slice(params.end_byte, end)).strip()
            if len(short) <= self.lang.header_limit:
                return short
        brace = " {" if raw.endswith("{") else ""
        return short[:self.lang.header_limit - 2 - len(brace)].rstrip() + " …" + brace

    def _parameters(self, node: Node) -> Node | None:
        for name in self.lang.parameters:
            params = node.child_by_field_name(name)
            if params is not None:
                return params
        declarator = node.child_by_field_name("declarator")  # C, C++: in the declarator
        for _ in range(4):
            if declarator is None:
                break
            params = declarator.child_by_field_name("parameters")
            if params is not None:
                return params
            declarator = declarator.child_by_field_name("declarator")
        for child in node.children:  # Kotlin, Swift: no field
            if child.type in ("function_value_parameters", "parameter_list",
                              "formal_parameters", "method_parameters"):
                return child
        return None

    # -- items ----------------------------------------------------------------------------------
    def _members(self, block: Node) -> list[Node]:
        """The named children of a block, through transparent nodes (Go's statement_list),
        less those that are not statements (Python's `line_continuation`)."""
        lang = self.lang
        out: list[Node] = []
        todo = list(reversed(block.children))
        while todo:
            child = todo.pop()
            kind = child.type
            if kind in lang.transparent:
                todo.extend(reversed(child.children))
            elif (child.is_named or child.is_error) and kind not in lang.skipped:
                out.append(child)
        if len(out) == 1 and out[0].type in lang.blocks and out[0].type != block.type:
            return self._members(out[0])  # a body that is one block (Swift's `statements`)
        return out

    def _items(self, nodes: list[Node]) -> list[Item]:
        """Statements with their comments and attributes: a comment trailing a statement's
        last line joins it; comment and attribute lines directly above a statement (no blank
        line) join it; other runs of comment lines are items of their own."""
        lang = self.lang
        items: list[Item] = []
        pending: list[Node] = []  # own-line comments and attributes not yet placed
        for node in nodes:
            kind = node.type
            if kind in lang.skipped or not (node.is_named or node.is_error):  # (an ERROR's)
                continue
            if kind in lang.comments:
                last = items[-1] if items else None
                if (not pending and last is not None and last.node is not None
                        and node.start_point.row == last.end_row):
                    last.end, last.end_row = node.end_byte, node.end_point.row
                elif self._own_line(node):  # (not one after the `{` of its block's header)
                    pending.append(node)
                continue
            if kind in lang.attributes:
                pending.append(node)
                continue
            start, row = node.start_byte, node.start_point.row
            runs = line_runs(pending)
            above: list[Node] = []
            if runs and runs[-1][-1].end_point.row >= row - 1:
                above = runs.pop()
                start, row = above[0].start_byte, above[0].start_point.row
            items.extend(Item(None, r[0].start_byte, r[0].start_point.row, r[-1].end_byte,
                               r[-1].end_point.row) for r in runs)
            items.append(Item(node, start, row, node.end_byte, node.end_point.row, above))
            pending = []
        items.extend(Item(None, r[0].start_byte, r[0].start_point.row, r[-1].end_byte,
                           r[-1].end_point.row) for r in line_runs(pending))
        return self._lead_statements(items)

    def _lead_statements(self, items: list[Item]) -> list[Item]:
        """A short statement directly above a definition (no blank line between) that
        declares a name the definition uses joins it, as the comments above it do: the
        constant is read with the code that explains it."""
        out: list[Item] = []
        for item in items:
            prev = out[-1] if out else None
            if (prev is not None and prev.node is not None and item.node is not None
                    and prev.node.type not in self.lang.imports
                    and item.row == self._last_row(prev.node) + 1
                    and self._last_row(prev.node) - prev.node.start_point.row < _LEAD_LINES
                    and self._definition_of(prev.node)[0] is None
                    and self._definition_of(item.node)[0] is not None):
                name = self._declared(prev.node)
                if name and re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])",
                                      self.slice(item.node.start_byte, item.node.end_byte)):
                    out[-1] = Item(item.node, prev.start, prev.row, item.end, item.end_row,
                                   item.above)
                    continue
            out.append(item)
        return out

    def _last_row(self, node: Node) -> int:
        """The node's last row (a `#define` ends after its line's newline)."""
        row = node.end_point.row
        return row - 1 if node.end_point.column == 0 and row > node.start_point.row else row

    def _declared(self, node: Node) -> str:
        """The name a short statement declares or assigns (`#define N 3`, `N = 3`,
        `const n = 3`, `static int n;`), or ""."""
        todo, depth = [node], 0
        while todo and depth < 4:
            nxt = []
            for cur in todo:
                for field in ("name", "left", "declarator"):
                    got = cur.child_by_field_name(field)
                    if got is not None and got.type in _NAME_TYPES | {"identifier"}:
                        return self.node_text(got).strip()
                    if got is not None:
                        nxt.append(got)
                nxt += [c for c in cur.named_children if c.type not in self.lang.comments]
            todo, depth = nxt, depth + 1
        return ""

    # -- helpers --------------------------------------------------------------------------------
    def _own_line(self, node: Node) -> bool:
        """True when only whitespace precedes the node on its line."""
        column = node.start_point.column  # (bytes)
        return column <= _DEEP_MIN and \
            not self.src[node.start_byte - column:node.start_byte].strip()

    def _indent(self, node: Node) -> str:
        """The source indentation of the node's line ("" if code precedes it on its line: a
        minified line can be megabytes long)."""
        column = node.start_point.column  # (bytes)
        if column > self.lang.header_limit:
            return ""
        prefix = self.src[node.start_byte - column:node.start_byte]
        return prefix.decode("utf-8", "surrogatepass") if not prefix.strip() else ""


#: literal tables (`_table`): collection literals of the grammars
_LITERALS = frozenset({"dictionary", "list", "set", "tuple", "object", "array",
                       "initializer_list", "literal_value", "table_constructor", "hash",
                       "array_creation_expression", "array_expression", "collection_literal",
                       "array_literal", "dictionary_literal", "array_initializer",
                       "initializer_expression"})
#: a literal of at least `_TABLE_ENTRIES` entries over as many lines is a table, chunked `_TABLE_GROUP` entries
#: at a time (`CHUNK_STARTS`) under a context naming it: alike rows dilute a mean-pooled
#: vector, so the row asked about must not be one of twenty (docs/code-retrieval.md)
_TABLE_ENTRIES, _TABLE_GROUP = 8, 4
#: the section kinds a chunk starts at (`ParsedDocument.chunk_starts`)
CHUNK_STARTS = frozenset({"entries"})
#: a comment's or docstring's opening marker, stripped from a table's doc line (at most
#: `_DOC_CHARS` characters, as `code-doc`'s)
_DOC_MARKS = re.compile(r"^(?:/\*+!?|//[/!]?|\*+/?|--+(?:\[=*\[)?|#+"
                        r"|[rRbBuUfF]{0,2}(?:\"\"\"|\'\'\'))")
_DOC_CHARS = 160

#: node types that name a definition when it has no `name` field
_NAME_TYPES = frozenset({"identifier", "type_identifier", "simple_identifier", "constant",
                         "name", "word", "field_identifier", "user_type"})


def syntax_errors(root: Node) -> bool:
    """Whether a tree (or a node) holds a syntax error: an ERROR node, or a missing token other than a
    preprocessor directive (`#endif`), which tree-sitter reports where a conditional opens a
    block in one `#if` and closes it in another: valid C once preprocessed (cJSON's
    fuzzing/afl.c), and every region parsed. Only nodes holding an error are visited."""
    if not root.has_error:
        return False
    todo = [root]
    while todo:
        node = todo.pop()
        if node.is_error or (node.is_missing and not node.type.startswith("#")):
            return True
        todo.extend(c for c in node.children if c.has_error)
    return False


def _has_block(node: Node, blocks: frozenset[str]) -> bool:
    """A block among the node's children or grandchildren (`else { … }`, `else if … { … }`)."""
    for child in node.children:
        if child.type in blocks:
            return True
        if child.is_named and any(g.type in blocks for g in child.children):
            return True
    return False


def _deep_block(node: Node, blocks: frozenset[str]) -> Node | None:
    """The biggest block at most `_DEEP_LEVELS` below a node, if it holds most of the node."""
    level, best = [node], None
    for _ in range(_DEEP_LEVELS):
        level = [c for n in level for c in n.children if c.is_named]
        if not level:
            break
        for c in level:
            if c.type in blocks and (best is None or c.end_byte - c.start_byte
                                     > best.end_byte - best.start_byte):
                best = c
        if best is not None:
            break
    if best is None or 2 * (best.end_byte - best.start_byte) < node.end_byte - node.start_byte:
        return None
    return best


def _attribute_children(node: Node, lang: Lang) -> list[Node]:
    out = [c for c in node.children if c.type in lang.attributes]
    for c in node.children:
        if c.type == "modifiers":
            out += [a for a in c.children if a.type in lang.attributes]
    return out


def _assigned_value(node: Node) -> Node | None:
    """JavaScript: the value of `const f = …`, `var f = …`, `X.prototype.f = …;` (a single
    declarator or assignment), else None."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) == 1:
            return declarators[0].child_by_field_name("value")
    elif node.type == "expression_statement" and node.named_child_count == 1:
        expr = node.named_children[0]
        if expr.type == "assignment_expression":
            return expr.child_by_field_name("right")
    return None


def _assigned_name(node: Node) -> Node | None:
    if node.type in ("lexical_declaration", "variable_declaration"):
        for c in node.named_children:
            if c.type == "variable_declarator":
                return c.child_by_field_name("name")
    elif node.type == "expression_statement" and node.named_child_count == 1:
        return node.named_children[0].child_by_field_name("left")
    return None


def _declarator_name(node: Node) -> Node | None:
    """C and C++: the name inside a function's declarator (`int *f(void)` -> `f`)."""
    declarator = node.child_by_field_name("declarator")
    for _ in range(8):
        if declarator is None:
            return None
        if declarator.type in ("identifier", "field_identifier", "qualified_identifier",
                               "destructor_name", "operator_name", "type_identifier"):
            return declarator
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            return next((c for c in declarator.named_children
                         if c.type in ("identifier", "field_identifier",
                                       "qualified_identifier")), None)
        declarator = inner
    return None


def _strip_generics(name: str) -> str:
    """`Result<T, E>` -> `Result`, `&'a mut Foo` -> `Foo`."""
    name = _SPACES.sub(" ", name).strip()
    cut = name.find("<")
    if cut > 0:
        name = name[:cut]
    return name.lstrip("&*").replace("mut ", "").split("'")[-1].strip() or name
