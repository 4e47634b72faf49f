"""Pages: the chunk inspector (`inspector`) and the collection map (`map`), self-contained HTML."""
