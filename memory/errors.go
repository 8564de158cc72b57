package memory

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrInvalidInput: the caller passed text, options or arguments the operation cannot accept.
	// Nothing was changed.
	ErrInvalidInput = errors.New("memory: invalid input")
	// ErrInvalidFilter: a malformed Filter (see Filter.Validate). Nothing was changed.
	ErrInvalidFilter = errors.New("memory: invalid filter")
	// ErrModelMismatch: the collection was built with another embedding model (see ModelMismatchError).
	ErrModelMismatch = errors.New("memory: embedding model mismatch")
	// ErrNoCollection: the backend has no collection by that name.
	ErrNoCollection = errors.New("memory: no such collection")
	// ErrNotFound: no task, archive entry or memory by that ID.
	ErrNotFound = errors.New("memory: not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("memory: store closed")
)

// ModelMismatchError names the fingerprint a collection was built with and the one the caller's
// embedder has. It matches ErrModelMismatch.
type ModelMismatchError struct {
	Collection       string
	Stored, Embedder string
	StoredDim, Dim   int
}

func (e *ModelMismatchError) Error() string {
	return fmt.Sprintf("memory: collection %q was built with embedding model %q (dim %d), the embedder is %q (dim %d); "+
		"open it with the original embedder and call Reembed to migrate",
		e.Collection, e.Stored, e.StoredDim, e.Embedder, e.Dim)
}

func (e *ModelMismatchError) Is(target error) bool { return target == ErrModelMismatch }

func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// PartialWriteError reports a write that failed after part of it was stored: a Remember whose
// chunks and vectors take several durable batches (a long text with wide vectors), one of which
// failed. Stored lists the IDs of the memories the batches before it wrote, durable and
// findable, in text order (a merged chunk names the memory it updated); the other chunks were
// not written. It wraps the error of the failed batch.
type PartialWriteError struct {
	// Stored are the IDs written; Chunks is how many chunks the text had.
	Stored []string
	Chunks int
	Err    error
}

func (e *PartialWriteError) Error() string {
	return fmt.Sprintf("memory: stored %d of %d chunks, then the write failed (the IDs stored are reported): %v", len(e.Stored), e.Chunks, e.Err)
}

func (e *PartialWriteError) Unwrap() error { return e.Err }
