#!/usr/bin/env bash
# Benchmarks the ONNX embedder on the CUDA execution provider on a GPU machine
# that has no Go toolchain and no network, from a bundle that scripts/onnx/gpu_bundle.sh
# builds elsewhere in .devgpu/ (git-ignored, carried next to the working tree):
#   libonnxruntime.so.xz                   ORT 1.30.0 core from onnxruntime-node (scripts/setup.sh's);
#                                          built with CUDA support, it loads the providers below.
#                                          (The asus4 1.29.0 core is a CPU build: CreateCUDAProviderOptions
#                                          answers "CUDA execution provider is not enabled in this build".)
#   libonnxruntime_providers_shared.so.xz  asus4 npm 0.4.9 (ORT 1.29.0; see gpu_bench.sh)
#   libonnxruntime_providers_cuda.so.xz    asus4 npm 0.4.9, CUDA 13, slimmed to sm_90 by slim_cuda_provider.py
#   onnx.test.xz                           go test -c ./onnx (TestDevGPUParity: onnx/gpu_parity_test.go)
#   scifact/corpus.jsonl.gz                the first 512 SciFact abstracts (the bench reads
#                                          shared/datasets/text/scifact/corpus.jsonl.gz above onnx/)
# The core and the CUDA provider are one release apart, so TestDevGPUParity compares
# CUDA's vectors with the CPU's before the numbers are trusted.
# Steps: GPU and library report, libraries into $ORT_DIR, CUDA 13 / cuDNN pip
# libraries onto LD_LIBRARY_PATH, a BGE-M3-sized random model (export_tiny.py,
# else a numpy + onnx.helper graph of the same shape), then CUDA smoke and parity
# checks, BenchmarkEmbed and BenchmarkEmbedQuery on cuda and, for comparison, on
# cpu (same ORT core, $CPU_THREADS threads).
# Optional steps may fail; each one's status is printed and summed up at the end.
# Every step runs under timeout within a total budget of $TOTAL_S seconds.
#
# Usage (from anywhere): bash scripts/onnx/gpu_device_run.sh
# Output: $OUT/gpu_bench.txt (OUT defaults to bench/results/tmp), also on stdout.
# Env: PY (python with torch + onnx; default /opt/torch/.venv/bin/python3, else python3),
#      ORT_DIR (/tmp/ortgpu), MODEL_DIR (/tmp/bge-m3-random), MODEL_PRESET (bge-m3),
#      GPU_TEXTS (128), GPU_BENCHTIME (5x), QUERY_BENCHTIME (200x), CPU_TEXTS (16),
#      CPU_BENCHTIME (1x), CPU_QUERY_BENCHTIME (20x), CPU_THREADS (nproc), TOTAL_S (400),
#      FORCE_FALLBACK_MODEL (1: skip export_tiny.py), BUNDLE (.devgpu).
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
T0=$SECONDS
TOTAL_S=${TOTAL_S:-400}
BUNDLE=$(cd "${BUNDLE:-.devgpu}" 2>/dev/null && pwd) || BUNDLE=$ROOT/.devgpu
ORT_DIR=${ORT_DIR:-/tmp/ortgpu}
MODEL_DIR=${MODEL_DIR:-/tmp/bge-m3-random}
MODEL_PRESET=${MODEL_PRESET:-bge-m3}
GPU_TEXTS=${GPU_TEXTS:-128}
GPU_BENCHTIME=${GPU_BENCHTIME:-5x}
QUERY_BENCHTIME=${QUERY_BENCHTIME:-200x}
CPU_TEXTS=${CPU_TEXTS:-16}
CPU_BENCHTIME=${CPU_BENCHTIME:-1x}
CPU_QUERY_BENCHTIME=${CPU_QUERY_BENCHTIME:-20x}
CPU_THREADS=${CPU_THREADS:-$(nproc)}
OUT=${OUT:-$ROOT/bench/results/tmp}
mkdir -p "$OUT"
LOG=$OUT/gpu_bench.txt
if [ -z "${PY:-}" ]; then
  if [ -x /opt/torch/.venv/bin/python3 ]; then PY=/opt/torch/.venv/bin/python3; else PY=python3; fi
fi
TEST_BIN=$ORT_DIR/onnx.test
LIBS="libonnxruntime.so libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so"
SUMMARY=()

