"""Ingest with Ray Data: the runner lives in `chunkwise.pipeline.ray`; this name stays for
`chunkwise.ray.ingest` and `chunkwise ingest --ray`."""

from .pipeline.ray import available, ingest

__all__ = ["available", "ingest"]
