"""The code-and-tables question set (tests/data/questions_code_tables.jsonl, issue 22): valid
against the shared corpus, every excerpt verbatim and located once, split by kind and into a
tuning part and a held-out part."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import CORPUS
from pdftext import located_questions

DATA = Path(__file__).resolve().parent / "data"
QFILE = DATA / "questions_code_tables.jsonl"


def test_code_tables_question_set_is_valid(tmp_path):
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    rows = [json.loads(l) for l in QFILE.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(rows) >= 80
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == {"code", "csv", "table"} and min(kinds.values()) >= 15, kinds
    splits = Counter(r["split"] for r in rows)
    assert set(splits) == {"tune", "heldout"} and splits["heldout"] >= 20, splits
    assert len({r["question"] for r in rows}) == len(rows)
    old = {json.loads(l)["question"] for l in (DATA / "questions.jsonl").read_text(
        encoding="utf-8").splitlines() if l.strip()}
    assert not old & {r["question"] for r in rows}
    for r in rows:
        folder = r["source"].split("/")[0]
        assert folder == {"code": "code", "csv": "csv"}.get(r["kind"], folder)
        assert r["kind"] != "table" or folder in ("markdown", "html", "pdf")
    qs, _ = located_questions(QFILE, CORPUS, tmp_path)  # every excerpt located exactly once
    for q in qs.questions:
        text = qs.texts[q.path]
        assert text.count(q.excerpt) == 1, f"{qs.where(q)}: excerpt not exactly once verbatim"
        assert text[q.start:q.end] == q.excerpt
        assert 20 <= len(q.excerpt) <= 800, qs.where(q)


OFFICE = DATA / "questions_office.jsonl"
OFFICE_FOLDERS = {"docx": "office", "pptx": "office", "xlsx": "office",
                  "pdf-table": "pdf-tables", "scanned": "pdf-tables"}


def test_office_question_set_is_valid(tmp_path):
    """Office files and PDF tables (tests/data/questions_office.jsonl, issue 29): every file of
    office/ and pdf-tables/ asked about, by format, with a held-out part; the scanned PDFs'
    excerpts are OCR text, so the set needs the `ocr` extra."""
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    pytest.importorskip("rapidocr_onnxruntime")
    rows = [json.loads(l) for l in OFFICE.read_text(encoding="utf-8").splitlines() if l.strip()]
    assert len(rows) >= 44
    kinds = Counter(r["kind"] for r in rows)
    assert set(kinds) == set(OFFICE_FOLDERS) and min(kinds.values()) >= 5, kinds
    splits = Counter(r["split"] for r in rows)
    assert set(splits) == {"tune", "heldout"} and splits["heldout"] >= len(rows) // 3, splits
    assert len({r["question"] for r in rows}) == len(rows)
    old = {json.loads(l)["question"] for f in ("questions.jsonl", "questions_code_tables.jsonl")
           for l in (DATA / f).read_text(encoding="utf-8").splitlines() if l.strip()}
    assert not old & {r["question"] for r in rows}
    for r in rows:
        folder, name = r["source"].split("/")
        assert folder == OFFICE_FOLDERS[r["kind"]], r
        assert r["kind"] != "scanned" or "scanned" in name, r
        assert r["kind"] not in ("docx", "pptx", "xlsx") or name.endswith("." + r["kind"]), r
    cited = {r["source"] for r in rows}
    for folder in ("office", "pdf-tables"):
        files = {f"{folder}/{p.name}" for p in (CORPUS / folder).iterdir() if p.is_file()}
        assert files <= cited, f"no question on {sorted(files - cited)}"
    qs, _ = located_questions(OFFICE, CORPUS, tmp_path)  # every excerpt located exactly once
    for q in qs.questions:
        text = qs.texts[q.path]
        assert text.count(q.excerpt) == 1, f"{qs.where(q)}: excerpt not exactly once verbatim"
        assert text[q.start:q.end] == q.excerpt
        assert 20 <= len(q.excerpt) <= 800, qs.where(q)


HELDOUT = DATA / "questions_code_heldout.jsonl"
TUNE = DATA / "questions_code_tune.jsonl"
STYLES = {"param", "default", "env", "literal", "omitted", "exception"}


def test_code_heldout_and_tune_sets_are_valid():
    """Issue 34: held-out code questions (a parameter's meaning, a default, an environment
    variable read, an entry of a literal table, behaviour when an argument is omitted, an
    exception) on Python and the other languages, and a separate tuning set on other files."""
    # imported here: main's version of this file reaches load_questions through pdftext
    from chunkwise.evaluation.eval import load_questions

    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    sets = {}
    for path, split in ((HELDOUT, "heldout"), (TUNE, "tune")):
        rows = [json.loads(l) for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
        assert {r["split"] for r in rows} == {split} and {r["kind"] for r in rows} == {"code"}
        assert {r["style"] for r in rows} <= STYLES
        for r in rows:
            folder = r["source"].split("/")[0]
            assert folder in ("code", "code-multi"), r
            assert r["group"] == ("python" if r["language"] == "python" else "other"), r
        qs = load_questions(path, root=CORPUS)
        for q in qs.questions:
            text = qs.texts[q.path]
            assert text.count(q.excerpt) == 1, f"{qs.where(q)}: excerpt not exactly once verbatim"
            assert text[q.start:q.end] == q.excerpt
            assert 20 <= len(q.excerpt) <= 800, qs.where(q)
        sets[split] = rows
    held, tune = sets["heldout"], sets["tune"]
    groups = Counter(r["group"] for r in held)
    assert len(held) >= 45 and groups["python"] >= 25 and groups["other"] >= 20, groups
    assert len({r["language"] for r in held if r["group"] == "other"}) >= 12
    assert set(Counter(r["style"] for r in held)) == STYLES
    assert len(tune) >= 12
    # the tuning set asks about other files than the held-out set
    assert not {r["source"] for r in held} & {r["source"] for r in tune}
    questions = [r["question"] for r in held + tune]
    assert len(set(questions)) == len(questions)
    old = {json.loads(l)["question"] for f in ("questions.jsonl", "questions_code_tables.jsonl")
           for l in (DATA / f).read_text(encoding="utf-8").splitlines() if l.strip()}
    assert not old & set(questions)


HELDOUT2 = DATA / "questions_code_heldout2.jsonl"
HELDOUT2_KEYS = {"question", "source", "excerpt", "kind", "split", "language", "group", "style"}


def test_code_heldout2_set_is_valid():
    """Issue 34, second held-out set: Python questions only, on files the tuning set does not
    use, spread over many files, every style present, every excerpt verbatim and found once in
    its file and in no other file of code/ (an answer in two files would make a
    miss ambiguous), and no question text shared with another question file."""
    from chunkwise.evaluation.eval import load_questions

    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not present ({CORPUS})")
    rows = [json.loads(l) for l in HELDOUT2.read_text(encoding="utf-8").splitlines() if l.strip()]
    for r in rows:
        assert set(r) == HELDOUT2_KEYS, r
        assert (r["kind"], r["split"], r["language"], r["group"]) == (
            "code", "heldout2", "python", "python"), r
        assert r["style"] in STYLES, r
        assert r["source"].startswith("code/") and r["source"].endswith(".py"), r
    assert len(rows) >= 40
    per_file = Counter(r["source"] for r in rows)
    assert len(per_file) >= 15 and max(per_file.values()) <= 4, per_file
    assert set(Counter(r["style"] for r in rows)) == STYLES
    tune = {json.loads(l)["source"] for l in TUNE.read_text(encoding="utf-8").splitlines()
            if l.strip()}
    assert not set(per_file) & tune
    questions = [r["question"] for r in rows]
    assert len(set(questions)) == len(questions)
    others = {json.loads(l)["question"] for f in DATA.glob("*.jsonl") if f != HELDOUT2
              for l in f.read_text(encoding="utf-8").splitlines() if l.strip()}
    assert not others & set(questions)

    qs = load_questions(HELDOUT2, root=CORPUS)
    assert len(qs) == len(rows)
    python_texts = {p.resolve(): p.read_text(encoding="utf-8")
                    for p in sorted((CORPUS / "code").glob("*.py"))}
    for q in qs.questions:
        text = qs.texts[q.path]
        assert text.count(q.excerpt) == 1, f"{qs.where(q)}: excerpt not exactly once verbatim"
        assert text[q.start:q.end] == q.excerpt
        assert 20 <= len(q.excerpt) <= 800, qs.where(q)
        elsewhere = [p.name for p, t in python_texts.items()
                     if p != q.path.resolve() and q.excerpt in t]
        assert not elsewhere, f"{qs.where(q)}: excerpt also in {elsewhere}"
