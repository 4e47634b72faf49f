"""Metadata as vector stores take it: flat keys with scalar values (what Chroma accepts, and
LlamaIndex's flat-metadata check). Used by the Chroma store and the LlamaIndex parser alike,
so neither integration imports the other."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

__all__ = ["flatten_metadata"]

_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def flatten_metadata(meta: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Metadata Chroma accepts: str/int/float/bool values and non-empty lists of one of those
    types. None and empty values are dropped, dicts become dotted keys, anything else (mixed
    lists, NaN, huge ints, objects) becomes a string."""
    out: dict[str, Any] = {}
    for key, value in meta.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_metadata(value, prefix=f"{name}."))
            continue
        flat = _flat_value(value)
        if flat is not None:
            out[name] = flat
    return out


def _flat_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if _INT64[0] <= value <= _INT64[1] else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_flat_value(v) for v in value]
        items = [v for v in items if v is not None and not isinstance(v, list)]
        if not items:
            return None
        kinds = {bool if isinstance(v, bool) else type(v) for v in items}
        return items if len(kinds) == 1 else json.dumps(items, default=str)
    return str(value)
