"""Question sets for retrieval evaluation: reading and validating a questions file,
locating excerpts in canonical text, and matching each question's source to the `source`
a collection stores.

    >>> qs = load_questions("questions.jsonl", root="corpus")
    >>> qs.questions[0].start, qs.questions[0].end

**Questions file** (JSON Lines, one object per line; blank lines are skipped):
`question` (text) and `source` (the file holding the answer, relative to `root` unless
absolute) are required; optionally a reference span of the source's canonical text, given
either as `start`/`end` (`str` indices, `end` exclusive) or as an `excerpt`. Any other key
(an id, `sanity`, …) is kept in `Question.extra`. Every problem is reported, one per line,
as `file:line: reason`, in one `QuestionsError` (a `ConfigError`; the CLI exits 2).

**Excerpts** are located in the canonical text (`chunkwise.chunking.api.parse_file`): an exact match
first; if there is none, a match with every run of whitespace collapsed to one space on both
sides, mapped back to exact offsets. Not found, or found more than once, is an error. (This
is the one place chunkwise searches for text: the excerpt is the user's way to name a span.)

**Sources.** Chunks store `source` as the path given at ingest (e.g. `../corpus/a.md`). A
question matches the stored source that resolves to the same absolute path (relative stored
paths are taken from the current directory; symlinks are resolved); failing that, the one
stored source whose last path components equal the question's relative `source` (so
`markdown/a.md` finds `/elsewhere/corpus/markdown/a.md`). No match, or several suffix
matches, is an error.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import ChunkwiseError, ConfigError

_SPACE = re.compile(r"\s+")


class QuestionsError(ConfigError):
    """The questions file is invalid or does not fit the collection; `problems` holds one
    `file:line: reason` per problem, all of them."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"{n} problem{'s' if n != 1 else ''} in the questions file:\n"
                         + "\n".join(self.problems))



@dataclass(frozen=True, slots=True)
class Question:
    """One line of a questions file, validated; `start`/`end` are set when a span or an
    excerpt was given."""

    question: str
    source: str
    path: Path
    line: int
    start: int | None = None
    end: int | None = None
    excerpt: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_span(self) -> bool:
        return self.start is not None


@dataclass
class QuestionSet:
    """Validated questions, where they came from, and the canonical texts of the sources
    that have spans (needed to count units)."""

    file: Path
    root: Path
    questions: list[Question]
    texts: dict[Path, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.questions)

    def where(self, q: Question) -> str:
        return f"{self.file}:{q.line}"


_KNOWN = {"question", "source", "start", "end", "excerpt"}


def load_questions(path: str | os.PathLike, *, root: str | os.PathLike | None = None,
                   parse: Callable[[Path], str] | None = None) -> QuestionSet:
    """Read and validate a questions file (see the module docstring); `root` defaults to the
    file's directory. Raises `QuestionsError` listing every bad line."""
    file = Path(path)
    try:
        raw = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or e
        raise ConfigError(f"cannot read questions file {file}: {reason}") from e
    base = Path(root) if root is not None else file.parent
    if not base.is_dir():
        raise ConfigError(f"questions root {base} is not a directory")
    parse = parse or _canonical_text
    texts: dict[Path, str | None] = {}
    problems: list[str] = []
    questions: list[Question] = []
    for lineno, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            questions.append(_question(line, lineno, base, texts, parse))
        except _LineError as e:
            problems.append(f"{file}:{lineno}: {e}")
    if not questions and not problems:
        problems.append(f"{file}: no questions")
    if problems:
        raise QuestionsError(problems)
    return QuestionSet(file, base, questions, {p: t for p, t in texts.items() if t is not None})


class _LineError(Exception):
    pass


def _question(line: str, lineno: int, base: Path, texts: dict[Path, str | None],
              parse: Callable[[Path], str]) -> Question:
    obj = _fields(line)
    source, excerpt = obj["source"], obj.get("excerpt")
    start, end = obj.get("start"), obj.get("end")
    path = Path(source) if Path(source).is_absolute() else base / source
    if not path.is_file():
        raise _LineError(f"unknown source {source!r}: no file {path}")
    extra = {k: v for k, v in obj.items() if k not in _KNOWN}
    if start is None and excerpt is None:
        return Question(obj["question"], source, path, lineno, extra=extra)
    if path not in texts:
        try:
            texts[path] = parse(path)
        except ChunkwiseError as e:
            texts[path] = None
            raise _LineError(f"cannot parse source {source!r}: {e}") from None
    text = texts[path]
    if text is None:
        raise _LineError(f"cannot parse source {source!r}")
    if excerpt is not None:
        try:
            found = locate_excerpt(text, excerpt)
        except ValueError as e:
            raise _LineError(f"excerpt {_preview(excerpt)} {e} in {source}") from None
        if start is not None and (start, end) != found:
            raise _LineError(f"start/end ({start}, {end}) disagree with the excerpt, "
                             f"found at ({found[0]}, {found[1]})")
        start, end = found
    elif end > len(text):
        raise _LineError(f"end {end} is past the end of {source} ({len(text)} characters)")
    return Question(obj["question"], source, path, lineno, start, end, excerpt, extra)


