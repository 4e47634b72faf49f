"""Token boundaries: where a text can be cut between two of its tokens (the cut points of
the `fixed` strategy), found from one tokenizer pass, a block at a time where the token
index (`chunkwise.sizing.tokenindex`) proves where blocks may be cut."""

from __future__ import annotations

import re
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Callable, Sequence

from .sizers import (TIKTOKEN_ENCODINGS, get_sizer, hf_tokenizer, minilm_tokenizer_path,
                     tiktoken_encoding)
from .tokenindex import one_pass_anchor


@lru_cache(maxsize=8)
def token_starts(spec: str) -> Callable[[str], Sequence[int]]:
    """For the tokenizer `spec` (as `get_sizer`), a function giving the `str` indices where the
    tokens of a text start, ascending and without duplicates: the places a text can be cut
    "at a token boundary". A byte-level BPE token that starts inside a multi-byte character
    gives no cut point, so a cut never falls inside a character. Whitespace that a tokenizer
    drops (WordPiece) simply has no token starting in it."""
    if spec == "chars":
        return lambda text: range(len(text))
    # the same validation and errors as the sizer; blocks cut where the index's are
    anchor = one_pass_anchor(get_sizer(spec))
    if spec in TIKTOKEN_ENCODINGS:
        return _in_blocks(_tiktoken_starts(tiktoken_encoding(spec)), anchor)
    path = minilm_tokenizer_path() if spec == "minilm" else Path(spec).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    return _in_blocks(_hf_starts(path), anchor)


#: characters encoded at once by `token_starts` when the tokenizer's anchors are known
_STARTS_BLOCK = 1 << 18


def _in_blocks(starts: Callable[[str], list[int]], anchor: re.Pattern | None
               ) -> Callable[[str], Sequence[int]]:
    """`starts` over a whole text, as an array; with `anchor` (its matches end where a text
    can be cut and still give the tokens of one pass, see `chunkwise.sizing.tokenindex`), over
    blocks of about `_STARTS_BLOCK` characters cut there, so that memory stays bounded (a
    tokenizer given a 50 MB text at once takes gigabytes)."""
    if anchor is None:
        return lambda text: array("q", starts(text))

    def blockwise(text: str) -> Sequence[int]:
        out, a, n = array("q"), 0, len(text)
        while a < n:
            m = anchor.search(text, a + _STARTS_BLOCK - 1) if a + _STARTS_BLOCK < n else None
            b = m.end() if m is not None else n
            out.extend(a + s for s in starts(text[a:b]))
            a = b
        return out

    return blockwise


def _tiktoken_starts(enc) -> Callable[[str], list[int]]:
    token_bytes = enc.decode_single_token_bytes

    def starts(text: str) -> list[int]:
        out: list[int] = []
        if text.isascii():
            pos = 0
            for tok in enc.encode_ordinary(text):
                out.append(pos)
                pos += len(token_bytes(tok))
            return out
        # Walk tokens (byte offsets) and characters (their UTF-8 lengths) in step.
        byte_pos, char, char_byte = 0, 0, 0
        for tok in enc.encode_ordinary(text):
            while char_byte < byte_pos:
                char_byte += len(text[char].encode("utf-8", "surrogatepass"))
                char += 1
            if char_byte == byte_pos:
                out.append(char)
            byte_pos += len(token_bytes(tok))
        return out

    return starts


def _hf_starts(path: Path) -> Callable[[str], list[int]]:
    tok = hf_tokenizer(path)

    def starts(text: str) -> list[int]:
        offsets = tok.encode(text, add_special_tokens=False).offsets
        return sorted({s for s, e in offsets if e > s})

    return starts
