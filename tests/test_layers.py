"""The floors of the house: which room (sub-package, or module at the top) may import which.

A room imports only rooms on floors below its own, and itself; rooms on one floor do not
import each other. Every import counts: at the top of a module or inside a function, and those
made by name through `importlib.import_module` (a literal, or an f-string whose fixed head
names a package: then each module of that package whose name the file spells out). The same graph has no circles.
README.md's Development section draws this map; change both together.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the floors, ground first: a room may import the rooms of the floors below it
FLOORS: list[tuple[str, ...]] = [
    ("model", "errors", "metadata"),
    ("text", "sizing"),
    ("embeddings", "parsers"),
    ("chunking",),
    ("chroma",),
    ("pipeline",),
    ("pages", "evaluation", "llama_index", "langchain", "ray", "serve"),
    ("cli",),
    ("chunkwise",),  # the package's face: `chunkwise.Chunker`, `chunk_file`, ...
]
FLOOR = {room: n for n, rooms in enumerate(FLOORS) for room in rooms}


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (parsers included)."""
    found = {}
    for base, prefix in ((ROOT / "src" / "chunkwise", ("chunkwise",)),
                         (ROOT / "parsers", ("chunkwise", "parsers"))):
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(base).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(prefix + parts)] = path
    return found


def room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "chunkwise"


def _dynamic_head(node: ast.expr, here: str, is_package: bool) -> str | None:
    """The fixed head of an `import_module` argument: the whole literal, or an f-string's
    leading text (with `__name__`) when it ends with a dot."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    head = ""
    for part in node.values:
        if isinstance(part, ast.Constant):
            head += part.value
        elif isinstance(part.value, ast.Name) and part.value.id == "__name__":
            head += here
        else:
            break
    return head if head.endswith(".") else None


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the package that module `name` imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[str] = set()

    def add(target: str) -> None:
        while target and target not in known:  # `from a.b import name`: a.b
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    # an f-string import loads the modules whose names the file spells out (a table's rows)
    spelled = {n.value for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                add(sub if sub in known else module)
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            head = _dynamic_head(node.args[0], name, is_package)
            if head is None:
                continue
            if head.endswith("."):
                out.update(m for m in known if m.startswith(head) and m[len(head):] in spelled)
            else:
                add(head)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_every_room_has_a_floor():
    assert {room(m) for m in modules()} <= set(FLOOR), set(map(room, modules())) - set(FLOOR)


def test_no_import_runs_back_up_or_across_a_floor():
    wrong = [f"{a} -> {b}" for a, targets in graph().items() for b in sorted(targets)
             if room(a) != room(b) and FLOOR[room(b)] >= FLOOR[room(a)]]
    assert not wrong, "imports against the floors (tests/test_layers.py FLOORS):\n" + "\n".join(wrong)


def test_no_import_circles_importlib_included():
    assert circles(graph()) == []


def test_the_check_sees_lazy_and_importlib_imports():
    edges = graph()
    assert "chunkwise.chunking.strategies.semantic" in edges["chunkwise.chunking.strategies"]
    assert "chunkwise.parsers.pdf.reader" in edges["chunkwise.parsers"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_readme_map_names_every_room_on_its_floor():
    """README.md's Development section draws the floors: each room, on the row of its floor."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows[int(cells[0])] = cells[1]
    src = ROOT / "src" / "chunkwise"
    for n, rooms in enumerate(FLOORS, start=1):
        for name in rooms:
            spelled = ("`__init__.py`" if name == "chunkwise" else f"`{name}/`"
                       if (src / name).is_dir() or name == "parsers" else f"`{name}.py`")
            assert spelled in rows.get(n, ""), f"README's map: {spelled} not on floor {n}"
    folders = {p.name for p in src.iterdir() if (p / "__init__.py").is_file()}
    assert folders <= set(FLOOR), folders - set(FLOOR)