# left: seconds of the total budget left.
left() { echo $((TOTAL_S - (SECONDS - T0))); }
# tmo MAX RESERVE: a step's timeout, at most MAX, leaving RESERVE seconds for later steps.
tmo() { local t=$(($(left) - $2)); [ "$t" -gt "$1" ] && t=$1; echo "$t"; }
# step NAME TIMEOUT CMD...: runs CMD (a program or one of the functions below, through
# bash -c: they and the settings are exported) under timeout, prints and records its status.
step() {
  local name=$1 t=$2 rc start=$SECONDS; shift 2
  echo
  echo "=== [t+$((SECONDS - T0))s] $name (timeout ${t}s): $*"
  if [ "$t" -lt 10 ]; then
    echo "=== $name: SKIPPED (time budget spent)"; SUMMARY+=("$name: skipped (time)"); return 99
  fi
  timeout -k 10 "$t" bash -c '"$@"' step "$@"; rc=$?
  local st=ok; [ $rc -eq 124 ] && st="TIMEOUT" || { [ $rc -ne 0 ] && st="FAILED rc=$rc"; }
  echo "=== $name: $st ($((SECONDS - start))s)"
  SUMMARY+=("$name: $st ($((SECONDS - start))s)")
  return $rc
}

info() {
  date -u +%FT%TZ; uname -a; echo "nproc=$(nproc)"; free -g | head -2; df -h /tmp | tail -1
  ldd --version 2>&1 | head -1
  echo "repo: $ROOT  bundle: $BUNDLE  out: $OUT  python: $PY"
  ls -l "$BUNDLE" "$BUNDLE"/scifact 2>&1
  command -v nvidia-smi >/dev/null || { echo "nvidia-smi not found"; return 1; }
  nvidia-smi
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,clocks.max.sm --format=csv
}

