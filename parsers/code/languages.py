"""Source code in many languages, from a tree-sitter parse driven by one table of languages.

`LANGUAGES` holds one row per language: the grammar package and the node types that matter
(classes and other containers, functions and methods, blocks, comments, imports, attributes,
package declarations, how a line comment starts). The walk (`code_walk.CodeBuilder`) is the
same for every language, Python included; a row may name a dialect, whose `CodeBuilder`
subclass (`DIALECTS`: `chunkwise.parsers.code.python`) prints headers its own way (docstrings,
compact signatures). The table imports the dialect, the dialect only the walk: no circle.

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
the parameters of a multi-line parameter list (where: `code_headers.HEADERS`, which every
code document hands the fitter as `ParsedDocument.headers`).

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

A file whose grammar package is not installed (every grammar is a dependency; an install
that lost one) is chunked as plain text (its `format` still names the language), with one
warning per language and process naming the package to install.
"""

from __future__ import annotations

import importlib
import logging
import re
from functools import lru_cache
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Callable, Iterator

from chunkwise.errors import MissingDependencyError, ParseError
from chunkwise.model import ParsedDocument
from chunkwise.parsers.code import python
from chunkwise.parsers.code.headers import HEADERS
from chunkwise.parsers.code.walk import CHUNK_STARTS, CodeBuilder, Lang, syntax_errors
from chunkwise.text.doclines import doc_facts
from chunkwise.text.textio import declared_encoding, decode

if TYPE_CHECKING:
    from tree_sitter import Node

log = logging.getLogger(__name__)

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
_F = frozenset


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
    """The tree-sitter `Language` of a format; `MissingDependencyError` naming the package
    when its grammar is not installed (a dependency of chunkwise: a broken install)."""
    lang = LANGUAGES[name]
    try:
        from tree_sitter import Language

        module = importlib.import_module(lang.module)
    except ImportError as e:
        raise MissingDependencyError(lang.package) from e
    return Language(getattr(module, lang.function)())


_warned: set[str] = set()


#: the warning of a source with syntax errors (the notebook parser looks for it)
SYNTAX_ERRORS = "syntax errors; unparsable regions are kept as plain text"


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
            errors = errors or syntax_errors(root)
            builder.add_module(root)
    if errors:
        warnings.append(SYNTAX_ERRORS)
    if unparsed:
        warnings.append(f"a stretch of over {_MAX_TREE >> 20} MB without top-level statement "
                        "boundaries is kept as plain text")
    name = PurePath(source).name
    return ParsedDocument(source=source, format=language, text=text,
                          sections=tuple(doc_facts(builder.sections,
                                                   line_comment=lang.line_comment,
                                                   docstrings=lang.dialect == "python")),
                          title=name,
                          path_in_context=False, context=_file_comment(lang, name),
                          warnings=tuple(warnings), meta=(("language", language),),
                          views=lang.views, headers=HEADERS, chunk_starts=CHUNK_STARTS)


#: dialect name (`Lang.dialect`) -> the `CodeBuilder` subclass that prints its headers
DIALECTS: dict[str, type[CodeBuilder]] = {"python": python.Builder}


def builder_class(lang: Lang) -> type[CodeBuilder]:
    """The walk for a language: `CodeBuilder`, or its dialect's subclass."""
    return DIALECTS.get(lang.dialect, CodeBuilder) if lang.dialect else CodeBuilder


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
