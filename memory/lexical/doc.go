// Package lexical is engram's built-in, dependency-free default embedder:
// signed feature hashing of words and character n-grams into a fixed-size,
// L2-normalized vector.
//
// It is a fallback, not a semantic model: two texts are close when they
// share words (or word pieces), never because they mean the same thing in
// different words. It exists so that a store works with zero setup and no
// model download, and so that tests are deterministic; install the BGE-M3
// embedder (package onnx) for semantic recall.
//
// # Features
//
// Text goes through keyword.Tokens (NFKC, lowercase, English stopwords
// dropped, Porter stemming, CJK unigrams + bigrams), then:
//
//   - a Latin-script token contributes the word itself (weight 1) and the
//     character 3-, 4- and 5-grams of "<token>" (fastText style) sharing a
//     total weight of 1, so "memorization" still meets "memorize" and a typo
//     keeps most of its n-grams;
//   - a CJK unigram or bigram contributes itself.
//
// Each feature's summed weight c becomes 1 + ln(c) when c >= 1 (sublinear
// tf; repeated words saturate), is hashed with 64-bit FNV-1a plus a murmur3
// finalizer (fixed, so vectors are identical on every machine) to a
// dimension and a sign (signed hashing keeps collisions unbiased), and the
// vector is L2-normalized, so cosine similarity is a dot product.
//
// # Dimension
//
// DefaultDim is 1024, the dimension of BGE-M3, so both embedders cost the
// same in the vector index (1 KiB int8 codes). Measured with exact cosine on
// the sets in shared/datasets/text (bench/results/bm25.md), hash collisions
// cost quality below that and larger dimensions still buy some (the sweep over
// 256-4096 dimensions and the n-gram weight is in bench/results/bm25.md).
// Collections that can afford the index memory may set Options.Dim to 2048
// or 4096. The n-grams stay for robustness to word forms and typos, which
// those sets do not test.
//
// Without corpus statistics there is no IDF, so alone the embedder ranks
// below BM25 (same file); in hybrid recall BM25 supplies the term weighting.
//
// # Caveats
//
//   - A text with no tokens (punctuation or emoji only, only stopwords, a
//     run of letters longer than the tokenizer keeps) falls back to the
//     character 1- to 3-grams of its non-space runs, so "🎉", "..." or a
//     200 KB text without spaces can be stored and recalled; features that
//     cancel exactly give a fixed unit vector. Only an empty or all-space
//     text maps to the zero vector. (Version 1 includes this fallback: such
//     texts had the zero vector before, which a cosine collection refuses
//     to store, so no stored vector changed.)
//   - Fingerprint covers Version, keyword.AnalyzerVersion and every
//     parameter: a change to any of them makes stored vectors incompatible,
//     and the memory layer's model lock refuses to mix them.
package lexical
