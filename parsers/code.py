"""Source code in many languages, from a tree-sitter parse driven by one table of languages.

`LANGUAGES` holds one row per language: the grammar package and the node types that matter
(classes and other containers, functions and methods, blocks, comments, imports, attributes,
package declarations, how a line comment starts). The walk (`CodeBuilder`) is the same for
every language, Python included; a row may name a dialect module whose `Builder` subclass
prints headers its own way (`chunkwise.parsers.python`: docstrings, compact signatures).

Sections, by level (a total order): class/container > function/method > compound statement
(and its clauses, and an import block) > simple statement. A definition's members or body
statements are its children, and so are the statements in the blocks of a compound statement
(`if`, `for`, `try`, …), so the fitter can split an oversized definition between statements,
recursively. Comments and attributes (`#[derive]`, `[Serializable]`) directly above a
definition belong to it, so a doc comment travels with what it documents.

A definition's header (its comments and attributes, modifiers, name, parameters, up to the
opening brace, or the end of the parameter list where the language has no braces) is a
`signature` section that the core glues to the first statement of the body (see
`chunkwise.chunking.structure`): a header is never cut from its body nor in two, unless it alone
exceeds the budget; then it is cut only between its parts: its attributes and decorators, and
the parameters of a multi-line parameter list.

Every definition and compound statement carries its own header as `context`, indented as in
the source; the core joins the contexts of the sections enclosing a chunk, so a piece from the
middle of a method is embedded after `class Parser {` / `  parse(data) {`. `meta.symbol` is
the qualified name: the package or namespace the file declares, the enclosing types, the name
(`cobra.Command.Execute`; a Go method is qualified by its receiver type, a Rust method by the
type of its `impl`, whose own symbol is `impl Trait for Type`).

Syntax errors: tree-sitter recovers, often by wrapping a stretch of valid code in an ERROR
node; such a node is transparent (the definitions and statements in it are sections) and the
fragments in it become leaf sections flagged `syntax_error`. The walk is an explicit stack,
never recursion, and stops descending below `_MAX_DEPTH` nested blocks. A file over twice
`_SLICE` bytes is parsed slice by slice, cut at lines that start top-level statements, so that
tree-sitter's memory (some 40 bytes per source byte) follows the slice, not the file; a
stretch over `_MAX_TREE` bytes with no such line (a minified bundle) is kept as plain text,
sized by lines.

A file whose grammar package is not installed is chunked as plain text (its `format` still
names the language), with one warning per language and process naming the extra to install.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Callable, Iterator

from chunkwise.errors import MissingDependencyError, ParseError
from chunkwise.model import ParsedDocument
from chunkwise.parsers.treesitter import (LEVEL_CLASS, LEVEL_COMPOUND, LEVEL_FUNCTION,
                                          LEVEL_SIMPLE, Item, Scope, SectionBuilder,
                                          line_runs)
from chunkwise.text.textio import declared_encoding, decode

if TYPE_CHECKING:
    from tree_sitter import Node

log = logging.getLogger(__name__)

#: nested blocks below this depth are leaves (CPython itself refuses 100 indentation levels)
_MAX_DEPTH = 100
#: files bigger than twice this are parsed slice by slice (tree-sitter takes some 40 bytes of
#: memory per source byte)
_SLICE = 1 << 21
#: a slice this big is not given to tree-sitter (a single giant statement, a minified bundle,
#: or a syntax error the slice could not be cut around): it is kept as plain text, sized by
#: lines
_MAX_TREE = 1 << 23
#: where a slice may start: a line that starts a top-level statement at column 0, not one
#: that continues one (`else`, `catch`, `end`) or may be inside an import block
_TOP_LEVEL = re.compile(rb"^(?!(?:else|elif|elsif|except|catch|finally|rescue|ensure|end"
                        rb"|import|from|use|using|require|extern)\b)[A-Za-z_@$]", re.MULTILINE)
#: lines above a cut that stay with the statement below it: comments, decorators, attributes
_LEADS = (b"@", b"#", b"//", b"/*", b" *", b"--")
_SPACES = re.compile(r"\s+")
#: a statement bigger than this (bytes) with no block of its own is searched for a block up to
#: `_DEEP_LEVELS` below it (callbacks, immediately invoked functions)
_DEEP_MIN, _DEEP_LEVELS = 1024, 6
#: the extra that installs every grammar
EXTRA = "code"

_F = frozenset


@dataclass(frozen=True)
class Lang:
    """One row of the language table: a grammar and the node types the walk needs."""

    name: str
    """The format name (`go`, `typescript`, …): chunks' `format`."""
    package: str
    """The PyPI package of the grammar (`tree-sitter-go`)."""
    function: str = "language"
    """The grammar module's function that returns the language pointer."""
    classes: frozenset[str] = _F()
    """Containers whose members are sections: classes, structs, interfaces, impls, modules."""
    functions: frozenset[str] = _F()
    """Functions and methods (with or without a body)."""
    others: frozenset[str] = _F()
    """Other named definitions kept whole (type aliases, Go type declarations)."""
    wrappers: frozenset[str] = _F()
    """Nodes around a definition (`export`, `template<…>`): the span of the definition."""
    blocks: frozenset[str] = _F()
    """Bodies and blocks: their named children are members or statements."""
    transparent: frozenset[str] = _F()
    """Nodes in a block whose children are the statements (Go's `statement_list`)."""
    comments: frozenset[str] = _F({"comment"})
    attributes: frozenset[str] = _F()
    """Attributes and decorators: above a definition (or in it) they belong to its header."""
    imports: frozenset[str] = _F()
    packages: frozenset[str] = _F()
    """A declaration of the file's package or namespace: it prefixes every symbol."""
    value_functions: frozenset[str] = _F()
    """JavaScript: function and class expressions that define a name when assigned."""
    parameters: tuple[str, ...] = ("parameters",)
    """Field names of a function's parameter list."""
    line_comment: str = "//"
    """How a line comment starts: the file name line of the context is one."""
    compound: frozenset[str] = _F()
    """The statements and clauses that may hold blocks (`if`, `else`, …), where the grammar
    says so (Python: no expression holds a block); empty: every statement is looked into."""
    skipped: frozenset[str] = _F()
    """Nodes among statements that are not statements (Python's `line_continuation`)."""
    elision: str = ""
    """Written, indented as the block, after the context header of a statement with later
    clauses (Python's `...`: the context still parses when a chunk starts at `else:`)."""
    header_limit: int = 120
    """Headers longer than this (characters) are compacted for the context."""
    encoding: str = ""
    """The kind of encoding declaration the language has (`textio.declared_encoding`)."""
    views: tuple[tuple[str, str], ...] = ()
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


