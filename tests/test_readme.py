"""The README, run as a user would: every fenced shell command and every Python block, in the
order they come, in a folder holding a copy of `fixtures/`, with this environment's `chunkwise`
on the PATH and the real model and an embedded Chroma. Not run: the install line (it needs the
network) and the test command (it is what runs this). Then the LlamaIndex recipe is checked end
to end: a second run in a new process embeds nothing, plain chromadb `query_texts` works on its
collection after `import chunkwise`, `chunkwise query` answers on it with cosine distances, the
`chunkwise ingest` collection reads back through `ChromaVectorStore` as nodes with `ref_doc_id`
and PREV/NEXT, and both routes hold the same number of chunks. The LangChain recipe runs
PyPDFLoader, the splitter, `langchain_chroma.Chroma` and a retriever, offline."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
#: README lines not run here, and why: installing needs the network; the test command runs this
NOT_RUN = ("python3 -m venv ", ".venv/bin/pip install", ".venv/bin/python -m pytest")


def blocks() -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return [(m[1], m[2]) for m in BLOCK.finditer(README.read_text(encoding="utf-8"))]


def commands(code: str) -> list[str]:
    return [line for line in code.splitlines() if line.strip() and not line.startswith("#")]


def env() -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env(), capture_output=True,
                          text=True, timeout=1200)


@pytest.fixture(scope="module")
def readme_run(tmp_path_factory):
    """The README's blocks run in order; (language, code, result) of each command run."""
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(FIXTURES, work / "fixtures")
    shutil.copytree(ROOT / "tests" / "data", work / "tests" / "data")
    done = []
    for lang, code in blocks():
        if lang in ("bash", "sh", "shell"):
            for line in commands(code):
                # the quick start's install is not run, what it chains after it is
                line = " && ".join(part for part in line.split(" && ")
                                   if not part.startswith(NOT_RUN))
                if not line:
                    continue
                line = line.replace(".venv/bin/", "")
                p = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=work, env=env(),
                                   capture_output=True, text=True, timeout=1200)
                done.append((lang, line, p))
        elif lang == "python":
            done.append((lang, code, run_python(code, work)))
    return work, done


def test_readme_is_short_and_every_command_runs(readme_run):
    assert len(README.read_text(encoding="utf-8").splitlines()) < 300
    _, done = readme_run
    assert sum(1 for lang, _, _ in done if lang == "bash") >= 10
    assert sum(1 for lang, _, _ in done if lang == "python") >= 4
    for lang, code, p in done:
        assert p.returncode == 0, f"{code}\n--- stderr:\n{p.stderr[-3000:]}"
        assert "Traceback" not in p.stderr, code


def test_readme_commands_do_what_it_says(readme_run):
    work, done = readme_run
    out = {code: p for _, code, p in done}
    query = next(p for c, p in out.items() if c.startswith("chunkwise ingest fixtures/ && "))
    assert "httpd__mod__mod_dir.html" in query.stdout and ", cosine)" in query.stdout
    rows = [json.loads(x) for x in (work / "stdin.jsonl").read_text().splitlines()]
    assert rows and {r["source"] for r in rows} == {"<stdin>"}
    assert all(r["kinds"] for r in rows)
    code_hits = next(p for c, p in out.items() if '"$contains": "code"' in c)
    assert code_hits.stdout.count(", cosine)") >= 1
    # the nodes of the LlamaIndex recipe name their documents
    recipe = next(p for c, p in out.items() if "IngestionPipeline" in c)
    assert re.search(r"^\d+ nodes embedded$", recipe.stdout, re.M)
    assert "httpd__mod__mod_dir.html |" in recipe.stdout
    # offline, `Settings.llm = None`: the query engine answers from the retrieved node
    assert re.search(r"^httpd__mod__mod_dir.html$", recipe.stdout, re.M)
    # the LangChain recipe: PyPDFLoader's pages split as text, pages kept, into Chroma with
    # chunkwise's model (no download); the table of countries is on page 3
    lc = next(p for c, p in out.items() if "langchain_chroma" in c)
    assert lc.stdout.split()[:2] == ["fixtures/latex-two-column-sample.pdf", "3"]


def _chunk_count() -> int:
    p = subprocess.run([sys.executable, "-m", "chunkwise.cli", "chunk", str(FIXTURES), "--jsonl"],
                       capture_output=True, text=True, env=env())
    return len(p.stdout.splitlines())


def test_llama_index_recipe_end_to_end_in_two_processes(readme_run):
    work, done = readme_run
    recipe = next(code for lang, code, _ in done if "IngestionPipeline" in code)
    first = next(p for _, code, p in done if code == recipe)
    n = _chunk_count()
    assert f"{n} nodes embedded" in first.stdout  # the same chunks as the CLI's
    again = run_python(recipe, work)  # a new process, the persisted docstore
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 nodes embedded" in again.stdout
    assert "httpd__mod__mod_dir.html |" in again.stdout  # and it still retrieves
    # plain chromadb, after `import chunkwise` only: the recorded function embeds the query
    plain = run_python(
        "import chromadb, chunkwise\n"
        "col = chromadb.PersistentClient('chroma-db').get_collection('docs')\n"
        "got = col.query(query_texts=['trailing slash redirect'], n_results=3)\n"
        "print(col.count(), col.configuration['hnsw']['space'], got['metadatas'][0][0]['source'])\n",
        work)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert plain.stdout.split() == [str(n), "cosine", "httpd__mod__mod_dir.html"]
    # `chunkwise query` on the LlamaIndex collection: cosine distances, sources, paths
    q = subprocess.run([sys.executable, "-m", "chunkwise.cli", "query", "trailing slash redirect",
                        "--db", "chroma-db", "--collection", "docs", "-k", "2", "--json"],
                       cwd=work, env=env(), capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    hits = json.loads(q.stdout)
    assert [h["space"] for h in hits] == ["cosine", "cosine"]
    assert hits[0]["source"] == "httpd__mod__mod_dir.html" and 0 < hits[0]["distance"] < 1
    assert hits[0]["section_path"][0] == "Apache Module mod_dir"


def test_ingest_collection_through_chroma_vector_store(readme_run):
    work, _ = readme_run
    code = """
import chromadb
from llama_index.core.schema import NodeRelationship as R
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.vector_stores.chroma import ChromaVectorStore
from chunkwise.llama_index import ChunkwiseEmbedding

col = chromadb.PersistentClient("chunkwise-db").get_collection("chunkwise")
store = ChromaVectorStore(chroma_collection=col)
vector = ChunkwiseEmbedding().get_query_embedding("trailing slash redirect")
got = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=5))
for node in got.nodes:
    rel = node.relationships
    print(node.ref_doc_id, R.PREVIOUS in rel or R.NEXT in rel,
          node.text == col.get(ids=[node.node_id])["documents"][0],
          node.start_char_idx is not None, node.metadata["section_path"] != "")
print(col.count())
"""
    p = run_python(code, work)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    rows = [line.split() for line in lines[:-1]]
    assert len(rows) == 5 and rows[0][0] == "httpd__mod__mod_dir.html"
    assert all(r[0].split(".")[-1] in ("html", "md", "py", "csv", "txt", "pdf") for r in rows)
    assert all(r[1:] == ["True"] * 4 for r in rows)
    assert int(lines[-1]) == _chunk_count()  # chunk counts equal on both routes
