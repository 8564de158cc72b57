package engine

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrLocked: another handle (in this or another process) holds the store.
	// The wrapping error names the holder's pid.
	ErrLocked = errors.New("engine: store is locked by another handle")
	// ErrNotFound: no such collection, record or key.
	ErrNotFound = errors.New("engine: not found")
	// ErrExists: a collection with that name already exists with another config.
	ErrExists = errors.New("engine: already exists")
	// ErrInvalid: caller input breaks a documented rule or limit.
	ErrInvalid = errors.New("engine: invalid argument")
	// ErrDimension: a vector has the wrong dimension for its collection.
	ErrDimension = errors.New("engine: wrong vector dimension")
	// ErrClosed: the store or collection has been closed or dropped.
	ErrClosed = errors.New("engine: closed")
	// ErrNotStore: the directory exists, is not empty and is not a store
	// (with Options.ReadOnly: no store is there, which is never created).
	ErrNotStore = errors.New("engine: directory is not an engram store")
	// ErrReadOnly: a write (a mutation, Flush, Compact, Backup, SetLockNote)
	// on a store opened with Options.ReadOnly.
	ErrReadOnly = errors.New("engine: store is open read-only")
	// ErrVersion: the store was written by a newer format version.
	ErrVersion = errors.New("engine: unsupported format version")
	// ErrCorrupt: stored bytes (a segment section, the MANIFEST, a WAL
	// record or a replayed operation) fail a checksum or a structural check.
	// Every such error is a *CorruptionError naming the file, and matches
	// ErrCorrupt with errors.Is, so callers need not import package wal.
	ErrCorrupt = errors.New("engine: corrupt data")
)

// CorruptionError reports a file whose contents fail a checksum or a
// structural check. File is the path of the damaged file.
type CorruptionError struct {
	File string
	Err  error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("engine: corrupt file %s: %v", e.File, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt: every CorruptionError is one.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// UnreachableError reports live records of an intact segment file that the
// graph does not lead to from its entry point: an approximate search can
// never return them (Get, Scan, SearchText and Exact search still do). It
// is not a CorruptionError: the bytes are as written, the graph was built
// so (by builds before hnsw's reconnect pass, with many identical vectors
// or under Dot), and Repair keeps such segments; compaction rebuilds the
// graph.
type UnreachableError struct {
	File        string
	Unreachable int    // live nodes not reached
	Live        int    // live nodes in the file
	First       uint32 // the lowest unreached node
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("engine: %s: graph: %d of %d live nodes are not reachable from the entry point (first: node %d)",
		e.File, e.Unreachable, e.Live, e.First)
}