_JS_CLASSES = _F({"class_declaration", "class", "abstract_class_declaration"})
_JS_FUNCTIONS = _F({"function_declaration", "generator_function_declaration",
                    "method_definition"})
_JS_BLOCKS = _F({"statement_block", "class_body", "switch_body"})
_JS_VALUES = _F({"arrow_function", "function_expression", "function",
                 "generator_function", "class"})
_TS_CLASSES = _JS_CLASSES | _F({"interface_declaration", "enum_declaration",
                                "internal_module", "module"})
_TS_FUNCTIONS = _JS_FUNCTIONS | _F({"function_signature", "method_signature",
                                    "abstract_method_signature"})
_TS_BLOCKS = _JS_BLOCKS | _F({"interface_body", "object_type", "enum_body"})
_C_BLOCKS = _F({"compound_statement", "field_declaration_list", "enumerator_list"})
_C_OTHERS = _F({"struct_specifier", "union_specifier", "enum_specifier", "type_definition"})

#: format name -> language row
LANGUAGES: dict[str, Lang] = {lang.name: lang for lang in (
    Lang("python", "tree-sitter-python", classes=_F({"class_definition"}),
         functions=_F({"function_definition"}), wrappers=_F({"decorated_definition"}),
         blocks=_F({"block"}), attributes=_F({"decorator"}),
         imports=_F({"import_statement", "import_from_statement", "future_import_statement"}),
         compound=_F({"if_statement", "for_statement", "while_statement", "try_statement",
                      "with_statement", "match_statement", "elif_clause", "else_clause",
                      "except_clause", "except_group_clause", "finally_clause",
                      "case_clause"}),
         parameters=("parameters", "superclasses"), line_comment="#",
         skipped=_F({"line_continuation"}), elision="...", header_limit=160,
         encoding="python", views=(("*", "code"),), dialect="python"),
    Lang("javascript", "tree-sitter-javascript", classes=_JS_CLASSES, functions=_JS_FUNCTIONS,
         wrappers=_F({"export_statement"}), blocks=_JS_BLOCKS, attributes=_F({"decorator"}),
         imports=_F({"import_statement"}), value_functions=_JS_VALUES),
    Lang("typescript", "tree-sitter-typescript", "language_typescript", classes=_TS_CLASSES,
         functions=_TS_FUNCTIONS, others=_F({"type_alias_declaration"}),
         wrappers=_F({"export_statement", "ambient_declaration"}), blocks=_TS_BLOCKS,
         attributes=_F({"decorator"}), imports=_F({"import_statement"}),
         value_functions=_JS_VALUES),
    Lang("tsx", "tree-sitter-typescript", "language_tsx", classes=_TS_CLASSES,
         functions=_TS_FUNCTIONS, others=_F({"type_alias_declaration"}),
         wrappers=_F({"export_statement", "ambient_declaration"}), blocks=_TS_BLOCKS,
         attributes=_F({"decorator"}), imports=_F({"import_statement"}),
         value_functions=_JS_VALUES),
    Lang("go", "tree-sitter-go", functions=_F({"function_declaration", "method_declaration"}),
         others=_F({"type_declaration"}), blocks=_F({"block"}),
         transparent=_F({"statement_list"}), imports=_F({"import_declaration"}),
         packages=_F({"package_clause"})),
    Lang("rust", "tree-sitter-rust",
         classes=_F({"impl_item", "trait_item", "mod_item", "struct_item", "enum_item",
                     "union_item"}),
         functions=_F({"function_item", "function_signature_item"}),
         others=_F({"type_item", "macro_definition", "const_item", "static_item"}),
         blocks=_F({"declaration_list", "block", "field_declaration_list",
                    "enum_variant_list"}),
         comments=_F({"line_comment", "block_comment"}), attributes=_F({"attribute_item"}),
         imports=_F({"use_declaration", "extern_crate_declaration"})),
    Lang("java", "tree-sitter-java",
         classes=_F({"class_declaration", "interface_declaration", "enum_declaration",
                     "record_declaration", "annotation_type_declaration"}),
         functions=_F({"method_declaration", "constructor_declaration",
                       "compact_constructor_declaration"}),
         blocks=_F({"class_body", "interface_body", "enum_body", "block",
                    "constructor_body", "annotation_type_body", "switch_block"}),
         transparent=_F({"enum_body_declarations"}),
         comments=_F({"line_comment", "block_comment"}),
         attributes=_F({"annotation", "marker_annotation"}),
         imports=_F({"import_declaration"}), packages=_F({"package_declaration"})),
    Lang("c", "tree-sitter-c", functions=_F({"function_definition"}), others=_C_OTHERS,
         blocks=_C_BLOCKS, imports=_F({"preproc_include"})),
    Lang("cpp", "tree-sitter-cpp",
         classes=_F({"class_specifier", "struct_specifier", "union_specifier",
                     "namespace_definition", "linkage_specification"}),
         functions=_F({"function_definition"}),
         others=_F({"enum_specifier", "type_definition", "alias_declaration",
                    "concept_definition"}),
         wrappers=_F({"template_declaration"}),
         blocks=_C_BLOCKS | _F({"declaration_list"}), attributes=_F({"attribute_declaration"}),
         imports=_F({"preproc_include", "using_declaration"})),
    Lang("csharp", "tree-sitter-c-sharp",
         classes=_F({"class_declaration", "struct_declaration", "interface_declaration",
                     "record_declaration", "enum_declaration", "namespace_declaration"}),
         functions=_F({"method_declaration", "constructor_declaration",
                       "destructor_declaration", "operator_declaration",
                       "conversion_operator_declaration", "local_function_statement",
                       "property_declaration", "indexer_declaration"}),
         others=_F({"delegate_declaration"}),
         blocks=_F({"declaration_list", "block", "accessor_list", "switch_body",
                    "enum_member_declaration_list"}),
         attributes=_F({"attribute_list"}), imports=_F({"using_directive"}),
         packages=_F({"file_scoped_namespace_declaration"})),
    Lang("ruby", "tree-sitter-ruby",
         classes=_F({"class", "module", "singleton_class"}),
         functions=_F({"method", "singleton_method"}),
         blocks=_F({"body_statement"}), line_comment="#"),
    Lang("php", "tree-sitter-php", "language_php",
         classes=_F({"class_declaration", "interface_declaration", "trait_declaration",
                     "enum_declaration", "namespace_definition"}),
         functions=_F({"function_definition", "method_declaration"}),
         blocks=_F({"declaration_list", "compound_statement", "enum_declaration_list",
                    "switch_block"}),
         attributes=_F({"attribute_list"}),
         imports=_F({"namespace_use_declaration"}), packages=_F({"namespace_definition"}),
         sliced=False),
    Lang("bash", "tree-sitter-bash", functions=_F({"function_definition"}),
         blocks=_F({"compound_statement", "do_group"}), line_comment="#"),
    Lang("kotlin", "tree-sitter-kotlin",
         classes=_F({"class_declaration", "object_declaration", "companion_object"}),
         functions=_F({"function_declaration", "secondary_constructor"}),
         others=_F({"type_alias"}),
         blocks=_F({"class_body", "function_body", "block", "enum_class_body"}),
         comments=_F({"line_comment", "block_comment"}), attributes=_F({"annotation"}),
         imports=_F({"import", "import_list"}), packages=_F({"package_header"}),
         parameters=("parameters", "function_value_parameters")),
    Lang("swift", "tree-sitter-swift",
         classes=_F({"class_declaration", "protocol_declaration"}),
         functions=_F({"function_declaration", "init_declaration", "deinit_declaration",
                       "protocol_function_declaration", "subscript_declaration"}),
         others=_F({"typealias_declaration"}),
         blocks=_F({"class_body", "protocol_body", "function_body", "enum_class_body",
                    "statements"}),
         comments=_F({"comment", "multiline_comment"}), attributes=_F({"attribute"}),
         imports=_F({"import_declaration"})),
    Lang("scala", "tree-sitter-scala",
         classes=_F({"class_definition", "object_definition", "trait_definition",
                     "enum_definition"}),
         functions=_F({"function_definition", "function_declaration"}),
         others=_F({"type_definition"}),
         blocks=_F({"template_body", "block", "enum_body"}),
         comments=_F({"comment", "block_comment"}), attributes=_F({"annotation"}),
         imports=_F({"import_declaration"}), packages=_F({"package_clause"})),
    Lang("lua", "tree-sitter-lua", functions=_F({"function_declaration"}),
         blocks=_F({"block"}), line_comment="--")
)}


