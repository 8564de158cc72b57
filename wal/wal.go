package wal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engramdb/engram/internal/vfs"
	"github.com/klauspost/compress/zstd"
)

// FS is the file system the log does all its I/O through.
type FS = vfs.FS

// File is an open file of an FS.
type File = vfs.File

// SyncMode says when appended records are made durable.
type SyncMode struct {
	kind     syncKind
	interval time.Duration
}

type syncKind uint8

const (
	syncAlways syncKind = iota
	syncInterval
	syncNever
)

var (
	// Always makes Append return only once the record is durable. Appends
	// from concurrent goroutines share one fdatasync (group commit). It is
	// the zero SyncMode, so the default.
	Always = SyncMode{}
	// UnsafeNoSync syncs only in Sync, in Close and when a segment fills
	// up: records survive a process crash (they are written to the OS at
	// once) but not a power loss or kernel crash. For tests and bulk loads
	// only.
	UnsafeNoSync = SyncMode{kind: syncNever}
)

// Interval makes Append return once the record is handed to the OS and
// syncs every d in the background: a power loss can lose up to about d of
// acknowledged appends.
func Interval(d time.Duration) SyncMode { return SyncMode{kind: syncInterval, interval: d} }

func (m SyncMode) String() string {
	switch m.kind {
	case syncAlways:
		return "Always"
	case syncInterval:
		return fmt.Sprintf("Interval(%v)", m.interval)
	case syncNever:
		return "UnsafeNoSync"
	}
	return "invalid"
}

// Options configure a Log. The zero value gives the defaults.
type Options struct {
	// FS is the file system; nil means the operating system's.
	FS FS
	// SegmentSize is the size at which a new segment is started, between
	// MinSegmentSize and MaxSegmentSize; 0 means DefaultSegmentSize.
	SegmentSize int64
	// Sync is the durability mode; the zero value is Always.
	Sync SyncMode
	// NoCompression stores every payload raw instead of trying zstd.
	NoCompression bool
	// Logger receives a warning for every torn tail Open cuts, every file
	// Open or Repair sets aside, and what Repair drops; nil discards them.
	Logger *slog.Logger
	// IgnoreBefore: segments numbered below it are neither verified by
	// Open nor checked for gaps, because the caller holds their records
	// elsewhere (a checkpoint covers them): damage there blocks nothing.
	// Replay from an LSN in them is the caller's mistake (it reads them
	// anyway). Zero verifies every segment.
	IgnoreBefore uint32
	// OwnDir says the directory belongs to the log: Open ignores foreign
	// files even when no segment is left, instead of refusing the
	// directory with ErrNotWAL.
	OwnDir bool
	// ReadOnly opens the log without writing anything: a torn tail is not
	// cut (Replay stops before it), a file named like a segment that is
	// not one is not set aside, a missing directory or an empty one is an
	// empty log, and nothing is created. Recovery says what a writable
	// Open would change. Append, Sync, Roll and TruncateBefore return
	// ErrReadOnly.
	ReadOnly bool
}

