# Sourced by compare.sh and rounds.sh (bash). simd names the widest integer
# SIMD the CPU offers (what the int8 kernels use); resolve_dataset DS CACHE
# sets base, query, gt and metric for a data set name (see compare.sh),
# generating synthetic sets into CACHE and unpacking gzipped bases there
# (the C++ reader takes plain files).

simd() {
  if grep -qw avx512_vnni /proc/cpuinfo; then echo "AVX-512 VNNI"
  elif grep -qw avx512bw /proc/cpuinfo; then echo "AVX-512"
  elif grep -qw avx2 /proc/cpuinfo; then echo "AVX2, no AVX-512"
  else echo "no AVX2"; fi
}

resolve_dataset() {
  local ds=$1 cache=$2 datasets n dim dir
  datasets=$(go env GOMOD | xargs dirname)/../shared/datasets
  datasets=${ENGRAM_DATASETS:-$datasets}
  case "$ds" in
    sift10k) base=$datasets/sift10k/base.fvecs.gz; query=$datasets/sift10k/query.fvecs; gt=$datasets/sift10k/groundtruth.ivecs; metric=l2 ;;
    glove100-10k) base=$datasets/glove100/base_10k.fvecs; query=$datasets/glove100/query.fvecs; gt=$datasets/glove100/groundtruth_10k.ivecs; metric=cosine ;;
    glove100-100k) base=$datasets/glove100/base_100k.fvecs.gz; query=$datasets/glove100/query.fvecs; gt=$datasets/glove100/groundtruth_100k.ivecs; metric=cosine ;;
    synthetic-*|synthetic100-*)
      n=${ds#*-}
      dim=1024
      [[ $ds == synthetic100-* ]] && dim=100
      dir=$cache/$ds
      if ! [ -f "$dir/groundtruth.ivecs" ]; then
        go run ./bench/cmd/synth -n "$n" -dim "$dim" -queries 1000 -out "$dir" >&2
      fi
      base=$dir/base.fvecs; query=$dir/query.fvecs; gt=$dir/groundtruth.ivecs; metric=cosine ;;
    *) echo "unknown dataset $ds" >&2; return 2 ;;
  esac
  if [[ $base == *.gz ]]; then
    local plain=$cache/$ds.base.fvecs
    [ -f "$plain" ] || gunzip -c "$base" > "$plain"
    base=$plain
  fi
}
