package memory

import (
	"context"
	"time"
)

// Backend is the index store behind a Store: named collections of memories plus a small durable
// key-value namespace. The default implementation is the embedded engine (Open); NewMemBackend is
// an in-process one for tests and ephemeral use; a remote cluster can implement the same
// interface. Implementations must be safe for concurrent use.
type Backend interface {
	// Collection opens an existing collection; ErrNoCollection when there is none by that name.
	Collection(ctx context.Context, name string) (Collection, error)
	// CreateCollection makes an empty collection for vectors of spec.Dim dimensions compared by
	// cosine similarity, recording spec.Fingerprint.
	CreateCollection(ctx context.Context, spec CollectionSpec) (Collection, error)
	// DropCollection removes a collection and its memories; dropping a missing one is not an error.
	DropCollection(ctx context.Context, name string) error
	// KV is the durable key-value namespace for small state (the active embedder, a reembed in
	// progress, per-record side state); bulk side data (conversations, tasks, the archive)
	// lives in collections of its own (records.go, archive.go), and KV keeps only what older
	// stores wrote there until it is upgraded.
	KV() KV
	Close() error
}

// CollectionSpec describes a collection: its name, vector dimension and the fingerprint of the
// embedding model whose vectors it holds (the model lock).
type CollectionSpec struct {
	Name        string
	Dim         int
	Fingerprint string
}

// Collection holds memories with their vectors and answers vector and keyword searches.
// A nil *Filter matches everything. Implementations must be safe for concurrent use.
type Collection interface {
	Spec() CollectionSpec
	// Upsert writes the memories (vectors included) as one durable batch, replacing any memory
	// with the same ID; all fields, timestamps and access statistics are stored as given.
	Upsert(ctx context.Context, ms []Memory) error
	// Get returns the memories with the given IDs that exist, in the order asked, vectors included.
	Get(ctx context.Context, ids []string) ([]Memory, error)
	// Delete removes the memories with the given IDs (missing IDs are ignored) and returns how
	// many were removed.
	Delete(ctx context.Context, ids []string) (int, error)
	// DeleteWhere removes every memory the filter matches and returns how many were removed.
	DeleteWhere(ctx context.Context, f *Filter) (int, error)
	// SearchVector returns up to k memories matching f, most similar first, scored by cosine
	// similarity to v. Hits carry no vector.
	SearchVector(ctx context.Context, v []float32, k int, f *Filter) ([]Hit, error)
	// SearchText returns up to k memories matching f, best first, scored by BM25 against query.
	// Hits carry no vector.
	SearchText(ctx context.Context, query string, k int, f *Filter) ([]Hit, error)
	// Touch adds one to the access count of each memory and sets its last access to at, durably
	// and as one batch; unknown IDs are ignored.
	Touch(ctx context.Context, ids []string, at time.Time) error
	// Scan calls fn for every memory matching f (vectors included) until fn returns an error.
	// fn must not call back into the collection.
	Scan(ctx context.Context, f *Filter, fn func(Memory) error) error
	// Count returns how many memories match f.
	Count(ctx context.Context, f *Filter) (int, error)
}

// CandidateSearcher is an optional Collection capability for Recall's over-fetch: the same
// searches as SearchVector and SearchText, but the hits may carry an empty Text, so a backend
// that stores texts compressed skips decoding them for candidates that are then dropped.
// Recall fetches the texts of the results it returns with Get.
type CandidateSearcher interface {
	SearchVectorCandidates(ctx context.Context, v []float32, k int, f *Filter) ([]Hit, error)
	SearchTextCandidates(ctx context.Context, query string, k int, f *Filter) ([]Hit, error)
}

// Hit is one search result: a memory (without its vector) and its score, higher is better.
type Hit struct {
	Memory Memory
	Score  float64
}

// KV is a durable key-value namespace: a Put or Delete that returned nil survives a crash.
// Values are returned as copies.
type KV interface {
	// Get returns the value and true, or nil and false when the key is absent.
	Get(key string) ([]byte, bool, error)
	Put(key string, value []byte) error
	Delete(key string) error
	// Scan calls fn for every key with the prefix, in key order.
	Scan(prefix string, fn func(key string, value []byte) error) error
}
