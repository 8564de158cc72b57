#!/usr/bin/env bash
# Go tokenizer vs HuggingFace tokenizers, single thread, same strings, same run.
# Needs node and the npm package (scripts/tokenizer/regen.sh installs it in
# .cache/tokenizer-npm). Usage: scripts/tokenizer/bench.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
npmdir=.cache/tokenizer-npm
if [ ! -d "$npmdir/node_modules/@anush008/tokenizers" ]; then
  mkdir -p "$npmdir"
  (cd "$npmdir" && npm init -y >/dev/null && npm install --no-audit --no-fund @anush008/tokenizers@0.6.0 >/dev/null)
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
GOMAXPROCS=1 go test -run '^$' -bench 'BenchmarkEncode$' -benchtime "${rounds}x" -count 1 ./onnx/tokenizer/
for v in xlmr tiny; do
  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false NODE_PATH="$npmdir/node_modules" \
    node scripts/tokenizer/bench.js "testdata/tokenizer/$v" "$rounds"
done
