"""A big text PDF made of real pages: the pages of SOURCE repeated up to N pages, each copy
with a content stream object of its own (a comment appended), so that nothing is shared
between pages and every page is extracted (shared streams are read once, parsers/pdf).

    python tests/bench/big_pdf.py SOURCE.pdf N OUT.pdf
    /usr/bin/time -v chunkwise chunk OUT.pdf --jsonl > /dev/null   # peak RSS, seconds
"""

from __future__ import annotations

import sys

from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, NameObject


def main(source: str, n: int, out: str) -> None:
    pages = PdfReader(source).pages
    writer = PdfWriter()
    for k in range(n):
        src = pages[k % len(pages)]
        data = src.get_contents().get_data() if src.get_contents() is not None else b""
        page = writer.add_page(src)
        stream = DecodedStreamObject()
        stream.set_data(data + b"\n%% copy %d\n" % k)
        page[NameObject("/Contents")] = writer._add_object(stream)
    with open(out, "wb") as f:
        writer.write(f)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
