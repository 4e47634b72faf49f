"""Exit codes and usage, as the README's "Exit status" and docs/reference.md's "Exit codes"
say, through the real CLI: 0 all good (an empty folder included), 1 a path or file failed
(missing, unreadable, nothing but files of no supported format, a file that does not parse),
2 bad usage, with the subcommand's own usage for an option it does not know, and one line for
a bad value (`--where` with bad JSON or an operator Chroma does not know)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from chunkwise.cli.main import main
from conftest import CHUNKWISE_CLI, FIXTURES, run_measured

TESTS = Path(__file__).resolve().parent
#: the deterministic test embedder (tests/hashembed.py), importable by the CLI's processes
HASH = ["--embedder", "hashembed:HASH", "--workers", "1"]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS),
                                                                   os.environ.get("PYTHONPATH")]))}
#: every subcommand, with the arguments it needs to get as far as its options
COMMANDS = {
    "chunk": ["x.md"], "text": ["x.md"], "sections": ["x.md"], "inspect": ["x.md"],
    "ingest": ["x.md"], "check": [], "query": ["a question"], "eval": ["q.jsonl"], "map": [],
    "serve": [],
    "why": ["a question", "--expect", "x"],
}


def cli(*args, cwd=None, prefix=()):
    return subprocess.run([*prefix, *CHUNKWISE_CLI, *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=ENV, timeout=300)


def one_line(p) -> str:
    """The one line a failure prints on stderr (no traceback, nothing else)."""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


# -- usage ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_option_shows_the_subcommands_usage(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, *COMMANDS[command], "--bogus"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: chunkwise {command} [-h]"), err
    assert err.endswith(f"chunkwise {command}: error: unrecognized arguments: --bogus\n")


def test_unknown_options_through_the_entry_point():
    p = cli("query", "a question", "--bogus", "--db", "nowhere")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("usage: chunkwise query [-h]")
    assert p.stderr.endswith("chunkwise query: error: unrecognized arguments: --bogus\n")
    # an option before the command is the top level's: its usage
    p = cli("--bogus", "chunk", FIXTURES / "fastapi__features.md")
    assert p.returncode == 2 and p.stderr.startswith("usage: chunkwise [-h]")
    assert p.stderr.endswith("chunkwise: error: unrecognized arguments: --bogus\n")
    # a bad value of a known option was already the subcommand's
    p = cli("chunk", FIXTURES / "fastapi__features.md", "--max-tokens", "many")
    assert p.returncode == 2 and p.stderr.startswith("usage: chunkwise chunk [-h]")


# -- paths: missing, empty, unsupported, unreadable ------------------------------------------
def _folders(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "unsupported").mkdir()
    (tmp_path / "unsupported" / "a.xyz").write_text("not a format chunkwise reads")
    (tmp_path / "unsupported" / "b.png").write_bytes(b"\x89PNG")


@pytest.mark.parametrize("command", ["chunk", "text", "sections", "inspect"])
def test_missing_empty_and_unsupported_paths(command, tmp_path):
    _folders(tmp_path)
    out = ["-o", tmp_path / "page.html"] if command == "inspect" else []
    quiet = ["--quiet"] if command == "chunk" else []
    p = cli(command, "missing", *out, cwd=tmp_path)
    assert p.returncode == 1 and p.stdout == ""
    assert "missing: no such file or directory" in p.stderr.splitlines()
    # only files of no supported format: nothing was read, one line, a failure
    for extra in ([], quiet):
        p = cli(command, "unsupported", *out, *extra, cwd=tmp_path)
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr.splitlines()[0] == (
            "chunkwise: no documents of a supported format in unsupported: 2 files of no "
            "supported format not read (.png: 1, .xyz: 1)")
    # an empty folder: nothing to do, said in one line (nothing with --quiet); not a failure
    p = cli(command, "empty", *out, cwd=tmp_path)
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert p.stderr.splitlines()[0] == "chunkwise: no documents of a supported format in empty"
    if quiet:
        p = cli(command, "empty", *quiet, cwd=tmp_path)
        assert p.returncode == 0 and p.stdout == "" and p.stderr == ""
    if command == "inspect":  # the page lists what the walk said
        page = (tmp_path / "page.html").read_text(encoding="utf-8")
        assert "no documents of a supported format in empty" in page


def test_ingest_of_missing_empty_and_unsupported_paths(tmp_path):
    _folders(tmp_path)
    db = ["--db", tmp_path / "db"]
    p = cli("ingest", "missing", *db, *HASH, "--quiet", cwd=tmp_path)
    assert p.returncode == 1 and one_line(p) == "missing: no such file or directory"
    p = cli("ingest", "unsupported", *db, *HASH, "--json", cwd=tmp_path)
    assert p.returncode == 1 and json.loads(p.stdout)["unsupported"] == 2
    assert p.stderr.splitlines() == [  # the fact once, not a warning and then the line
        "chunkwise: no documents of a supported format in unsupported: 2 files of no "
        "supported format not read (.png: 1, .xyz: 1)"]
    p = cli("ingest", "empty", *db, *HASH, "--json", cwd=tmp_path)
    assert p.returncode == 0 and json.loads(p.stdout)["files"] == 0
    assert "chunkwise: no documents of a supported format in empty" in p.stderr.splitlines()


#: the CLI, then what it imported: the model's runtime and Chroma's client are heavy (seconds)
_IMPORTS = ("import sys, json; from chunkwise.cli.main import main; rc = main(sys.argv[2:]); "
            "open(sys.argv[1], 'w').write(json.dumps([m for m in ('onnxruntime', 'chromadb', "
            "'chunkwise.embeddings.minilm') if m in sys.modules])); sys.exit(rc)")


@pytest.mark.parametrize("path, rc, line", [
    ("missing", 1, "missing: no such file or directory"),
    ("empty", 0, "chunkwise: no documents of a supported format in empty"),
    ("unsupported", 1, "chunkwise: no documents of a supported format in unsupported: 2 files "
                       "of no supported format not read (.png: 1, .xyz: 1)"),
])
def test_ingest_that_cannot_write_fails_fast(tmp_path, path, rc, line):
    """Nothing to ingest: one line and the documented exit code, said before the model is
    loaded or a database created (the default model and database; under 2 s of CPU, a
    process's start and imports included: seconds before, the model loaded)."""
    _folders(tmp_path)
    imported = tmp_path / "imported.json"
    run = run_measured([sys.executable, "-c", _IMPORTS, str(imported), "ingest", path],
                       tmp_path / "out", timeout=120, cwd=tmp_path)
    assert run.returncode == rc, run.stderr
    assert run.stderr.splitlines() == [line], run.stderr
    assert (tmp_path / "out").read_text() == ""
    assert json.loads(imported.read_text()) == []  # no model, no Chroma
    assert not (tmp_path / "chunkwise-db").exists() and sorted(
        p.name for p in tmp_path.iterdir()) == sorted(
        ["empty", "unsupported", "imported.json", "out", "out.rss"])
    assert run.cpu_seconds < 2, run.cpu_seconds


def _unreadable(tmp_path: Path) -> tuple[Path, tuple[str, ...]]:
    """A folder this process cannot list, and the command prefix that makes it so: as root
    (who reads anything) the CLI runs without the capabilities that bypass permissions."""
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "a.md").write_text("# A\n\nText nobody may read.\n")
    locked.chmod(0)
    if os.geteuid() != 0:
        return locked, ()
    setpriv = shutil.which("setpriv")
    prefix = (setpriv, "--inh-caps=-dac_override,-dac_read_search",
              "--bounding-set=-dac_override,-dac_read_search") if setpriv else ()
    if not prefix or subprocess.run([*prefix, "ls", str(locked)],
                                     capture_output=True).returncode == 0:
        pytest.skip("running as root without setpriv: every folder is readable")
    return locked, prefix


