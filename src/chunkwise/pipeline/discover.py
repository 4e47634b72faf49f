"""Which files a run reads, what each is called, and reading them within bounds.

Identity: a document is named by its path relative to the *root* of the run (the folder
given; for a single file, its folder; `root=` to name it), written with `/` whatever the
platform. The root is resolved (absolute, symlinks resolved), and so is the folder of every
file named on the command line, so `docs/`, `/abs/path/docs` and `.` from inside it give
the same names, from any working directory.

Identity is what a file is, not the names that reach it: a symlink to a file inside the root
is read under its target's real name (once, however many links reach it), so the store never
depends on which name sorts first, and a fresh and an incremental run name it alike; a link to
a hidden file is skipped with its reason. Hard links are separate names of equal standing and
stay separate documents.

Safety: only regular files are read. FIFOs, devices and sockets are skipped (reading a FIFO
blocks for ever, `/dev/zero` never ends); a symlink whose target lies outside the root is
skipped unless `follow_symlinks`; a symlinked folder inside the root is not walked twice; a
file over `max_file_size` bytes is skipped before any byte is read. `read_bounded` opens a
file without blocking and checks, on the open descriptor, that it is still a regular file of
allowed size, so a file swapped for a FIFO after discovery cannot hang the run either.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Iterable, Iterator

from chunkwise.parsers import detect_format

from ..errors import ConfigError
from ..text.textio import file_source, source_name

log = logging.getLogger(__name__)

#: files larger than this many bytes are skipped (a 3 GB sparse file is not a document)
DEFAULT_MAX_FILE_SIZE = 512 * 1024 ** 2


@dataclass(frozen=True)
class FileTask:
    """One file to read: where it is, and the name it goes by in chunks and stores."""

    path: str
    """The path to open (absolute)."""
    source: str
    """Its identity: the path relative to the root, `/`-separated, non-UTF-8 bytes escaped."""
    size: int


@dataclass
class Discovery:
    """What discovery found under the paths given."""

    root: Path
    files: list[FileTask] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(name, reason) of every entry that is not read: not a regular file, a symlink out of
    the root, too large. Reported, never an error."""
    missing: list[str] = field(default_factory=list)
    """Paths given that do not exist."""
    unsupported: list[str] = field(default_factory=list)
    """Files met in a folder walk that no format is known for (by extension): not read, and
    reported as a count by `unsupported_summary`, never dropped silently."""
    scopes: list[str] = field(default_factory=list)
    """The paths given, as sources relative to the root ("" for the root itself): what
    `--prune` may delete under."""


# -- roots and names ------------------------------------------------------------------------
def _absolute(path: str | os.PathLike) -> Path:
    """`path` made absolute with its folder resolved (symlinks, `..`) but its own last part
    kept, so a symlink named on the command line keeps its name."""
    p = Path(os.path.abspath(os.fspath(path)))
    if p.parent == p:  # the file-system root
        return p
    return p.parent.resolve() / p.name


def default_root(paths: Iterable[str | os.PathLike]) -> Path:
    """The root when none is named: the folder given (a single file: its folder); for
    several paths, the deepest folder holding them all."""
    resolved = [_absolute(p) for p in paths]
    if not resolved:
        raise ConfigError("no paths given")
    folders = [p.resolve() if _is_dir(p) else p.parent for p in resolved]
    return Path(os.path.commonpath([str(f) for f in folders]))


def _is_dir(path: Path) -> bool:
    """`path.is_dir()`, False where it cannot be known (a folder on the way that cannot be
    searched raises PermissionError from `is_dir` itself)."""
    try:
        return path.is_dir()
    except OSError:
        return False


def resolve_root(root: str | os.PathLike) -> Path:
    path = Path(os.path.abspath(os.fspath(root))).resolve()
    if not path.is_dir():
        raise ConfigError(f"root {source_name(root)} is not a folder")
    return path


