#!/usr/bin/env bash
# Measures the ONNX embedder on a GPU machine with Go and network: embeddings/s
# (batches of SciFact abstracts) and single-query latency on the CUDA execution
# provider. Not run in CI. (Without Go or network: gpu_bundle.sh here, then
# gpu_device_run.sh there.)
#
# Libraries, all in one directory (ORT loads providers from the directory of
# libonnxruntime.so; npm pack only, no install scripts):
#   libonnxruntime.so   ORT core from scripts/setup.sh's cache (onnxruntime-node),
#                       built with CUDA support
#   libonnxruntime_providers_{shared,cuda,tensorrt}.so
#                       com.github.asus4.onnxruntime.linux-x64-gpu (ORT 1.29.0, CUDA 13)
# The asus4 core is not used: it is a CPU build (CreateCUDAProviderOptions
# answers "CUDA execution provider is not enabled in this build"). Core and
# providers are one release apart, so TestDevGPUParity (onnx/gpu_parity_test.go)
# first checks the GPU's vectors against the CPU's; the benchmarks run only if
# it passes. The CUDA provider also needs the CUDA 13 runtime, cuBLAS and
# cuDNN 9 on the loader path (system install or LD_LIBRARY_PATH).
#
# Usage: scripts/onnx/gpu_bench.sh [model.onnx]
#   model.onnx defaults to $ENGRAM_BENCH_MODEL, else a BGE-M3-sized random
#   model is generated with export_tiny.py (needs python3-torch, ~2.2 GB).
# Env: ORT_GPU_DIR (library directory), DEVICE (cuda | tensorrt; default cuda),
#      BENCHTIME (default 20x), ENGRAM_BENCH_MAXTOKENS (default 512).
set -euo pipefail
cd "$(dirname "$0")/../.."

PKG=com.github.asus4.onnxruntime.linux-x64-gpu
PKG_VERSION=0.4.9
ORT_VERSION=$(sed -n 's/^ORT_VERSION=//p' scripts/setup.sh)
: "${ORT_VERSION:?no ORT_VERSION in scripts/setup.sh}"
cache_root="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}"
core="$cache_root/onnxruntime/$ORT_VERSION/libonnxruntime.so"
gpu_dir="${ORT_GPU_DIR:-$cache_root/onnxruntime-gpu/$ORT_VERSION-asus4-$PKG_VERSION}"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || \
  echo "gpu_bench: nvidia-smi not found; the CUDA provider will likely fail" >&2

if [ ! -s "$gpu_dir/libonnxruntime_providers_cuda.so" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
  tar -xzf "$tmp/$PKG-$PKG_VERSION.tgz" -C "$tmp" package/Plugins/Linux/x64
  (umask 077 && mkdir -p "$gpu_dir")
  install -m 0700 "$tmp"/package/Plugins/Linux/x64/libonnxruntime_providers_*.so "$gpu_dir/"
fi
if [ ! -s "$gpu_dir/libonnxruntime.so" ]; then
  [ -s "$core" ] || scripts/setup.sh
  install -m 0700 "$core" "$gpu_dir/libonnxruntime.so"
fi

model="${1:-${ENGRAM_BENCH_MODEL:-}}"
if [ -z "$model" ]; then
  model=/tmp/engram-bge-m3-random/model.onnx
  [ -s "$model" ] || /usr/bin/python3 scripts/onnx/export_tiny.py --preset bge-m3 --out "$(dirname "$model")"
fi

export ENGRAM_ONNXRUNTIME_LIB="$gpu_dir/libonnxruntime.so" ENGRAM_BENCH_DEVICE="${DEVICE:-cuda}" ENGRAM_BENCH_MODEL="$model"
out=bench/results/onnx-gpu.txt
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo "# ENGRAM_ONNXRUNTIME_LIB=$ENGRAM_ONNXRUNTIME_LIB ENGRAM_BENCH_DEVICE=$ENGRAM_BENCH_DEVICE ENGRAM_BENCH_MODEL=$model"
  echo "# ENGRAM_PARITY=1 go test -run '^TestDevGPUParity\$' -v ./onnx/"
  ENGRAM_PARITY=1 go test -run '^TestDevGPUParity$' -v ./onnx/
  echo "# go test -run '^\$' -bench 'BenchmarkEmbed' -benchtime ${BENCHTIME:-20x} ./onnx/"
  go test -run '^$' -bench 'BenchmarkEmbed' -benchtime "${BENCHTIME:-20x}" ./onnx/
} 2>&1 | tee "$out"
echo "gpu_bench: results in $out"
