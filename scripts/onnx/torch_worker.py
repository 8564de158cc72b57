#!/usr/bin/python3
"""PyTorch side of onnx's TestSideBySideTorch: the model export_tiny.py exports, rebuilt
from the same preset and seed (so the same weights), run in fp32 on the CPU.

It reads one JSON request per line on stdin, {"ids": [[int, ...], ...]}, runs the sequences
as one batch (padded with pad id 1 and a zero attention mask, as sentence-transformers does),
and answers one line: {"wall_ns": ..., "cpu_ns": ..., "vecs": [[float, ...], ...]} with the
L2-normalized CLS vectors (BGE-M3's dense output). Timing covers tensor creation, the forward
pass and pooling; the process's CPU time (all threads) is measured over the same span.

Debian's python3-torch is built with BLAS_INFO=generic: its Linear layers call whatever
libblas.so.3 the alternatives system points at, which is the unoptimized reference BLAS unless
an optimized one is installed (apt-get install libopenblas0-openmp: OpenMP, like torch). The
ready line names the BLAS library actually loaded and "reference_blas": true when it is the
reference one, so that a comparison against it is not mistaken for PyTorch's speed.

    /usr/bin/python3 scripts/onnx/torch_worker.py --preset bge-m3 --threads 2
"""

import argparse
import importlib.util
import json
import os
import sys
import time

import torch


def load_export_module():
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("export_tiny", os.path.join(here, "export_tiny.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def loaded_blas():
    """The resolved path of the libblas.so.3 this process mapped ("" if none)."""
    with open("/proc/self/maps") as f:
        for line in f:
            if "libblas" in line or "libopenblas" in line:
                return os.path.realpath(line.split()[-1])
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="bge-m3")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: torch's default)")
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()

    ex = load_export_module()
    cfg = dict(ex.PRESETS[args.preset])
    vocab = cfg.pop("vocab")
    pad_id = 1
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)  # the export's seed and construction order: the same weights
    model = ex.Encoder(vocab, pad_id, token_types=False, dense=False, **cfg).eval()
    model.requires_grad_(False)
    with torch.inference_mode():  # one warm-up pass maps the BLAS library and sizes its buffers
        model(torch.tensor([[0, 5, 2]]), torch.ones(1, 3, dtype=torch.long))
    blas = loaded_blas()
    print(json.dumps({"ready": True, "threads": torch.get_num_threads(),
                      "interop_threads": torch.get_num_interop_threads(), "torch": torch.__version__,
                      "blas": blas, "reference_blas": "/blas/" in blas,
                      "parallel": torch.__config__.parallel_info().splitlines()[-1].strip()}), flush=True)

    for line in sys.stdin:
        req = json.loads(line)
        seqs = req["ids"]
        t = max(len(s) for s in seqs)
        w0, c0 = time.perf_counter_ns(), time.process_time_ns()
        ids = torch.full((len(seqs), t), pad_id, dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask = ids.ne(pad_id).long()
        with torch.inference_mode():
            cls = model(ids, mask)[:, 0]
            cls = cls / cls.norm(dim=-1, keepdim=True).clamp_min(1e-12)
        w1, c1 = time.perf_counter_ns(), time.process_time_ns()
        vecs = cls.tolist() if req.get("vecs", True) else []
        print(json.dumps({"wall_ns": w1 - w0, "cpu_ns": c1 - c0, "vecs": vecs}), flush=True)


if __name__ == "__main__":
    main()
