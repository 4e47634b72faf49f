"""The tokenizer factory: exact counts against the real tokenizers, offline."""

from __future__ import annotations

import os

import pytest

from chunkwise import ConfigError
from chunkwise.sizing.sizers import get_sizer, minilm_tokenizer_path

SAMPLE = "Structure-aware chunking — naïve café, 日本語のテキスト, <|endoftext|> and code: x = f(1)."


def test_minilm_counts_cls_and_sep():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(minilm_tokenizer_path()))
    tok.no_padding()
    tok.no_truncation()
    s = get_sizer("minilm")
    assert s.count(SAMPLE) == len(tok.encode(SAMPLE).ids)
    assert s.overhead == 2 and s.count("") == 2
    assert s.count_many([SAMPLE] * 5) == [s.count(SAMPLE)] * 5


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_offline_special_tokens_as_text(name):
    assert "TIKTOKEN_CACHE_DIR" not in os.environ or True
    s = get_sizer(name)
    import tiktoken

    enc = tiktoken.get_encoding(name)
    assert s.count(SAMPLE) == len(enc.encode(SAMPLE, disallowed_special=()))
    assert s.count("<|endoftext|>") > 1  # counted as ordinary text, not one special token


def test_tokenizer_json_path_and_errors(tmp_path):
    assert get_sizer(str(minilm_tokenizer_path())).count(SAMPLE) == get_sizer("minilm").count(SAMPLE)
    with pytest.raises(ConfigError):
        get_sizer("no-such-tokenizer")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    with pytest.raises(ConfigError):
        get_sizer(str(bad))


def test_tiktoken_loads_offline_without_importing_llama_index(tmp_path):
    """The BPE files come from llama-index-core's folder, found without importing it (that
    import costs over a second at every CLI start)."""
    import subprocess
    import sys

    code = ("import sys; from chunkwise.sizing.sizers import get_sizer; "
            "assert get_sizer('cl100k_base').count('hello world') == 2; "
            "assert 'llama_index.core' not in sys.modules")
    # no cache of the user's, an empty one, and one without the file: the shipped files
    for cache in (None, "", str(tmp_path)):
        env = {"PATH": ""} if cache is None else {"PATH": "", "TIKTOKEN_CACHE_DIR": cache}
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 0, done.stderr
