"""`chunkwise serve`: the JSON endpoints through plain HTTP (urllib, raw sockets for what
urllib will not send) against a real collection of three fixtures embedded with the
default model, and the MCP tools through the SDK's own client, over stdio (the client
spawns `python -m chunkwise.cli serve --mcp stdio`) and over streamable HTTP."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import FIXTURES

from chunkwise.chroma import search
from chunkwise.errors import MissingDependencyError
from chunkwise.pipeline import ingest
from chunkwise.serve import LIMITS, Service
from chunkwise.serve.httpd import make_server

ROOT = Path(__file__).resolve().parents[1]
FILES = ("fastapi__features.md", "httpd__mod__mod_dir.html", "fastapi__fastapi__background.py")
#: (question, the source whose chunk answers it): each ranks that source first
QUESTIONS = [
    ("How do I stop the trailing slash redirect for directories?", "httpd__mod__mod_dir.html"),
    ("run a function after returning the response", "fastapi__fastapi__background.py"),
    ("editor support and autocompletion", "fastapi__features.md"),
    ("DirectoryIndex", "httpd__mod__mod_dir.html"),
    ("add_task", "fastapi__fastapi__background.py"),
]


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("serve")
    docs = base / "docs"
    docs.mkdir()
    for name in FILES:
        shutil.copy(FIXTURES / name, docs / name)
    ingest([docs], db_path=base / "db", workers=1)
    return base / "db"


@pytest.fixture(scope="module")
def server(db):
    """The HTTP server in this process, on a free port of 127.0.0.1."""
    srv = make_server(Service(db_path=db), "127.0.0.1", 0)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def call(server, path: str, body: object = None, *, method: str | None = None,
         raw: bytes | None = None) -> tuple[int, dict]:
    """(status, JSON object) of one request; the body is JSON (`body`) or bytes (`raw`)."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def raw_request(server, request: bytes) -> tuple[int, dict]:
    """What the server answers to exactly these bytes (one request, then the socket is
    closed)."""
    host, port = server.server_address[:2]
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(request)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def is_error(status: int, out: dict, code: int) -> str:
    """The error line of a refusal, checked: the status, one line, no traceback."""
    assert status == code, out
    assert set(out) == {"error", "status"} and out["status"] == code
    assert "\n" not in out["error"] and "Traceback" not in out["error"]
    return out["error"]


# -- the endpoints --------------------------------------------------------------------------
def test_health_and_sources(server, db):
    status, health = call(server, "/health")
    assert status == 200 and health["ok"] and health["collection"] == "chunkwise"
    assert health["embedder"].startswith("chunkwise-minilm/") and health["lexical"] is True
    status, out = call(server, "/sources")
    assert status == 200
    assert [s["source"] for s in out["sources"]] == sorted(FILES)
    assert {s["source"]: s["format"] for s in out["sources"]} == {
        "fastapi__features.md": "markdown", "httpd__mod__mod_dir.html": "html",
        "fastapi__fastapi__background.py": "python"}
    assert sum(s["records"] for s in out["sources"]) == health["records"] > len(FILES)
    status, out = call(server, "/sources?contains=fastapi")
    assert [s["source"] for s in out["sources"]] == sorted(FILES[::2])


@pytest.mark.parametrize("question, source", QUESTIONS)
def test_search_answers_as_the_library_does(server, db, question, source):
    want = [h.id for h in search(question, db_path=db, k=5)]
    status, out = call(server, "/search", {"query": question, "k": 5})
    assert status == 200 and [h["id"] for h in out["hits"]] == want
    assert out["hits"][0]["source"] == source
    q = urllib.parse.urlencode({"q": question, "k": 5})
    assert [h["id"] for h in call(server, f"/search?{q}")[1]["hits"]] == want