def relative_source(path: Path, root: Path) -> str | None:
    """`path`'s identity under `root` (both absolute), or None when it is not inside."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    return file_source(PurePosixPath(*rel.parts).as_posix() if rel.parts else "")


def inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


# -- discovery ------------------------------------------------------------------------------
def discover(paths: Iterable[str | os.PathLike], *, root: Path | None = None,
             extensions: Iterable[str] | None = None, follow_symlinks: bool = False,
             max_file_size: int = DEFAULT_MAX_FILE_SIZE) -> Discovery:
    """The files to read under `paths`, named relative to `root` (default `default_root`).

    Folders are walked recursively in sorted order, keeping files whose extension is in
    `extensions` (default: those `chunkwise.parsers.detect_format` names a format for) and
    skipping hidden files and folders; a file named explicitly is kept whatever its
    extension. A file found twice (two paths given, or a link and its target) is read once.
    """
    paths = list(paths)
    keep = frozenset(extensions) if extensions is not None else None
    root = root if root is not None else default_root(paths)
    found = Discovery(root=root)
    seen: set[str] = set()
    walker = _Walker(found, root, keep, follow_symlinks, max_file_size, seen)
    for given in paths:
        path = _absolute(given)
        name = source_name(given)
        if not inside(path, root) and not inside(path.resolve(), root):
            raise ConfigError(f"{name} is outside the root {source_name(root)}; name a root "
                              f"that holds every path (--root)")
        rel = relative_source(path if inside(path, root) else path.resolve(), root) or ""
        found.scopes.append(rel)
        try:
            os.lstat(path)
        except FileNotFoundError:
            found.missing.append(name)
            continue
        except OSError as e:  # a folder on the way that cannot be searched
            found.skipped.append((name, f"cannot stat: {e.strerror or e}"))
            continue
        if _is_dir(path):
            walker.walk(path.resolve())
        else:
            walker.file(path, explicit=True)
    return found


def unsupported_summary(names: list[str]) -> str:
    """One line for the files of no supported format: their count, and the commonest
    extensions (`3 files of no supported format not read (.png: 2, no extension: 1)`)."""
    counts: dict[str, int] = {}
    for name in names:
        ext = PurePath(name).suffix.lower() or "no extension"
        counts[ext] = counts.get(ext, 0) + 1
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{ext}: {n}" for ext, n in top[:8]) + (", …" if len(top) > 8 else "")
    files = "file" if len(names) == 1 else "files"
    return f"{len(names)} {files} of no supported format not read ({shown})"


class _Walker:
    def __init__(self, found: Discovery, root: Path, keep: frozenset[str] | None, follow: bool,
                 max_size: int, seen: set[str]) -> None:
        self.found, self.root, self.keep, self.follow = found, root, keep, follow
        self.max_size, self.seen = max_size, seen
        self.walked: set[Path] = set()

    def skip(self, path: Path, reason: str) -> None:
        name = relative_source(path, self.root) or file_source(path)
        self.found.skipped.append((name, reason))

    def known(self, name: str) -> bool:
        if self.keep is None:
            return detect_format(name) is not None
        return PurePath(name).suffix.lower() in self.keep

    def walk(self, folder: Path) -> None:
        real = folder.resolve()
        if real in self.walked:
            return
        self.walked.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            self.skip(folder, f"cannot list folder: {e.strerror or e}")
            return
        subfolders = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError as e:
                self.skip(path, f"cannot stat: {e.strerror or e}")
                continue
            if is_dir:
                if is_link and not self._link_allowed(path, folder=True):
                    continue
                subfolders.append(path)
            elif is_link or self.known(entry.name):  # a link: known by its target's name
                self.file(path, explicit=False)
            else:
                self.found.unsupported.append(relative_source(path, self.root)
                                              or file_source(path))
        for sub in subfolders:
            self.walk(sub)

    def _link_allowed(self, path: Path, *, folder: bool) -> bool:
        """Whether to follow the symlink `path`: a folder inside the root is walked where it
        really is (not twice); anything outside the root only with `follow_symlinks`."""
        target = path.resolve()
        if inside(target, self.root):
            if folder:
                log.debug("%s: symlink to a folder inside the root, walked there", path)
                return False
            return True
        if self.follow:
            return True
        self.skip(path, "symlink out of the root (not followed; --follow-symlinks reads it)")
        return False

    def file(self, path: Path, *, explicit: bool) -> None:
        if path.is_symlink():
            if not path.exists():
                self.skip(path, "broken symlink")
                return
            target = path.resolve()
            if inside(target, self.root):  # an alias: the file is read under its real name
                if any(part.startswith(".") for part in target.relative_to(self.root).parts):
                    self.skip(path, "symlink to a hidden file (not read)")
                    return
                if not explicit and not self.known(target.name):
                    self.found.unsupported.append(relative_source(path, self.root)
                                                  or file_source(path))
                    return
                path = target
            elif not explicit and not self._link_allowed(path, folder=False):
                return
        try:
            st = path.stat()
        except OSError as e:
            self.skip(path, f"cannot stat: {e.strerror or e}")
            return
        why = unreadable_kind(st.st_mode)
        if why:
            self.skip(path, f"not a regular file ({why})")
            return
        if st.st_size > self.max_size:
            self.skip(path, f"larger than the {_size(self.max_size)} limit ({_size(st.st_size)}; "
                            "--max-file-size raises it)")
            return
        source = relative_source(path, self.root)
        if source is None:  # an explicit link out of the root: named by where it points
            source = relative_source(path.resolve(), self.root) or file_source(path.name)
        key = str(path.resolve())
        if key in self.seen:
            return
        self.seen.add(key)
        self.found.files.append(FileTask(path=str(path), source=source, size=st.st_size))


def still_a_document(path: Path, root: Path) -> bool:
    """Whether `path` (a stored source under the resolved `root`) is still a file that is
    that document: a regular file by that very name, or a link out of the root to one (read
    by its own name with `follow_symlinks`). A folder, a FIFO, a dangling link, a link to a
    file inside the root (an alias: the document is its target) or a name reached through a
    symlinked folder inside the root is not. Where it cannot be known (a folder on the way
    that cannot be searched) it is."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    parent = Path(os.path.realpath(path.parent))
    if parent != path.parent and inside(parent, root):
        return False  # reached through a folder link inside the root: walked where it is
    if stat.S_ISREG(st.st_mode):
        return True
    if not stat.S_ISLNK(st.st_mode) or inside(path.resolve(), root):
        return False
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def unreadable_kind(mode: int) -> str:
    """'' for a regular file, else what it is (reading those blocks or never ends)."""
    if stat.S_ISREG(mode):
        return ""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a file"


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} bytes"  # pragma: no cover


