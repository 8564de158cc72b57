#!/usr/bin/python3
"""Turns the JSON lines of one comparison run into a side-by-side markdown
table (ratios against hnswlib-cpp) and a recall-vs-QPS plot.

  /usr/bin/python3 report.py RESULTS.jsonl OUT.md OUT.png HEADER.txt
"""
import json
import sys
from collections import defaultdict

REF = "hnswlib-cpp"


# Throughput is compared in queries per CPU-second of the querying thread:
# the machine is shared, and wall-clock QPS mostly measures the neighbours.
Q = "cpu_qps"


def best_at(rows, target):
    """Highest-throughput row with recall10 >= target, or None."""
    ok = [r for r in rows if r["recall10"] >= target]
    return max(ok, key=lambda r: r[Q]) if ok else None


def main():
    src, out_md, out_png, header = sys.argv[1:5]
    by = defaultdict(list)
    with open(src) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                by[r["impl"]].append(r)
    impls = sorted(by, key=lambda i: (i != "engram", i != REF, i))
    lines = [open(header).read().rstrip(), ""]

    lines += ["## Summary", "",
              "Best single-thread throughput reaching the recall target, in queries per CPU-second of the querying "
              "thread (ratio vs hnswlib-cpp; wall-clock QPS in the per-ef table), latency p99 (CPU / wall) at that "
              "point, build time (wall / process CPU) and memory.", "",
              "| impl | QPS @ recall>=0.90 | QPS @ recall>=0.95 | ef @0.95 | p99 us @0.95 (cpu / wall) | build s (wall / cpu) | bytes/vector |",
              "|---|---|---|---|---|---|---|"]
    ref = by.get(REF, [])
    for impl in impls:
        rows = by[impl]
        cells = [impl]
        for t in (0.90, 0.95):
            b, rb = best_at(rows, t), best_at(ref, t)
            if b is None:
                cells.append("not reached")
            elif rb is None:
                cells.append(f"{b[Q]:.0f}")
            else:
                cells.append(f"{b[Q]:.0f} ({b[Q] / rb[Q]:.2f}x)")
        b = best_at(rows, 0.95)
        cells += [str(b["ef"]) if b else "-", f"{b['cpu_p99_us']:.0f} / {b['p99_us']:.0f}" if b else "-"]
        cells.append(f"{rows[0]['build_s']:.1f} / {rows[0]['build_cpu_s']:.1f}")
        mem = f"{rows[0]['bytes_per_vector']:.0f}"
        if "heap_bytes_per_vector" in rows[0]:
            mem += f" codes+graph ({rows[0]['heap_bytes_per_vector']:.0f} whole index on the heap, floats included)"
        cells.append(mem)
        lines.append("| " + " | ".join(cells) + " |")

    efs = sorted({r["ef"] for rows in by.values() for r in rows})
    lines += ["", "## Per ef", "", "recall@10 / CPU QPS (ratio vs hnswlib-cpp at the same ef) / wall QPS", "",
              "| ef | " + " | ".join(impls) + " |", "|---" * (len(impls) + 1) + "|"]
    for ef in efs:
        cells = [str(ef)]
        refrow = next((r for r in ref if r["ef"] == ef), None)
        for impl in impls:
            r = next((r for r in by[impl] if r["ef"] == ef), None)
            if r is None:
                cells.append("-")
                continue
            c = f"{r['recall10']:.3f} / {r[Q]:.0f}"
            if refrow and impl != REF:
                c += f" ({r[Q] / refrow[Q]:.2f}x)"
            cells.append(c + f" / {r['qps']:.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Latency p50 / p99 in microseconds, CPU time of the querying thread (wall clock in the JSON):", "",
              "| ef | " + " | ".join(impls) + " |", "|---" * (len(impls) + 1) + "|"]
    for ef in efs:
        cells = [str(ef)]
        for impl in impls:
            r = next((r for r in by[impl] if r["ef"] == ef), None)
            cells.append(f"{r['cpu_p50_us']:.0f} / {r['cpu_p99_us']:.0f}" if r else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Raw JSON lines: `{src.split('/')[-1]}`. Plot: `{out_png.split('/')[-1]}`.", ""]
    with open(out_md, "w") as f:
        f.write("\n".join(lines))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for impl in impls:
        rows = sorted(by[impl], key=lambda r: r["ef"])
        ax.plot([r["recall10"] for r in rows], [r[Q] for r in rows], marker="o", label=impl)
    ds = next(iter(by.values()))[0]
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel("queries per CPU-second (1 thread, log)")
    ax.set_title(f"{ds['dataset']} (n={ds['n']}, dim={ds['dim']}, M={ds['m']}, efC={ds['efc']})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_png, dpi=110)


if __name__ == "__main__":
    main()
