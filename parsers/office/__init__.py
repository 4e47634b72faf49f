"""Office Open XML: the container reader (`ooxml`) and the Word, PowerPoint and Excel parsers.

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
