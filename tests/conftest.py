"""Shared test helpers: where the fixtures and the (optional) shared corpus live."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"


def corpus_files(fmt_dir: str) -> list[Path]:
    """Files of one folder of ../shared/corpus; skips the test when the corpus is absent."""
    folder = CORPUS / fmt_dir
    if not folder.is_dir():
        pytest.skip(f"shared corpus not present ({folder})")
    return sorted(p for p in folder.iterdir() if p.is_file())


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
