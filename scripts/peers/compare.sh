#!/usr/bin/env bash
# Peer comparison in one command:
#
#   bash scripts/peers/compare.sh DATASET [M] [EFC] [EFLIST] [THREADS]
#
# DATASET is sift10k, glove100-10k, glove100-100k (from shared/datasets),
# synthetic-N (N clustered 1024-d vectors from bench/cmd/synth, 1000
# queries) or synthetic100-N (the same at 100-d). Runs engram
# (bench/cmd/ann), hnswlib C++ (Debian headers, g++ -O3 -march=native),
# python3-hnswlib, FAISS IndexHNSWFlat and IndexHNSWSQ(QT_8bit) with the
# same M, efConstruction and ef sweep, one after another, then writes
# bench/results/ann/DATASET.{jsonl,md,png}. Installs the Debian packages
# it needs if they are missing. IMPLS="engram hnswlib-cpp" reruns only
# those and keeps the other lines of the results.
set -euo pipefail

# The body is one function, parsed whole before it runs, so editing this
# file while a comparison runs cannot change the running one.
main() {
  cd "$(dirname "$0")/../.."
  source scripts/peers/datasets.sh
  local ds=${1:?usage: compare.sh DATASET [M] [EFC] [EFLIST] [THREADS]}
  m=${2:-16}
  efc=${3:-200}
  efs=${4:-10,20,40,80,120,200,400}
  threads=${5:-1}
  py=/usr/bin/python3 # the python3 on PATH may not see Debian packages
  cache=${ENGRAM_BENCH_CACHE:-/tmp/engram-bench}
  out=bench/results/ann
  mkdir -p -m 0700 "$cache"
  mkdir -p "$out"

  if ! [ -f /usr/include/hnswlib/hnswlib.h ] || ! $py -c 'import hnswlib, faiss, matplotlib' 2>/dev/null; then
    apt-get install -y libhnswlib-dev python3-hnswlib python3-faiss python3-matplotlib >&2
  fi

  resolve_dataset "$ds" "$cache" || exit 2

  go build -o "$cache/ann" ./bench/cmd/ann
  g++ -O3 -march=native -std=c++17 -pthread -w -o "$cache/hnswlib_bench" scripts/peers/hnswlib_bench.cpp

  # IMPLS picks a subset to (re)run; their lines replace earlier ones in the
  # results file and the other implementations' lines are kept.
  impls=${IMPLS:-engram hnswlib-cpp hnswlib-py faiss-hnswflat faiss-hnswsq8}
  res=$out/$ds.jsonl
  new=$cache/$ds.new.jsonl
  : > "$new"
  for impl in $impls; do
    echo "== $impl" >&2
    case $impl in
      engram)
        "$cache/ann" -base "$base" -query "$query" -gt "$gt" -metric $metric -m $m -efc $efc -ef $efs -threads $threads |
          sed "s/\"dataset\":\"[^\"]*\"/\"dataset\":\"$ds\"/" | tee -a "$new" ;;
      hnswlib-cpp)
        "$cache/hnswlib_bench" "$base" "$query" "$gt" $metric $m $efc $efs $threads "$ds" | tee -a "$new" ;;
      hnswlib-py|faiss-hnswflat|faiss-hnswsq8)
        env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $py scripts/peers/peers.py $impl "$base" "$query" "$gt" $metric $m $efc $efs $threads "$ds" | tee -a "$new" ;;
      *) echo "unknown implementation $impl" >&2; exit 2 ;;
    esac
  done
  if [ -n "${IMPLS:-}" ] && [ -f "$res" ]; then
    pattern=$(echo $impls | sed 's/ /|/g')
    grep -Ev "\"impl\": ?\"($pattern)\"" "$res" >> "$new" || true
  fi
  mv "$new" "$res"

  header=$cache/$ds.header.md
  {
    echo "# ANN peer comparison: $ds"
    echo
    echo "Command: \`bash scripts/peers/compare.sh $ds $m $efc $efs $threads\` (finished $(date -u +%Y-%m-%dT%H:%MZ), engram at $(git rev-parse --short HEAD))."
    if [ -n "${IMPLS:-}" ]; then
      echo
      echo "This file's last run was \`IMPLS=\"$impls\"\`: only those lines were measured then; the others come from an earlier full run of the same command."
    fi
    echo
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(simd), $(free -g | awk '/Mem:/{print $2}') GiB RAM; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine makes wall-clock numbers noisy). Throughput and latency are therefore compared in CPU time of the querying thread (CLOCK_THREAD_CPUTIME_ID), which other work disturbs far less (caches are still shared); compare implementations by the ratios of this one run."
    echo
    echo "Peers: hnswlib $(dpkg-query -W -f='${Version}' libhnswlib-dev) headers with g++ -O3 -march=native; python3-hnswlib $(dpkg-query -W -f='${Version}' python3-hnswlib); FAISS $(dpkg-query -W -f='${Version}' python3-faiss). Queries one at a time on one thread; -threads $threads for the build. bytes/vector: for engram the resident search structures (int8 codes + graph; float32 vectors for rescoring are reported separately and may stay on disk), for the peers the growth of process RSS during the build / n (their whole index)."
  } > "$header"
  $py scripts/peers/report.py "$res" "$out/$ds.md" "$out/$ds.png" "$header"
  echo "wrote $out/$ds.md $out/$ds.png" >&2
}

main "$@"
exit
