"""Sizing: tokenizers as `Callable[[str], int]` (`sizers`), the exact token index over a
document (`tokenindex`) and token cut points (`boundaries`). Imports only the ground floor."""