func (o Options) withDefaults() (Options, error) {
	if o.FS == nil {
		o.FS = vfs.OS
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = DefaultSegmentSize
	}
	if o.SegmentSize < MinSegmentSize || o.SegmentSize > MaxSegmentSize {
		return o, fmt.Errorf("wal: SegmentSize %d out of range [%d, %d]", o.SegmentSize, MinSegmentSize, MaxSegmentSize)
	}
	if o.Sync.kind > syncNever || (o.Sync.kind == syncInterval) != (o.Sync.interval > 0) {
		return o, fmt.Errorf("wal: invalid sync mode %v", o.Sync)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Stats counts what a Log has done since Open.
type Stats struct {
	Appends      int64         // records appended
	PayloadBytes int64         // caller bytes appended
	StoredBytes  int64         // bytes written to segments, framing included
	Writes       int64         // write calls (one per group)
	Syncs        int64         // fdatasync calls
	SyncTime     time.Duration // spent in those calls
	Failures     int64         // writes or syncs that failed (each fails its group)
	Rollbacks    int64         // failed writes undone (see Append)
}

// Log is an open write-ahead log. Its methods are safe for concurrent use.
type Log struct {
	dir      string
	opts     Options
	enc      *zstd.Encoder
	segBytes int64  // size new segments are created at
	recSeg   uint32 // the newest segment Open found...
	recSize  int64  // ...and the size its header gives (0: version 1)
	holes    []LSN  // hole fragments (Repair's marks) in the segments Open verified
	recovery Recovery

	mu   sync.Mutex
	cond *sync.Cond // broadcast when a flush ends

	// Encoding state: where the next record goes.
	first    uint32 // oldest segment kept
	seg      uint32 // segment the next record goes to
	segOff   int64  // offset in seg of the next record
	rollNext bool   // the next record starts a new segment
	last     LSN    // last record appended
	pending  []chunk
	pendN    int      // records in pending
	free     [][]byte // recycled chunk buffers

	// Flush state.
	flushing   bool   // a goroutine is writing pending chunks, without mu
	active     uint32 // segment of f as of the last flush
	written    LSN    // last record handed to the OS
	writtenSeg uint32 // end of the data handed to the OS...
	writtenOff int64  // ...as segment and offset
	durable    LSN    // last record made durable
	dirty      bool   // written since the last sync
	lastGroup  int    // records in the last flushed group
	// gen counts failed flushes. LSNs of undone records are handed out
	// again, so "durable >= lsn" holds for a waiter only within its
	// generation: a failure settles every waiter there is (failLocked).
	gen     uint64
	waiters map[*waiter]struct{}
	cause   error // what failed the last failed flush
	failure error // the error its records get once it is undone
	err     error // sticky while a failed flush is not undone (ErrPoisoned)
	closed  bool
	stats   Stats

	f    File  // the segment being written; owned by the flushing goroutine
	wOff int64 // where the next write to f goes; owned likewise

	stop, done chan struct{} // the Interval syncer
}

// chunk is encoded data for one segment; create marks a new segment (the
// data goes after its header).
type chunk struct {
	seg    uint32
	create bool
	data   []byte
}

// Open opens the log in dir, creating dir (0700) and a first segment (0600)
// if needed. It verifies every segment, cuts (zero-fills) a torn tail of
// the newest one, sets aside files named like segments that are not (both
// logged to Options.Logger and listed by Recovery), and returns a
// *CorruptionError for any other damage, which Repair can cut off.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fs := opts.FS
	if !opts.ReadOnly {
		if err := fs.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
	}
	segs, foreign, err := listSegments(fs, dir, opts.IgnoreBefore, opts.OwnDir)
	if err != nil && !(opts.ReadOnly && errors.Is(err, iofs.ErrNotExist)) {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, segBytes: preallocSize(opts.SegmentSize)}
	l.cond = sync.NewCond(&l.mu)
	if l.recovery.SetAside, err = setAside(fs, dir, foreign, opts); err != nil {
		return nil, err
	}
	switch {
	case len(segs) == 0 && opts.ReadOnly:
		// An empty log: nothing to read, nothing created.
	case len(segs) == 0:
		if err := l.createFirst(); err != nil {
			return nil, err
		}
	default:
		if err := l.recover(segs); err != nil {
			return nil, err
		}
	}
	l.active, l.written, l.durable = l.seg, l.last, l.last
	l.writtenSeg, l.writtenOff = l.seg, l.segOff
	if !opts.NoCompression {
		l.enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false), zstd.WithLowerEncoderMem(true))
		if err != nil {
			_ = l.f.Close()
			return nil, fmt.Errorf("wal: %w", err)
		}
	}
	if opts.Sync.kind == syncInterval && !opts.ReadOnly {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.syncer(opts.Sync.interval)
	}
	return l, nil
}

// Recovery is what Open changed in the log's directory besides reading
// it, or, with Options.ReadOnly, would change.
type Recovery struct {
	// TornTail is the torn append cut off the newest segment (Segment 0:
	// none): bytes of an append that never completed, so was never
	// acknowledged (docs/format/wal.md, "Recovery rules").
	TornTail Loss
	// SetAside are the files named like segments that are not (see
	// ListSegments), renamed so they are neither read as the log nor in
	// its way.
	SetAside []SetAside
}

// SetAside is a file named like a segment that holds something else.
type SetAside struct {
	Name    string // its name in the directory
	NewName string // the name it was moved to; "" when the log is read-only or it is a directory (left in place)
}

// Recovery returns what Open changed besides reading (Options.ReadOnly:
// what it would change).
func (l *Log) Recovery() Recovery {
	r := l.recovery
	r.SetAside = slices.Clone(r.SetAside)
	return r
}

// foreignSuffix is added to the name of a file set aside.
const foreignSuffix = ".foreign"

// setAside renames each of names in dir to NAME.foreign (NAME.foreign.N
// when that is taken) and syncs the directory; read-only, it only lists
// them. Renaming is not judging: the bytes stay, under a name the log
// does not read, for a person to look at.
func setAside(fs FS, dir string, names []string, opts Options) ([]SetAside, error) {
	var out []SetAside
	if len(names) == 0 {
		return nil, nil
	}
	taken, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	for _, name := range names {
		if fi, err := fs.Stat(filepath.Join(dir, name)); opts.ReadOnly || err != nil || !fi.Mode().IsRegular() {
			// (A directory under a segment's name stays where it is: it is
			// never taken for a segment.)
			out = append(out, SetAside{Name: name})
			continue
		}
		to := name + foreignSuffix
		for i := 1; slices.Contains(taken, to); i++ {
			to = fmt.Sprintf("%s%s.%d", name, foreignSuffix, i)
		}
		if err := fs.Rename(filepath.Join(dir, name), filepath.Join(dir, to)); err != nil {
			return out, fmt.Errorf("wal: setting aside %s: %w", name, err)
		}
		taken = append(taken, to)
		opts.Logger.Warn("wal: set aside a file named like a segment that is not one", "file", name, "now", to)
		out = append(out, SetAside{Name: name, NewName: to})
	}
	return out, fs.SyncDir(dir)
}

