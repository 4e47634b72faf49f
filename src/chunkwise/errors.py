"""The error hierarchy: one base class, each subclass's docstring is its meaning."""

from __future__ import annotations


class ChunkwiseError(Exception):
    """Base class of every error chunkwise raises on purpose."""


class ParseError(ChunkwiseError):
    """A document could not be parsed: the file is named, with the reason and, where known,
    the character position."""

    def __init__(self, source: str, reason: str, *, position: int | None = None) -> None:
        self.source = source
        self.reason = reason
        self.position = position
        where = f" (at character {position})" if position is not None else ""
        super().__init__(f"{source}: {reason}{where}")


class ConfigError(ChunkwiseError, ValueError):
    """An option or combination of options is invalid; raised when the configuration is built."""


class MissingDependencyError(ChunkwiseError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, package: str, extra: str | None = None) -> None:
        hint = f"pip install 'chunkwise[{extra}]'" if extra else f"pip install {package}"
        super().__init__(f"{package} is required for this feature: {hint}")


class StoreError(ChunkwiseError):
    """The vector store could not be reached, or refused an operation (the message says which
    and why); rerunning after the cause is fixed completes the job."""


def no_space_message(where: object) -> str:
    """The one line for a write that failed on a full disk."""
    return (f"no space left on device at {where}, nothing half-written: rerun after freeing "
            f"space (the rerun completes what this one began)")
