#!/usr/bin/env bash
# Issue 18's CPU measurements on the BGE-M3-sized random model, each interleaved within one
# process (see the test comments): int8 parity and query speed, engram fp32/int8 against PyTorch
# fp32, ORT's CPU settings one by one, and ingest throughput through the memory layer.
#
#   bash scripts/onnx/side_by_side.sh [parity|torch|options|ingest|all]   (default all)
#
# Makes /tmp/bge-m3-random (export_tiny.py, 2.27 GB) and its rewrites by quantize_int8.py when
# missing (about 3-5 minutes each under load): $I8 (the default int8 form, DynamicQuantizeMatMul
# with 7-bit weights), $I8S8 (the same with full-range 8-bit weights, exact only on VNNI CPUs)
# and $NB8 (MatMulNBits, 8-bit weights in blocks of 32, int8 compute: accuracy_level 4). parity
# runs $PARITY (comma-separated; default all three), ingest $INGEST (default $I8,$I8S8), torch
# $SIDE_INT8 (default $I8) next to fp32.
#
# Needs Debian's python3-torch and python3-onnx, and an optimized BLAS for PyTorch: Debian's
# torch (BLAS_INFO=generic) calls libblas.so.3, the unoptimized reference BLAS unless another is
# installed, which made PyTorch 5x slower than itself (bench/results/onnx.md). Run as root, this
# script installs what is missing (python3-torch python3-onnx libopenblas0-openmp: OpenMP, like
# torch); otherwise it names the packages and stops. On a shared machine:
# nice -n 10 bash scripts/onnx/side_by_side.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
pkgs="python3-torch python3-onnx libopenblas0-openmp"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
  else
    echo "side_by_side.sh: install$missing (apt-get install -y$missing)" >&2
    exit 1
  fi
fi
M=${M:-/tmp/bge-m3-random}
I8=${I8:-/tmp/bge-m3-random-int8}
I8S8=${I8S8:-/tmp/bge-m3-random-int8-s8}
NB8=${NB8:-/tmp/bge-m3-random-nbits8}
q=scripts/onnx/quantize_int8.py
[ -f "$M/model.onnx" ] || /usr/bin/python3 scripts/onnx/export_tiny.py --preset bge-m3 --out "$M"
[ -f "$I8/model.onnx" ] || /usr/bin/python3 $q "$M/model.onnx" "$I8/model.onnx"
[ -f "$I8S8/model.onnx" ] || /usr/bin/python3 $q --weights s8 "$M/model.onnx" "$I8S8/model.onnx"
[ -f "$NB8/model.onnx" ] || /usr/bin/python3 $q --op nbits --bits 8 --block 32 "$M/model.onnx" "$NB8/model.onnx"
PARITY=${PARITY:-$I8/model.onnx,$I8S8/model.onnx,$NB8/model.onnx}
INGEST=${INGEST:-$I8/model.onnx,$I8S8/model.onnx}
SIDE_INT8=${SIDE_INT8:-$I8/model.onnx}
export ENGRAM_BENCH_MODEL=$M/model.onnx
what=${1:-all}
run() { go test -count=1 -run "$1" -v -timeout 90m ./onnx/; }
case $what in parity|all) ENGRAM_INT8_MODEL=$PARITY run 'TestInt8ParityLarge$' ;; esac
case $what in torch|all) ENGRAM_SIDEBYSIDE=1 ENGRAM_SIDEBYSIDE_INT8=$SIDE_INT8 run 'TestSideBySideTorch$' ;; esac
case $what in options|all) ENGRAM_OPTIONS_BENCH=1 run 'TestCPUOptions$' ;; esac
case $what in ingest|all) ENGRAM_INGEST_BENCH=1 ENGRAM_INT8_MODEL=$INGEST run 'TestIngestThroughput$' ;; esac
