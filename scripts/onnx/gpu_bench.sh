#!/usr/bin/env bash
# Measures the ONNX embedder on a GPU machine: embeddings/s (batches of SciFact
# abstracts) and single-query latency, on the CUDA execution provider.
# Prepared for a machine with an NVIDIA GPU; not run in CI.
#
# Route to the CUDA provider: the onnxruntime-node npm tarball is CPU-only, so
# the libraries come from two npm packages (npm pack only, no install scripts):
#   com.github.asus4.onnxruntime           Plugins/Linux/x64/libonnxruntime.so (ORT 1.29.0 core)
#   com.github.asus4.onnxruntime.linux-x64-gpu
#                                          Plugins/Linux/x64/libonnxruntime_providers_{shared,cuda,tensorrt}.so
# ORT loads provider libraries from the directory of libonnxruntime.so, so all
# four go in one directory. The CUDA provider also needs the CUDA 13 runtime,
# cuBLAS and cuDNN 9 on the loader path (system install or LD_LIBRARY_PATH).
#
# Usage: scripts/onnx/gpu_bench.sh [model.onnx]
#   model.onnx defaults to $ENGRAM_BENCH_MODEL, else a BGE-M3-sized random
#   model is generated with export_tiny.py (needs python3-torch, ~2.2 GB).
# Env: ORT_GPU_DIR (a directory that already holds the four libraries),
#      DEVICE (cuda | tensorrt; default cuda), BENCHTIME (default 20x),
#      ENGRAM_BENCH_MAXTOKENS (default 512).
set -euo pipefail
cd "$(dirname "$0")/../.."

PKG_VERSION=0.4.9
cache_root="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}"
gpu_dir="${ORT_GPU_DIR:-$cache_root/onnxruntime-gpu/asus4-$PKG_VERSION}"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || \
  echo "gpu_bench: nvidia-smi not found; the CUDA provider will likely fail" >&2

if [ ! -s "$gpu_dir/libonnxruntime_providers_cuda.so" ]; then
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "com.github.asus4.onnxruntime@$PKG_VERSION" \
                              "com.github.asus4.onnxruntime.linux-x64-gpu@$PKG_VERSION" >/dev/null)
  (umask 077 && mkdir -p "$gpu_dir")
  tar -xzf "$tmp/com.github.asus4.onnxruntime-$PKG_VERSION.tgz" -C "$tmp" package/Plugins/Linux/x64/libonnxruntime.so
  tar -xzf "$tmp/com.github.asus4.onnxruntime.linux-x64-gpu-$PKG_VERSION.tgz" -C "$tmp" \
    package/Plugins/Linux/x64/libonnxruntime_providers_shared.so \
    package/Plugins/Linux/x64/libonnxruntime_providers_cuda.so \
    package/Plugins/Linux/x64/libonnxruntime_providers_tensorrt.so
  install -m 0700 "$tmp"/package/Plugins/Linux/x64/*.so "$gpu_dir/"
fi

model="${1:-${ENGRAM_BENCH_MODEL:-}}"
if [ -z "$model" ]; then
  model=/tmp/engram-bge-m3-random/model.onnx
  [ -s "$model" ] || /usr/bin/python3 scripts/onnx/export_tiny.py --preset bge-m3 --out "$(dirname "$model")"
fi

out=bench/results/onnx-gpu.txt
{
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
  echo "# ENGRAM_ONNXRUNTIME_LIB=$gpu_dir/libonnxruntime.so ENGRAM_BENCH_DEVICE=${DEVICE:-cuda}" \
       "ENGRAM_BENCH_MODEL=$model go test -run '^$' -bench 'BenchmarkEmbed' -benchtime ${BENCHTIME:-20x} ./onnx/"
  ENGRAM_ONNXRUNTIME_LIB="$gpu_dir/libonnxruntime.so" ENGRAM_BENCH_DEVICE="${DEVICE:-cuda}" \
  ENGRAM_BENCH_MODEL="$model" go test -run '^$' -bench 'BenchmarkEmbed' -benchtime "${BENCHTIME:-20x}" ./onnx/
} 2>&1 | tee "$out"
echo "gpu_bench: results in $out"
