"""Token counting: one factory builds every sizer the fitter can use.

A sizer counts tokens of a string exactly as the embedding model (or LLM) would see it, with
special-token text counted as ordinary text. `minilm` counts `[CLS]` and `[SEP]` too, because
the model's 256-token window includes them.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ConfigError, MissingDependencyError

TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base")
BUILTIN = ("minilm", *TIKTOKEN_ENCODINGS, "chars")
#: a chunk never holds more characters than this per budget token, whatever its count: text
#: that tokenizes sparser (to WordPiece a 50 MB run without a space is one [UNK] token) is
#: cut anyway, so that no chunk grows without bound (real prose runs 4 to 7 per token)
MAX_CHARS_PER_TOKEN = 32
_tiktoken_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class Sizer:
    """A named token counter.

    `count` is exact; `count_many` is the same over a batch (faster where the tokenizer has a
    batch API). `overhead` is `count("")`: tokens added to every text (e.g. `[CLS]`/`[SEP]`),
    so that the sum of two parts' counts minus `overhead` estimates the count of the whole.
    """

    name: str
    count: Callable[[str], int]
    count_many: Callable[[Sequence[str]], list[int]]
    overhead: int = 0


def minilm_tokenizer_path() -> Path:
    """The all-MiniLM-L6-v2 `tokenizer.json` shipped inside the package."""
    return Path(__file__).parent.parent / "data" / "minilm-tokenizer.json"


@lru_cache(maxsize=8)
def get_sizer(spec: str) -> Sizer:
    """Build a sizer from a name (`minilm`, `cl100k_base`, `o200k_base`, `chars`) or the path
    of a Hugging Face `tokenizer.json`. Raises `ConfigError` for anything else."""
    if spec == "chars":
        return Sizer("chars", len, lambda texts: [len(t) for t in texts])
    if spec in TIKTOKEN_ENCODINGS:
        return _tiktoken_sizer(spec)
    if spec == "minilm":
        return _hf_sizer("minilm", minilm_tokenizer_path())
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.suffix == ".json" and path.is_file():
        return _hf_sizer(str(path), path)
    raise ConfigError(
        f"unknown tokenizer {spec!r}: use one of {', '.join(BUILTIN)} or a tokenizer.json path"
    )


def tiktoken_encoding(name: str):
    """The tiktoken encoding `name`, loaded offline (from the BPE files inside
    llama-index-core)."""
    try:
        import tiktoken
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("tiktoken") from e
    with _tiktoken_lock:
        # llama-index-core ships the BPE files; point tiktoken at them so nothing downloads,
        # whatever TIKTOKEN_CACHE_DIR the user has (it may lack the file, or be ""). The
        # variable is changed only for the duration of the load (tiktoken keeps the encoding).
        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        cache = _llama_index_tiktoken_cache()
        if cache is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        try:
            return tiktoken.get_encoding(name)
        except Exception as e:
            raise ConfigError(f"cannot load tiktoken encoding {name!r} offline: {e}") from e
        finally:
            if cache is not None:
                if old is None:
                    del os.environ["TIKTOKEN_CACHE_DIR"]
                else:
                    os.environ["TIKTOKEN_CACHE_DIR"] = old


def _llama_index_tiktoken_cache() -> Path | None:
    """The folder of BPE files inside llama-index-core, found without importing it (that
    import alone takes over a second)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        cache = Path(folder) / "_static" / "tiktoken_cache"
        if cache.is_dir():
            return cache
    return None


def _tiktoken_sizer(name: str) -> Sizer:
    enc = tiktoken_encoding(name)
    encode = enc.encode_ordinary

    def count(text: str) -> int:
        return len(encode(text))

    def count_many(texts: Sequence[str]) -> list[int]:
        return [len(encode(t)) for t in texts]

    return Sizer(name, count, count_many, 0)


def hf_tokenizer(path: str | Path):
    """The Hugging Face tokenizer of a `tokenizer.json`, without truncation or padding."""
    try:
        from tokenizers import Tokenizer
    except ImportError as e:  # pragma: no cover - a core dependency
        raise MissingDependencyError("tokenizers") from e
    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as e:
        raise ConfigError(f"cannot load tokenizer {path}: {e}") from e
    tok.no_truncation()
    tok.no_padding()
    return tok


def _hf_sizer(name: str, path: Path) -> Sizer:
    tok = hf_tokenizer(path)
    encode = tok.encode
    encode_batch = tok.encode_batch

    def count(text: str) -> int:
        return len(encode(text).ids)

    def count_many(texts: Sequence[str]) -> list[int]:
        if len(texts) < 4:
            return [len(encode(t).ids) for t in texts]
        return [len(e.ids) for e in encode_batch(list(texts))]

    return Sizer(name, count, count_many, count(""))


def limit_tokens(text: str, count: Callable[[str], int], limit: int, *,
                 at_line: bool = False) -> str:
    """`text` if it has at most `limit` tokens, else its longest prefix that does (binary
    search on exact counts), cut back to the last line break (`at_line`: a search over the
    line ends, unless the first line alone is too long) or, when the cut falls inside a
    word, to the last space or line break; trailing whitespace dropped."""
    if not text or count(text) <= limit:
        return text
    if at_line:  # the longest run of whole lines that fits: a search over line ends
        ends, nl = [], text.find("\n")
        while nl != -1:
            ends.append(nl)
            nl = text.find("\n", nl + 1)
        lo, hi = 0, len(ends)  # lines 0..lo-1 fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[:ends[mid - 1]].rstrip()) <= limit:
                lo = mid
            else:
                hi = mid - 1
        if lo:
            return text[:ends[lo - 1]].rstrip()
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid].rstrip()) <= limit:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    if at_line:
        nl = cut.rfind("\n")
        return (cut[:nl] if nl > 0 else cut).rstrip()
    if lo < len(text) and not text[lo].isspace():
        space = max(cut.rfind(" "), cut.rfind("\n"))
        cut = cut[:space] if space > 0 else cut
    return cut.rstrip()
