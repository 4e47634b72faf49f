"""The command line: `main` parses and dispatches (`main`), with the store commands (`store`),
evaluation (`eval`), the pages (`pages`), shared options (`options`) and progress bars
(`progress`). `chunkwise = "chunkwise.cli:main"` and `python -m chunkwise.cli` both run it."""

from .main import main

__all__ = ["main"]
