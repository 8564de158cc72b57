#!/usr/bin/env bash
# Regenerates the tokenizer test data in testdata/tokenizer/ (not needed for
# `go test`, which only reads the committed files):
#   1. trains sentencepiece Unigram models (Debian python3-sentencepiece) on a
#      corpus assembled from ../shared/datasets/text plus generated text, and
#      converts them to tokenizer.json (scripts/tokenizer/build.py);
#   2. encodes the test strings with HuggingFace tokenizers, the npm package
#      @anush008/tokenizers, into gzip JSONL goldens (scripts/tokenizer/golden.js).
# Needs: apt-get install -y python3-sentencepiece; node >= 18 with npm.
set -euo pipefail
cd "$(dirname "$0")/../.."
work="$PWD/.cache/tokenizer"
npmdir=.cache/tokenizer-npm
mkdir -p "$work" "$npmdir"
if [ ! -d "$npmdir/node_modules/@anush008/tokenizers" ]; then
  (cd "$npmdir" && npm init -y >/dev/null && npm install --no-audit --no-fund @anush008/tokenizers@0.6.0 >/dev/null)
fi
/usr/bin/python3 scripts/tokenizer/build.py "$work"
rm -rf testdata/tokenizer/*/
NODE_PATH="$npmdir/node_modules" node scripts/tokenizer/golden.js "$work" testdata/tokenizer

# Edge cases of a hand-made vocabulary (onnx/tokenizer/edge_test.go): the Go
# test writes the tokenizer.json files (it fails on a stale hf.json after
# dumping, hence || true), HF encodes them.
go test -count=1 -run TestEdgeCases ./onnx/tokenizer/ -args -edge.dump "$work/edge" >/dev/null || true
NODE_PATH="$npmdir/node_modules" node scripts/tokenizer/edge.js "$work/edge" testdata/tokenizer/edge/hf.json
du -sh testdata/tokenizer
