#!/usr/bin/env bash
# Go tokenizer vs HuggingFace tokenizers (npm @anush008/tokenizers), one
# thread each, same strings (testdata/tokenizer/strings.jsonl.gz), same run.
# Rounds alternate Go and HF so load from other processes hits both alike;
# each line is one round, compare the medians.
# Needs node; installs the npm package into .cache/tokenizer-npm when absent.
# Usage: scripts/tokenizer/bench.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
npmdir=.cache/tokenizer-npm
if [ ! -d "$npmdir/node_modules/@anush008/tokenizers" ]; then
  mkdir -p "$npmdir"
  (cd "$npmdir" && npm init -y >/dev/null && npm install --no-audit --no-fund @anush008/tokenizers@0.6.0 >/dev/null)
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
bin=$(mktemp -d)/tokenizer.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" ./onnx/tokenizer/
for v in xlmr tiny; do
  for r in $(seq "$rounds"); do
    (cd onnx/tokenizer && GOMAXPROCS=1 "$bin" -test.run '^$' -test.bench "BenchmarkEncode/tokenizer=$v\$" -test.benchtime 1x) |
      awk -v v="$v" '/tokens\/s/ { for (i = 1; i <= NF; i++) if ($(i+1) == "tokens/s") printf "go %s encode: %d tokens/s\n", v, $i }'
    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false NODE_PATH="$npmdir/node_modules" \
      node scripts/tokenizer/bench.js "testdata/tokenizer/$v" 1
  done
done
