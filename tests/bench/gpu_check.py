"""One run on a GPU machine: all-MiniLM-L6-v2 on CUDA against onnxruntime's CPU vectors, and
its throughput.

    python3 tests/bench/gpu_check.py --model gpu-model/model.onnx [--n 20000] [--sample 500]
        [--batch-sizes 64,128,256,512,1024,2048] [--device cuda] [--backend torch|onnxruntime]

Needs numpy, tokenizers and onnxruntime, plus torch and onnx for the torch backend. chunkwise
need not be installed: it is imported from this checkout (src/ is the package, parsers/ its
`chunkwise.parsers`, as pyproject.toml maps them), and chromadb is never imported. `--model` is
the pinned int8 `model.onnx` (its sha256 is checked). Texts are the chunks chunkwise makes of
fixtures/ (a file whose parser needs a package that is missing here is chunked as plain text;
the PDF is then left out), repeated to --n.

Prints, and writes to `$OUT/gpu_check.json` when $OUT is set (after every stage, so a run cut
short still leaves what it measured):

- the GPU, versions, and what `device="auto"` picks (backend, dtype, batch size);
- cosine min/mean of CUDA against CPU vectors of --sample distinct texts: embedded on their
  own, and taken from the full run of --n texts (other batch compositions), then for the other
  precisions of the torch backend;
- texts/s on CUDA for the --n texts at each batch size (tokenizing included, and on its own),
  and texts/s of onnxruntime on the CPU for reference.

`--device cpu` runs the same checks with the torch backend on the CPU: a dry run for a machine
without a GPU (use a small --n).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _timing import timed_result as timed  # tests/bench/_timing.py

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
MIN_COSINE = 0.999


def import_checkout() -> None:
    """Make `import chunkwise` load this checkout, as `pip install -e .` would."""
    sys.path.insert(0, str(ROOT / "src"))
    import chunkwise

    if Path(chunkwise.__file__).resolve().parent != (ROOT / "src" / "chunkwise").resolve():
        raise SystemExit(f"another chunkwise was imported: {chunkwise.__file__}")
    # pyproject.toml maps `chunkwise.parsers` to parsers/: a folder named `parsers` on the
    # package's search path is found as that subpackage.
    chunkwise.__path__.append(str(ROOT))


class Report:
    """The figures, printed as they come and written to $OUT/gpu_check.json each time."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.started = time.perf_counter()
        out = os.environ.get("OUT")
        self.path = Path(out) / "gpu_check.json" if out else None

    def add(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.data["elapsed_s"] = round(self.elapsed(), 1)
        print(f"{key}: {json.dumps(value)}", flush=True)
        if self.path:
            self.path.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def versions() -> dict[str, Any]:
    import numpy
    import onnxruntime
    import tokenizers

    from chunkwise.embeddings.minilm import cuda_visible

    out: dict[str, Any] = {
        "python": platform.python_version(), "numpy": numpy.__version__,
        "tokenizers": tokenizers.__version__, "onnxruntime": onnxruntime.__version__,
        "onnxruntime_providers": onnxruntime.get_available_providers(),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cuda_visible": cuda_visible(),
    }
    for name in ("torch", "onnx"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = None
    if out["torch"]:
        import torch

        out["torch_cuda"] = torch.version.cuda
        out["cuda_available"] = torch.cuda.is_available()
        if out["cuda_available"]:
            out["gpu"] = torch.cuda.get_device_name(0)
    return out


def model_dir(model: Path, tmp: Path) -> Path:
    """A folder laid out as `MiniLMEmbedder(model_dir)` wants: the model and the shipped tokenizer."""
    from chunkwise.embeddings.minilm import INT8_MODEL_SHA256, default_tokenizer_path, verify_sha256

    verify_sha256(model, INT8_MODEL_SHA256)
    (tmp / "model.onnx").symlink_to(model.resolve())
    (tmp / "tokenizer.json").symlink_to(default_tokenizer_path())
    return tmp


def chunk_texts(n: int) -> tuple[list[str], dict[str, Any]]:
    """The embed texts of the chunks of fixtures/, and one in 20 joined to the next (past the
    256-token window: truncated), repeated to `n`."""
    from chunkwise import Chunker
    from chunkwise.errors import ChunkwiseError

    chunker, texts, used = Chunker(), [], {}
    for path in sorted(p for p in FIXTURES.iterdir() if p.name != "SOURCES.md"):
        try:
            chunks, how = chunker.chunk_file(path), "parsed"
        except (ImportError, ChunkwiseError) as e:  # the format's parser needs a package
            why = str(e).replace(f"{path}: ", "")
            if path.suffix == ".pdf":
                used[path.name] = f"left out ({why})"
                continue
            chunks, how = chunker.chunk_file(path, format="text"), f"as text ({why})"
        texts += [c.embed_text for c in chunks]
        used[path.name] = f"{len(chunks)} chunks, {how}"
    texts += [a + "\n\n" + b for a, b in zip(texts[::20], texts[1::20])]
    return (texts * (n // len(texts) + 1))[:n], {"files": used, "distinct": len(texts)}


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    cos = np.sum(a.astype(np.float64) * b, axis=1)
    return {"min": round(float(cos.min()), 6), "mean": round(float(cos.mean()), 6),
            "ok": bool(cos.min() >= MIN_COSINE)}


def sync() -> None:
    if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
        sys.modules["torch"].cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True, help="the int8 model.onnx")
    ap.add_argument("--n", type=int, default=20000, help="texts for the throughput runs")
    ap.add_argument("--sample", type=int, default=500, help="distinct texts compared to the CPU")
    ap.add_argument("--batch-sizes", default="64,128,256,512,1024,2048")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a dry run")
    ap.add_argument("--backend", choices=("torch", "onnxruntime"), default=None)
    ap.add_argument("--runs", type=int, default=2, help="timed runs per batch size (median)")
    ap.add_argument("--budget", type=float, default=180.0,
                    help="seconds after which the remaining batch sizes are skipped")
    args = ap.parse_args()
    import_checkout()
    report = Report()
    try:
        check(args, report)
    except Exception as e:  # keep what was measured, and say where it stopped
        report.add("error", f"{type(e).__name__}: {e}")
        raise


def check(args: argparse.Namespace, report: Report) -> None:
    from chunkwise.embeddings.minilm import MiniLMEmbedder

    report.add("versions", versions())
    texts, source = chunk_texts(args.n)
    distinct = list(dict.fromkeys(texts))
    sample = random.Random(0).sample(distinct, min(args.sample, len(distinct)))
    with tempfile.TemporaryDirectory() as tmp:
        folder = model_dir(args.model, Path(tmp))
        cpu = MiniLMEmbedder(folder, device="cpu")
        cpu.embed(["warm up"])  # loads the model and the tokenizer
        lengths = [len(e.ids) for e in cpu._tokenizer.encode_batch(texts)]
        report.add("texts", {**source, "n": len(texts), "sample": len(sample),
                             "tokens_median": statistics.median(lengths),
                             "tokens_max": max(lengths),
                             "at_window": sum(n == 256 for n in lengths)})
        t_cpu, reference = timed(lambda: cpu.embed(sample), 1)
        report.add("cpu_onnxruntime", {**cpu.info(), "texts_per_s": round(len(sample) / t_cpu, 1)})
        report.add("auto_picks", MiniLMEmbedder(folder).info())

        backend = args.backend or ("torch" if args.device == "cpu" else None)
        dev = MiniLMEmbedder(folder, device=args.device, backend=backend)
        report.add("device", dev.info())
        auto_batch = dev.batch_size
        report.add("cosine_sample_alone", cosines(dev.embed(sample), reference))
        dev.embed(texts[:2 * auto_batch])  # warm up: kernels chosen, memory pooled
        sync()
        t_full, full = timed(lambda: dev.embed(texts), 1)
        first = {t: i for i, t in reversed(list(enumerate(texts)))}
        report.add("cosine_sample_in_full_run",
                   cosines(full[[first[t] for t in sample]], reference))
        check_precisions(dev, folder, sample, reference, report)

        t_tok, _ = timed(lambda: dev._tokenizer.encode_batch(texts), args.runs)
        throughput = {"auto_batch_size": auto_batch, "tokenize_only": round(len(texts) / t_tok),
                      f"batch_{auto_batch}_first_run": round(len(texts) / t_full)}
        for size in [int(s) for s in args.batch_sizes.split(",")]:
            if report.elapsed() > args.budget:
                throughput[f"batch_{size}"] = "skipped: time budget"
            else:
                throughput[f"batch_{size}"] = measure(dev, texts, size, args.runs)
            report.add("gpu_texts_per_s", throughput)
    cos = [report.data["cosine_sample_alone"], report.data["cosine_sample_in_full_run"],
           *report.data.get("cosine_by_dtype", {}).values()]
    report.add("all_cosines_at_least_0.999", all(c["ok"] for c in cos))


def check_precisions(dev: Any, folder: Path, sample: list[str], reference: np.ndarray,
                     report: Report) -> None:
    """The torch backend's other dtypes on the sample (the runner is swapped in place)."""
    if dev.info()["backend"] != "torch":
        return
    from chunkwise.embeddings.torch_bert import DTYPES, TorchBert, read_onnx_weights

    weights, default = read_onnx_weights(folder / "model.onnx"), dev._runner
    out = {default.dtype: report.data["cosine_sample_alone"]}
    for dtype in DTYPES:
        if dtype not in out:
            dev._runner = TorchBert(weights, device=default.device, dtype=dtype)
            out[dtype] = cosines(dev.embed(sample), reference)
            sync()
    dev._runner = default
    report.add("cosine_by_dtype", out)


def measure(dev: Any, texts: list[str], size: int, runs: int) -> dict[str, Any]:
    """texts/s of `dev.embed(texts)` at batch `size`, and the GPU memory it peaked at."""
    torch = sys.modules.get("torch")
    cuda = torch is not None and torch.cuda.is_available() and dev.info()["device"] != "cpu"
    dev.batch_size = size
    dev.embed(texts[:2 * size])  # warm up at this size
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    seconds, _ = timed(lambda: dev.embed(texts), runs)
    out = {"texts_per_s": round(len(texts) / seconds)}
    if cuda:
        out["peak_mib"] = round(torch.cuda.max_memory_allocated() / 2**20)
    return out


if __name__ == "__main__":
    main()