def test_search_modes_and_filters(server):
    status, out = call(server, "/search", {"query": "add_task", "mode": "lexical", "k": 3})
    assert status == 200 and out["hits"] and all(h["distance"] is None for h in out["hits"])
    assert "add_task" in out["hits"][0]["text"]
    status, out = call(server, "/search", {"query": "tasks", "mode": "dense", "k": 3})
    assert all(set(h["ranks"]) == {"dense"} and h["score"] is None for h in out["hits"])
    status, out = call(server, "/search", {"query": "redirect", "k": 10,
                                           "where": {"format": "python"}})
    assert status == 200 and out["hits"]
    assert all(h["metadata"]["format"] == "python" for h in out["hits"])
    # two keys at the top are joined with $and (Chroma alone refuses them)
    both = {"format": "markdown", "source": "fastapi__features.md"}
    status, out = call(server, "/search", {"query": "editor", "k": 10, "where": both})
    assert status == 200 and out["hits"]
    assert all(h["source"] == "fastapi__features.md" for h in out["hits"])
    q = urllib.parse.urlencode({"query": "editor", "where": json.dumps(both)})
    assert call(server, f"/search?{q}")[0] == 200
    status, out = call(server, "/search", {"query": "the", "k": 10, "contains": "BackgroundTasks"})
    assert status == 200 and out["hits"] and all("BackgroundTasks" in h["text"]
                                                 for h in out["hits"])
    status, out = call(server, "/search", {"query": "directory", "k": 2, "expand": "section"})
    assert status == 200 and all("expanded" in h["metadata"] for h in out["hits"])


def test_fetch_a_chunk_and_its_parent_section(server):
    hit = call(server, "/search", {"query": "DirectorySlash Off", "k": 1})[1]["hits"][0]
    status, out = call(server, "/fetch", {"id": hit["id"]})
    assert status == 200
    chunk, section = out["chunk"], out["section"]
    assert chunk["id"] == hit["id"] and chunk["text"] == hit["text"]
    assert chunk["distance"] is None and chunk["source"] == "httpd__mod__mod_dir.html"
    meta = chunk["metadata"]
    assert section["id"] == meta["parent_id"]
    assert section["section_path"] == meta["parent_path"].split(" > ")
    assert meta["parent_start"] <= section["start"] <= meta["start"] < meta["end"] \
        <= section["end"] <= meta["parent_end"]
    assert chunk["text"] in section["text"] and section["tokens"] <= 512
    assert call(server, f"/fetch?id={hit['id']}&section=false")[1]["section"] is None
    small = call(server, "/fetch", {"id": hit["id"], "tokens": 1})[1]["section"]
    assert small["chunks"] == 1 and small["text"] == chunk["text"]  # the chunk itself, always
    is_error(*call(server, "/fetch", {"id": "no-such-id"}), 404)


# -- refusals -------------------------------------------------------------------------------
@pytest.mark.parametrize("body, says", [
    (b"{not json", "malformed JSON"),
    (b"[1, 2]", "JSON object"),
    (b"\xff\xfe", "UTF-8"),
    (json.dumps({"query": "x", "kk": 5}).encode(), "unknown parameter 'kk'"),
    (json.dumps({"query": "x", "k": 101}).encode(), "k must be an integer from 1 to 100"),
    (json.dumps({"query": "x", "k": "5"}).encode(), "k must be an integer"),
    (json.dumps({"query": "x", "k": True}).encode(), "k must be an integer"),
    (json.dumps({"query": "   "}).encode(), "query must be a non-empty string"),
    (json.dumps({"k": 3}).encode(), "query must be a non-empty string"),
    (json.dumps({"query": "x" * (LIMITS.query + 1)}).encode(), "at most 4096"),
    (json.dumps({"query": "x", "mode": "sparse"}).encode(), "mode must be one of"),
    (json.dumps({"query": "x", "where": {"format": {"$bogus": 1}}}).encode(), "where"),
    (json.dumps({"query": "x", "where": "format=pdf"}).encode(), "where must be a JSON object"),
])
def test_a_malformed_request_is_400_with_one_line(server, body, says):
    assert says in is_error(*call(server, "/search", raw=body), 400)