@pytest.mark.parametrize("command", ["chunk", "text", "inspect", "ingest"])
def test_an_unreadable_folder_is_one_line_and_a_failure(command, tmp_path):
    locked, prefix = _unreadable(tmp_path)
    try:
        extra = {"inspect": ["-o", tmp_path / "page.html"],
                 "ingest": ["--db", tmp_path / "db", *HASH, "--quiet"]}.get(command, [])
        p = cli(command, "locked", *extra, cwd=tmp_path, prefix=prefix)
    finally:
        locked.chmod(0o755)
    assert p.returncode == 1 and p.stdout == ""
    lines = [line for line in p.stderr.splitlines() if not line.startswith("wrote ")]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert lines[0].endswith("locked: cannot list folder: Permission denied"), lines


# -- query --where ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("where") / "db"
    p = cli("ingest", FIXTURES / "fastapi__features.md", FIXTURES / "httpd__mod__mod_dir.html",
            "--db", db, *HASH, "--quiet")
    assert p.returncode == 0, p.stderr
    return db


def test_where_with_a_bad_operator_or_bad_json_is_bad_usage(small_db):
    q = ["query", "background tasks", "--db", small_db, "--json"]
    p = cli(*q, "--where", '{"format": {"$bogus": "markdown"}}')
    assert p.returncode == 2 and p.stdout == ""
    line = one_line(p)
    assert line.startswith("chunkwise: --where is not a Chroma filter: ") and "$bogus" in line
    assert "query failed" not in line
    p = cli(*q, "--where", '{"format": "markdown"')
    assert p.returncode == 2 and one_line(p).startswith("chunkwise: --where is not valid JSON")
    p = cli(*q, "--where", '["markdown"]')
    assert p.returncode == 2 and one_line(p).startswith("chunkwise: --where must be a JSON object")
    p = cli(*q, "--where", '{"$and": [{"format": "markdown"}]}')  # $and needs two clauses
    assert p.returncode == 2 and "--where is not a Chroma filter" in one_line(p)
    # the same collection answers good filters: what was refused was the filter
    p = cli(*q, "-k", "50", "--where", '{"format": {"$eq": "html"}}')
    assert p.returncode == 0, p.stderr
    hits = json.loads(p.stdout)
    assert hits and {h["source"] for h in hits} == {"httpd__mod__mod_dir.html"}
    p = cli(*q, "--where", '{}')  # no filter
    assert p.returncode == 0 and json.loads(p.stdout), p.stderr


def test_expand_tokens_is_checked_before_the_store_is_opened(tmp_path):
    p = cli("query", "x", "--db", tmp_path / "none", "--expand", "section",
            "--expand-tokens", "0")
    assert p.returncode == 2 and one_line(p) == "chunkwise: --expand-tokens must be a positive integer"


def test_top_level_help_lists_every_format_files_are_read_as():
    """From the parsers' tables, not a list of its own (it once named six formats)."""
    from chunkwise.parsers import EXTENSIONS, MODULES

    p = cli("--help")
    assert p.returncode == 0
    head = " ".join(p.stdout.split("positional arguments")[0].split())
    read_as = {f for f in MODULES if f in set(EXTENSIONS.values())}
    assert len(read_as) > 25
    for fmt in read_as:
        assert any(f"{a}{fmt}{b}" in head for a in " (" for b in ",)"), fmt
    assert f"code in {sum(MODULES[f] == 'code' for f in read_as)} languages" in head
