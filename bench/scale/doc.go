// Package scale is the store-scale benchmark of issue 25: a store of N
// memories of clustered synthetic vectors (dimension Dim) with short
// generated texts, spread over Sessions sessions of skewed sizes (most
// small, a few holding 0.5-10% of the store), ingested through the memory
// layer with precomputed vectors (memory.Store.Import, as `memctl import`
// with vectors does), then measured: ingest rate per wall and per CPU
// second, disk bytes per memory, compaction time, open time, resident
// memory (VmRSS split into anonymous and file-backed pages, VmHWM), recall
// latency through the memory layer with the query vector given (embedding
// excluded; timed right after open, cold, and again after reopening with
// engine.Options.Warm once its warm-up ended), and per selectivity band the
// recall@10 of session-filtered vector search against an exact scan of that
// session, with its latency on a warmed store (the band's searches timed one
// after another, the exact scans in a pass of their own after them).
//
// Run runs it all and returns a Report; Report.Markdown renders it. The
// command bench/cmd/scale writes bench/results/scale.md; BenchmarkScale
// (go test -bench Scale, small by default, -scale.n to grow it) reports the
// same figures as benchmark metrics. Nothing here runs in a plain go test.
//
// The vectors are a Gaussian mixture: Clusters centres drawn uniformly on
// the sphere, each memory a centre plus isotropic noise, renormalized. A
// session keeps 70% of its memories in two home clusters of its own (a
// user's topics) and the rest anywhere. Texts draw words from a small
// per-cluster vocabulary plus common words, so BM25 has something to rank.
package scale
