// Package beir loads BEIR-style retrieval sets and computes the standard
// metrics, so every retriever in engram (BM25, the lexical embedder, ONNX
// embedders, hybrid recall) is measured the same way.
//
// A set is a folder with P+"corpus.jsonl", P+"queries.jsonl" and
// P+"qrels.tsv" for a prefix P (e.g. "zh_"); any of them may be gzipped
// (".gz" appended). Documents may carry a "session" and a "time" (RFC 3339,
// YYYY-MM-DD or Unix seconds) field, queries a "session" field; the memory
// benchmarks use them to scope and date memories.
//
// Metrics follow trec_eval / BEIR: nDCG@k with linear gain over graded
// judgments, recall@k over all relevant documents, MRR@k; a grade <= 0 is
// "not relevant", and only queries with at least one relevant document are
// averaged (Dataset.Judged).
//
// The tests in this package hold the BM25 acceptance test (SciFact nDCG@10
// >= 0.66) and the benchmarks behind bench/results/bm25.md; datasets are
// found by walking up from the working directory to shared/datasets, and the
// tests skip when there is none.
package beir
