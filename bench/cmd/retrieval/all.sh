#!/usr/bin/env bash
# Runs the retrieval benchmark on every text set in shared/datasets/text for each mode and
# prints one JSON line per run (the source of bench/results/retrieval.md).
# Usage: bash bench/cmd/retrieval/all.sh [DATASETS_DIR] [extra flags...]
set -euo pipefail
cd "$(dirname "$0")/../../.."
data=${1:-../shared/datasets/text}
shift || true
go build -o /tmp/engram-retrieval ./bench/cmd/retrieval
for set in locomo-dev scifact cranfield cisi rgb:en_ rgb:zh_; do
  dir=${set%%:*}; prefix=""
  [[ $set == *:* ]] && prefix=${set#*:}
  for mode in "-mode bm25" "-mode vector" "-mode hybrid -fusion rrf" "-mode hybrid -fusion weighted"; do
    /tmp/engram-retrieval -data "$data/$dir" -prefix "$prefix" $mode "$@"
  done
done