// SetAsideForeign sets aside, as Open does, the files in dir named like
// segments that are not (see ListSegments), for a caller that repairs the
// directory without opening the log. The log must not be open.
func SetAsideForeign(dir string, opts Options) ([]SetAside, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	_, foreign, err := ListSegments(opts.FS, dir)
	if err != nil {
		return nil, err
	}
	return setAside(opts.FS, dir, foreign, opts)
}

// listSegments returns the segment numbers in dir and the names there
// that look like segments but are not (ListSegments), refusing gaps at or
// after ignoreBefore and, unless own, a directory of foreign files only.
func listSegments(fs FS, dir string, ignoreBefore uint32, own bool) ([]uint32, []string, error) {
	segs, foreign, other, err := classify(fs, dir)
	if err != nil {
		return nil, nil, err
	}
	if len(segs) == 0 && (other != "" || len(foreign) > 0) && !own {
		if other == "" {
			other = foreign[0]
		}
		return nil, nil, fmt.Errorf("%w: %s holds %q and no segment", ErrNotWAL, dir, other)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i] != segs[i-1]+1 && segs[i] > ignoreBefore {
			return segs, foreign, &CorruptionError{Segment: segs[i-1] + 1, Err: ErrMissingSegment}
		}
	}
	return segs, foreign, nil
}

// ListSegments returns the numbers of the segments in dir, ascending, and
// the names of the files there that are named like segments but are not
// segments of this log: something else under a segment's name (neither
// the magic nor the file's own number where a header has them, and
// neither zeros nor an intact fragment after it; a damaged segment of
// ours keeps one of those), a directory, or a file shorter than a header
// that follows a gap (right after the log's segments such a file is the
// next segment, cut). Open sets those aside instead of reading them. It
// reads the first page of each segment file and changes nothing; a gap is
// not an error here.
func ListSegments(fs FS, dir string) ([]uint32, []string, error) {
	segs, foreign, _, err := classify(fs, dir)
	return segs, foreign, err
}

// classify lists dir: the segments, the files named like segments that
// are not (ListSegments), and one other foreign name if any.
func classify(fs FS, dir string) (segs []uint32, foreign []string, other string, err error) {
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil, nil, "", fmt.Errorf("wal: %w", err)
	}
	short := map[uint32]bool{}
	for _, name := range names {
		seg, ok := parseSegmentName(name)
		if !ok {
			// Ignored, never removed: it is not ours to judge. (A
			// segment's temporary is ours, reused when the log gets there;
			// so are the bytes Repair kept aside.)
			if !isTempName(name) && !IsLostName(name) {
				other = name
			}
			continue
		}
		head, err := readHead(fs, filepath.Join(dir, name))
		switch {
		case errors.Is(err, errNotFile):
			foreign = append(foreign, name)
			continue
		case err != nil:
			return nil, nil, "", fmt.Errorf("wal: %w", err)
		case notSegment(head, seg):
			foreign = append(foreign, name)
			continue
		}
		short[seg] = len(head) < segHeaderSize
		segs = append(segs, seg)
	}
	slices.Sort(segs)
	var kept []uint32
	for i, seg := range segs {
		if short[seg] && i > 0 && segs[i-1] != seg-1 {
			foreign = append(foreign, segmentName(seg)) // after a gap: not the log's next segment
			continue
		}
		kept = append(kept, seg)
	}
	slices.Sort(foreign)
	return kept, foreign, other, nil
}

var errNotFile = errors.New("not a regular file")

// readHead returns the first page of the file at path (all of it when
// shorter).
func readHead(fs FS, path string) ([]byte, error) {
	fi, err := fs.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotFile
	}
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return nil, err
	}
	head := make([]byte, min(fi.Size(), PageSize))
	if err := readFull(f, head, 0); err != nil {
		return nil, err
	}
	return head, nil
}

func (l *Log) path(seg uint32) string { return filepath.Join(l.dir, segmentName(seg)) }

// createFirst starts an empty log with segment 1.
func (l *Log) createFirst() error {
	f, err := createSegment(l.opts.FS, l.dir, 1, l.segBytes)
	if err != nil {
		return err
	}
	l.f, l.wOff, l.first, l.seg, l.segOff = f, segHeaderSize, 1, 1, segHeaderSize
	return nil
}

// tempSuffix names a segment being created.
const tempSuffix = ".tmp"

func isTempName(name string) bool {
	base, ok := strings.CutSuffix(name, tempSuffix)
	return ok && IsSegmentName(base)
}