# -- reading --------------------------------------------------------------------------------
class ReadError(OSError):
    """A file that discovery kept could not be read now (gone, no longer regular, too
    large, no permission)."""


def read_bounded(path: str | os.PathLike, max_size: int = DEFAULT_MAX_FILE_SIZE) -> bytes:
    """The bytes of a regular file of at most `max_size` bytes; `ReadError` otherwise.

    Opened with O_NONBLOCK (a FIFO opens at once instead of waiting for a writer), then
    checked on the descriptor, so what is read is what was checked."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ReadError(f"cannot read: {e.strerror or e}") from e
    try:
        st = os.fstat(fd)
        why = unreadable_kind(st.st_mode)
        if why:
            raise ReadError(f"not a regular file ({why})")
        if st.st_size > max_size:
            raise ReadError(f"larger than the {_size(max_size)} limit ({_size(st.st_size)})")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_size + 1)
        if len(data) > max_size:  # grew since the stat
            raise ReadError(f"larger than the {_size(max_size)} limit")
        return data
    except OSError as e:
        if isinstance(e, ReadError):
            raise
        raise ReadError(f"cannot read: {e.strerror or e}") from e
    finally:
        os.close(fd)


def iter_files(paths: Iterable[str | os.PathLike]) -> Iterator[Path]:
    """Files to process: explicit files as given; folders walked recursively, in sorted
    order, keeping regular files of known formats and skipping hidden files and folders,
    FIFOs, devices and symlinks out of the folder (see `discover`). A path that
    does not exist is yielded as is, so that reading it reports it."""
    paths = [os.fspath(p) for p in paths]
    if not paths:
        return
    found = discover(paths)
    for name, reason in found.skipped:
        log.warning("%s: skipped: %s", name, reason)
    yield from (Path(f.path) for f in found.files)
    yield from (Path(m) for m in found.missing)
