#!/usr/bin/env bash
# Issue 18's CPU measurements on the BGE-M3-sized random model, each interleaved within one
# process (see the test comments): int8 parity and query speed, engram fp32/int8 against PyTorch
# fp32, ORT's CPU settings one by one, and ingest throughput through the memory layer.
#
#   bash scripts/onnx/side_by_side.sh [parity|torch|options|ingest|all]   (default all)
#
# Makes /tmp/bge-m3-random (export_tiny.py, 2.27 GB) and its int8 rewrite when missing. Needs
# Debian's python3-torch and python3-onnx, and an optimized BLAS for PyTorch
# (apt-get install libopenblas0-openmp): Debian's torch calls libblas.so.3, the reference BLAS
# unless another is installed. On a shared machine: nice -n 10 bash scripts/onnx/side_by_side.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
M=${M:-/tmp/bge-m3-random}
I8=${I8:-/tmp/bge-m3-random-int8}
[ -f "$M/model.onnx" ] || /usr/bin/python3 scripts/onnx/export_tiny.py --preset bge-m3 --out "$M"
[ -f "$I8/model.onnx" ] || /usr/bin/python3 scripts/onnx/quantize_int8.py "$M/model.onnx" "$I8/model.onnx"
export ENGRAM_BENCH_MODEL=$M/model.onnx ENGRAM_INT8_MODEL=$I8/model.onnx
what=${1:-all}
run() { go test -count=1 -run "$1" -v -timeout 90m ./onnx/; }
case $what in parity|all) run 'TestInt8ParityLarge$' ;; esac
case $what in torch|all) ENGRAM_SIDEBYSIDE=1 ENGRAM_SIDEBYSIDE_INT8=$I8/model.onnx run 'TestSideBySideTorch$' ;; esac
case $what in options|all) ENGRAM_OPTIONS_BENCH=1 run 'TestCPUOptions$' ;; esac
case $what in ingest|all) ENGRAM_INGEST_BENCH=1 run 'TestIngestThroughput$' ;; esac
