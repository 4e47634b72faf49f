"""Python definition headers and how chunks treat them, found independently of the package
(`ast` and `tokenize`, not tree-sitter): tests and the corpus check of issue 24 use it.

A header runs from a definition's first decorator (or its `def`/`class`/`async` keyword) to the
colon that opens its block, and a comment after that colon on its line. It fits when the chunk that holds its first character could hold
all of it: its context, a blank line and the header come within the budget.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from dataclasses import dataclass, field

from lines import LineIndex, trimmed

_OPEN, _CLOSE = "([{", ")]}"


@dataclass(frozen=True)
class Header:
    """One definition's header span and the spans around it (`str` offsets)."""

    name: str
    start: int  # the first decorator's `@`, or the keyword
    end: int  # just past the colon (or a comment after it on its line)
    body: int  # the first character of the body's first statement
    def_end: int  # the end of the whole definition
    #: where the header may be cut when it alone exceeds the budget: between decorators,
    #: between parameters (or base classes), before the keyword when decorated, and before
    #: the first parameter (a first parameter too long to share a chunk with the name)
    parts: tuple[int, ...] = field(default=())


def headers(text: str) -> list[Header]:
    """The headers of every definition with a block body (the body not on the header's line)."""
    lines = LineIndex(text)

    def offset(line: int, col: int) -> int:  # ast columns are UTF-8 byte offsets in the line
        start = lines.offset(line - 1)
        raw = text[start:lines.offset(line)].encode("utf-8")
        return start + len(raw[:col].decode("utf-8", "replace"))

    colons = _block_colons(text, offset)
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        keyword = offset(node.lineno, node.col_offset)
        start = offset(node.decorator_list[0].lineno, node.decorator_list[0].col_offset) - 1 \
            if node.decorator_list else keyword
        end = colons[_first_after(colons, keyword)]
        rest = text[end:text.find("\n", end) % (len(text) + 1)]
        if rest.lstrip().startswith("#"):  # a comment on the colon's line ends the header
            end += len(rest.rstrip())
        body = offset(node.body[0].lineno, node.body[0].col_offset)
        if lines.line_of(body) == lines.line_of(end - 1):
            continue  # `def f(): return 1`: one line
        parts = [offset(d.lineno, d.col_offset) - 1 for d in node.decorator_list[1:]]
        if node.decorator_list:
            parts.append(keyword)
        if isinstance(node, ast.ClassDef):
            items = [*node.bases, *node.keywords]
        else:
            a = node.args
            items = [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs,
                     *([a.kwarg] if a.kwarg else [])]
        firsts = sorted(_stars(text, offset(i.lineno, i.col_offset)) for i in items)
        parts += firsts
        if not isinstance(node, ast.ClassDef) and node.args.kwonlyargs and not node.args.vararg:
            first_kw = offset(node.args.kwonlyargs[0].lineno, node.args.kwonlyargs[0].col_offset)
            parts.append(text.rfind("*", keyword, first_kw))  # a bare `*` goes with the next
        out.append(Header(node.name, start, end, body,
                          offset(node.end_lineno, node.end_col_offset), tuple(sorted(parts))))
    return sorted(out, key=lambda h: h.start)


def _stars(text: str, at: int) -> int:
    """Where an item starting at `at` really starts: `*args` and `**kwargs` (ast places
    them at the name) begin at their stars."""
    while at > 0 and text[at - 1] == "*":
        at -= 1
    return at


def _block_colons(text: str, offset) -> list[int]:
    """Offsets just past every `:` at bracket depth 0 (the colons that open blocks, and
    those of lambdas, slices and annotations outside brackets)."""
    depth, out = 0, []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.OP:
            continue
        if tok.string in _OPEN:
            depth += 1
        elif tok.string in _CLOSE:
            depth -= 1
        elif tok.string == ":" and depth == 0:
            out.append(offset(*tok.end))
    return out


def _first_after(sorted_offsets: list[int], pos: int) -> int:
    from bisect import bisect_right

    return bisect_right(sorted_offsets, pos)


