package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Loss is a stretch of a segment Repair gave up: the records that
// started in [From, To) are gone (a missing segment: all it held).
type Loss struct {
	Segment  uint32
	From, To int64
	Err      error // the damage
	// Saved names the file in the log's directory (see IsLostName) that
	// keeps the stretch's bytes as they were, up to its last non-zero
	// byte, for a person or a tool to look at; "" when nothing was left
	// to keep (a cut or missing segment, a stretch of zeros).
	Saved string
}

// LSN returns the position of the first record the loss may have held.
func (l Loss) LSN() LSN { return makeLSN(l.Segment, l.From) }

func (l Loss) String() string {
	return fmt.Sprintf("segment %s bytes [%d, %d): %v", segmentName(l.Segment), l.From, l.To, l.Err)
}

// Repair fixes the damage in the log in dir that Open or Replay reported
// (cause, a *CorruptionError, found with errors.As), and any other damage
// in that segment and the later ones (from Options.IgnoreBefore on, if
// that is lower), giving up only the bytes that cannot be read:
//
//   - a damaged stretch followed by intact records is overwritten in place
//     with hole fragments, so every record after it is kept, at its LSN;
//   - damage with nothing intact after it (a torn or truncated end) is
//     zero-filled to the segment's full size;
//   - bytes after a segment's declared end are cut off (nothing is lost);
//   - a damaged segment header is rewritten;
//   - a missing segment is created empty.
//
// The bytes of each stretch given up are first copied aside (Loss.Saved).
// A new empty segment follows, so new records get LSNs larger than any the
// log handed out before. The log must not be open. Every step can be
// redone, so a crash midway leaves damage for the next Repair, never a log
// that silently skips records. It returns what was lost, also logged to
// opts.Logger. A file under a segment's name that is not a segment (see
// ListSegments) is set aside as Open does; one of an unknown format
// version (ErrVersion) is left alone, and its error returned.
func Repair(dir string, opts Options, cause error) ([]Loss, error) {
	var ce *CorruptionError
	if !errors.As(cause, &ce) {
		return nil, fmt.Errorf("wal: Repair needs a *CorruptionError, got: %v", cause)
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fs := opts.FS
	segs, foreign, err := listSegments(fs, dir, 0, opts.OwnDir)
	var gap *CorruptionError
	if err != nil && !errors.As(err, &gap) {
		return nil, err
	}
	if _, err := setAside(fs, dir, foreign, opts); err != nil {
		return nil, err
	}
	if len(segs) == 0 || ce.Segment < segs[0] || ce.Segment > segs[len(segs)-1] {
		return nil, fmt.Errorf("wal: Repair: segment %s is not in %s", segmentName(ce.Segment), dir)
	}
	if err := checkOffset(fs, dir, ce, slices.Contains(segs, ce.Segment)); err != nil {
		return nil, err
	}
	segBytes := preallocSize(opts.SegmentSize)
	newest := segs[len(segs)-1]
	var losses []Loss
	for seg := min(ce.Segment, max(segs[0], opts.IgnoreBefore)); seg <= newest; seg++ {
		if !slices.Contains(segs, seg) {
			f, err := createSegment(fs, dir, seg, segBytes)
			if err != nil {
				return losses, fmt.Errorf("wal: Repair: %w", err)
			}
			if err := f.Close(); err != nil {
				return losses, fmt.Errorf("wal: Repair: %w", err)
			}
			losses = append(losses, Loss{Segment: seg, From: segHeaderSize, To: segBytes, Err: ErrMissingSegment})
			opts.Logger.Warn("wal: repair created a missing segment: its records are lost", "segment", segmentName(seg))
			continue
		}
		ls, err := repairSegment(fs, dir, seg, segBytes, opts.Logger)
		losses = append(losses, ls...)
		if err != nil {
			return losses, fmt.Errorf("wal: Repair: segment %s: %w", segmentName(seg), err)
		}
	}
	for _, l := range losses {
		opts.Logger.Warn("wal: repair gave up records", "segment", segmentName(l.Segment), "from", l.From, "to", l.To, "cause", l.Err)
	}
	f, err := createSegment(fs, dir, newest+1, segBytes)
	if err != nil {
		return losses, fmt.Errorf("wal: Repair: %w", err)
	}
	return losses, f.Close()
}

// repairSegment fixes every damage in one segment, in place.
func repairSegment(fs FS, dir string, seg uint32, segBytes int64, log *slog.Logger) ([]Loss, error) {
	f, err := fs.OpenFile(filepath.Join(dir, segmentName(seg)), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	r := NewReader(f, size, seg)
	r.raw = true
	var losses []Loss
	// lose records a stretch given up, after keeping its bytes aside (at
	// least up to keep: the end of a damaged record whose framing is
	// whole, which may end in zeros of its own).
	lose := func(l Loss, keep int64) error {
		saved, err := saveLost(fs, dir, f, l.Segment, l.From, min(l.To, size), keep)
		l.Saved = saved
		losses = append(losses, l)
		return err
	}
	changed, header := false, false
	for {
		for r.Next() {
		}
		err := r.Err()
		var ce *CorruptionError
		if err == nil {
			break
		}
		if !errors.As(err, &ce) {
			return losses, err // not damage (another format, I/O): change nothing more
		}
		switch {
		case !r.started && errors.Is(err, errBadSegment):
			// Another segment's content under this name: none of it is
			// this segment's.
			if err := lose(Loss{Segment: seg, From: segHeaderSize, To: size, Err: ce.Err}, 0); err != nil {
				return losses, err
			}
			return losses, resetTail(f, seg, 0, segBytes)
		case !r.started && !header:
			// A damaged header: rewrite it (the file name is the truth),
			// keeping the records after it.
			if size < segHeaderSize {
				// Cut inside the header: whatever the segment held is gone.
				losses = append(losses, Loss{Segment: seg, From: segHeaderSize, To: max(segBytes, segHeaderSize), Err: ce.Err})
			} else if err := lose(Loss{Segment: seg, From: 0, To: segHeaderSize, Err: ce.Err}, segHeaderSize); err != nil {
				return losses, err
			}
			if size < segHeaderSize {
				size = segBytes
			}
			size = max(preallocSize(size), PageSize)
			if err := writeAllAt(f, segmentHeader(seg, size), 0); err != nil {
				return losses, err
			}
			if err := f.Truncate(size); err != nil {
				return losses, err
			}
			log.Warn("wal: repair rewrote a damaged segment header", "segment", segmentName(seg), "cause", ce.Err)
			changed, header = true, true
			r = NewReader(f, size, seg)
			r.raw = true
			continue
		case errors.Is(err, ErrTrailingBytes):
			if err := f.Truncate(r.declared); err != nil {
				return losses, err
			}
			log.Warn("wal: repair cut bytes after the end of a segment", "segment", segmentName(seg), "bytes", r.fileSize-r.declared)
			changed = true
		default:
			from := r.IntactEnd()
			keep, _ := r.damagedExtent()
			if to, ok := r.Resync(); ok {
				if err := lose(Loss{Segment: seg, From: from, To: to, Err: ce.Err}, keep); err != nil {
					return losses, err
				}
				if err := writeAllAt(f, holeFragments(from, to), from); err != nil {
					return losses, err
				}
				changed = true
				continue
			}
			if err := lose(Loss{Segment: seg, From: from, To: max(r.declared, r.fileSize), Err: ce.Err}, keep); err != nil {
				return losses, err
			}
			if err := resetTail(f, seg, from, r.declared); err != nil {
				return losses, err
			}
			return losses, nil // synced
		}
		break
	}
	if changed {
		return losses, f.Sync()
	}
	return losses, nil
}

// lostSuffix ends the name of a file keeping bytes Repair gave up.
const lostSuffix = ".lost"

// lostName names the file keeping the bytes of segment seg from offset
// from on: NNNNNNNN.OFFSET.lost.
func lostName(seg uint32, from int64) string {
	return fmt.Sprintf("%s.%d%s", segmentName(seg), from, lostSuffix)
}

// IsLostName reports whether name is that of a file Repair wrote to keep
// the bytes of a stretch it gave up (NNNNNNNN.OFFSET.lost, Loss.Saved).
// Open and Repair ignore such files and never remove them.
func IsLostName(name string) bool {
	base, ok := strings.CutSuffix(name, lostSuffix)
	seg, off, dot := strings.Cut(base, ".")
	if !ok || !dot || off == "" || len(off) > 10 || !IsSegmentName(seg) {
		return false
	}
	n, err := strconv.ParseUint(off, 10, 32)
	return err == nil && strconv.FormatUint(n, 10) == off
}

// saveLost copies the bytes of f in [from, to), up to the last non-zero
// one or keep, whichever is later, into dir/NNNNNNNN.OFFSET.lost, durably
// (a temporary, synced, renamed, the directory synced), and returns the
// file's name; "" when the stretch holds only zeros. A file of that name
// already kept the stretch (a Repair redone after a crash): it is left as
// it is.
func saveLost(fs FS, dir string, f File, seg uint32, from, to, keep int64) (string, error) {
	end := from // after the last non-zero byte
	buf := make([]byte, PageSize)
	for off := from; off < to; off += PageSize {
		b := buf[:min(PageSize, to-off)]
		if err := readFull(f, b, off); err != nil {
			return "", err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != 0 {
				end = off + int64(i) + 1
				break
			}
		}
	}
	if end == from {
		return "", nil
	}
	end = max(end, min(keep, to))
	name := lostName(seg, from)
	path := filepath.Join(dir, name)
	if _, err := fs.Stat(path); err == nil {
		return name, nil
	}
	w, err := fs.OpenFile(path+tempSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	for off := from; off < end && err == nil; off += PageSize {
		b := buf[:min(PageSize, end-off)]
		if err = readFull(f, b, off); err == nil {
			err = writeAllAt(w, b, off-from)
		}
	}
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(path+tempSuffix, path)
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		_ = fs.Remove(path + tempSuffix)
		return "", fmt.Errorf("keeping lost bytes in %s: %w", name, err)
	}
	return name, nil
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
	f, err := createSegment(opts.FS, dir, seg, preallocSize(opts.SegmentSize))
	if err != nil {
		return err
	}
	opts.Logger.Warn("wal: created missing segment", "segment", segmentName(seg))
	return f.Close()
}

// ParseSegmentName returns the number of a segment file name.
func ParseSegmentName(name string) (uint32, bool) { return parseSegmentName(name) }