// createSegment durably creates segment seg at its full size (size bytes,
// zero-filled after the header) and returns it open for WriteAt. It is
// built under a temporary name and renamed into place, so a segment is
// never seen shorter than its header says unless something cut it. It
// refuses a segment that exists.
func createSegment(fs FS, dir string, seg uint32, size int64) (File, error) {
	if seg > maxSegment {
		return nil, fmt.Errorf("wal: segment numbers exhausted")
	}
	name := filepath.Join(dir, segmentName(seg))
	names, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	if slices.Contains(names, segmentName(seg)) {
		return nil, fmt.Errorf("wal: creating segment %s: %w", segmentName(seg), iofs.ErrExist)
	}
	f, err := fs.OpenFile(name+tempSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	err = writeAllAt(f, segmentHeader(seg, size), 0)
	if err == nil {
		err = f.Truncate(size) // sparse where the file system allows: zeros
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = fs.Rename(name+tempSuffix, name)
	}
	if err == nil {
		err = fs.SyncDir(dir)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("wal: creating segment %s: %w", segmentName(seg), err)
	}
	return f, nil
}

// recover verifies segs, cuts a torn tail off the newest, and opens it. The
// first append then starts a new segment unless the newest holds no records
// and lost nothing: so every LSN handed out from now on is larger than any
// handed out before, including LSNs of records a cut or a Repair removed,
// which a checkpoint may name. (Deferring the new segment to the first
// append lets a read-only session, or one on a full disk, open and replay.)
func (l *Log) recover(segs []uint32) error {
	var sc scanned
	for i, seg := range segs {
		newest := i == len(segs)-1
		if !newest && seg < l.opts.IgnoreBefore {
			continue // covered by the caller's checkpoint: not read
		}
		legacyPrev := newest && i > 0 && l.version(segs[i-1]) == legacyVersion
		var err error
		if sc, err = l.scan(seg, newest, legacyPrev); err != nil {
			return err
		}
		if sc.last != 0 {
			l.last = sc.last
		}
	}
	seg := segs[len(segs)-1]
	flag := os.O_RDWR
	if l.opts.ReadOnly {
		flag = os.O_RDONLY
	}
	f, err := l.opts.FS.OpenFile(l.path(seg), flag, 0)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	cut, err := l.cutTail(f, seg, sc)
	if err != nil || l.opts.ReadOnly {
		_ = f.Close()
		f = nil
	}
	if err != nil {
		return err
	}
	end := max(sc.end, segHeaderSize)
	l.f, l.wOff, l.first, l.seg, l.segOff = f, end, segs[0], seg, end
	l.recSeg, l.recSize = seg, sc.size
	if sc.end < segHeaderSize {
		l.recSize = l.segBytes // cutTail wrote a fresh header of that size
	}
	// Appends go only to a segment of this version and size.
	l.rollNext = cut || sc.end > segHeaderSize || sc.size != l.segBytes
	return nil
}

// version returns the format version in segment seg's header, 0 when it
// cannot be read.
func (l *Log) version(seg uint32) byte {
	f, err := l.opts.FS.OpenFile(l.path(seg), os.O_RDONLY, 0)
	if err != nil {
		return 0
	}
	defer f.Close()
	var h [5]byte
	if readFull(f, h[:], 0) != nil || !bytes.Equal(h[:4], segMagic[:]) {
		return 0
	}
	return h[4]
}

// scanned is what scan learned about a segment.
type scanned struct {
	end   int64 // end of the intact records
	last  LSN   // the last record, 0 if none
	size  int64 // the size its header gives (0: version 1, or the header is torn)
	clean bool  // nothing after end but zeros up to size (version 2) or the end of the file
	err   error // the damage a torn tail ends in
}

// scan reads segment seg through, checksums only. Damage in the newest
// segment with nothing intact after it that looks like an append that
// stopped short is a torn tail, not an error: the returned end excludes
// it. A damaged complete last record (ErrDamagedRecord) and a truncated
// segment are errors; bytes after a segment's end are ignored (and
// logged). legacyPrev says the segment before seg is version 1.
func (l *Log) scan(seg uint32, newest, legacyPrev bool) (scanned, error) {
	f, err := l.opts.FS.OpenFile(l.path(seg), os.O_RDONLY, 0)
	if err != nil {
		return scanned{}, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return scanned{}, fmt.Errorf("wal: %w", err)
	}
	r := NewReader(f, fi.Size(), seg)
	r.raw, r.legacyPrev = true, legacyPrev
	var sc scanned
	holes := 0
	for r.Next() {
		sc.last = r.LSN()
		if r.holes != holes {
			l.holes = append(l.holes, sc.last)
			holes = r.holes
		}
	}
	if r.holes != holes {
		l.holes = append(l.holes, makeLSN(seg, r.end))
	}
	sc.end, sc.size = r.IntactEnd(), r.declared
	err = r.Err()
	sc.clean = err == nil
	var ce *CorruptionError
	switch {
	case err == nil:
	case errors.Is(err, ErrTrailingBytes):
		l.opts.Logger.Warn("wal: ignoring bytes after the end of a segment (Repair cuts them off)", "segment", segmentName(seg), "error", err)
		sc.clean = true
	case errors.Is(err, ErrTruncated):
		return scanned{}, err
	case errors.As(err, &ce) && newest && !r.dataFollows():
		if !r.tornAppend() {
			// Whole, but not what was written: an acknowledged record
			// lost, never to be taken for an append that did not finish.
			return scanned{}, &CorruptionError{Segment: seg, Offset: ce.Offset, Err: fmt.Errorf("%w: %w", ErrDamagedRecord, ce.Err)}
		}
		sc.err = ce.Err // a torn tail: cut below
	default:
		return scanned{}, err
	}
	return sc, nil
}

// cutTail cuts the newest segment after its intact records: zero-fills it
// from there to its full size (rewriting the header if that was torn) and
// syncs it. It reports whether anything was cut.
func (l *Log) cutTail(f File, seg uint32, sc scanned) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("wal: %w", err)
	}
	if sc.clean && sc.end >= segHeaderSize && (sc.size > 0 || fi.Size() == sc.end) {
		return false, nil
	}
	l.recovery.TornTail = Loss{Segment: seg, From: sc.end, To: max(fi.Size(), sc.size), Err: sc.err}
	if l.opts.ReadOnly {
		return true, nil // what a writable Open would cut; Replay stops before it
	}
	l.opts.Logger.Warn("wal: cutting a torn tail (an append that never completed, so was never acknowledged)",
		"segment", segmentName(seg), "offset", sc.end, "dropped_bytes", max(fi.Size(), sc.size)-sc.end, "damage", sc.err)
	size := sc.size
	if sc.end < segHeaderSize {
		size = l.segBytes // a torn header: the segment starts afresh
	}
	if err := resetTail(f, seg, sc.end, size); err != nil {
		return false, fmt.Errorf("wal: repairing torn tail of segment %s: %w", segmentName(seg), err)
	}
	return true, nil
}

// resetTail drops what f holds from end on and syncs it: a version 2
// segment (size > 0) is zero-filled from end to size, a version 1 one
// truncated at end. An end inside the header writes a fresh version 2
// header of size bytes.
func resetTail(f File, seg uint32, end, size int64) error {
	if end < segHeaderSize {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if err := writeAllAt(f, segmentHeader(seg, size), 0); err != nil {
			return err
		}
		end = segHeaderSize
	}
	if err := f.Truncate(end); err != nil {
		return err
	}
	if size > 0 {
		if err := f.Truncate(size); err != nil {
			return err
		}
	}
	return f.Sync()
}

func writeAllAt(f File, b []byte, off int64) error {
	n, err := f.WriteAt(b, off)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// Append adds a record and returns its LSN. In Always mode it returns once
// the record is durable. The payload is copied; it may be empty and may be
// at most MaxRecordSize bytes.
//
// A failed write or sync fails every record of its group and is undone
// before Append returns: the segments the group started are removed and
// the one it wrote into is cut back to the last record written before it,
// and synced. The failed records are then in neither the running log nor
// what a crash leaves, and the next Append proceeds normally (once the
// cause, a full disk say, has cleared). If the undo fails too, the error
// wraps ErrPoisoned: the failed records may reappear if the process dies
// now, and every call retries the undo first, failing with ErrPoisoned
// until it succeeds.
//
// Caveat: in Interval and UnsafeNoSync modes an Append that finds another
// goroutine writing returns once its record is queued for that writer; if
// that write then fails, the acknowledged record is dropped with the rest
// of the group (as a power loss could drop it in those modes). Callers
// that append one at a time, as the engine does, never hit this.
func (l *Log) Append(payload []byte) (LSN, error) {
	if len(payload) > MaxRecordSize {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(payload), MaxRecordSize)
	}
	scratch := compressBufs.Get().(*[]byte)
	defer compressBufs.Put(scratch)
	stored, compressed := l.compress(payload, scratch)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	lsn, err := l.encodeLocked(stored, compressed) // copies stored
	if err != nil {
		return 0, err
	}
	l.stats.Appends++
	l.stats.PayloadBytes += int64(len(payload))
	gen := l.gen
	if l.opts.Sync.kind == syncAlways {
		if err := l.waitDurableLocked(lsn); err != nil {
			return 0, err
		}
		return lsn, nil
	}
	l.drainLocked()
	// (mu has been held since drainLocked's last flush: an undo keeps
	// written, so written >= lsn means this record was written before it.)
	if l.gen != gen && l.written < lsn {
		return 0, l.failedErr()
	}
	return lsn, nil
}

// compress returns the bytes to store for p and whether they are zstd.
// The frame goes into *scratch, which keeps the grown buffer.
func (l *Log) compress(p []byte, scratch *[]byte) ([]byte, bool) {
	if l.enc == nil || len(p) < 32 { // too small to gain over the frame header
		return p, false
	}
	c := l.enc.EncodeAll(p, (*scratch)[:0])
	if cap(c) <= maxPooledBuf {
		*scratch = c
	}
	if len(c) >= len(p) {
		return p, false
	}
	return c, true
}

// compressBufs recycles compression output buffers between appends.
var compressBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBuf bounds the buffers kept for reuse, so one huge record does
// not pin its memory.
const maxPooledBuf = 4 << 20

