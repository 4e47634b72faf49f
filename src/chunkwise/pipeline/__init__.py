"""Ingestion: which files a run reads (`discover`), the stages and their runners, and Ray
(`ray`, imported only when asked for). `ingest` is the one call."""

from .runner import IngestOptions, IngestReport, ingest

__all__ = ["IngestOptions", "IngestReport", "ingest"]
