"""Does the collection still say what the folder says? `chunkwise check`'s comparison of the
stored sources with the files under the root the collection records.

A source is *changed* when its file's bytes are no longer those its chunks were made from
(the stored `content_hash`), *gone* when its name is no longer a regular file that is that
document (`discover.still_a_document`: deleted, replaced by a folder, a FIFO, a dangling link
or a link to another file of the root), and *mixed* when its records come from more than one
version (a run stopped between its writes). Each is served stale until the next `ingest`
(with `--prune` for the gone ones). Files under the root that the collection does not hold
are not listed: a root often holds more than was ingested. Nothing is embedded or written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..chroma.store import Store
from .discover import still_a_document
from .stages import content_hash

#: sources named per list in the one-line summary
SHOWN = 3


@dataclass
class FolderHealth:
    """What `check_folder` found."""

    root: str | None
    """The root the collection records (None: it records none)."""
    reachable: bool
    """Whether that root is a folder on this machine."""
    sources: int = 0
    changed: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    mixed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing stale (or nothing to compare with: the root is not here)."""
        return not (self.changed or self.gone or self.mixed)

    def summary(self) -> str:
        if self.root is None:
            return "no root recorded (nothing compared)"
        if not self.reachable:
            return f"root {self.root} is not a folder here (nothing compared)"
        if self.ok:
            return f"{self.sources} sources, each as it is on disk under {self.root}"
        parts = []
        for what, names in (("changed on disk", self.changed), ("gone", self.gone),
                            ("written in part", self.mixed)):
            if names:
                shown = ", ".join(names[:SHOWN]) + (", …" if len(names) > SHOWN else "")
                parts.append(f"{len(names)} {what} ({shown})")
        return (f"{self.sources} sources, stale: " + "; ".join(parts)
                + " — served as they were until `chunkwise ingest` (with --prune for the gone)")

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.root, "reachable": self.reachable, "sources": self.sources,
                "changed": self.changed, "gone": self.gone, "mixed": self.mixed,
                "ok": self.ok}


def check_folder(store: Store) -> FolderHealth:
    """Compare every stored source with its file under the collection's root (module
    docstring). A file that cannot be read is counted neither changed nor gone."""
    root = store.root
    if root is None:
        return FolderHealth(None, False)
    base = Path(root)
    if not base.is_dir():
        return FolderHealth(root, False)
    base = Path(os.path.realpath(base))
    states = store.summary()
    health = FolderHealth(root, True, sources=len(states))
    for source in sorted(states):
        state = states[source]
        path = base / source
        if not still_a_document(path, base):
            health.gone.append(source)
            continue
        if state.mixed or state.chunk_count != state.stored:
            health.mixed.append(source)
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if state.content_hash is not None and content_hash(data) != state.content_hash:
            health.changed.append(source)
    return health


__all__ = ["FolderHealth", "check_folder"]