// usableLocked refuses calls on a closed log and retries the undo of a
// failed flush that could not be undone so far.
func (l *Log) usableLocked() error {
	if l.closed {
		return ErrClosed
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	if l.err == nil {
		return nil
	}
	for l.flushing {
		l.cond.Wait()
	}
	if l.err == nil {
		return nil
	}
	if err := l.undoLocked(); err != nil {
		l.err = fmt.Errorf("%w: %w; undoing it failed: %w", ErrPoisoned, l.cause, err)
		return l.err
	}
	return nil
}

// failedErr is the error for a record its flush failed.
func (l *Log) failedErr() error {
	if l.err != nil {
		return l.err
	}
	return l.failure
}

// encodeLocked frames a record into the pending chunks, starting a new
// segment when it does not fit in the current one.
func (l *Log) encodeLocked(stored []byte, compressed bool) (LSN, error) {
	n := int64(len(stored))
	if recordEnd(segHeaderSize, n) > l.segBytes {
		return 0, fmt.Errorf("%w: %d stored bytes do not fit a %d-byte segment", ErrRecordTooLarge, n, l.segBytes)
	}
	if l.rollNext || recordEnd(l.segOff, n) > l.segBytes {
		if l.seg >= maxSegment {
			return 0, fmt.Errorf("wal: segment numbers exhausted")
		}
		l.rollNext = false
		l.seg++
		l.segOff = segHeaderSize
		l.pending = append(l.pending, chunk{seg: l.seg, create: true, data: l.buf()})
	}
	if len(l.pending) == 0 || l.pending[len(l.pending)-1].seg != l.seg {
		l.pending = append(l.pending, chunk{seg: l.seg, data: l.buf()})
	}
	c := &l.pending[len(l.pending)-1]
	var start int64
	c.data, start, l.segOff = appendRecord(c.data, l.segOff, compressed, stored)
	l.last = makeLSN(l.seg, start)
	l.pendN++
	return l.last, nil
}

// maxSegment is the largest number an 8-digit segment name holds.
const maxSegment = 99999999

func (l *Log) buf() []byte {
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		return b[:0]
	}
	return nil
}

// waiter is a caller of waitDurableLocked.
type waiter struct {
	lsn             LSN
	settled, failed bool // by a failed flush: failed unless lsn was durable then
}

// waitDurableLocked waits until lsn, encoded in the current generation
// (mu has been held since), is durable, leading a group flush whenever no
// other goroutine is flushing: records appended while a flush is in
// progress queue up and share the next fdatasync.
func (l *Log) waitDurableLocked(lsn LSN) error {
	w := &waiter{lsn: lsn}
	if l.waiters == nil {
		l.waiters = map[*waiter]struct{}{}
	}
	l.waiters[w] = struct{}{}
	defer delete(l.waiters, w)
	for {
		switch {
		case w.settled && w.failed:
			return l.failedErr()
		case w.settled || l.durable >= lsn:
			return nil
		case !l.flushing:
			l.gatherLocked()
			l.flushLocked(true)
		default:
			l.cond.Wait()
		}
	}
}

// gatherLocked lets the writers just woken by the previous group's sync
// queue their next records before the leader takes the buffer. Without it
// the writers split into two cohorts that alternate between syncs, and each
// sync carries only half of them. It yields only while yielding brings in
// new records, and not at all when the last group was a lone record, so a
// single writer pays nothing.
func (l *Log) gatherLocked() {
	if l.lastGroup <= 1 {
		return
	}
	l.flushing = true // nobody else leads meanwhile
	for i := 0; i < 16; i++ {
		n := l.pendN
		l.mu.Unlock()
		runtime.Gosched()
		l.mu.Lock()
		if l.pendN == n {
			break
		}
	}
	l.flushing = false
}

// drainLocked writes out pending chunks unless another goroutine is already
// flushing (which then writes them too).
func (l *Log) drainLocked() {
	for !l.flushing && len(l.pending) > 0 && l.err == nil {
		l.flushLocked(false)
	}
}

// flushLocked writes the pending chunks, and syncs if sync is set, with mu
// released during the I/O. A failure fails the records written and those
// pending (see failLocked); the error is returned.
func (l *Log) flushLocked(sync bool) error {
	chunks, group := l.pending, l.pendN
	l.pending, l.pendN = nil, 0
	target, endSeg, endOff := l.last, l.seg, l.segOff
	needSync := sync && (l.dirty || len(chunks) > 0)
	l.flushing = true
	l.mu.Unlock()
	start := time.Now()
	err := l.write(chunks, needSync)
	l.mu.Lock()
	l.flushing = false
	for _, c := range chunks {
		l.stats.StoredBytes += int64(len(c.data))
		if cap(c.data) <= maxPooledBuf {
			l.free = append(l.free, c.data)
		}
	}
	if len(chunks) > 0 {
		l.lastGroup = group
		l.stats.Writes++
		l.dirty = true
		l.active = chunks[len(chunks)-1].seg
	}
	if err != nil {
		err = l.failLocked(err)
	} else {
		l.written, l.writtenSeg, l.writtenOff = target, endSeg, endOff
		if sync {
			l.durable, l.dirty = target, false
		}
		if needSync {
			l.stats.Syncs++
			l.stats.SyncTime += time.Since(start)
		}
	}
	l.cond.Broadcast()
	return err
}

