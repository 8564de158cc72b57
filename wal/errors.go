package wal

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by calls on a closed Log.
	ErrClosed = errors.New("wal: log is closed")
	// ErrRecordTooLarge is returned by Append for a payload over
	// MaxRecordSize or one that cannot fit in an empty segment.
	ErrRecordTooLarge = errors.New("wal: record too large")
	// ErrPoisoned is returned by every append after a write or sync failed:
	// the kernel may have dropped the unwritten pages, so nothing written
	// since the last good sync can be trusted until the log is reopened,
	// which re-reads what is really on disk.
	ErrPoisoned = errors.New("wal: a write or sync failed; reopen the log")
	// ErrNotWAL is returned by Open for a directory holding files that are
	// not WAL segments, or segments of another format.
	ErrNotWAL = errors.New("wal: not a write-ahead log directory")
	// ErrVersion is returned by Open for segments of an unknown format version.
	ErrVersion = errors.New("wal: unsupported format version")
	// ErrPastEnd is returned by Replay from an LSN past the end of the log.
	ErrPastEnd = errors.New("wal: replay from past the end of the log")
	// ErrMissingSegment is the cause in a CorruptionError for a gap in the
	// segment sequence.
	ErrMissingSegment = errors.New("missing segment")
)

// CorruptionError reports damage in the log that is not a torn tail: the
// records from Offset in Segment on cannot be read. Repair truncates the
// log there.
type CorruptionError struct {
	Segment uint32
	Offset  int64 // start of the first record that cannot be read
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in segment %s at offset %d: %v", segmentName(e.Segment), e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }
