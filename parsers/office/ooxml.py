"""Office Open XML containers (`.docx`, `.pptx`, `.xlsx`): the zip and its XML parts, read
within bounds, for the three Office parsers.

An Office file is a zip of XML parts. Every part is read through `Package.xml`, which
refuses what a hostile file could use against the reader:

- a zip bomb: each part's declared size, the sum of the parts read, and the bytes actually
  inflated are bounded (`MAX_PART`, `MAX_TOTAL`), and inflation stops at the bound whatever
  the header claims;
- XML entity expansion and external entities: lxml is told never to resolve entities, load a
  DTD or touch the network, and a part that declares a DTD is refused (OOXML never has one);
- an encrypted file (an OLE compound file holding `EncryptedPackage`), a legacy binary
  `.doc`/`.ppt`/`.xls`, HTML or text saved under an Office name: one `ParseError` that says
  which.

`sniff` names the Office format of zip bytes, so a `.docx` renamed `.bin` is still read.
"""

from __future__ import annotations

import io
import lzma
import threading
import zipfile
import zlib
from typing import Any, Iterator

from chunkwise.errors import ParseError

#: the most bytes one XML part may inflate to (a 127,000-word handbook's document.xml is 9 MB)
MAX_PART = 256 * 1024 ** 2
#: the most bytes all the parts read from one file may inflate to
MAX_TOTAL = 512 * 1024 ** 2
#: the most entries a container may list (a 2,000-slide deck has about 8,000)
MAX_ENTRIES = 100_000

_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP = b"PK\x03\x04"
#: main part -> format, in the order `sniff` asks
_MAIN_PARTS = (("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"),
               ("xl/workbook.xml", "xlsx"))
_NAMES = {"docx": "Word", "pptx": "PowerPoint", "xlsx": "Excel"}

# Namespaces of the parts the parsers read (transitional OOXML; strict files are refused by
# the parsers finding no body in these).
NS = {
    "w": "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "p": "http://schemas.openxmlformats.org/presentationml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "s": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "m": "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "rel": "http://schemas.openxmlformats.org/package/2006/relationships",
    "mc": "http://schemas.openxmlformats.org/markup-compatibility/2006",
    "wps": "http://schemas.microsoft.com/office/word/2010/wordprocessingShape",
    "v": "urn:schemas-microsoft-com:vml",
}


_LOCAL = threading.local()


def _parser() -> Any:
    """One lxml parser per thread for every part (a 2,000-slide deck reads 6,000 parts; an
    lxml parser must not be shared between threads)."""
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        parser = _LOCAL.parser = _new_parser()
    return parser


def _new_parser() -> Any:
    from lxml import etree

    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           dtd_validation=False, huge_tree=False, remove_comments=True,
                           remove_pis=True)


def sniff(data: bytes) -> str | None:
    """`docx`, `pptx` or `xlsx` for the bytes of such a container, else None."""
    if not data.startswith(_ZIP):
        return None
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = set(z.namelist()[:MAX_ENTRIES])
    except (zipfile.BadZipFile, ValueError, OSError):
        return None
    return next((fmt for part, fmt in _MAIN_PARTS if part in names), None)


