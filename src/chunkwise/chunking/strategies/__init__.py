"""Chunking strategies: one registry (`REGISTRY`), read by the Chunker, the CLI and eval.

- `structure` (the default): the fitter over the section tree;
- `fixed`: windows of tokens (characters with `tokenizer="chars"`), cut at token boundaries;
- `sentence`: whole sentences packed to the budget, words for an overlong sentence;
- `recursive`: the classic separator hierarchy, ignoring structure;
- `semantic`: the fitter, cutting where the embedding distance between sentence windows peaks;
- `llm`: a LlamaIndex LLM proposes split points, falling back to `structure`.

`fixed`, `sentence`, `recursive` and `llm` ignore document structure by design: their chunks
obey invariants 1, 2, 3 and 5 of the contract but not 4. Each strategy is a row: its name, a
factory, its options dataclass, and whether it keeps structure. Adding one is adding a row;
its module is imported only when a chunker uses it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ...errors import ConfigError
from ..fitter import Budget, Fitter, Piece
from ...model import ParsedDocument
from ..structure import Node
from ...sizing.sizers import Sizer
from .spec import Factory, NoOptions, SemanticOptions, Setup, Strategy


@dataclass(frozen=True, slots=True)
class Registered:
    """One strategy of the registry."""

    name: str
    #: builds the strategy for one chunker from a `Setup` and an options object
    #: (`ConfigError` on bad options)
    factory: Factory
    #: whether its chunks obey invariant 4 (inside one section, or a run of whole sections)
    keeps_structure: bool
    #: its options dataclass (validated when built)
    options: type = NoOptions
    #: the Chunker keyword arguments that set its options: keyword -> options field
    keywords: Mapping[str, str] = field(default_factory=dict)
    #: whether it uses the chunker's `llm`
    uses_llm: bool = False


class Structure:
    """The `structure` strategy: the fitter over the section tree."""

    identity, overlaps, stats = "", False, MappingProxyType({})

    def __init__(self, sizer: Sizer) -> None:
        self.sizer = sizer

    def plan(self, doc: ParsedDocument, budget: Budget, root: Node) -> list[Piece]:
        return Fitter(self.sizer, budget).fit(doc, root)


def _structure(setup: Setup, options: NoOptions) -> Structure:
    return Structure(setup.sizer)


def _lazy(module: str, name: str) -> Factory:
    """The factory `name` of the strategy module `module`, imported when first used."""

    def make(setup: Setup, options: Any) -> Strategy:
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(setup, options)

    return make


REGISTRY: Mapping[str, Registered] = MappingProxyType({r.name: r for r in (
    Registered("structure", _structure, keeps_structure=True),
    Registered("fixed", _lazy("simple", "fixed"), keeps_structure=False),
    Registered("sentence", _lazy("simple", "sentence"), keeps_structure=False),
    Registered("recursive", _lazy("simple", "recursive"), keeps_structure=False),
    Registered("semantic", _lazy("semantic", "make"), keeps_structure=True,
               options=SemanticOptions,
               keywords={"embedder": "embedder", "semantic_threshold": "threshold",
                         "semantic_amount": "amount", "semantic_window": "window"}),
    Registered("llm", _lazy("llm", "make"), keeps_structure=False, uses_llm=True),
)})
STRATEGIES = tuple(REGISTRY)
#: strategies exempt from invariant 4 (chunks may cross section boundaries)
IGNORE_STRUCTURE = frozenset(name for name, r in REGISTRY.items() if not r.keeps_structure)


def registered(name: str) -> Registered:
    """The registry's row for `name` (`ConfigError` for an unknown strategy)."""
    row = REGISTRY.get(name) if isinstance(name, str) else None
    if row is None:
        raise ConfigError(f"unknown strategy {name!r}; known: {', '.join(STRATEGIES)}")
    return row


@dataclass(frozen=True, slots=True)
class StrategySpec:
    """A strategy name with Chunker keyword arguments: `Chunker(strategy=spec)` is
    `Chunker(strategy=spec.name, **spec.keywords)`, explicit keyword arguments winning. The
    CLI passes its strategy flags this way, through the one `strategy` argument."""

    name: str
    keywords: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name