# -- grammars ---------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def grammar(name: str) -> Any:
    """The tree-sitter `Language` of a format; `MissingDependencyError` naming the extra when
    its grammar package is not installed."""
    lang = LANGUAGES[name]
    try:
        from tree_sitter import Language

        module = importlib.import_module(lang.module)
    except ImportError as e:
        raise MissingDependencyError(lang.package, EXTRA) from e
    return Language(getattr(module, lang.function)())


_warned: set[str] = set()


def parser_for(name: str) -> Callable[..., ParsedDocument]:
    """The `parse(data, *, source)` function of one language."""
    if name not in LANGUAGES:
        raise KeyError(name)

    def parse_language(data: bytes, *, source: str) -> ParsedDocument:
        return parse(data, source=source, language=name)

    parse_language.__name__ = f"parse_{name}"
    return parse_language


def parse(data: bytes, *, source: str, language: str) -> ParsedDocument:
    """Parse source bytes of one of `LANGUAGES` into definition and statement sections."""
    lang = LANGUAGES[language]
    declared = declared_encoding(data, lang.encoding) if lang.encoding else None
    text, warnings = decode(data, source, declared=declared)
    if "\x00" in text:  # NUL past the binary sniff window: not a source file
        raise ParseError(source, f"binary data, not {language} source",
                         position=text.index("\x00"))
    try:
        ts_language = grammar(language)
    except MissingDependencyError as e:
        return _as_text(data, source, lang, e)
    src = text.encode("utf-8", "surrogatepass")
    builder = builder_class(lang)(text, src, lang)
    errors = unparsed = False
    for root, start, end in _roots(src, ts_language, lang.sliced):  # trees never coexist
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
    name = PurePath(source).name
    return ParsedDocument(source=source, format=language, text=text,
                          sections=tuple(builder.sections), title=name,
                          path_in_context=False, context=_file_comment(lang, name),
                          warnings=tuple(warnings), meta=(("language", language),),
                          views=lang.views)


