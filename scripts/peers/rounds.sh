#!/usr/bin/env bash
# engram against hnswlib C++ on the same saved indexes, over many processes:
#
#   bash scripts/peers/rounds.sh DATASET EFLIST [ROUNDS] [M] [EFC] [THREADS]
#
# Builds each library's index of DATASET once (cached in
# $ENGRAM_BENCH_CACHE/rounds/; FRESH=1 rebuilds them; THREADS build
# threads), then searches the two saved indexes in ROUNDS (default 10)
# rounds of one process each, engram first in odd rounds and hnswlib first
# in even ones, every ef of EFLIST in each process. On a shared virtual
# machine a process's throughput varies by up to 40% with where its memory
# lands while staying steady within the process, so the one process of
# each that compare.sh runs can put the ratio anywhere in that band; the
# medians over rounds cannot. Writes bench/results/ann/DATASET-rounds.{jsonl,md}:
# per ef, each library's recall@10 and median queries per CPU second of the
# querying thread, the ratio of the medians and the range of the per-round
# ratios. DATASET names as in compare.sh.
set -euo pipefail

main() {
  cd "$(dirname "$0")/../.."
  source scripts/peers/datasets.sh
  local ds=${1:?usage: rounds.sh DATASET EFLIST [ROUNDS] [M] [EFC] [THREADS]}
  local efs=${2:?usage: rounds.sh DATASET EFLIST [ROUNDS] [M] [EFC] [THREADS]}
  local rounds=${3:-10} m=${4:-16} efc=${5:-200} threads=${6:-1}
  local py=/usr/bin/python3 cache=${ENGRAM_BENCH_CACHE:-/tmp/engram-bench} out=bench/results/ann
  mkdir -p -m 0700 "$cache" "$cache/rounds"
  mkdir -p "$out"
  if ! [ -f /usr/include/hnswlib/hnswlib.h ]; then
    apt-get install -y libhnswlib-dev >&2
  fi
  resolve_dataset "$ds" "$cache" || exit 2
  go build -o "$cache/ann" ./bench/cmd/ann
  g++ -O3 -march=native -std=c++17 -pthread -w -o "$cache/hnswlib_bench" scripts/peers/hnswlib_bench.cpp

  local graph=$cache/rounds/$ds-m$m-efc$efc.engram idx=$cache/rounds/$ds-m$m-efc$efc.hnswlib
  if [ -n "${FRESH:-}" ]; then rm -f "$graph" "$graph.rows" "$idx"; fi
  local built=""
  if ! [ -f "$graph" ] || ! [ -f "$idx" ]; then built=" (built in this run)"; fi
  engram() {
    "$cache/ann" -base "$base" -query "$query" -gt "$gt" -metric $metric -m $m -efc $efc -threads $threads \
      -graph "$graph" -ef "$1" | sed "s/\"dataset\":\"[^\"]*\"/\"dataset\":\"$ds\"/"
  }
  hnswlib() {
    "$cache/hnswlib_bench" "$base" "$query" "$gt" $metric $m $efc "$1" $threads "$ds" "$idx"
  }
  # Build (or load) both once, at the first ef only.
  echo "== indexes" >&2
  engram "${efs%%,*}" > /dev/null
  hnswlib "${efs%%,*}" > /dev/null
  local res=$out/$ds-rounds.jsonl tmp=$cache/$ds-rounds.jsonl
  : > "$tmp"
  for r in $(seq "$rounds"); do
    echo "== round $r of $rounds" >&2
    local order="engram hnswlib"
    if (( r % 2 == 0 )); then order="hnswlib engram"; fi
    for impl in $order; do
      $impl "$efs" | sed "s/^{/{\"round\":$r,/" >> "$tmp"
    done
  done
  mv "$tmp" "$res"
  local header=$cache/$ds-rounds.header.md
  {
    echo "# engram against hnswlib, $ds, over $rounds rounds"
    echo
    echo "Command: \`bash scripts/peers/rounds.sh $ds $efs $rounds $m $efc $threads\` (finished $(date -u +%Y-%m-%dT%H:%MZ), engram at $(git rev-parse --short HEAD); indexes $(basename "$graph") and $(basename "$idx")$built)."
    echo
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(simd), $(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). hnswlib $(dpkg-query -W -f='${Version}' libhnswlib-dev 2>/dev/null || echo '?') headers, g++ -O3 -march=native. M=$m, efConstruction=$efc; queries one at a time on one thread, throughput in queries per CPU second of that thread."
  } > "$header"
  $py scripts/peers/rounds_report.py "$res" "$out/$ds-rounds.md" "$header"
  echo "wrote $out/$ds-rounds.md" >&2
}

main "$@"
exit
