// Package weaviate is a memory.Backend over a Weaviate cluster, for memory
// sets that outgrow one machine or that a team must share. The memory layer
// runs unchanged on it: Remember, Recall (vector and BM25 candidates fused by
// engram), Forget, Cleanup, short-term and working memory.
//
// # Protocol
//
// The client is a thin one of engram's own over Weaviate's REST API (schema,
// batch writes, batch deletes, object cursor) and GraphQL (nearVector, bm25,
// Aggregate). The official Go client was not used: it pulls in gRPC and a
// large part of Weaviate's module graph, while engram needs a dozen calls.
// gRPC search would save some JSON decoding per query, but the measured
// recall latency (bench/results/weaviate.md) is dominated by Weaviate's own
// work, not by the encoding.
//
// # Mapping
//
// A collection is one Weaviate class, named ClassPrefix + "_" + a sanitized
// form of the collection name + a short hash (class names are restricted and
// case-folded by Weaviate); the collection spec (name, dimension, model
// fingerprint) is kept as JSON in the class description. A memory is one
// object whose UUID is derived from the memory ID; its vector is supplied by
// engram (vectorizer "none", cosine distance). Keyword search runs Weaviate's
// BM25 over a "terms" property holding engram's own tokens (NFKC, CJK
// unigrams and bigrams, stemmed English), so keyword candidates agree with
// the embedded engine's tokenization, Chinese included. String properties are
// stored with a one-letter prefix so that an empty session or source is an
// indexable value. The KV namespace is one more class (ClassPrefix + "KV").
//
// Filters are translated into GraphQL where clauses where Weaviate can
// express them exactly (equality, membership, ranges, And, Or, Not of string
// equality); anything else is pushed down as far as it is exact and the full
// filter is applied to the candidates on the client (memory.Filter.Match), with
// over-fetching so a search still returns k hits.
//
// # Consistency
//
// Writes use consistency level ALL by default (Options.WriteConsistency): an
// acknowledged write is on every replica, so with replication factor 2 a
// single node can fail without losing acknowledged memories. Reads use ONE,
// so recalls keep working while a replica is down.
package weaviate
