#!/usr/bin/env bash
# Builds the Weaviate server the scale-out tests run against, once, into the
# project cache, and prints the binary's path:
#   ${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}/weaviate/v1.39.3/weaviate-server
# The tests start and stop the servers themselves (internal/weaviatetest),
# given the path in ENGRAM_WEAVIATE_BIN. v1.39.4 and later do not build here
# (a dependency version is refused by the module proxy), hence the pin.
# A fresh build takes 6-10 minutes on two cores.
set -euo pipefail
VERSION=v1.39.3
cache_root="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}"
dir="$cache_root/weaviate/$VERSION"
bin="$dir/weaviate-server"
if [ ! -x "$bin" ]; then
  (umask 077 && mkdir -p "$dir")
  echo "weaviate: building weaviate-server $VERSION into $dir (a few minutes)" >&2
  # Built outside the project module so its dependencies do not mix with ours.
  (cd "$(mktemp -d)" && GOFLAGS=-buildvcs=false GOBIN="$dir" go install "github.com/weaviate/weaviate/cmd/weaviate-server@$VERSION") >&2
fi
echo "$bin"
