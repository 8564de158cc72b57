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
	// ErrPoisoned is returned while a failed write or sync could not be
	// undone (see Log.Append): the failed records may still be in the
	// segment, and would replay if the process died now. Every call retries
	// the undo first and succeeds once it does.
	ErrPoisoned = errors.New("wal: a failed write could not be undone")
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
	// ErrReadOnly is returned by the calls that would write to a log opened
	// with Options.ReadOnly.
	ErrReadOnly = errors.New("wal: log is open read-only")
)

// CorruptionError reports damage in the log that is not a torn tail: the
// record at Offset in Segment cannot be read. Repair gives up only the
// damaged bytes: a damaged stretch becomes a hole (the records after it
// keep their LSNs), a damaged or cut end is zero-filled.
type CorruptionError struct {
	Segment uint32
	Offset  int64 // start of the first record that cannot be read
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in segment %s at offset %d: %v", segmentName(e.Segment), e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// Causes inside a CorruptionError that a caller may want to tell apart.
var (
	// ErrTruncated: a version 2 segment is shorter than its header says.
	// Segments are created at their full size, so a short one was cut, not
	// torn: the records past the cut are lost, which Open does not take
	// for a clean end.
	ErrTruncated = errors.New("segment truncated")
	// ErrTrailingBytes: a version 2 segment's file holds bytes after the
	// size its header gives. No record is there and none is lost; Open
	// ignores them (logging a warning) and Repair cuts them off.
	ErrTrailingBytes = errors.New("bytes after the end of the segment")
	// ErrDamagedRecord: the newest segment's last record is damaged, not
	// torn. Its framing is whole (every fragment header valid, in
	// sequence, within the file) and none of its bytes shows an append
	// that stopped short (no 512-byte sector of it all zeros), yet a
	// checksum fails: an acknowledged record whose bytes changed
	// afterwards. Open refuses it instead of cutting it as a torn tail;
	// Repair gives it up and keeps its bytes aside (docs/format/wal.md).
	ErrDamagedRecord = errors.New("the last record is damaged, not torn")
)