def builder_class(lang: Lang) -> type[CodeBuilder]:
    """The walk for a language: `CodeBuilder`, or its dialect's subclass."""
    if not lang.dialect:
        return CodeBuilder
    return importlib.import_module(f"chunkwise.parsers.{lang.dialect}").Builder


def _roots(src: bytes, language: Any, sliced: bool = True
           ) -> Iterator[tuple[Node | None, int, int]]:
    """(root, start byte, end byte) of slices covering the source, parsed one at a time so
    that memory follows the slice, not the file. Small files are one slice. A slice with a
    syntax error may have been cut inside a string or brackets (tree-sitter then reports an
    error in it, though not always near the cut): it is extended, doubling the step so the
    total work stays linear, and parsed again; a real syntax error thus costs at most the
    single parse it would have cost anyway. A slice over `_MAX_TREE` bytes is not parsed at
    all (root None)."""
    from tree_sitter import Parser, Point, Range

    parser = Parser(language)
    bounds = _slice_bounds(src) if sliced else [0, len(src)]
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
    starts a top-level statement (`_TOP_LEVEL`), moved up over the comment, decorator and
    attribute lines right above it. Lines that continue a statement are never cut at."""
    n, bounds, pos = len(src), [0], 0
    while n - bounds[-1] > 2 * _SLICE:
        m = _TOP_LEVEL.search(src, max(pos, bounds[-1] + _SLICE))
        if m is None:
            break
        pos, cut = m.end(), m.start()
        while cut > bounds[-1] + 1:  # keep comments and decorators with their definition
            prev = src.rfind(b"\n", 0, cut - 1) + 1
            if not src.startswith(_LEADS, prev):
                break
            cut = prev
        if cut > bounds[-1] and src[cut - 2:cut - 1] != b"\\":  # not after a continuation
            bounds.append(cut)
    bounds.append(n)
    return bounds


def _file_comment(lang: Lang, name: str) -> str:
    """The file name as a comment of the language: the first line of every context."""
    return f"{lang.line_comment} {name}"


def _as_text(data: bytes, source: str, lang: Lang, error: MissingDependencyError
             ) -> ParsedDocument:
    """Plain text, for a language whose grammar is not installed (one warning a language)."""
    from chunkwise.parsers import text as text_parser

    doc = text_parser.parse(data, source=source)
    warnings = list(doc.warnings)
    if lang.name not in _warned:
        _warned.add(lang.name)
        warnings.append(f"{error}; {lang.name} files are chunked as plain text")
    return ParsedDocument(source=doc.source, format=lang.name, text=doc.text,
                          sections=doc.sections, title=doc.title, warnings=tuple(warnings),
                          prose=doc.prose, meta=(("language", lang.name),))


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
            error = (("syntax_error", True),) if scope.broken or node.has_error else ()
            self.add(item.start, item.end, LEVEL_SIMPLE, "statement", meta=error + module)

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
        return items

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


#: node types that name a definition when it has no `name` field
_NAME_TYPES = frozenset({"identifier", "type_identifier", "simple_identifier", "constant",
                         "name", "word", "field_identifier", "user_type"})


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
