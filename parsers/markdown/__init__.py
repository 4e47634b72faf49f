"""Markdown: the parser (`reader`) and its faster markdown-it-py rules (`rules`).

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
