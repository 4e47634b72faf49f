"""A chunker whose worker dies on one file, for the tests of the process pool's crash recovery.

Importable wherever tests/ is on the path (the pool's worker processes unpickle it by name).
"""

from __future__ import annotations

import os
import signal

from chunkwise import Chunker


class KillingChunker:
    """The real chunker, except that a file holding `KILL-THE-WORKER` ends its process at
    once, as a crash in a parser's C code or the out-of-memory killer would."""

    def __init__(self, max_tokens: int) -> None:
        self.chunker = Chunker(max_tokens=max_tokens, tokenizer="minilm")
        self.fingerprint = self.chunker.fingerprint

    def parse_bytes(self, data: bytes, **kwargs):
        if b"KILL-THE-WORKER" in data:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.chunker.parse_bytes(data, **kwargs)

    def chunk_document(self, doc):
        return self.chunker.chunk_document(doc)

    def chunk_bytes(self, data: bytes, **kwargs):
        return self.chunk_document(self.parse_bytes(data, **kwargs))
