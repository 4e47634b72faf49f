"""The package as users install it: every subpackage is listed in pyproject.toml (a plain
`pip install .` ships only the packages listed there; an editable install hides a missing
one), and the data files the code needs are declared."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else pytest.importorskip("tomli")


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]


def test_every_subpackage_is_listed():
    config = _setuptools_config()
    listed = set(config["packages"])
    found = set()
    for name, folder in config["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join((name, *rel.parts)))
    assert found - listed == set(), "subpackages missing from [tool.setuptools] packages"


def test_package_data_is_declared():
    data = _setuptools_config()["package-data"]["chunkwise"]
    assert "py.typed" in data and "data/*.json" in data
    assert (ROOT / "src" / "chunkwise" / "data" / "minilm-tokenizer.json").is_file()