def _fields(line: str) -> dict[str, Any]:
    """The JSON object of one line, its fields type-checked."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        raise _LineError(f"invalid JSON: {e.msg} (column {e.colno})") from None
    if not isinstance(obj, dict):
        raise _LineError(f"expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in ("question", "source") if k not in obj]
    if missing:
        raise _LineError(f"missing field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    for key in ("question", "source"):
        if not isinstance(obj[key], str) or not obj[key].strip():
            raise _LineError(f"'{key}' must be a non-empty string")
    start, end, excerpt = obj.get("start"), obj.get("end"), obj.get("excerpt")
    if (start is None) != (end is None):
        raise _LineError("give both 'start' and 'end', or neither")
    if start is not None:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise _LineError("'start' and 'end' must be integers")
        if not 0 <= start < end:
            raise _LineError(f"need 0 <= start < end, got start={start}, end={end}")
    if excerpt is not None and (not isinstance(excerpt, str) or not excerpt.strip()):
        raise _LineError("'excerpt' must be a non-empty string")
    return obj


def _canonical_text(path: Path) -> str:
    from ..chunking.api import parse_file

    return parse_file(path).text


def _preview(s: str, limit: int = 40) -> str:
    s = " ".join(s.split())
    return repr(s if len(s) <= limit else s[:limit - 1] + "…")


def locate_excerpt(text: str, excerpt: str) -> tuple[int, int]:
    """The `(start, end)` of the one occurrence of `excerpt` in `text`: exact match first,
    else whitespace-normalised (runs of whitespace equal, leading/trailing whitespace
    ignored) mapped back to exact offsets. `ValueError` if it is absent or not unique."""
    hits = _find_all(text, excerpt, 2)
    if len(hits) == 1:
        return hits[0], hits[0] + len(excerpt)
    if len(hits) > 1:
        raise ValueError(f"found {text.count(excerpt)} times")
    needle = _SPACE.sub(" ", excerpt).strip()
    if not needle:
        raise ValueError("is only whitespace")
    squeezed, index = _squeeze(text)
    hits = _find_all(squeezed, needle, 2)
    if not hits:
        raise ValueError("not found")
    if len(hits) > 1:
        raise ValueError(f"found {squeezed.count(needle)} times (whitespace-normalised)")
    s = hits[0]
    return index[s], index[s + len(needle) - 1] + 1


def _find_all(haystack: str, needle: str, limit: int) -> list[int]:
    out, at = [], haystack.find(needle)
    while at >= 0 and len(out) < limit:
        out.append(at)
        at = haystack.find(needle, at + 1)
    return out


def _squeeze(text: str) -> tuple[str, list[int]]:
    """`text` with each whitespace run replaced by one space, and for every character of the
    result the index of the character of `text` it stands for."""
    parts: list[str] = []
    index: list[int] = []
    at = 0
    for m in _SPACE.finditer(text):
        parts.append(text[at:m.start()])
        index.extend(range(at, m.start()))
        parts.append(" ")
        index.append(m.start())
        at = m.end()
    parts.append(text[at:])
    index.extend(range(at, len(text)))
    return "".join(parts), index


# -- source matching ------------------------------------------------------------------------
def match_sources(qset: QuestionSet, stored: Iterable[str], *,
                  cwd: str | os.PathLike | None = None) -> dict[int, str]:
    """Question index -> the stored `source` string it refers to (see the module docstring).
    Raises `QuestionsError` listing every question that matches none or several."""
    here = Path(cwd) if cwd is not None else Path.cwd()
    by_abs: dict[str, str] = {}
    by_name: dict[str, list[str]] = {}
    for s in set(stored):
        by_abs.setdefault(_absolute(s, here), s)
        by_name.setdefault(PurePath(s).name, []).append(s)
    out: dict[int, str] = {}
    problems: list[str] = []
    for i, q in enumerate(qset.questions):
        exact = by_abs.get(_absolute(str(q.path), here))
        if exact is not None:
            out[i] = exact
            continue
        want = PurePath(os.path.normpath(q.source)).parts
        found = sorted(s for s in by_name.get(want[-1], [])
                       if not PurePath(q.source).is_absolute()
                       and _norm_parts(s)[-len(want):] == want)
        if len(found) == 1:
            out[i] = found[0]
        elif found:
            problems.append(f"{qset.where(q)}: source {q.source!r} is ambiguous in the collection: "
                            f"{', '.join(found[:3])}{' …' if len(found) > 3 else ''}")
        else:
            problems.append(f"{qset.where(q)}: source {q.source!r} is not in the collection")
    if problems:
        raise QuestionsError(problems)
    return out


def _absolute(path: str, cwd: Path) -> str:
    p = Path(path)
    return os.path.realpath(p if p.is_absolute() else cwd / p)


def _norm_parts(path: str) -> tuple[str, ...]:
    return PurePath(os.path.normpath(path)).parts