@dataclass
class Report:
    """What `check` found over some files."""

    headers: int = 0
    too_long: int = 0  # headers that alone exceed the budget
    split_defs: int = 0
    cut_inside: list[str] = field(default_factory=list)  # a fitting header cut
    first_piece: list[str] = field(default_factory=list)  # split def: header or body missing
    #: a long header cut inside a part (a decorator, parameter) that fits alone
    cut_in_part: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.cut_inside or self.first_piece or self.cut_in_part)

    def __str__(self) -> str:
        return (f"{self.headers} headers ({self.too_long} longer than the budget), "
                f"{self.split_defs} split definitions: {len(self.cut_inside)} fitting headers "
                f"cut, {len(self.first_piece)} split definitions whose first chunk lacks the "
                f"header or the start of the body, {len(self.cut_in_part)} long headers cut "
                f"inside a part that fits")


def check(text: str, chunks, count, budget: int, report: Report, source: str = "") -> None:
    """Check the chunks of one Python text (`count`: the chunker's token counter)."""
    starts = sorted(trimmed(text, c.start, c.end)[0] for c in chunks)
    ends = sorted(trimmed(text, c.start, c.end)[1] for c in chunks)
    found = headers(text)
    nested = {h.start: h for h in found}
    for h in found:
        report.headers += 1
        holder = next((c for c in chunks if c.start <= h.start < c.end), None)
        if holder is None:
            continue
        embed = (holder.context + "\n\n" if holder.context else "") + text[h.start:h.end]
        cuts = {x for x in starts if h.start < x < h.end} | {x for x in ends
                                                              if h.start < x < h.end}
        where = f"{source}:{text.count(chr(10), 0, h.start) + 1} {h.name}"
        if count(embed) > budget:
            report.too_long += 1
            bounds = [h.start, *h.parts, h.end]
            for x in cuts:  # inside a part: only one too long alone
                if trimmed(text, x, h.end)[0] in h.parts:  # (a chunk ends before a part)
                    continue
                k = max(i for i, p in enumerate(bounds) if p < x)
                piece = next(c for c in chunks if c.start <= x <= c.end)
                part = text[bounds[k]:bounds[k + 1]].strip()
                if count((piece.context + "\n\n" if piece.context else "") + part) <= budget:
                    report.cut_in_part.append(where)
                    break
            continue
        if cuts:
            report.cut_inside.append(where)
        if not (holder.start <= h.start and h.def_end <= holder.end):
            report.split_defs += 1
            # the first chunk holds the header and the start of the body (the first line
            # after the colon, when the header and that line fit together; comment lines
            # there go with the line of code after them)
            after = trimmed(text, h.end, h.def_end)[0]
            stop = after
            while True:
                stop = text.find("\n", stop) % (len(text) + 1)
                if not text[stop:h.def_end].lstrip().startswith("#") \
                        or not text[after:stop].lstrip().startswith("#"):
                    break
                stop += 1
            line = text[after:stop]
            if after in nested:  # the body opens with a definition: its whole header, the
                line = text[after:nested[after].end]  # unit that cannot be cut
            # the chunk may hold the headers this one opens the body of (a class's, then
            # its first method's): they travel together, and take room too
            lead = h.start
            while lead > holder.start:
                outer = next((o for o in found if o.start >= holder.start and o.end <= lead
                              and not text[o.end:lead].strip()), None)
                if outer is None:
                    break
                lead = outer.start
            if lead == holder.start and lead < h.start:
                embed = (holder.context + "\n\n" if holder.context else "") + \
                    text[lead:h.end]
            room = count(embed + "\n" + line) <= budget
            if holder.end < h.end or (room and holder.end <= after):
                report.first_piece.append(where)




def main(argv: list[str]) -> int:
    """python tests/headers.py FOLDER_OR_FILE... [--tokenizer T] [--max-tokens N]"""
    import argparse
    from pathlib import Path

    from chunkwise import Chunker
    from chunkwise.parsers.code.languages import parser_for
    parse_python = parser_for("python")

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--tokenizer", default="minilm")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    chunker = Chunker(tokenizer=args.tokenizer, max_tokens=args.max_tokens)
    report = Report()
    for path in args.paths:
        for f in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            doc = parse_python(f.read_bytes(), source=f.name)
            check(doc.text, chunker.chunk_document(doc), chunker.sizer.count, args.max_tokens,
                  report, f.name)
    print(report)
    if args.verbose:
        for name in ("cut_inside", "first_piece", "cut_in_part"):
            for where in getattr(report, name)[:10]:
                print(f"  {name}: {where}")
    return 0 if report.ok() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