unpack() {
  mkdir -p "$ORT_DIR" || return 1
  local f rc=0
  for f in $LIBS; do
    if [ -s "$BUNDLE/$f.xz" ]; then
      xz -dc "$BUNDLE/$f.xz" > "$ORT_DIR/$f.tmp" && chmod 755 "$ORT_DIR/$f.tmp" && mv "$ORT_DIR/$f.tmp" "$ORT_DIR/$f" || rc=1
    else
      echo "missing $BUNDLE/$f.xz"; rc=1
    fi
  done
  if [ -s "$BUNDLE/onnx.test.xz" ]; then
    xz -dc "$BUNDLE/onnx.test.xz" > "$TEST_BIN" && chmod 755 "$TEST_BIN" || rc=1
  elif [ -s "$BUNDLE/onnx.test" ]; then
    cp "$BUNDLE/onnx.test" "$TEST_BIN" && chmod 755 "$TEST_BIN" || rc=1
  else
    echo "missing $BUNDLE/onnx.test.xz"; rc=1
  fi
  ls -l "$ORT_DIR"; sha256sum "$ORT_DIR"/*.so "$TEST_BIN"
  return $rc
}

python_info() {
  "$PY" -c 'import sys; print(sys.version)'
  "$PY" -c 'import onnxruntime as o; print(o.__version__, o.get_available_providers())'
  "$PY" -c 'import onnx; print("onnx", onnx.__version__)'
  "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")'
  command -v nvcc >/dev/null && nvcc --version | tail -2
  return 0
}

# CUDA 13 and cuDNN libraries from the python's pip packages (site-packages/nvidia/*/lib),
# then a system toolkit, then the driver's libcuda from the default loader path.
cuda_libs() {
  local site dirs d
  site=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
  echo "site-packages: ${site:-?}"
  dirs=$( { [ -n "$site" ] && [ -d "$site/nvidia" ] && find "$site/nvidia" -name 'lib*.so*' -printf '%h\n'
            for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && echo "$d"; done; } | awk '!seen[$0]++')
  LD_LIBRARY_PATH=$ORT_DIR
  for d in $dirs; do LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; done
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH${SAVED_LD_LIBRARY_PATH:+:$SAVED_LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  export CUDA_MODULE_LOADING=${CUDA_MODULE_LOADING:-LAZY}
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING"
  for d in $dirs; do ls "$d" | grep -E '^lib(cudart|cublas|cublasLt|curand|cudnn|cufft|nvrtc)\.so\.[0-9]+$' | sed "s|^|  $d/|"; done
  ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1 ' || echo "libcuda.so.1 not in ldconfig cache"
}

ldd_check() {
  ldd "$ORT_DIR/libonnxruntime_providers_cuda.so"
  ! ldd "$ORT_DIR/libonnxruntime_providers_cuda.so" | grep -q 'not found'
}

# dlopen the provider as ORT does (providers_shared first, RTLD_GLOBAL): shows the
# loader's own error message if a library or symbol is missing.
dlopen_check() {
  "$PY" - "$ORT_DIR" <<'PYEOF'
import ctypes, os, sys
d = sys.argv[1]
for name in ("libonnxruntime.so", "libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so"):
    try:
        lib = ctypes.CDLL(os.path.join(d, name), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        print("dlopen ok:", name)
        if name == "libonnxruntime.so":  # OrtApiBase {GetApi, GetVersionString}
            lib.OrtGetApiBase.restype = ctypes.POINTER(ctypes.c_void_p * 2)
            ver = ctypes.CFUNCTYPE(ctypes.c_char_p)(lib.OrtGetApiBase().contents[1])
            print("  ONNX Runtime core version:", ver().decode())
    except OSError as e:
        print("dlopen FAILED:", name, e)
        sys.exit(1)
PYEOF
}

# The same graph as export_tiny.py (XLM-R positions, post-LN layers, erf GELU,
# additive mask) with numpy random weights, for when the torch exporter fails.
fallback_model() {
  "$PY" - "$MODEL_PRESET" "$MODEL_DIR" <<'PYEOF'
import os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

preset, out = sys.argv[1], sys.argv[2]
P = {"tiny": dict(layers=2, hidden=32, heads=4, inter=64, maxpos=130, vocab=3002),
     "bge-m3": dict(layers=24, hidden=1024, heads=16, inter=4096, maxpos=8194, vocab=250002)}[preset]
L, H, NH, I = P["layers"], P["hidden"], P["heads"], P["inter"]
PAD = 1
rng = np.random.default_rng(20261129)
os.makedirs(out, mode=0o700, exist_ok=True)
data_name = "model.onnx_data"
inits, nodes = [], []
f = open(os.path.join(out, data_name), "wb")


def weight(name, shape, std=0.02, const=None):
    arr = (np.full(shape, const, np.float32) if const is not None
           else (rng.standard_normal(shape, dtype=np.float32) * np.float32(std)))
    off = f.tell()
    pad = (-off) % 64
    f.write(b"\0" * pad)
    off += pad
    f.write(arr.tobytes())
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape))
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", data_name), ("offset", str(off)), ("length", str(arr.nbytes))):
        e = t.external_data.add()
        e.key, e.value = k, v
    inits.append(t)
    return name


def const(name, value, dtype=np.int64):
    inits.append(numpy_helper.from_array(np.array(value, dtype=dtype), name))
    return name


def node(op, ins, outs=None, **attrs):
    node.n += 1
    outs = outs or [f"{op.lower()}_{node.n}"]
    nodes.append(helper.make_node(op, ins, outs, **attrs))
    return outs[0]


node.n = 0


def ln(x, p):
    return node("LayerNormalization", [x, weight(p + ".g", [H], const=1.0), weight(p + ".b", [H], const=0.0)],
                axis=-1, epsilon=1e-5)


def linear(x, p, din, dout):
    return node("Add", [node("MatMul", [x, weight(p + ".w", [din, dout])]), weight(p + ".bias", [dout], const=0.0)])


pad_c = const("pad_id", PAD)
real = node("Cast", [node("Not", [node("Equal", ["input_ids", pad_c])])], to=TensorProto.INT64)
positions = node("Add", [node("Mul", [node("CumSum", [real, const("axis1", 1)]), real]), pad_c])
x = node("Add", [node("Gather", [weight("word", [P["vocab"], H]), "input_ids"]),
                 node("Gather", [weight("pos", [P["maxpos"], H]), positions])])
x = ln(node("Add", [x, weight("typ", [H])]), "emb.ln")
maskf = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
bias = node("Mul", [node("Sub", [const("one", 1.0, np.float32), maskf]), const("neg", -1e9, np.float32)])
bias = node("Unsqueeze", [bias, const("ax12", [1, 2])])
scale = const("scale", 1.0 / np.sqrt(H // NH), np.float32)
shape5 = const("shape5", [0, 0, 3, NH, H // NH])
shape3 = const("shape3", [0, 0, H])
for i in range(L):
    p = f"l{i}"
    qkv = node("Transpose", [node("Reshape", [linear(x, p + ".qkv", H, 3 * H), shape5])], perm=[2, 0, 3, 1, 4])
    q, k, v = (node("Gather", [qkv, const(f"{p}.i{j}", j)], axis=0) for j in range(3))
    att = node("Add", [node("Mul", [node("MatMul", [q, node("Transpose", [k], perm=[0, 1, 3, 2])]), scale]), bias])
    ctx = node("MatMul", [node("Softmax", [att], axis=-1), v])
    ctx = node("Reshape", [node("Transpose", [ctx], perm=[0, 2, 1, 3]), shape3])
    x = ln(node("Add", [x, linear(ctx, p + ".out", H, H)]), p + ".ln1")
    h = linear(x, p + ".ff1", H, I)
    gelu = node("Mul", [node("Mul", [h, const("half", 0.5, np.float32)]),
                        node("Add", [node("Erf", [node("Div", [h, const("sqrt2", np.sqrt(2.0), np.float32)])]),
                                     const("onef", 1.0, np.float32)])])
    x = ln(node("Add", [x, linear(gelu, p + ".ff2", I, H)]), p + ".ln2")
nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
f.close()
# consts defined more than once (per layer) must be unique
seen, uniq = set(), []
for t in inits:
    if t.name not in seen:
        seen.add(t.name)
        uniq.append(t)
ins = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in ("input_ids", "attention_mask")]
outs = [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", H])]
model = helper.make_model(helper.make_graph(nodes, "random_xlmr", ins, outs, uniq),
                          opset_imports=[helper.make_opsetid("", 17)], producer_name="gpu_device_run.sh")
model.ir_version = 8
with open(os.path.join(out, "model.onnx"), "wb") as g:
    g.write(model.SerializeToString())
print(f"{out}: fallback random {preset} model, {sum(np.prod(t.dims) for t in uniq)} parameters")
PYEOF
}

make_model() {
  if [ -s "$MODEL_DIR/model.onnx" ] && [ -s "$MODEL_DIR/model.onnx_data" ]; then
    echo "model exists: $MODEL_DIR"; ls -l "$MODEL_DIR"; return 0
  fi
  local t
  if [ "${FORCE_FALLBACK_MODEL:-0}" != 1 ]; then
    t=$(tmo 180 200)
    if step "model: export_tiny.py --preset $MODEL_PRESET" "$t" "$PY" scripts/onnx/export_tiny.py --preset "$MODEL_PRESET" --out "$MODEL_DIR"; then
      ls -l "$MODEL_DIR"; return 0
    fi
    rm -rf "$MODEL_DIR"
  fi
  t=$(tmo 120 170)
  if step "model: numpy fallback $MODEL_PRESET" "$t" fallback_model; then
    ls -l "$MODEL_DIR"; return 0
  fi
  rm -rf "$MODEL_DIR"; return 1
}

# The bench finds shared/datasets by walking up from onnx/.
dataset() {
  local d=$ROOT p
  for p in "$ROOT/onnx" "$ROOT" "$(dirname "$ROOT")" /; do
    if [ -s "$p/shared/datasets/text/scifact/corpus.jsonl.gz" ]; then
      echo "found $p/shared/datasets/text/scifact/corpus.jsonl.gz"; return 0
    fi
  done
  mkdir -p "$d/shared/datasets/text/scifact" &&
    cp "$BUNDLE/scifact/corpus.jsonl.gz" "$d/shared/datasets/text/scifact/corpus.jsonl.gz" &&
    echo "copied $BUNDLE/scifact/corpus.jsonl.gz -> $d/shared/datasets/text/scifact/ ($(zcat "$d/shared/datasets/text/scifact/corpus.jsonl.gz" | wc -l) docs)"
}

# bench DEVICE PATTERN BENCHTIME TEXTS [tiny]: the benchmarks from onnx/ (the binary
# finds testdata/ and shared/datasets by walking up from the working directory).
bench() {
  local dev=$1 pat=$2 bt=$3 texts=$4 model=$MODEL_DIR/model.onnx threads=0
  [ "${5:-}" = tiny ] && model=  # the committed tiny model, 128 tokens
  [ "$dev" = cpu ] && threads=$CPU_THREADS
  ( cd "$ROOT/onnx" &&
    env ENGRAM_ONNXRUNTIME_LIB="$ORT_DIR/libonnxruntime.so" ENGRAM_BENCH_DEVICE="$dev" \
        ENGRAM_BENCH_MODEL="$model" ENGRAM_BENCH_TEXTS="$texts" ENGRAM_BENCH_THREADS="$threads" \
        ENGRAM_BENCH_MAXTOKENS="${ENGRAM_BENCH_MAXTOKENS:-512}" \
        "$TEST_BIN" -test.run '^$' -test.bench "$pat" -test.benchtime "$bt" )
}

# parity TEXTS [tiny]: TestDevGPUParity, cuda vectors against cpu vectors.
parity() {
  local model=$MODEL_DIR/model.onnx
  [ "${2:-}" = tiny ] && model=
  ( cd "$ROOT/onnx" &&
    env ENGRAM_PARITY=1 ENGRAM_ONNXRUNTIME_LIB="$ORT_DIR/libonnxruntime.so" ENGRAM_BENCH_DEVICE=cuda \
        ENGRAM_BENCH_MODEL="$model" ENGRAM_BENCH_TEXTS="$1" ENGRAM_BENCH_THREADS="$CPU_THREADS" \
        ENGRAM_BENCH_MAXTOKENS="${ENGRAM_BENCH_MAXTOKENS:-512}" \
        "$TEST_BIN" -test.run '^TestDevGPUParity$' -test.v )
}

# GPU utilisation and memory once a second while the CUDA benchmarks run.
smi_start() {
  command -v nvidia-smi >/dev/null || return 0
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv -l 1 > "$OUT/nvidia_smi_during.csv" 2>&1 &
  SMI_PID=$!
}
smi_stop() {
  [ -n "${SMI_PID:-}" ] || return 0
  kill "$SMI_PID" 2>/dev/null; wait "$SMI_PID" 2>/dev/null; SMI_PID=
  echo "nvidia-smi samples: $OUT/nvidia_smi_during.csv ($(wc -l < "$OUT/nvidia_smi_during.csv") lines); peak:"
  awk -F', ' 'NR>1 { u=$2+0; m=$3+0; if (u>mu) mu=u; if (m>mm) mm=m } END { print "  utilization " mu " %, memory " mm " MiB" }' "$OUT/nvidia_smi_during.csv"
}

export ROOT BUNDLE ORT_DIR MODEL_DIR MODEL_PRESET PY OUT TEST_BIN LIBS CPU_THREADS
export -f info unpack python_info ldd_check dlopen_check fallback_model dataset bench parity

main() {
  SAVED_LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}
  echo "gpu_device_run: budget ${TOTAL_S}s; results in $LOG"
  step "info" 60 info
  step "unpack libs and onnx.test -> $ORT_DIR" 60 unpack
  step "python" 60 python_info
  cuda_libs   # sets LD_LIBRARY_PATH in this shell
  SUMMARY+=("cuda libs: LD_LIBRARY_PATH set")
  step "ldd cuda provider" 30 ldd_check
  step "dlopen cuda provider" 30 dlopen_check
  step "dataset" 30 dataset
  make_model
  local have_model=0
  [ -s "$MODEL_DIR/model.onnx" ] && have_model=1
  smi_start
  # Tiny model on cuda first: says in seconds whether the CUDA provider opens at all.
  step "cuda smoke (tiny model)" "$(tmo 60 250)" bench cuda 'BenchmarkEmbedQuery$' 3x 1 tiny
  step "parity cuda vs cpu (tiny model, 32 texts)" "$(tmo 40 240)" parity 32 tiny
  if [ $have_model = 1 ]; then
    step "cuda BenchmarkEmbed texts=$GPU_TEXTS $GPU_BENCHTIME" "$(tmo 150 110)" bench cuda 'BenchmarkEmbed$' "$GPU_BENCHTIME" "$GPU_TEXTS"
    step "cuda BenchmarkEmbedQuery $QUERY_BENCHTIME" "$(tmo 60 90)" bench cuda 'BenchmarkEmbedQuery$' "$QUERY_BENCHTIME" 1
    step "parity cuda vs cpu ($MODEL_PRESET model, 8 texts)" "$(tmo 60 60)" parity 8
  fi
  smi_stop
  if [ $have_model = 1 ]; then
    step "cpu BenchmarkEmbed texts=$CPU_TEXTS $CPU_BENCHTIME threads=$CPU_THREADS" "$(tmo 100 25)" bench cpu 'BenchmarkEmbed$' "$CPU_BENCHTIME" "$CPU_TEXTS"
    step "cpu BenchmarkEmbedQuery $CPU_QUERY_BENCHTIME threads=$CPU_THREADS" "$(tmo 40 0)" bench cpu 'BenchmarkEmbedQuery$' "$CPU_QUERY_BENCHTIME" 1
  else
    SUMMARY+=("benchmarks: skipped (no model)")
  fi
  echo
  echo "=== summary (t+$((SECONDS - T0))s of ${TOTAL_S}s)"
  printf '  %s\n' "${SUMMARY[@]}"
}

main 2>&1 | tee "$LOG"
