"""Jupyter notebooks: the parser (`reader`) and the `notebook-outputs` format (`outputs`).

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