def test_an_oversized_body_is_refused_unread_and_the_server_goes_on(server):
    body = json.dumps({"query": "x" * (LIMITS.body + 10)}).encode()
    assert "at most 65536" in is_error(*call(server, "/search", raw=body), 413)
    big = b'{"query": "' + b"x" * 4_000_000 + b'"}'  # refused unread, the answer still arrives
    assert "at most 65536" in is_error(*call(server, "/search", raw=big), 413)
    # a huge declared length is refused before a byte of it is read
    status, out = raw_request(server, b"POST /search HTTP/1.1\r\nHost: localhost\r\n"
                                      b"Content-Length: 99999999999\r\n\r\n{}")
    is_error(status, out, 413)
    status, out = raw_request(server, b"POST /search HTTP/1.1\r\nHost: localhost\r\n"
                                      b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
    is_error(status, out, 411)
    assert call(server, "/health")[0] == 200


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "OPTIONS"])
def test_a_write_or_any_other_method_is_refused(server, method):
    assert "read-only" in is_error(*call(server, "/search", {"query": "x"}, method=method), 405)


def test_wrong_method_path_or_protocol(server):
    is_error(*call(server, "/health", {}, method="POST"), 405)
    is_error(*call(server, "/upsert", {"ids": ["a"]}), 404)
    is_error(*raw_request(server, b"BREW /search HTTP/1.1\r\nHost: localhost\r\n\r\n"), 501)
    is_error(*raw_request(server, b"GET /health HTTP/x.y\r\n\r\n"), 400)
    is_error(*raw_request(server, b"GARBAGE\r\n\r\n"), 400)
    is_error(*call(server, "/search?query=x&where=%7Bbad"), 400)
    is_error(*call(server, "/search?query=x&k=1&k=2"), 400)
    # DNS rebinding: a page of another name pointed at 127.0.0.1 sends its own Host
    line = is_error(*raw_request(server, b"GET /health HTTP/1.1\r\nHost: evil.example:80"
                                         b"\r\n\r\n"), 403)
    assert "DNS rebinding" in line
    for host in (b"localhost:1", b"127.0.0.1", b"[::1]:8765"):
        status, _ = raw_request(server, b"GET /health HTTP/1.1\r\nHost: " + host
                                + b"\r\nConnection: close\r\n\r\n")
        assert status == 200, host


def test_a_bug_is_500_with_one_line_and_no_traceback(server, monkeypatch):
    def broken(params):
        raise RuntimeError("secret internal detail\nline two")
    monkeypatch.setattr(server.service, "sources", broken)
    line = is_error(*call(server, "/sources"), 500)
    assert "RuntimeError" in line and "secret" not in line


def test_ten_concurrent_clients_get_their_own_answers(server, db):
    questions = [q for q, _ in QUESTIONS] + ["background tasks", "static files",
                                             "dependency injection", "mod_dir", "OpenAPI"]
    want = {q: [h.id for h in search(q, db_path=db, k=4)] for q in questions}

    def client(n: int) -> list[tuple[str, list[str]]]:
        got = []
        for q in questions[n:] + questions[:n]:  # each client in its own order
            status, out = call(server, "/search", {"query": q, "k": 4})
            assert status == 200, out
            got.append((q, [h["id"] for h in out["hits"]]))
        return got

    with ThreadPoolExecutor(10) as pool:
        answers = [a for part in pool.map(client, range(10)) for a in part]
    assert len(answers) == 100
    assert all(ids == want[q] for q, ids in answers)


def test_an_ingest_by_another_process_is_seen_by_the_next_request(db, tmp_path):
    """Chroma's embedded client keeps what it loaded: without a reopen the next read of a
    record written since fails ("Error finding id")."""
    copy = tmp_path / "db"
    shutil.copytree(db, copy)
    service = Service(db_path=copy)
    before = service.health()["records"]
    docs = db.parent / "docs"
    new = docs / "zebra-notes.md"
    new.write_text("# Zebra notes\n\nThe quagga was a subspecies of the plains zebra.\n",
                   encoding="utf-8")
    try:
        out = subprocess.run([sys.executable, "-m", "chunkwise.cli", "ingest", str(docs),
                              "--db", str(copy), "-q", "--workers", "1"],
                             capture_output=True, text=True, timeout=300)
    finally:
        new.unlink()
    assert out.returncode == 0, out.stderr
    for mode in ("hybrid", "dense", "lexical"):
        hits = service.search({"query": "quagga subspecies", "k": 1, "mode": mode})["hits"]
        assert hits[0]["source"] == "zebra-notes.md", mode
    assert service.health()["records"] == before + 1 and service.reopened == 1


