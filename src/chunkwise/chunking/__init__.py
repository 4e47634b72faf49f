"""Chunking: the section tree (`structure`), the one packing engine (`fitter`), the strategies,
views, contextual text and the `Chunker` (`api`). Imports text, sizing, embeddings, parsers."""
