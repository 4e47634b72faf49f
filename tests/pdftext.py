"""PDF text stored in the tests, and pypdf releases that space it differently.

The golden chunks (tests/golden/) and the PDF excerpts of the question sets (tests/data/) were
taken from pypdf 7.1's text. pypdf 6.16.2-7.0 (the floor is 6.16.2: llama-index-readers-file
pins pypdf<7) extract the same characters from the fixtures and around every stored excerpt,
but place some spaces differently (`V oorhees`, `km 2`, `getM`; docs/development.md). Below
7.1, the tests compare PDF text with its whitespace removed; from 7.1 on, byte for byte.

Also `pdf_file`: the bytes of a PDF built by a test from its numbered objects.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pypdf

#: the pypdf release whose extraction the stored texts come from
STORED_FROM = (7, 1)


def exact_spacing() -> bool:
    """Whether this pypdf spaces PDF text as the release the stored texts come from."""
    return tuple(int(n) for n in re.findall(r"\d+", pypdf.__version__)[:2]) >= STORED_FROM


def squeeze(text: str) -> str:
    """`text` without whitespace: what every supported pypdf extracts alike."""
    return "".join(text.split())


def located_questions(qfile: Path, root: Path, tmp_path: Path) -> tuple[Any, int]:
    """`load_questions(qfile, root=root)` and the number of questions set aside. With a pypdf
    that spaces PDF text as the excerpts' release did, none. Below it, a PDF question whose
    excerpt is not verbatim exactly once in this pypdf's text is checked here instead: its
    excerpt, without whitespace, is in the text without whitespace exactly once. It is then
    left out of the set returned, whose every other excerpt is located as usual."""
    from chunkwise.chunking.api import parse_file
    from chunkwise.evaluation.eval import load_questions

    if exact_spacing():
        return load_questions(qfile, root=root), 0
    kept, aside, texts = [], 0, {}

    def text_of(path: Path) -> str:  # each file parsed once (a scanned PDF is read by OCR)
        if path not in texts:
            texts[path] = parse_file(path).text
        return texts[path]

    for line in qfile.read_text(encoding="utf-8").splitlines():
        row = json.loads(line) if line.strip() else {}
        source, excerpt = row.get("source", ""), row.get("excerpt")
        if source.endswith(".pdf") and excerpt:
            text = text_of(root / source)
            if text.count(excerpt) != 1:
                found = squeeze(text).count(squeeze(excerpt))
                assert found == 1, f"{qfile.name}: {source}: excerpt {excerpt[:40]!r} " \
                                   f"found {found} times without whitespace"
                aside += 1
                continue
        kept.append(line)
    kept_file = tmp_path / qfile.name
    kept_file.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return load_questions(kept_file, root=root, parse=text_of), aside


def pdf_file(objs: dict[int, bytes]) -> bytes:
    """A PDF 1.4 file of the objects `objs` (number -> body; 1 the catalog, numbered 1 to
    max without gaps), with its cross-reference table and trailer."""
    out, offsets = bytearray(b"%PDF-1.4\n"), {}
    for k in sorted(objs):
        offsets[k] = len(out)
        out += b"%d 0 obj\n" % k + objs[k] + b"\nendobj\n"
    xref, n = len(out), max(objs) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % n
    out += b"".join(b"%010d 00000 n \n" % offsets[k] for k in range(1, n))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (n, xref)
    return bytes(out)
