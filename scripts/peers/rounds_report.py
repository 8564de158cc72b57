#!/usr/bin/python3
"""Summarises rounds.sh's JSON lines: per ef, each implementation's
recall@10 and median queries per CPU second over the rounds, the ratio of
the medians (engram / hnswlib-cpp) and the range of the per-round ratios.

  /usr/bin/python3 rounds_report.py RESULTS.jsonl OUT.md HEADER.txt
"""
import json
import statistics
import sys
from collections import defaultdict

A, B = "engram", "hnswlib-cpp"


def main():
    src, out_md, header = sys.argv[1:4]
    qps = defaultdict(dict)  # (impl, ef) -> {round: cpu_qps}
    recall = {}
    for line in open(src):
        line = line.strip()
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        qps[(r["impl"], r["ef"])][r["round"]] = r["cpu_qps"]
        recall[(r["impl"], r["ef"])] = r["recall10"]
    efs = sorted({ef for (_, ef) in qps})
    lines = [open(header).read().rstrip(), "",
             "| ef | engram recall@10 | hnswlib recall@10 | engram median | hnswlib median | ratio of medians | per-round ratios (min - max) | rounds |",
             "|---|---|---|---|---|---|---|---|"]
    for ef in efs:
        a, b = qps.get((A, ef), {}), qps.get((B, ef), {})
        both = sorted(set(a) & set(b))
        if not both:
            continue
        ma, mb = statistics.median(a[r] for r in both), statistics.median(b[r] for r in both)
        ratios = [a[r] / b[r] for r in both]
        lines.append(f"| {ef} | {recall[(A, ef)]:.4f} | {recall[(B, ef)]:.4f} | {ma:,.0f} | {mb:,.0f} | "
                     f"{ma / mb:.2f}x | {min(ratios):.2f}x - {max(ratios):.2f}x | {len(both)} |")
    lines += ["", "Per round (queries per CPU second, engram / hnswlib):", ""]
    rounds = sorted({r for d in qps.values() for r in d})
    lines.append("| round | " + " | ".join(f"ef {ef}" for ef in efs) + " |")
    lines.append("|---|" + "---|" * len(efs))
    for rd in rounds:
        cells = []
        for ef in efs:
            a, b = qps.get((A, ef), {}).get(rd), qps.get((B, ef), {}).get(rd)
            cells.append(f"{a:,.0f} / {b:,.0f}" if a and b else "-")
        lines.append(f"| {rd} | " + " | ".join(cells) + " |")
    lines += ["", f"Raw JSON lines: `{src.split('/')[-1]}`."]
    open(out_md, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
