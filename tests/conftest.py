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


@pytest.fixture
def tiktoken_encoded(monkeypatch) -> list[int]:
    """The length of every text tiktoken encodes while the test runs (an index built before
    keeps the methods it bound: clear `_tiktoken_builder`'s cache to count its builds)."""
    import tiktoken

    encoded: list[int] = []
    for method in ("encode_ordinary", "encode_to_numpy"):
        real = getattr(tiktoken.Encoding, method)

        def counting(self, text, *args, _real=real, **kwargs):
            encoded.append(len(text))
            return _real(self, text, *args, **kwargs)

        monkeypatch.setattr(tiktoken.Encoding, method, counting)
    return encoded
