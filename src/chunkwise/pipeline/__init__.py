"""Ingestion: which files a run reads (`discover`), its options and report (`options`), the
stages (`stages`), the threads and the local runner (`threads`, `runner`), the worker pool
(`pool`), the collection it writes (`collection`), and Ray (`ray`, imported only when asked
for). `ingest` is the one call."""

from .options import IngestOptions, IngestProgress, IngestReport
from .runner import ingest

__all__ = ["IngestOptions", "IngestProgress", "IngestReport", "ingest"]
