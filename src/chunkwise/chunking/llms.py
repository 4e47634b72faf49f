"""Calling a LlamaIndex LLM: building one from a `module:attr` spec, naming it in chunk ids,
and asking it with a timeout. Shared by the `llm` strategy and contextual enrichment."""

from __future__ import annotations

import importlib
import threading
from typing import Any

from ..errors import ConfigError


def resolve_llm(spec: Any) -> Any:
    """An LLM from an object with `complete()` (any `llama_index.core.llms.LLM`), or from a
    `module:attr` string naming an instance, a class (built without arguments) or a factory."""
    if spec is None or hasattr(spec, "complete"):
        return spec
    if not isinstance(spec, str) or ":" not in spec:
        raise ConfigError(f"not an LLM: {spec!r} (give a LlamaIndex LLM or module:attr)")
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
        if not hasattr(target, "complete") or isinstance(target, type):
            target = target()
    except Exception as e:
        raise ConfigError(f"cannot load LLM {spec!r}: {type(e).__name__}: {e}") from e
    if not hasattr(target, "complete"):
        raise ConfigError(f"{spec!r} is not an LLM (it has no complete())")
    return target


def llm_identity(llm: Any) -> str:
    """Class and model name: part of the chunk ids, so that two LLMs never share ids."""
    try:
        model = llm.metadata.model_name
    except Exception:
        model = ""
    return f"{type(llm).__module__}.{type(llm).__qualname__}:{model}"


def complete(llm: Any, prompt: str, timeout: float) -> tuple[str | None, str]:
    """The LLM's answer and "", or None and the reason ("error: …", "timeout"). The call runs
    in a daemon thread, so a hung LLM is abandoned after `timeout` seconds."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["text"] = str(llm.complete(prompt).text)
        except BaseException as e:  # noqa: BLE001 - any failure means: fall back
            box["error"] = e

    t = threading.Thread(target=run, name="chunkwise-llm", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        return None, "timeout"
    if "error" in box:
        return None, f"error: {type(box['error']).__name__}: {box['error']}"
    return box.get("text", ""), ""