// failLocked ends the generation after a failed flush: the records it
// carried and those queued behind it (encoded at offsets after them) are
// failed, and the log is undone to the last record written before them.
// It returns the error their appenders get. Only the flushing goroutine,
// with flushing cleared, calls it.
func (l *Log) failLocked(cause error) error {
	l.stats.Failures++
	l.gen++
	for w := range l.waiters {
		if !w.settled {
			w.settled, w.failed = true, w.lsn > l.durable
		}
	}
	l.cause = cause
	l.failure = fmt.Errorf("wal: write failed (the record is not in the log): %w", cause)
	for _, c := range l.pending {
		if cap(c.data) <= maxPooledBuf {
			l.free = append(l.free, c.data)
		}
	}
	l.pending, l.pendN = nil, 0
	l.opts.Logger.Warn("wal: write failed; undoing it", "segment", segmentName(l.writtenSeg), "offset", l.writtenOff, "err", cause)
	if err := l.undoLocked(); err != nil {
		l.err = fmt.Errorf("%w: %w; undoing it failed: %w", ErrPoisoned, cause, err)
		l.opts.Logger.Error("wal: undoing a failed write failed; every call retries it", "err", err)
		return l.err
	}
	return l.failure
}

// undoLocked puts the files back as they were after the last successful
// flush: it removes the segments started since (newest first, so no gap
// ever shows), cuts the segment written then back to where that flush
// ended, and syncs both; the next record starts a new segment. The undone
// bytes may hold whole records (a write that landed before its sync
// failed): cutting them is what keeps a failed append from replaying at
// the next Open. It is retried until it succeeds, and clears l.err then.
//
// What stays is what earlier flushes wrote. In Always mode all of it was
// synced before. In the other modes it may have been handed to the OS only:
// a kernel that dropped those pages after a failed sync ("fsyncgate") makes
// the sync here succeed without them, so they are lost on a power loss,
// which those modes do not promise to survive anyway.
func (l *Log) undoLocked() error {
	if l.f != nil {
		_ = l.f.Close() // its error is the failure being undone, or moot
		l.f = nil
	}
	for ; l.seg > l.writtenSeg; l.seg-- {
		if err := l.opts.FS.Remove(l.path(l.seg)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("wal: %w", err)
		}
	}
	if err := l.opts.FS.SyncDir(l.dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	f, err := l.opts.FS.OpenFile(l.path(l.writtenSeg), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	size := l.segBytes // a segment this log created...
	if l.writtenSeg == l.recSeg {
		size = l.recSize // ...or the one Open found, whatever its size or version
	}
	if err := resetTail(f, l.writtenSeg, l.writtenOff, size); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: %w", err)
	}
	l.f, l.wOff = f, l.writtenOff
	l.seg, l.segOff, l.last, l.durable = l.writtenSeg, l.writtenOff, l.written, l.written
	l.active, l.dirty, l.rollNext = l.writtenSeg, false, true
	l.err = nil
	l.stats.Rollbacks++
	l.opts.Logger.Info("wal: failed write undone", "segment", segmentName(l.writtenSeg), "offset", l.writtenOff)
	return nil
}

// write hands chunks to the OS and syncs if asked. Only the flushing
// goroutine calls it. A segment is synced before the next one is created,
// so only the newest segment can ever have a torn tail.
func (l *Log) write(chunks []chunk, sync bool) error {
	for _, c := range chunks {
		if c.create {
			if err := l.rollTo(c.seg); err != nil {
				return err
			}
		}
		if err := writeAllAt(l.f, c.data, l.wOff); err != nil {
			return err
		}
		l.wOff += int64(len(c.data))
	}
	if sync {
		return l.f.Sync()
	}
	return nil
}

// rollTo syncs and closes the current segment and creates segment seg. It
// syncs in every mode, UnsafeNoSync included (once per segment, so cheap):
// an older segment is then always whole, and Sync and Close, which sync
// only the current file, cover everything.
func (l *Log) rollTo(seg uint32) error {
	if l.f != nil {
		err := l.f.Sync()
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
		l.f = nil
		if err != nil {
			return err
		}
	}
	f, err := createSegment(l.opts.FS, l.dir, seg, l.segBytes)
	if err != nil {
		return err
	}
	l.f, l.wOff = f, segHeaderSize
	return nil
}

// syncer is the Interval mode's background flusher.
func (l *Log) syncer(d time.Duration) {
	defer close(l.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		for l.flushing {
			l.cond.Wait()
		}
		if !l.closed && l.err == nil && (l.dirty || len(l.pending) > 0) {
			l.flushLocked(true)
			l.drainLocked()
		}
		l.mu.Unlock()
	}
}

// Sync makes every record appended so far durable, whatever the sync mode.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return err
	}
	return l.waitDurableLocked(l.last)
}

