#!/usr/bin/env bash
# Installs what the tests and the default run need and is safe to run again:
# Go modules, the ONNX Runtime shared library in the project cache, the npm
# packages of the TypeScript client's tests (scripts/npm-clients.sh), and
# Debian's chromium (+ chromium-driver) for the dashboard's browser test.
#
# ONNX Runtime: libonnxruntime.so is taken from the npm tarball of
# onnxruntime-node (npm pack only: no install scripts run) and put at
#   ${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}/onnxruntime/$ORT_VERSION/libonnxruntime.so
# which is where the onnx package looks when neither an option nor
# ENGRAM_ONNXRUNTIME_LIB names a library. When the file is already there this
# step does nothing. Without npm or the registry, it warns and goes on (the
# ONNX tests then skip and say why), except under CI=true, where it fails:
# CI must run the real ONNX Runtime path.
set -euo pipefail
cd "$(dirname "$0")/.."

go mod download

ORT_VERSION=1.30.0
cache_root="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}"
ort_dir="$cache_root/onnxruntime/$ORT_VERSION"
ort_lib="$ort_dir/libonnxruntime.so"

install_ort() {
  case "$(uname -s)/$(uname -m)" in
    Linux/x86_64) arch=x64 ;;
    Linux/aarch64) arch=arm64 ;;
    *) echo "setup: no onnxruntime-node build for $(uname -s)/$(uname -m); set ENGRAM_ONNXRUNTIME_LIB" >&2; return 1 ;;
  esac
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: npm not found; install npm (apt-get install -y npm) to fetch ONNX Runtime" >&2
    return 1
  fi
  local tmp
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  (cd "$tmp" && npm pack --silent "onnxruntime-node@$ORT_VERSION" >/dev/null) || {
    echo "setup: npm pack onnxruntime-node@$ORT_VERSION failed" >&2
    return 1
  }
  local member
  member=$(tar -tzf "$tmp"/onnxruntime-node-*.tgz | grep -E "^package/bin/napi-v[0-9]+/linux/$arch/libonnxruntime\.so(\.[0-9]+)*$" | head -n1)
  if [ -z "$member" ]; then
    echo "setup: no linux/$arch libonnxruntime.so in onnxruntime-node@$ORT_VERSION" >&2
    return 1
  fi
  tar -xzf "$tmp"/onnxruntime-node-*.tgz -C "$tmp" "$member"
  (umask 077 && mkdir -p "$ort_dir")
  # Copy under a temporary name, then rename: an interrupted run never leaves
  # a truncated library where the loader looks.
  install -m 0600 "$tmp/$member" "$ort_lib.tmp"
  mv -f "$ort_lib.tmp" "$ort_lib"
  echo "setup: ONNX Runtime $ORT_VERSION -> $ort_lib"
}

if [ ! -s "$ort_lib" ] && ! install_ort; then
  if [ "${CI:-}" = "true" ]; then
    echo "setup: ONNX Runtime $ORT_VERSION could not be installed; CI needs it (see the messages above)" >&2
    exit 1
  fi
  echo "setup: WARNING: ONNX Runtime not installed; ONNX tests will skip" >&2
fi

# The TypeScript client's tests (go test ./clients/typescript) build with the npm
# packages pinned in clients/typescript/package-lock.json; scripts/npm-clients.sh
# installs them into clients/typescript/node_modules (npm ci --ignore-scripts, cache
# beside ONNX Runtime's; nothing when already installed). Without node and npm the
# test skips, except under CI=true, where this step fails.
if ! bash scripts/npm-clients.sh; then
  if [ "${CI:-}" = "true" ]; then
    echo "setup: the TypeScript client's npm packages could not be installed; CI needs them" >&2
    exit 1
  fi
  echo "setup: WARNING: the TypeScript client's npm packages are not installed; its tests will skip or install them" >&2
fi

# The dashboard test drives a real headless Chromium (cmd/memctl,
# TestDashboardInBrowser). Installed with apt-get when missing (as root, or
# through sudo -n); without it the test skips, except under CI=true.
install_chromium() {
  if command -v chromium >/dev/null 2>&1; then
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: no apt-get; install chromium for the dashboard test" >&2
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    sudo="sudo -n"
  fi
  $sudo apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null || {
    echo "setup: apt-get install chromium chromium-driver failed" >&2
    return 1
  }
  echo "setup: chromium -> $(command -v chromium)"
}

if ! install_chromium; then
  if [ "${CI:-}" = "true" ]; then
    echo "setup: chromium could not be installed; CI needs it for the dashboard test" >&2
    exit 1
  fi
  echo "setup: WARNING: chromium not installed; the dashboard browser test will skip" >&2
fi
