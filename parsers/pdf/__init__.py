"""PDF: the page reader (`reader`), ruled tables (`tables`) and OCR of scanned pages (`ocr`).

Nothing is imported here: `chunkwise.parsers.MODULES` names each format's module, imported
only when a document of that format is parsed."""
