"""Sizing: tokenizers as `Callable[[str], int]` (`sizers`), the exact token index over a
document (`tokenindex`, which picks it; `counters`, `tiktoken_index`, `wordpiece_index`)
and token cut points (`boundaries`). Imports only the ground floor."""