# -- the command ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(*args: str) -> tuple[subprocess.Popen, str]:
    """`chunkwise serve ARGS` running, and the first line it printed on stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "chunkwise.cli", "serve", *args],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    return proc, proc.stderr.readline()


def test_the_command_serves_until_terminated(db):
    port = free_port()
    proc, line = start("--db", str(db), "--port", str(port))
    try:
        assert f"on http://127.0.0.1:{port}" in line, line + proc.stderr.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=60) as r:
            assert json.loads(r.read())["records"] > 0
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    proc.stderr.close()


def test_the_command_refuses_what_cannot_work(db, tmp_path):
    out = subprocess.run([sys.executable, "-m", "chunkwise.cli", "serve", "--db",
                          str(tmp_path / "none")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "no Chroma database" in out.stderr
    assert "Traceback" not in out.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = subprocess.run([sys.executable, "-m", "chunkwise.cli", "serve", "--db", str(db),
                              "--port", str(taken.getsockname()[1])],
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "cannot listen" in out.stderr, out.stderr


def test_a_missing_sdk_names_the_extra(monkeypatch):
    from chunkwise.serve import mcp_tools

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'chunkwise\[serve\]'"):
        mcp_tools.require_sdk()


# -- MCP, through the SDK's client ----------------------------------------------------------
async def _exercise(client) -> None:
    """List the tools, search, fetch the first hit, and get a clear error for bad input."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search", "fetch", "list_sources"}
    assert all(t.annotations.read_only_hint for t in tools.values())
    assert set(tools["search"].input_schema["properties"]) >= {"query", "k", "mode", "where"}
    r = await client.call_tool("search", {"query": QUESTIONS[0][0], "k": 3})
    assert not r.is_error
    hits = r.structured_content["hits"]
    assert len(hits) == 3 and hits[0]["source"] == QUESTIONS[0][1]
    r = await client.call_tool("fetch", {"id": hits[0]["id"]})
    assert not r.is_error and r.structured_content["chunk"]["text"] == hits[0]["text"]
    assert hits[0]["text"] in r.structured_content["section"]["text"]
    r = await client.call_tool("search", {"query": "x", "k": 1000})
    assert r.is_error and "k must be an integer from 1 to 100" in r.content[0].text
    assert "Traceback" not in r.content[0].text
    r = await client.call_tool("fetch", {"id": "no-such-id"})
    assert r.is_error and "no chunk with id" in r.content[0].text
    r = await client.call_tool("list_sources", {})
    assert [s["source"] for s in r.structured_content["sources"]] == sorted(FILES)


def test_mcp_over_stdio(db):
    anyio = pytest.importorskip("anyio")
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chunkwise.cli", "serve", "--db", str(db),
                                      "--mcp", "stdio"],
        env={"PYTHONPATH": str(ROOT / "src")})

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _exercise(client)
    anyio.run(main)


def test_mcp_over_streamable_http(db):
    anyio = pytest.importorskip("anyio")
    from mcp import Client

    port = free_port()
    proc, line = start("--db", str(db), "--mcp", "http", "--port", str(port))
    try:
        assert f"http://127.0.0.1:{port}/mcp" in line, line + proc.stderr.read()
        deadline = time.monotonic() + 60
        while True:  # the line comes before uvicorn listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.1)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as c:
                await _exercise(c)
        anyio.run(main)
        # DNS rebinding: a page's request naming another host is refused
        req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST",
                                     headers={"Host": "evil.example", "Content-Type":
                                              "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert 400 <= e.value.code < 500
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stderr.close()
