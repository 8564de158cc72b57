#!/usr/bin/env bash
# The project's test command (README, .ci/run): installs what the tests need,
# then gofmt, go vet, staticcheck, the full test suite, and the race detector in -short mode.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# The scale-out tests run against real Weaviate servers, built once into the cache.
if [ -z "${ENGRAM_WEAVIATE_BIN:-}" ]; then
  ENGRAM_WEAVIATE_BIN=$(bash scripts/weaviate.sh)
  export ENGRAM_WEAVIATE_BIN
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

echo "== go test"
go test -count=1 -timeout 40m ./...

echo "== go test -race -short"
go test -count=1 -race -short -timeout 40m ./...
