"""Structured data: JSON and what every data format shares (`json`), JSON Lines, and YAML/TOML through one tree-sitter walk (`tree`).

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
