#!/usr/bin/env bash
# Installs what the TypeScript client's tests build and run with (clients/typescript:
# typescript, @types/node, @langchain/core, ai, zod) from its package-lock.json with
# `npm ci --ignore-scripts` (exact versions, integrity-checked, no install scripts run),
# into clients/typescript/node_modules, with the npm cache in
#   ${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}/npm
# Safe to run again: when node_modules was installed from the same lock file by the same
# node and npm (node_modules/.engram-installed says so) it does nothing. scripts/setup.sh
# runs it, and so does `go test ./clients/typescript` before it builds.
set -euo pipefail
cd "$(dirname "$0")/../clients/typescript"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "npm-clients: node and npm are needed (apt-get install -y nodejs npm)" >&2
  exit 1
fi

cache_root="${ENGRAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/engram}"
stamp_file=node_modules/.engram-installed
lock_sum=$( (sha256sum package-lock.json 2>/dev/null || shasum -a 256 package-lock.json) | cut -d' ' -f1)
want="$lock_sum node $(node --version) npm $(npm --version) $(uname -sm)"

installed() { [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$want" ]; }

if installed; then
  exit 0
fi

# One install at a time per checkout (npm ci removes node_modules first).
exec 9>.npm-install.lock
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if installed; then
  exit 0
fi

(umask 077 && mkdir -p "$cache_root/npm")
# --prefer-offline: what the cache holds is not fetched again.
npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error \
  --cache "$cache_root/npm" >/dev/null
echo "$want" >"$stamp_file"
echo "npm-clients: clients/typescript/node_modules installed from package-lock.json"
