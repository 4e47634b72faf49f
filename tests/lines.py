"""Line numbers <-> `str` offsets, computed independently of the package (tests check
chunkwise's own line numbers and parsers' offsets against it), and spans without their
white space."""

from __future__ import annotations

from bisect import bisect_right


def trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    """The span `text[a:b]` without the white space at either end (empty: `(b, b)`)."""
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


class LineIndex:
    """Line numbers <-> `str` offsets for one text (0-based lines)."""

    __slots__ = ("starts", "length")

    def __init__(self, text: str) -> None:
        self.starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            self.starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        self.length = len(text)

    def offset(self, line: int) -> int:
        """Offset of the first character of `line`; `len(text)` past the last line."""
        return self.starts[line] if line < len(self.starts) else self.length

    def line_of(self, offset: int) -> int:
        """0-based line holding `offset`."""
        return bisect_right(self.starts, offset) - 1