// Roll makes every record appended so far durable and starts a new
// segment now, durably (created, header synced, directory synced), unless
// the current one holds no record yet; it returns the number of the
// segment the next record goes to. A checkpoint names it: every segment
// from there on must exist, so losing one is corruption, not a clean end.
func (l *Log) Roll() (uint32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	if err := l.waitDurableLocked(l.last); err != nil {
		return 0, err
	}
	for l.flushing {
		l.cond.Wait()
	}
	if err := l.usableLocked(); err != nil {
		return 0, err
	}
	if !l.rollNext && l.segOff <= segHeaderSize && len(l.pending) == 0 {
		return l.seg, nil
	}
	if l.seg >= maxSegment {
		return 0, fmt.Errorf("wal: segment numbers exhausted")
	}
	l.rollNext = false
	l.seg++
	l.segOff = segHeaderSize
	l.pending = append(l.pending, chunk{seg: l.seg, create: true, data: l.buf()})
	if err := l.flushLocked(true); err != nil {
		return 0, err
	}
	return l.seg, nil
}

// LastLSN returns the LSN of the last record appended (acknowledged or
// not), or 0 if the log holds none.
func (l *Log) LastLSN() LSN {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// Stats returns counters since Open.
func (l *Log) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// TruncateBefore deletes the oldest segments whose records all precede
// lsn, typically the LSN of a checkpoint. Whole segments only: records
// before lsn in its own segment stay, and the segment being written is
// never deleted. Call it only after the records are safe elsewhere.
func (l *Log) TruncateBefore(lsn LSN) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.opts.ReadOnly {
		return ErrReadOnly
	}
	limit := min(lsn.Segment(), l.active)
	removed := false
	for l.first < limit {
		// Oldest first, so a failure or crash midway leaves no gap.
		if err := l.opts.FS.Remove(l.path(l.first)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return fmt.Errorf("wal: %w", err) // (a gap below IgnoreBefore is not an error)
		}
		l.first++
		removed = true
	}
	if removed {
		if err := l.opts.FS.SyncDir(l.dir); err != nil {
			return fmt.Errorf("wal: %w", err)
		}
	}
	return nil
}

// Replay calls fn for every record with an LSN at or after from, in log
// order, up to the last record handed to the OS when Replay started. The
// slice passed to fn is valid only during the call. An error from fn stops
// the replay and is returned; damage is returned as a *CorruptionError.
// Records in segments removed by TruncateBefore are not replayed; do not
// truncate concurrently with a replay of the same segments. A from past the
// end of the log is ErrPastEnd.
func (l *Log) Replay(from LSN, fn func(LSN, []byte) error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	first, lastSeg, lastOff := l.first, l.writtenSeg, l.writtenOff
	l.mu.Unlock()
	if end := makeLSN(lastSeg, lastOff); from > end {
		// A checkpoint ahead of the log means the log lost records or is
		// not the one the checkpoint was taken from.
		return fmt.Errorf("%w: from %v, log ends at %v", ErrPastEnd, from, end)
	}
	if lastSeg == 0 {
		return nil // a read-only log over an empty directory
	}
	for seg := max(first, from.Segment()); seg <= lastSeg; seg++ {
		if err := l.replaySegment(seg, lastSeg, lastOff, from, fn); err != nil {
			return err
		}
	}
	return nil
}

func (l *Log) replaySegment(seg, lastSeg uint32, lastOff int64, from LSN, fn func(LSN, []byte) error) error {
	if seg == lastSeg && lastOff <= segHeaderSize {
		return nil // no record (read-only, its header may still be torn)
	}
	f, err := l.opts.FS.OpenFile(l.path(seg), os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	r := NewReader(f, fi.Size(), seg)
	if seg == lastSeg {
		r.limit = max(lastOff, 1) // what was written when Replay started
	}
	for r.Next() {
		if r.LSN() < from {
			continue
		}
		if err := fn(r.LSN(), r.Record()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil && !errors.Is(err, ErrTrailingBytes) {
		return err // (trailing bytes hold no record: Open logged them)
	}
	return nil
}

// Holes returns the positions of the hole fragments in the segments Open
// verified: stretches Repair gave up, which the records around them
// survived. Each is the LSN of the record after the hole (or of the end
// of the intact records, for a hole at a segment's end). A caller that
// applies records that depend on each other (an update needing a create)
// uses it to know some may be missing.
func (l *Log) Holes() []LSN {
	return slices.Clone(l.holes)
}

// Close writes and syncs what is pending (in every sync mode) and closes
// the log. It returns the error that poisoned the log, if any.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	if l.opts.ReadOnly {
		l.mu.Unlock()
		return nil // nothing written, nothing held open
	}
	if l.stop != nil {
		l.mu.Unlock()
		close(l.stop)
		<-l.done
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	for l.flushing {
		l.cond.Wait()
	}
	var err error
	if l.err != nil {
		// A last try at undoing a failed flush, so the files hold no
		// record that was reported failed.
		if uerr := l.undoLocked(); uerr != nil {
			err = l.err
		}
	}
	if err == nil {
		err = l.flushLocked(true)
	}
	if l.f != nil {
		err = errors.Join(err, l.f.Close())
		l.f = nil
	}
	// l.enc is left open: an Append racing with Close may still be
	// compressing with it, and EncodeAll holds no resources to release.
	l.cond.Broadcast()
	return err
}
