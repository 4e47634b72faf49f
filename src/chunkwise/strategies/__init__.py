"""Chunking strategies. `structure` (the default) is the fitter itself; the others live here:

- `fixed`: windows of tokens (characters with `tokenizer="chars"`), cut at token boundaries;
- `sentence`: whole sentences packed to the budget, words for an overlong sentence;
- `recursive`: the classic separator hierarchy, ignoring structure;
- `semantic`: the fitter, cutting where the embedding distance between sentence windows peaks;
- `llm`: a LlamaIndex LLM proposes split points, falling back to `structure`.

`fixed`, `sentence`, `recursive` and `llm` ignore document structure by design: their chunks
obey invariants 1, 2, 3 and 5 of the contract but not 4.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ..sizing import Sizer

STRATEGIES = ("structure", "fixed", "sentence", "recursive", "semantic", "llm")
#: strategies exempt from invariant 4 (chunks may cross section boundaries)
IGNORE_STRUCTURE = frozenset({"fixed", "sentence", "recursive", "llm"})


class StrategySpec(str):
    """A strategy name that carries Chunker options: `Chunker(strategy=spec)` is
    `Chunker(strategy=str(spec), **spec.options)`, explicit keyword arguments winning. The CLI
    passes its strategy flags this way, through the one `strategy` argument."""

    options: dict[str, Any]

    def __new__(cls, name: str, options: dict[str, Any] | None = None) -> StrategySpec:
        self = super().__new__(cls, name)
        self.options = dict(options or {})
        return self

    def __repr__(self) -> str:
        return f"StrategySpec({str(self)!r}, {self.options!r})"


def make_engine(strategy: str, sizer: Sizer, *, llm: Any = None, timeout: float = 60.0,
                embedder: Any = None, semantic_threshold: str = "percentile",
                semantic_amount: float | None = None,
                semantic_window: int = 3) -> tuple[Any, str]:
    """The planner of `semantic` or `llm` (None for the others, which are plain functions), with
    what its options add to the chunk-id fingerprint. Raises `ConfigError` on bad options."""
    if strategy == "llm":
        from ..llms import llm_identity
        from .llm import LLMStrategy

        if llm is None:
            raise ConfigError("strategy='llm' needs an llm (a LlamaIndex LLM or module:attr)")
        return LLMStrategy(sizer, llm=llm, timeout=timeout), f"|llm={llm_identity(llm)}"
    if strategy != "semantic":
        return None, ""
    from .semantic import THRESHOLDS, SemanticStrategy

    if semantic_threshold not in THRESHOLDS:
        raise ConfigError(f"semantic_threshold must be one of {', '.join(THRESHOLDS)}, "
                          f"got {semantic_threshold!r}")
    amount = THRESHOLDS[semantic_threshold] if semantic_amount is None else semantic_amount
    if not _number(amount) or amount < 0 or (
            semantic_threshold in ("percentile", "gradient") and amount > 100):
        raise ConfigError(f"semantic_amount must be a number >= 0 (a percentile <= 100 for "
                          f"{semantic_threshold}), got {amount!r}")
    if not isinstance(semantic_window, int) or isinstance(semantic_window, bool) or not (
            1 <= semantic_window <= 16):
        raise ConfigError(f"semantic_window must be an integer in 1..16, got {semantic_window!r}")
    if embedder is not None and not (callable(embedder)
                                     or hasattr(embedder, "get_text_embedding_batch")):
        raise ConfigError(f"embedder must be a function from texts to vectors, got {embedder!r}")
    engine = SemanticStrategy(sizer, embedder=embedder, threshold=semantic_threshold,
                              amount=float(amount), window=semantic_window)
    return engine, (f"|{semantic_threshold}={float(amount)!r}|window={semantic_window}"
                    f"|embedder={_identity(embedder)}")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _identity(fn: Any) -> str:
    """A stable name for an embed function (part of the semantic strategy's ids)."""
    if fn is None:
        return "minilm"
    target = fn if callable(fn) and hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', repr(target))}"
