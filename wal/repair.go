package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Repair cuts the log in dir at the damage cause describes (a
// *CorruptionError from Open or Replay, found with errors.As): the records
// before it are kept, the damaged segment is truncated at Offset (with a
// fresh header if its own was damaged, recreated if it was missing), and
// every later segment is emptied to its header rather than deleted. A new
// empty segment follows, so segment numbers never go back and new records
// get LSNs larger than any the log handed out before, which a checkpoint
// may name. The log must not be open. What is dropped is logged to
// opts.Logger.
func Repair(dir string, opts Options, cause error) error {
	var ce *CorruptionError
	if !errors.As(cause, &ce) {
		return fmt.Errorf("wal: Repair needs a *CorruptionError, got: %v", cause)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	fs := opts.FS
	segs, err := listSegments(fs, dir, 0, opts.OwnDir)
	var gap *CorruptionError
	if err != nil && !errors.As(err, &gap) {
		return err
	}
	if len(segs) == 0 || ce.Segment < segs[0] || ce.Segment > segs[len(segs)-1] {
		return fmt.Errorf("wal: Repair: segment %s is not in %s", segmentName(ce.Segment), dir)
	}
	if err := checkOffset(fs, dir, ce, slices.Contains(segs, ce.Segment)); err != nil {
		return err
	}
	newest := segs[len(segs)-1]
	// Later segments first, newest first: until the damaged segment itself
	// is cut, a crash leaves the damage in place for the next Repair, never
	// a log that silently skips from before the damage to after it.
	for seg := newest; seg > ce.Segment; seg-- {
		if err := resetSegment(fs, dir, seg, 0, slices.Contains(segs, seg)); err != nil {
			return err
		}
		opts.Logger.Warn("wal: repair emptied segment", "segment", segmentName(seg))
	}
	opts.Logger.Warn("wal: repair truncated segment", "segment", segmentName(ce.Segment), "offset", ce.Offset, "cause", ce.Err)
	if err := resetSegment(fs, dir, ce.Segment, ce.Offset, slices.Contains(segs, ce.Segment)); err != nil {
		return err
	}
	f, err := createSegment(fs, dir, newest+1)
	if err != nil {
		return fmt.Errorf("wal: Repair: %w", err)
	}
	return f.Close()
}

// resetSegment truncates segment seg to end (to a fresh header if end is
// inside it), or creates it holding only a header if it does not exist.
func resetSegment(fs FS, dir string, seg uint32, end int64, exists bool) error {
	if !exists {
		f, err := createSegment(fs, dir, seg)
		if err != nil {
			return fmt.Errorf("wal: Repair: %w", err)
		}
		return f.Close()
	}
	f, err := fs.OpenFile(filepath.Join(dir, segmentName(seg)), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("wal: Repair: %w", err)
	}
	err = truncateSegment(f, seg, end)
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("wal: Repair: %w", err)
	}
	return nil
}

// checkOffset refuses, before anything is changed, an error whose offset
// does not lie in the segment (a stale or made-up error).
func checkOffset(fs FS, dir string, ce *CorruptionError, exists bool) error {
	size := int64(0)
	if exists {
		f, err := fs.OpenFile(filepath.Join(dir, segmentName(ce.Segment)), os.O_RDONLY, 0)
		if err != nil {
			return fmt.Errorf("wal: Repair: %w", err)
		}
		fi, err := f.Stat()
		f.Close()
		if err != nil {
			return fmt.Errorf("wal: Repair: %w", err)
		}
		size = fi.Size()
	}
	if ce.Offset < 0 || ce.Offset > size {
		return fmt.Errorf("wal: Repair: offset %d is outside segment %s (%d bytes)", ce.Offset, segmentName(ce.Segment), size)
	}
	return nil
}

// CreateSegment durably creates segment seg in dir holding only its
// header, for a caller that knows the log must reach seg (a checkpoint
// names it) while the directory ends before it: appends then continue
// above every LSN a checkpoint may name. It refuses an existing segment.
// The log must not be open.
func CreateSegment(dir string, opts Options, seg uint32) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if seg == 0 {
		return fmt.Errorf("wal: CreateSegment: segment numbers start at 1")
	}
	if err := opts.FS.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	f, err := createSegment(opts.FS, dir, seg)
	if err != nil {
		return err
	}
	opts.Logger.Warn("wal: created missing segment", "segment", segmentName(seg))
	return f.Close()
}

// ParseSegmentName returns the number of a segment file name.
func ParseSegmentName(name string) (uint32, bool) { return parseSegmentName(name) }
