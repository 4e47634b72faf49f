"""The fixtures' chunks, per strategy and budget, equal the golden files in tests/golden/
(regenerate after a reviewed change: `python tests/golden/regen.py`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
import regen  # noqa: E402


@pytest.mark.parametrize("budget", list(regen.BUDGETS))
@pytest.mark.parametrize("strategy", regen.STRATEGIES)
def test_fixture_chunks_equal_the_golden_files(strategy, budget):
    want = regen.stored(strategy, budget).decode().splitlines()
    got = regen.current(strategy, budget).decode().splitlines()
    if got != want:
        old = {(c["source"], c["start"], c["end"]): c for c in map(json.loads, want)}
        new = {(c["source"], c["start"], c["end"]): c for c in map(json.loads, got)}
        sources = sorted({k[0] for k in old.keys() ^ new.keys()}
                         | {k[0] for k in old.keys() & new.keys() if old[k] != new[k]})
        pytest.fail(f"{strategy} {budget}: {len(want)} -> {len(got)} chunks; documents that "
                    f"changed: {sources[:20]} (review, then python tests/golden/regen.py)")
