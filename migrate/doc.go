// Package migrate copies a memory store from one backend to another — in
// practice from the embedded engine to a Weaviate cluster when a memory set
// outgrows one machine — and verifies the copy.
//
// Copy moves the live collection (memories with their vectors, metadata,
// timestamps and access statistics) in batches ordered by memory ID, then
// each of the memory layer's archive collections and its records collection
// (short-term conversations and working-memory tasks) the same way, each with
// its own checkpoint, then the KV namespace (the list of archive collections,
// the pointer to the live collection, the recorded embedder; a store of the
// first release also has its conversations and tasks there, which the
// destination's memory.New then moves into its records collection). After
// every batch it records the last ID copied in
// the destination's KV namespace, so an interrupted migration resumes where
// it stopped; upserts are idempotent, so a batch repeated after a crash does
// no harm. Verify then compares counts, checks that every ID arrived, and
// runs a sample of recalls against both stores.
package migrate
