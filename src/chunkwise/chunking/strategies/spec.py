"""What a strategy is and what it is built from: the `Strategy` protocol, the `Setup` every
factory receives and the options dataclasses. The strategy modules import these from here,
and the registry (`__init__`) imports the modules by name: one way, no circle."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, ClassVar, Mapping, Protocol

from ...errors import ConfigError
from ..fitter import Budget, Piece
from ...model import ParsedDocument
from ..structure import Node
from ...sizing.sizers import Sizer


class Strategy(Protocol):
    """A strategy built for one chunker. `plan` is safe to call from several threads."""

    #: what the strategy's options add to the chunk-id fingerprint ("" for none)
    identity: str
    #: whether its chunks overlap by themselves (the chunker then adds no overlap)
    overlaps: bool
    #: cumulative counters (embedding or LLM calls, fallbacks, ...)
    stats: Mapping[str, int]

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        """The planned chunks of a document, each within `budget`; `root`: its section tree
        (`build_tree(doc)`, built once by the chunker for planning and assembly)."""


@dataclass(frozen=True, slots=True)
class Setup:
    """What a strategy may need of the chunker that builds it: its sizer, the tokenizer's
    name as given, the overlap in tokens, its LLM (shared with contextual enrichment; None
    without one) and the seconds an LLM call may take."""

    sizer: Sizer
    tokenizer: str
    overlap: int
    llm: Any = None
    timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class NoOptions:
    """The options of a strategy that has none."""


@dataclass(frozen=True, slots=True)
class SemanticOptions:
    """The options of `semantic` (Chunker keywords: `embedder`, `semantic_threshold`,
    `semantic_amount`, `semantic_window`)."""

    #: a function from a list of texts to vectors, or a LlamaIndex embed model (None: the
    #: default all-MiniLM-L6-v2, loaded on first use)
    embedder: Any = None
    #: `percentile`, `stddev`, `iqr` or `gradient` (see `chunkwise.chunking.strategies.semantic`)
    threshold: str = "percentile"
    #: the threshold's parameter (None: `THRESHOLDS[threshold]`)
    amount: float | None = None
    #: sentences per embedded window on each side of a boundary
    window: int = 3

    #: each threshold's default amount
    THRESHOLDS: ClassVar[Mapping[str, float]] = MappingProxyType(
        {"percentile": 95.0, "stddev": 3.0, "iqr": 1.5, "gradient": 95.0})

    def __post_init__(self) -> None:
        if self.threshold not in self.THRESHOLDS:
            raise ConfigError(f"semantic_threshold must be one of {', '.join(self.THRESHOLDS)}, "
                              f"got {self.threshold!r}")
        amount = self.THRESHOLDS[self.threshold] if self.amount is None else self.amount
        if not _number(amount) or amount < 0 or (
                self.threshold in ("percentile", "gradient") and amount > 100):
            raise ConfigError(f"semantic_amount must be a number >= 0 (a percentile <= 100 for "
                              f"{self.threshold}), got {amount!r}")
        object.__setattr__(self, "amount", float(amount))
        window = self.window
        if not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 16:
            raise ConfigError(f"semantic_window must be an integer in 1..16, got {window!r}")
        if self.embedder is not None and not (
                callable(self.embedder) or hasattr(self.embedder, "get_text_embedding_batch")):
            raise ConfigError(f"embedder must be a function from texts to vectors, "
                              f"got {self.embedder!r}")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


Factory = Callable[[Setup, Any], Strategy]