class Package:
    """One Office container, opened for reading its parts within the bounds above."""

    def __init__(self, data: bytes, *, source: str, fmt: str) -> None:
        self.source, self.fmt = source, fmt
        kind = _NAMES[fmt]
        if data.startswith(_OLE):
            what = ("an encrypted (password-protected) Office file"
                    if b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k" in data
                    else f"a legacy binary Office file (save it as .{fmt})")
            raise ParseError(source, f"not a readable {kind} file: {what}")
        if data.startswith(b"PK\x05\x06"):
            raise ParseError(source, f"not a {kind} file: an empty zip container")
        if not data.startswith(_ZIP):
            head = data[:512].lstrip().lower()
            what = ("it holds HTML (rename it .html)" if head.startswith((b"<!doctype", b"<html"))
                    or b"<body" in head else "it is not a zip container")
            raise ParseError(source, f"not a {kind} file: {what}")
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self.zip.infolist()
        except (zipfile.BadZipFile, ValueError, OSError) as e:
            raise ParseError(source, f"not a {kind} file: corrupt zip container ({e})") from e
        if len(infos) > MAX_ENTRIES:
            raise ParseError(source, f"{len(infos):,} entries in the container (at most "
                                     f"{MAX_ENTRIES:,} are read)")
        self.infos = {i.filename: i for i in infos}
        self.read_total = 0

    def __contains__(self, name: str) -> bool:
        return name in self.infos

    @property
    def names(self) -> list[str]:
        return list(self.infos)

    def read(self, name: str) -> bytes:
        """The inflated bytes of part `name`, within `MAX_PART` and what is left of
        `MAX_TOTAL`; `ParseError` past either (a zip bomb) or for a damaged part."""
        info = self.infos.get(name)
        if info is None:
            raise ParseError(self.source, f"part {name} is missing from the container")
        if info.flag_bits & 0x1:
            raise ParseError(self.source, f"part {name} is encrypted")
        limit = min(MAX_PART, MAX_TOTAL - self.read_total)
        if info.file_size > limit:
            raise ParseError(self.source, f"part {name} inflates to {info.file_size:,} bytes "
                                          f"(more than {limit:,}: a zip bomb?)")
        try:
            with self.zip.open(info) as f:
                data = f.read(limit + 1)  # whatever the header claims, never more than this
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError,
                zlib.error, lzma.LZMAError) as e:  # a damaged deflate or LZMA stream
            raise ParseError(self.source, f"part {name} cannot be read: {e}") from e
        if len(data) > limit:
            raise ParseError(self.source, f"part {name} inflates past {limit:,} bytes "
                                          f"(a zip bomb?)")
        self.read_total += len(data)
        return data

    def stream(self, name: str, limit: int) -> PartStream:
        """Part `name` inflated a piece at a time, for a streaming parser (`PartStream`)."""
        info = self.infos.get(name)
        if info is None:
            raise ParseError(self.source, f"part {name} is missing from the container")
        if info.flag_bits & 0x1:
            raise ParseError(self.source, f"part {name} is encrypted")
        return PartStream(self, info, min(limit, MAX_TOTAL - self.read_total))

    def xml(self, name: str) -> Any:
        """Part `name` parsed as XML (an lxml root element), entities never resolved."""
        from lxml import etree

        data = self.read(name)
        refuse_dtd(self.source, name, data)
        try:
            return etree.fromstring(data, _parser())
        except etree.XMLSyntaxError as e:
            raise ParseError(self.source, f"part {name} is not well-formed XML: {e}") from e

    def rels(self, part: str) -> dict[str, tuple[str, str]]:
        """The relationships of `part`: id -> (type's last word, target part name resolved
        against the part's folder; external targets as given)."""
        folder, _, base = part.rpartition("/")
        name = f"{folder}/_rels/{base}.rels" if folder else f"_rels/{base}.rels"
        if name not in self.infos:
            return {}
        out = {}
        for rel in self.xml(name).iter(f"{{{NS['rel']}}}Relationship"):
            target = rel.get("Target", "")
            if rel.get("TargetMode") != "External":
                target = _join(folder, target)
            out[rel.get("Id", "")] = (rel.get("Type", "").rsplit("/", 1)[-1], target)
        return out


class PartStream:
    """The inflated bytes of one part in pieces of `PIECE` bytes, at most `limit` of them in
    all whatever the zip header claims: a streaming parser's input, never held whole. The
    part's first bytes are asked for a DTD (`refuse_dtd`). Past the bound iteration stops and
    `cut` is True (the caller keeps what it read, and says so); a damaged stream is a
    `ParseError`. The bytes read count towards the package's `MAX_TOTAL`."""

    PIECE = 1 << 20

    def __init__(self, pkg: Package, info: zipfile.ZipInfo, limit: int) -> None:
        self.pkg, self.info, self.limit = pkg, info, max(limit, 0)
        self.cut = False

    def __iter__(self) -> Iterator[bytes]:
        pkg, name, left = self.pkg, self.info.filename, self.limit
        try:
            with pkg.zip.open(self.info) as f:
                first = True
                while True:
                    piece = f.read(min(self.PIECE, left + 1))
                    if not piece:
                        return
                    if len(piece) > left:  # one byte past the bound: the part goes on
                        piece, self.cut = piece[:left], True
                    if first:
                        refuse_dtd(pkg.source, name, piece)
                        first = False
                    left -= len(piece)
                    pkg.read_total += len(piece)
                    if piece:
                        yield piece
                    if self.cut:
                        return
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError,
                zlib.error, lzma.LZMAError) as e:  # a damaged deflate or LZMA stream
            raise ParseError(pkg.source, f"part {name} cannot be read: {e}") from e


def refuse_dtd(source: str, part: str, data: bytes) -> None:
    """`ParseError` for a part that declares a DTD or entities (Office never writes one):
    asked before any XML parser sees the bytes, a tree (`Package.xml`) or a stream."""
    if b"<!DOCTYPE" in data[:4096] or b"<!ENTITY" in data[:65536]:
        raise ParseError(source, f"part {part} declares a DTD or entities, which Office "
                                 f"files never do: not read")


def _join(folder: str, target: str) -> str:
    """A relationship target resolved against the folder of its part (`..` followed)."""
    if target.startswith("/"):
        parts: list[str] = []
        target = target[1:]
    else:
        parts = folder.split("/") if folder else []
    for piece in target.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece not in ("", "."):
            parts.append(piece)
    return "/".join(parts)


def text_of(element: Any, tag: str) -> str:
    """The text of every `tag` element under `element`, joined."""
    return "".join(t.text or "" for t in element.iter(tag))
