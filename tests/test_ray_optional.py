"""Ray is an optional extra: without it chunkwise imports and works, and `--ray` is one
clear line naming `pip install 'chunkwise[ray]'`. Runs whether or not Ray is installed
(its absence is simulated)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import chunkwise.ray
import chunkwise.pipeline.ray as ray_runner
from chunkwise.cli.main import main
from chunkwise.errors import MissingDependencyError


def test_importing_chunkwise_does_not_import_ray():
    code = ("import sys, chunkwise, chunkwise.cli, chunkwise.pipeline, chunkwise.ray; "
            "sys.exit('ray' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_without_ray_the_cli_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ray_runner, "available", lambda: False)
    (tmp_path / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for flags in (["--ray"], ["--ray-address", "auto"]):
        assert main(["ingest", "a.md", "--db", "db", *flags]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "pip install 'chunkwise[ray]'" in err[0], err
    assert not (tmp_path / "db").exists()  # refused before anything was opened
    with pytest.raises(MissingDependencyError, match=r"chunkwise\[ray\]"):
        chunkwise.ray.ingest(["a.md"], db_path="db")
