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
// before it are kept, the damaged segment is truncated at Offset and every
// later segment is deleted. The damaged segment itself is kept (with a
// fresh header if its own was damaged, or recreated if it was missing) so
// segment numbers, and thus LSNs, never go backwards. The log must not be
// open. What is dropped is logged to opts.Logger.
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
	segs, err := listSegments(fs, dir)
	var gap *CorruptionError
	if err != nil && !errors.As(err, &gap) {
		return err
	}
	if len(segs) == 0 || ce.Segment < segs[0] || ce.Segment > segs[len(segs)-1] {
		return fmt.Errorf("wal: Repair: segment %s is not in %s", segmentName(ce.Segment), dir)
	}
	// Newest first, so a crash midway leaves no gap.
	for _, seg := range slices.Backward(segs) {
		if seg <= ce.Segment {
			break
		}
		if err := fs.Remove(filepath.Join(dir, segmentName(seg))); err != nil {
			return fmt.Errorf("wal: Repair: %w", err)
		}
		opts.Logger.Warn("wal: repair deleted segment", "segment", segmentName(seg))
	}
	path := filepath.Join(dir, segmentName(ce.Segment))
	flag := os.O_RDWR | os.O_APPEND
	if !slices.Contains(segs, ce.Segment) {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := fs.OpenFile(path, flag, 0o600)
	if err != nil {
		return fmt.Errorf("wal: Repair: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && ce.Offset > fi.Size() {
		err = fmt.Errorf("offset %d is past the end of segment %s (%d bytes)", ce.Offset, segmentName(ce.Segment), fi.Size())
	}
	if err == nil {
		opts.Logger.Warn("wal: repair truncated segment", "segment", segmentName(ce.Segment), "offset", ce.Offset, "dropped_bytes", fi.Size()-ce.Offset, "cause", ce.Err)
		err = truncateSegment(f, ce.Segment, ce.Offset)
	}
	err = errors.Join(err, f.Close())
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("wal: Repair: %w", err)
	}
	return nil
}
