// Package memorytest is the behavioural test suite of the memory layer, runnable against any
// memory.Backend: Run(t, newBackend) checks Remember/Recall (modes, fusion, weights, filters),
// session isolation (a randomized property test), near-duplicate merging (golden cases in
// English and Chinese with the lexical embedder), time decay with an injected clock, access
// statistics, Forget, Cleanup -> archive -> Restore byte-identical round trips and the crash
// between archive and delete, the model lock and a resumed Reembed, short-term and working
// memory, Sessions/Scan/Import, and bad input. Package memory runs it for its in-memory and
// engine backends; a remote backend (Weaviate) calls it from its own tests.
//
// It also offers what those tests are built from: HashEmbedder (deterministic, model-free),
// Clock (injectable time), FailingBackend (write failures on demand), NewStore, Canonical.
//
// Each subtest asks newBackend for a fresh, empty backend; the largest case writes a few
// hundred memories, so a remote backend runs the suite in seconds to a minute.
package memorytest
