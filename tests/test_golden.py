"""The fixtures' chunks, per strategy and budget, equal the golden files in tests/golden/
(regenerate after a reviewed change: `python tests/golden/regen.py`). The files hold pypdf
7.1's PDF text; below 7.1 the PDF fixtures' chunks are compared without whitespace and
offsets (tests/pdftext.py), every other fixture's byte for byte."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "golden"))
import regen  # noqa: E402

from pdftext import exact_spacing, squeeze  # noqa: E402


def _spacing_free(lines: list[str]) -> tuple[list[str], list[tuple]]:
    """(the lines of non-PDF chunks as they are, the PDF chunks without what pypdf's spacing
    moves: ids, offsets, token counts, the text's whitespace)."""
    kept, pdf = [], []
    for line in lines:
        c = json.loads(line)
        if c["format"] != "pdf":
            kept.append(line)
            continue
        pdf.append((c["source"], c["section_path"], c["kinds"], c["page_start"], c["page_end"],
                    squeeze(c["text"]), squeeze(c["context"])))
    return kept, pdf


@pytest.mark.parametrize("budget", list(regen.BUDGETS))
@pytest.mark.parametrize("strategy", regen.STRATEGIES)
def test_fixture_chunks_equal_the_golden_files(strategy, budget):
    want = regen.stored(strategy, budget).decode().splitlines()
    got = regen.current(strategy, budget).decode().splitlines()
    if not exact_spacing():
        (want, want_pdf), (got, got_pdf) = _spacing_free(want), _spacing_free(got)
        assert want_pdf and got_pdf == want_pdf, f"{strategy} {budget}: PDF chunks differ"
    if got != want:
        old = {(c["source"], c["start"], c["end"]): c for c in map(json.loads, want)}
        new = {(c["source"], c["start"], c["end"]): c for c in map(json.loads, got)}
        sources = sorted({k[0] for k in old.keys() ^ new.keys()}
                         | {k[0] for k in old.keys() & new.keys() if old[k] != new[k]})
        pytest.fail(f"{strategy} {budget}: {len(want)} -> {len(got)} chunks; documents that "
                    f"changed: {sources[:20]} (review, then python tests/golden/regen.py)")
