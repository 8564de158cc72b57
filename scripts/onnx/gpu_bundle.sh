#!/usr/bin/env bash
# Rebuilds .devgpu/ from nothing: the bundle scripts/onnx/gpu_device_run.sh
# benchmarks from on a GPU machine that has no Go and no network (run's carry
# ".devgpu"). Needs Go with cgo, npm and the registry, python3, xz, and
# ../shared/datasets (or $ENGRAM_DATASETS). Safe to run again: the bundle is
# built in a temporary directory and replaces .devgpu/ only when complete and
# small enough.
#   libonnxruntime.so.xz                   ORT core from scripts/setup.sh's cache (onnxruntime-node);
#                                          built with CUDA support, it loads the providers from its own
#                                          directory (the asus4 core is a CPU build: not used)
#   libonnxruntime_providers_shared.so.xz  com.github.asus4.onnxruntime.linux-x64-gpu (npm pack only)
#   libonnxruntime_providers_cuda.so.xz    same package, CUDA 13, slimmed to sm_90 by slim_cuda_provider.py
#   onnx.test.xz                           go test -c ./onnx (with TestDevGPUParity)
#   scifact/corpus.jsonl.gz                the first 512 SciFact abstracts
#   README.txt, SHA256SUMS
# Usage: scripts/onnx/gpu_bundle.sh   Env: KEEP_ARCH (cubin arch kept; default 90), MAX_MIB (52).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
PKG=com.github.asus4.onnxruntime.linux-x64-gpu
PKG_VERSION=0.4.9
KEEP_ARCH=${KEEP_ARCH:-90}
MAX_MIB=${MAX_MIB:-52}
DOCS=512
ORT_VERSION=$(sed -n 's/^ORT_VERSION=//p' scripts/setup.sh)
: "${ORT_VERSION:?no ORT_VERSION in scripts/setup.sh}"
ort_lib="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}/onnxruntime/$ORT_VERSION/libonnxruntime.so"
datasets=${ENGRAM_DATASETS:-$(dirname "$(go env GOMOD)")/../shared/datasets}
corpus=$datasets/text/scifact/corpus.jsonl.gz

[ -s "$ort_lib" ] || scripts/setup.sh
[ -s "$ort_lib" ] || { echo "gpu_bundle: no ONNX Runtime core at $ort_lib" >&2; exit 1; }
[ -s "$corpus" ] || { echo "gpu_bundle: no SciFact corpus at $corpus" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stage=$tmp/bundle
mkdir -p "$stage/scifact"

echo "gpu_bundle: npm pack $PKG@$PKG_VERSION"
(cd "$tmp" && npm pack --silent "$PKG@$PKG_VERSION" >/dev/null)
plugins=package/Plugins/Linux/x64
tar -xzf "$tmp/$PKG-$PKG_VERSION.tgz" -C "$tmp" \
  "$plugins/libonnxruntime_providers_shared.so" "$plugins/libonnxruntime_providers_cuda.so"
python3 scripts/onnx/slim_cuda_provider.py --keep "$KEEP_ARCH" \
  "$tmp/$plugins/libonnxruntime_providers_cuda.so" "$tmp/libonnxruntime_providers_cuda.so"
install -m 0755 "$ort_lib" "$tmp/libonnxruntime.so"
install -m 0755 "$tmp/$plugins/libonnxruntime_providers_shared.so" "$tmp/libonnxruntime_providers_shared.so"

echo "gpu_bundle: go test -c ./onnx"
CGO_ENABLED=1 go test -c -ldflags='-s -w' -o "$tmp/onnx.test" ./onnx
"$tmp/onnx.test" -test.list '^TestDevGPUParity$' | grep -qx TestDevGPUParity ||
  { echo "gpu_bundle: onnx.test lacks TestDevGPUParity" >&2; exit 1; }
glibc=$(grep -ao 'GLIBC_[0-9.]*' "$tmp/onnx.test" | sort -uV | tail -n1)

libs="libonnxruntime.so libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so"
echo "gpu_bundle: xz"
for f in $libs onnx.test; do
  xz -9e -T0 -c "$tmp/$f" > "$stage/$f.xz"
done
# head closes the pipe early; only the line count matters.
(set +o pipefail; gzip -dc "$corpus" | head -n "$DOCS") | gzip -9n > "$stage/scifact/corpus.jsonl.gz"
[ "$(gzip -dc "$stage/scifact/corpus.jsonl.gz" | wc -l)" -eq "$DOCS" ]

{
  echo "GPU benchmark bundle for scripts/onnx/gpu_device_run.sh (git-ignored; carry \".devgpu\")."
  echo "Made by scripts/onnx/gpu_bundle.sh, $(date -u +%FT%TZ)."
  echo
  echo "libonnxruntime.so.xz                   ORT $ORT_VERSION core from scripts/setup.sh (onnxruntime-node npm);"
  echo "                                       built with CUDA support: loads providers from its own directory."
  echo "libonnxruntime_providers_shared.so.xz  $PKG@$PKG_VERSION, unchanged"
  echo "libonnxruntime_providers_cuda.so.xz    same package, CUDA 13; slim_cuda_provider.py --keep $KEEP_ARCH zero-filled"
  echo "                                       the other cubin payloads (headers and layout unchanged)"
  echo "onnx.test.xz                           CGO_ENABLED=1 go test -c -ldflags='-s -w' ./onnx"
  echo "                                       ($(go version | cut -d' ' -f3), needs $glibc); has TestDevGPUParity"
  echo "scifact/corpus.jsonl.gz                first $DOCS lines of shared/datasets/text/scifact/corpus.jsonl.gz"
  echo
  echo "Not used: the asus4 core libonnxruntime.so is a CPU build; its CreateCUDAProviderOptions"
  echo "answers \"CUDA execution provider is not enabled in this build\"."
  echo
  echo "SHA-256 after decompression:"
  (cd "$tmp" && sha256sum $libs onnx.test)
} > "$stage/README.txt"
(cd "$stage" && find . -type f | LC_ALL=C sort | xargs sha256sum) > "$tmp/SHA256SUMS"
mv "$tmp/SHA256SUMS" "$stage/SHA256SUMS"

bytes=$(find "$stage" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
(cd "$stage" && find . -type f -printf '%10s  %p\n' | LC_ALL=C sort -k2)
echo "gpu_bundle: total $bytes bytes ($((bytes / 1048576)) MiB; limit $MAX_MIB MiB)"
if [ "$bytes" -gt $((MAX_MIB * 1048576)) ]; then
  echo "gpu_bundle: bundle over $MAX_MIB MiB; .devgpu/ left as it was" >&2
  exit 1
fi

rm -rf "$ROOT/.devgpu"
mv "$stage" "$ROOT/.devgpu"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.devgpu/' "$exclude" 2>/dev/null || echo '/.devgpu/' >> "$exclude"
echo "gpu_bundle: wrote $ROOT/.devgpu"
