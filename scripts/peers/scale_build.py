#!/usr/bin/python3
"""Build rate of python3-hnswlib on the vectors of the scale benchmark, for
bench/cmd/scale -peer: cosine, M=16, ef_construction=200, one thread (the
engine's ingest runs one writer).

  /usr/bin/python3 scale_build.py VECTORS.fvecs

Prints one JSON line: n, dim, build wall and CPU seconds (process CPU time),
and the rates per wall and per CPU second.
"""
import json
import sys
import time

import hnswlib
import numpy as np


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    raw = np.fromfile(sys.argv[1], dtype=np.int32)
    dim = int(raw[0])
    rows = raw.reshape(-1, dim + 1)
    if not (rows[:, 0] == dim).all():
        sys.exit("rows of different dimension")
    x = np.ascontiguousarray(rows[:, 1:]).view(np.float32)
    n = x.shape[0]
    index = hnswlib.Index(space="cosine", dim=dim)
    index.init_index(max_elements=n, M=16, ef_construction=200, random_seed=100)
    index.set_num_threads(1)
    w0, c0 = time.perf_counter(), time.process_time()
    index.add_items(x, np.arange(n))
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    print(json.dumps({"impl": "hnswlib-py " + getattr(hnswlib, "__version__", "0.6.2"), "n": n, "dim": dim,
                      "wall_s": wall, "cpu_s": cpu, "per_wall_s": n / wall, "per_cpu_s": n / cpu}))


if __name__ == "__main__":
    main()
