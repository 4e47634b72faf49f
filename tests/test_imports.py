"""No module of the package reaches into another module's private (`_`-prefixed) names:
what two modules share is public in a module both import (STYLE.md, 16)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _folder(path: Path, node: ast.ImportFrom) -> Path | None:
    """The package folder that `from <node.module> import ...` in `path` reads from, when it
    is one of ours."""
    parts = node.module.split(".") if node.module else []
    if node.level:
        base = path.parents[node.level - 1]
    elif parts[:2] == ["chunkwise", "parsers"]:
        base, parts = ROOT / "parsers", parts[2:]
    elif parts[:1] == ["chunkwise"]:
        base, parts = ROOT / "src" / "chunkwise", parts[1:]
    else:
        return None
    return base.joinpath(*parts)


def _is_module(folder: Path | None, name: str) -> bool:
    return folder is not None and ((folder / f"{name}.py").is_file()
                                   or (folder / name / "__init__.py").is_file())


def private_imports(path: Path, code: str | None = None) -> list[tuple[str, int]]:
    """`(name, line)` of each private name the module at `path` (of source `code`, else
    read) takes from another module: imported by name, or read as an attribute of a module
    it imported."""
    tree = ast.parse(code if code is not None else path.read_text(encoding="utf-8"))
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "chunkwise":  # os._exit is the os module's API
                    modules.add(alias.asname or alias.name.split(".")[0])
                found += [(part, node.lineno) for part in alias.name.split(".") if _private(part)]
        elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
            for alias in node.names:
                if _private(alias.name):
                    found.append((alias.name, node.lineno))
                elif _is_module(_folder(path, node), alias.name):
                    modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and isinstance(node.value, ast.Name) and node.value.id in modules):
            found.append((node.attr, node.lineno))
    return found


def test_no_module_imports_another_modules_private_names():
    offenders = []
    for base in ("src", "parsers"):
        for path in sorted((ROOT / base).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            offenders += [f"{rel}:{line} {name}" for name, line in private_imports(path)]
    assert not offenders, "private names used across modules:\n" + "\n".join(offenders)


def test_the_check_sees_each_kind_of_reach():
    code = ("import chunkwise.sizing.sizers as sizing\nfrom .chunking import fitter\n"
            "from .text.textio import _x\nfrom chunkwise.text import splitting\n"
            "from .chunking.fitter import Fitter\n"
            "a = sizing._a\nb = fitter._b\nc = splitting._c\nd = self._own\ne = Fitter._e\n"
            "import os\nf = os._exit\n")  # the standard library's own API is not counted
    probe = ROOT / "src" / "chunkwise" / "probe.py"  # (not written: its imports resolve there)
    assert sorted(name for name, _ in private_imports(probe, code)) == ["_a", "_b", "_c", "_x"]
