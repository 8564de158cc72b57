// Package keyword is engram's full-text side: a Unicode-aware tokenizer and a
// BM25 inverted index in two forms, a mutable in-memory Index and a read-only
// Segment opened straight from serialized bytes, searched together with
// collection-wide statistics.
//
// # Tokens
//
// Tokens NFKC-normalizes and lowercases text, splits Latin-script (and other
// space-delimited) text into words of letters, digits and marks, and turns
// runs of CJK characters (Han, Hiragana, Katakana, Hangul) into character
// unigrams plus bigrams, which needs no dictionary and matches both single
// characters and words. English stopwords (Lucene's 33-word set) are dropped
// and ASCII words are Porter-stemmed, like the Elasticsearch "english"
// analyzer behind BEIR's BM25 baseline; both measurably raise nDCG@10 on the
// English sets (bench/results/bm25.md) and do nothing to CJK. The token
// stream is versioned by AnalyzerVersion; serialized indexes record it.
//
// # Context
//
// A text may carry a context after ContextSeparator (U+001E): the memory
// layer puts a conversation turn's neighbouring turns there. Its words count
// ContextWeight (1/3) as much as the body's, summed with them before BM25's
// saturation, and its weighted length joins the document's (BM25F with two
// fields), so "Yes! It was amazing" matches a question about the concert its
// previous turn names. Frequencies and lengths are therefore counted in
// TokenUnits (3 per body token, 1 per context token); format version 2
// segments, counted in tokens, are scaled on reading.
//
// # Index, Segment and Part
//
// The engine adds each record's text to the mutable Index under the record's
// uint32 number; at flush it stores Index.MarshalBinary's bytes as a segment
// section and later serves them with Open, which checks sizes and a CRC32C
// and then reads lazily: a binary search over the sorted term table and a
// varint decode of just the posting lists (or blocks of them) a query needs
// (docs/format/keyword.md). Both forms implement Part.
//
// # Scoring
//
// Search (and BM25.Search with explicit k1 and b) scores a query against a
// list of parts. Document count, total length and each term's document
// frequency are summed over the parts first, so a document scores the same
// whether it sits in the mutable index or in any segment, and a split
// collection ranks exactly like one index holding everything. IDF is Lucene's
// log(1 + (N - df + 0.5) / (df + 0.5)), which is never negative; a query term
// repeated n times weighs n times. Deleted records are the caller's business:
// the allow function filters them (and anything else, e.g. sessions) before
// ranking, while they still count in the statistics until compaction drops
// them, as in Lucene.
//
// Search reads the rarest query terms first and accumulates scores in
// pooled dense arrays indexed by document number, calling the filter once
// per document. Once the k-th best score so far exceeds the most the
// remaining (common) terms could add, documents not yet found cannot reach
// the top k, so the remaining terms only update documents already found,
// and only those that can still reach the k-th score: the filter is not
// called for new documents, and when the candidates are few the Index
// binary-searches its posting list and the Segment jumps through its
// 128-posting blocks instead of reading the whole list. The results are
// exactly those of the exhaustive evaluation.
//
// What the remaining terms could add is bounded per term: BM25's limit
// idf·(k1+1), or tighter, from the largest frequency and the shortest
// document among the term's postings, which the Index keeps as it adds and
// a Segment learns the first time it reads a list whole (bound.go). A
// Segment reads a whole list a block at a time, decoding the block's
// ordinals before looking them up in the docs table, so the lookups of a
// large segment overlap; a search within a session looks the session's
// documents up in the docs table once for all its terms.
//
// SearchAmong (a search within one session of many) keeps scores by a
// document's rank in the session's list, so a session's scores sit together
// in the first entries of the pooled arrays. A Segment passes over other
// documents' postings by ordinal, before their docs-table lookup, and once
// it knows a term's bound it reads only the blocks that can hold the
// session's first to last ordinal: when the engine's compaction has grouped
// the session's records (engine/doc.go), that is the session's share of
// each list, not the whole list. A list where the session has a document
// in every block or more is read in sequence rather than looked up
// document by document.
//
// # Caveats
//
//   - A Segment reads the slice given to Open for its whole life: the caller
//     must not modify it or unmap it while the Segment is in use.
//   - Open verifies the checksum but not the internal ordering of the tables;
//     bytes with a forged checksum give incomplete results, never a panic.
//     Segment.Check validates everything.
//   - Index.Postings holds the index's read lock while calling fn: fn must
//     not call Add.
//   - A search over an Index that is being added to reads each term's list
//     under its own read lock, so a document added mid-search may be scored
//     on some query terms and not others (or not at all); the next search
//     sees it whole. Each search is a consistent snapshot only when the
//     caller serializes it with Add (the engine does, per collection).
//   - Stemming applies to ASCII words only and assumes English; other
//     Latin-script languages are indexed unstemmed only when they contain
//     non-ASCII letters.
//   - Stopword-only queries ("to be or not to be") have no terms and return
//     no hits.
package keyword
