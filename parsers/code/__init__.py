"""Source code: the language table (`languages`), the tree-sitter walk (`walk`, `treesitter`), where headers are cut (`headers`) and Python's own row (`python`).

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
