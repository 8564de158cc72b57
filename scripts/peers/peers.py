#!/usr/bin/python3
"""Python side of the peer comparison: python3-hnswlib and FAISS
(IndexHNSWFlat, IndexHNSWSQ with QT_8bit), with the same inputs, sweep and
JSON lines as `go run ./bench/cmd/ann`.

  /usr/bin/python3 peers.py IMPL BASE QUERY GT METRIC M EFC EFLIST THREADS DATASET

IMPL is hnswlib-py, faiss-hnswflat or faiss-hnswsq8. Queries run one at a
time (a 1-row batch) on one thread. bytes_per_vector is the growth of
resident memory during the build / n.
"""
import gzip
import json
import os
import sys
import time

import numpy as np


def read_vecs(path, dtype):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    dim = int(np.frombuffer(raw[:4], dtype=np.int32)[0])
    rows = np.frombuffer(raw, dtype=np.int32).reshape(-1, dim + 1)
    if not (rows[:, 0] == dim).all():
        raise ValueError(f"{path}: rows of different dimension")
    return np.ascontiguousarray(rows[:, 1:]).view(dtype)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def normalize(x):
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1
    return np.ascontiguousarray(x / n, dtype=np.float32)


def build(impl, base, metric, m, efc, threads):
    n, dim = base.shape
    if impl == "hnswlib-py":
        import hnswlib

        space = {"l2": "l2", "cosine": "cosine", "dot": "ip"}[metric]
        index = hnswlib.Index(space=space, dim=dim)
        index.init_index(max_elements=n, M=m, ef_construction=efc, random_seed=100)
        index.set_num_threads(threads)
        index.add_items(base, np.arange(n))
        index.set_num_threads(1)

        def search(q, k, ef):
            index.set_ef(ef)
            return index.knn_query(q, k=k)[0][0]

        return search
    import faiss

    faiss.omp_set_num_threads(threads)
    fm = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    if impl == "faiss-hnswflat":
        index = faiss.IndexHNSWFlat(dim, m, fm)
    elif impl == "faiss-hnswsq8":
        index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, m, fm)
    else:
        raise ValueError(f"unknown impl {impl}")
    index.hnsw.efConstruction = efc
    if not index.is_trained:
        index.train(base)
    index.add(base)
    faiss.omp_set_num_threads(1)

    def search(q, k, ef):
        index.hnsw.efSearch = ef
        return index.search(q, k)[1][0]

    return search


def main():
    if len(sys.argv) != 11:
        sys.exit(__doc__)
    impl, bpath, qpath, gpath, metric = sys.argv[1:6]
    m, efc = int(sys.argv[6]), int(sys.argv[7])
    efs = [int(x) for x in sys.argv[8].split(",")]
    threads, dataset = int(sys.argv[9]), sys.argv[10]
    base = read_vecs(bpath, np.float32)
    queries = read_vecs(qpath, np.float32)
    gt = read_vecs(gpath, np.int32)
    if metric == "cosine" and impl.startswith("faiss"):
        base, queries = normalize(base), normalize(queries)
    n, dim = base.shape
    k = 10
    # Import the library before the baseline so its own footprint is not
    # counted as index memory.
    __import__("hnswlib" if impl == "hnswlib-py" else "faiss")
    rss0 = rss()
    t0, c0 = time.perf_counter(), time.process_time()
    search = build(impl, base, metric, m, efc, threads)
    build_s, build_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    bytes_per_vector = (rss() - rss0) / n
    for ef in efs:
        ef = max(ef, k)
        for q in queries[:100]:
            search(q.reshape(1, -1), k, ef)
        lat, cpu_lat = [], []
        hits = 0
        start, start_cpu = time.perf_counter(), time.thread_time()
        for i, q in enumerate(queries):
            a, c = time.perf_counter(), time.thread_time()
            ids = search(q.reshape(1, -1), k, ef)
            cpu_lat.append((time.thread_time() - c) * 1e6)
            lat.append((time.perf_counter() - a) * 1e6)
            hits += len(set(int(x) for x in ids) & set(int(x) for x in gt[i, :k]))
        elapsed, elapsed_cpu = time.perf_counter() - start, time.thread_time() - start_cpu
        lat.sort()
        cpu_lat.sort()
        nq = len(queries)
        print(json.dumps({
            "impl": impl, "dataset": dataset, "n": n, "dim": dim, "m": m, "efc": efc,
            "threads": threads, "ef": ef, "recall10": round(hits / (k * nq), 4),
            "qps": round(nq / elapsed, 1), "p50_us": round(lat[nq // 2], 1),
            "p99_us": round(lat[nq * 99 // 100], 1), "build_s": round(build_s, 2),
            "cpu_qps": round(nq / elapsed_cpu, 1), "cpu_p50_us": round(cpu_lat[nq // 2], 1),
            "cpu_p99_us": round(cpu_lat[nq * 99 // 100], 1), "build_cpu_s": round(build_cpu_s, 2),
            "bytes_per_vector": round(bytes_per_vector, 1),
        }), flush=True)


if __name__ == "__main__":
    main()
