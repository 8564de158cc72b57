package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Causes reported inside a CorruptionError.
var (
	errBadHeaderCRC  = errors.New("segment header checksum mismatch")
	errBadSegment    = errors.New("segment header names another segment")
	errShortHeader   = errors.New("truncated segment header")
	errZeroHeader    = errors.New("zeroed segment header")
	errBadType       = errors.New("invalid fragment type")
	errBadLength     = errors.New("fragment length crosses a page boundary")
	errBadCRC        = errors.New("fragment checksum mismatch")
	errBadPadding    = errors.New("non-zero bytes in page padding")
	errZeroed        = errors.New("zeroed bytes where a fragment should start")
	errBadSequence   = errors.New("fragment out of sequence")
	errTooLarge      = errors.New("record larger than MaxRecordSize")
	errDecompression = errors.New("record does not decompress")
	errBadSize       = errors.New("segment header gives no size")
	errBadMagic      = errors.New("segment header magic damaged")
)

// decoder is shared by all readers; DecodeAll is safe for concurrent use.
// The memory cap bounds what a hostile frame can make it allocate.
var decoder = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxRecordSize))
	if err != nil {
		panic(err) // only invalid options fail, and these are constant
	}
	return d
})

// Reader reads the records of one segment, verifying every checksum. It
// reads through an io.ReaderAt, so it never reads outside [0, size).
type Reader struct {
	r    io.ReaderAt
	size int64 // bytes read: the file size, capped at the declared size
	seg  uint32
	raw  bool // return stored bytes without decompressing (Open's scan)

	version  byte
	declared int64 // version 2: the size the header gives; 0 for version 1
	fileSize int64 // the size the caller gave
	limit    int64 // stop cleanly here (Replay: the end of what was written); 0: no limit
	final    bool  // the error is the end of the segment: nothing to resync past
	holes    int   // hole fragments read (Repair's marks)
	// legacyPrev: the segment before this one is version 1, whose writers
	// created a segment before writing its header, so a file shorter than
	// a header may be one torn at creation rather than one cut.
	legacyPrev bool

	page      []byte
	pageStart int64 // offset of page in the segment, or -1
	off       int64 // next fragment to read
	end       int64 // end of the last intact record
	started   bool

	rec []byte // stored bytes of the current record
	out []byte // decompressed record
	cur []byte // what Record returns
	lsn LSN
	err error

	badFrag  int64 // offset of the fragment that failed, for dataFollows
	fragEnd  int64 // end of the fragment being read when its length is plausible, or -1
	badStart bool  // the fragment that failed is intact and starts a record (out of sequence)
}

// NewReader returns a Reader over a segment of size bytes read from r;
// segment is the number the segment's header must carry.
func NewReader(r io.ReaderAt, size int64, segment uint32) *Reader {
	return &Reader{r: r, size: size, fileSize: size, seg: segment, pageStart: -1, fragEnd: -1}
}

// Next advances to the next record and reports whether there is one. At
// the end of the segment, or on damage, it returns false; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.started {
		if !r.readHeader() {
			return false
		}
		r.started = true
	}
	r.rec = r.rec[:0]
	start := int64(-1)
	compressed := byte(0)
	for {
		if r.limit > 0 && r.off >= r.limit && start < 0 {
			return false
		}
		r.fragEnd, r.badStart = -1, false
		if r.off >= r.size {
			if start >= 0 {
				return r.corrupt(r.off, r.eof())
			}
			return r.atEnd()
		}
		if !r.loadPage() {
			return false
		}
		in := r.off - r.pageStart
		p := r.page
		if PageSize-in < fragHeader { // the writer's padding: rest of the page
			if start >= 0 {
				return r.corrupt(r.off, errBadSequence)
			}
			if !allZero(p[in:]) {
				return r.corrupt(r.off, errBadPadding)
			}
			r.off = r.pageStart + PageSize
			continue
		}
		if p[in] == fragPad {
			// The writer never leaves a longer run of zeros, so this is a
			// zero-filled tail (a clean end) or zeroed data (damage).
			if start < 0 && r.zerosToEnd() {
				r.off = r.size
				return r.atEnd()
			}
			return r.corrupt(r.off, errZeroed)
		}
		if int64(len(p))-in < fragHeader {
			return r.corrupt(r.off, r.eof())
		}
		typ := p[in]
		n := int64(binary.BigEndian.Uint16(p[in+1:]))
		sum := binary.BigEndian.Uint32(p[in+3:])
		if typ&^(fragTypeMask|flagCompressed) != 0 || typ&fragTypeMask > fragHole {
			return r.corrupt(r.off, errBadType)
		}
		if in+fragHeader+n > PageSize {
			return r.corrupt(r.off, errBadLength)
		}
		r.fragEnd = r.off + fragHeader + n
		if in+fragHeader+n > int64(len(p)) {
			return r.corrupt(r.off, r.eof())
		}
		data := p[in+fragHeader : in+fragHeader+n]
		if fragmentCRC(typ, data) != sum {
			return r.corrupt(r.off, errBadCRC)
		}
		kind := typ & fragTypeMask
		if kind == fragHole && start < 0 && typ == fragHole {
			// Repair's mark over bytes it gave up: skip it.
			r.holes++
			r.off += fragHeader + n
			r.end = r.off
			continue
		}
		r.badStart = kind == fragFull || kind == fragFirst
		switch {
		case (kind == fragFull || kind == fragFirst) && start < 0:
			start, compressed = r.off, typ&flagCompressed
		case (kind == fragMiddle || kind == fragLast) && start >= 0 && typ&flagCompressed == compressed:
		default:
			return r.corrupt(r.off, errBadSequence)
		}
		if len(r.rec)+len(data) > MaxRecordSize {
			return r.corrupt(r.off, errTooLarge)
		}
		r.rec = append(r.rec, data...)
		r.off += fragHeader + n
		if kind == fragFull || kind == fragLast {
			return r.finish(start, compressed != 0)
		}
	}
}

// finish makes the assembled record current.
func (r *Reader) finish(start int64, compressed bool) bool {
	r.cur = r.rec
	if compressed && !r.raw {
		out, err := decoder().DecodeAll(r.rec, r.out[:0])
		if err != nil || len(out) > MaxRecordSize {
			return r.corrupt(start, fmt.Errorf("%w: %v", errDecompression, err))
		}
		r.out, r.cur = out, out
	}
	r.lsn = makeLSN(r.seg, start)
	r.end = r.off
	return true
}

func (r *Reader) readHeader() bool {
	if r.size < segHeaderSize {
		// A segment is created whole (a temporary, renamed into place),
		// so a file shorter than its header was cut: whatever it held is
		// gone. Only a version 1 writer, which created the file and then
		// wrote the header, left short segments of its own, and only
		// after a version 1 segment (legacyPrev), with nothing but a
		// prefix of a version 1 header in them.
		h := make([]byte, r.size)
		if r.legacyPrev && readFull(r.r, h, 0) == nil && bytes.HasPrefix(segMagic[:], h[:min(len(h), 4)]) &&
			(len(h) <= 4 || h[4] == legacyVersion) {
			return r.corrupt(0, errShortHeader)
		}
		r.final = true
		return r.corrupt(0, fmt.Errorf("%w: %d bytes, inside the header", ErrTruncated, r.size))
	}
	h := make([]byte, segHeaderSize)
	if err := readFull(r.r, h, 0); err != nil {
		r.err = err
		return false
	}
	switch {
	case allZero(h):
		return r.corrupt(0, errZeroHeader)
	case !bytes.Equal(h[:4], segMagic[:]):
		head := make([]byte, min(r.size, PageSize))
		if err := readFull(r.r, head, 0); err != nil {
			r.err = err
			return false
		}
		if !notSegment(head, r.seg) {
			return r.corrupt(0, errBadMagic) // ours, with a damaged header
		}
		r.err = fmt.Errorf("%w: segment %s has no WAL magic", ErrNotWAL, segmentName(r.seg))
		return false
	case binary.BigEndian.Uint32(h[12:]) != crc32.Checksum(h[:12], castagnoli):
		return r.corrupt(0, errBadHeaderCRC)
	case h[4] != formatVersion && h[4] != legacyVersion:
		r.err = fmt.Errorf("%w %d in segment %s", ErrVersion, h[4], segmentName(r.seg))
		return false
	case binary.BigEndian.Uint32(h[8:]) != r.seg:
		return r.corrupt(0, errBadSegment)
	}
	r.version = h[4]
	if r.version == formatVersion {
		r.declared = int64(uint32(h[5])<<16|uint32(h[6])<<8|uint32(h[7])) * PageSize
		if r.declared == 0 || r.declared > preallocSize(MaxSegmentSize) {
			return r.corrupt(0, errBadSize) // (Repair would allocate it)
		}
		r.size = min(r.size, r.declared)
	}
	r.off, r.end = segHeaderSize, segHeaderSize
	return true
}

// eof is the cause for data that ends inside a record: a torn write, or
// in a version 2 segment shorter than its header says, truncation.
func (r *Reader) eof() error {
	if r.fileSize < r.declared {
		r.final = true
		return fmt.Errorf("%w: %d bytes, the header says %d", ErrTruncated, r.fileSize, r.declared)
	}
	return io.ErrUnexpectedEOF
}

// atEnd ends a segment whose records were all read: cleanly, unless it is
// a version 2 segment whose file is shorter (truncated: records may be
// missing) or longer (bytes appended after it) than its header says.
func (r *Reader) atEnd() bool {
	switch {
	case r.fileSize < r.declared:
		r.final = true
		r.err = &CorruptionError{Segment: r.seg, Offset: r.end,
			Err: fmt.Errorf("%w: %d bytes, the header says %d", ErrTruncated, r.fileSize, r.declared)}
		return false
	case r.declared > 0 && r.fileSize > r.declared && r.limit == 0:
		r.final = true
		r.err = &CorruptionError{Segment: r.seg, Offset: r.declared,
			Err: fmt.Errorf("%w: %d bytes after the segment's %d", ErrTrailingBytes, r.fileSize-r.declared, r.declared)}
		return false
	}
	return false
}

// loadPage makes r.page hold the page containing r.off.
func (r *Reader) loadPage() bool {
	ps := r.off / PageSize * PageSize
	if ps == r.pageStart {
		return true
	}
	n := min(PageSize, r.size-ps)
	if cap(r.page) < PageSize {
		r.page = make([]byte, PageSize)
	}
	r.page = r.page[:n]
	if err := readFull(r.r, r.page, ps); err != nil {
		r.pageStart = -1
		r.err = err
		return false
	}
	r.pageStart = ps
	return true
}

func (r *Reader) corrupt(at int64, err error) bool {
	r.badFrag = at
	r.err = &CorruptionError{Segment: r.seg, Offset: r.end, Err: fmt.Errorf("at offset %d: %w", at, err)}
	return false
}

// zerosToEnd reports whether the segment holds only zeros from r.off on.
func (r *Reader) zerosToEnd() bool {
	if !allZero(r.page[r.off-r.pageStart:]) {
		return false
	}
	buf := make([]byte, PageSize)
	for off := r.pageStart + int64(len(r.page)); off < r.size; off += PageSize {
		b := buf[:min(PageSize, r.size-off)]
		if readFull(r.r, b, off) != nil || !allZero(b) {
			return false
		}
	}
	return true
}

// notSegment reports whether a file under segment seg's name whose first
// bytes are head (up to a page) holds something other than a segment of
// this format: it has neither the magic nor its own number where a
// header has them, is not zeroed there, and what follows the header is
// neither zeros nor an intact fragment. A segment of ours with a damaged
// header keeps at least one of those (one flipped or zeroed stretch
// cannot destroy the magic, the number and the first fragment at once);
// random bytes match none but by a 2^-32 chance. Files shorter than a
// header are told apart by their position (listSegments).
func notSegment(head []byte, seg uint32) bool {
	if len(head) < segHeaderSize {
		return false
	}
	h := head[:segHeaderSize]
	if allZero(h) || bytes.Equal(h[:4], segMagic[:]) || binary.BigEndian.Uint32(h[8:]) == seg {
		return false
	}
	if allZero(head[segHeaderSize:]) {
		return false // an empty segment whose header was overwritten
	}
	if len(head) >= segHeaderSize+fragHeader {
		if _, _, ok := fragIn(head, segHeaderSize); ok {
			return false
		}
	}
	return true
}

// sectorSize is the unit a storage device writes atomically at the least:
// a torn write loses whole sectors, which read as zeros in a
// preallocated segment.
const sectorSize = 512

// tornAppend reports whether the damage Next stopped at, in the records
// (not the header), looks like an append that did not complete rather than
// a complete record damaged afterwards. An append that stopped short
// leaves zeros where its bytes did not land (segments are zero-filled when
// created and never reused, and a device loses whole sectors): a fragment
// header missing or out of sequence, a record running past the end of
// the data (a version 1 file cut short), or a 512-byte sector of the
// record (clipped to the record) all zeros. A record whose framing is
// whole (every fragment header valid and in sequence, its last fragment
// within the data) with no such sector, yet a failing checksum, was
// written completely and changed since: that is ErrDamagedRecord. (A
// record's last byte is often zero, so a zero tail shorter than a sector
// is no sign of a torn write: only a process that died between a write
// the kernel cut short and the log undoing it leaves one.)
func (r *Reader) tornAppend() bool {
	start := r.end
	off, ok := r.damagedExtent()
	if !ok {
		return true
	}
	b := make([]byte, off-start)
	if readFull(r.r, b, start) != nil {
		return true
	}
	for p := start; p < off; p = (p/sectorSize + 1) * sectorSize {
		if allZero(b[p-start : min(off, (p/sectorSize+1)*sectorSize)-start]) {
			return true
		}
	}
	return false
}

// damagedExtent returns where the record Next stopped in (it starts at
// IntactEnd) ends, following its fragment headers, when its framing is
// whole: every header valid and in sequence, the last fragment within the
// data. Only its checksums may fail.
func (r *Reader) damagedExtent() (int64, bool) {
	if !r.started {
		return 0, false
	}
	off := r.end
	var compressed byte
	for frags := 0; frags <= MaxRecordSize/(PageSize-fragHeader)+2; frags++ {
		if PageSize-off%PageSize < fragHeader { // the writer's padding
			if frags == 0 {
				return 0, false
			}
			off = (off/PageSize + 1) * PageSize
		}
		var h [fragHeader]byte
		if off+fragHeader > r.size || readFull(r.r, h[:], off) != nil {
			return 0, false
		}
		typ, kind := h[0], h[0]&fragTypeMask
		n := int64(binary.BigEndian.Uint16(h[1:]))
		switch {
		case typ&^(fragTypeMask|flagCompressed) != 0:
			return 0, false
		case frags == 0 && (kind == fragFull || kind == fragFirst):
			compressed = typ & flagCompressed
		case frags > 0 && (kind == fragMiddle || kind == fragLast) && typ&flagCompressed == compressed:
		default:
			return 0, false
		}
		if off%PageSize+fragHeader+n > PageSize || off+fragHeader+n > r.size {
			return 0, false
		}
		off += fragHeader + n
		if kind == fragFull || kind == fragLast {
			return off, true
		}
	}
	return 0, false
}

// Record returns the current record. The slice is valid until the next
// call to Next.
func (r *Reader) Record() []byte { return r.cur }

// LSN returns the position of the current record.
func (r *Reader) LSN() LSN { return r.lsn }

// Err returns the error that stopped Next: nil at a clean end of segment,
// a *CorruptionError for damage, or the error of the underlying reader.
func (r *Reader) Err() error { return r.err }

// dataFollows reports whether an intact record lies after the damage
// Next stopped at (where Resync would resume): then the damage is not a
// torn tail but corruption inside the log. Segments are created
// zero-filled and never reused, so nothing intact can follow a torn
// append, except the later sectors of a torn write that persisted out of
// order (see the package's caveats).
func (r *Reader) dataFollows() bool {
	return r.resumeAt() >= 0
}

// Version returns the segment's format version (after the first Next).
func (r *Reader) Version() int { return int(r.version) }

// Size returns the size the segment's header gives (version 2), or 0.
func (r *Reader) Size() int64 { return r.declared }

// Holes returns how many hole fragments (stretches Repair gave up) Next
// has skipped so far.
func (r *Reader) Holes() int { return r.holes }

// Resync moves past the damage Next stopped at, to the next intact
// record, and reports whether there is one; Next then returns it (and
// may stop at more damage, to be resynced past in turn). It returns the
// offset where reading resumes: the bytes from IntactEnd, before the call,
// up to it are the damaged stretch. It looks, in order, right after the
// damaged fragment (when its length is plausible), at every byte of the
// rest of the damaged page, and at the start of every later page, where
// the writer's page alignment puts a fragment header; fragments that
// continue a record whose start is lost are skipped. Damage in the
// segment header, truncation and trailing bytes are not resynced past.
// A match can be a fake (payload bytes that frame a valid fragment by
// chance: a 2^-32 checksum collision, or a payload that embeds a WAL
// segment), which is why only Repair resyncs, never Open or Replay.
func (r *Reader) Resync() (int64, bool) {
	var ce *CorruptionError
	if !r.started || r.final || !errors.As(r.err, &ce) {
		return 0, false
	}
	off := r.resumeAt()
	if off < 0 {
		return 0, false
	}
	r.err, r.off, r.end = nil, off, off
	return off, true
}

// IntactEnd returns the offset after the last intact record (or hole).
func (r *Reader) IntactEnd() int64 { return r.end }

// resumeAt finds where reading can resume after the damage at r.badFrag,
// or returns -1.
func (r *Reader) resumeAt() int64 {
	bad := r.badFrag
	if r.badStart && bad > r.end {
		return bad // an intact record start out of sequence: resume there
	}
	if e := r.fragEnd; e > bad && e%PageSize != 0 && PageSize-e%PageSize >= fragHeader {
		if kind, _, ok := r.fragAt(e); ok && isStart(kind) {
			return e
		}
	}
	// Every byte of the rest of the damaged page: a fragment header there
	// is at least a header's length after the damaged one.
	ps := bad / PageSize * PageSize
	page := make([]byte, min(PageSize, r.size-ps))
	if readFull(r.r, page, ps) == nil {
		for in := bad - ps + fragHeader; in+fragHeader <= int64(len(page)); in++ {
			if kind, _, ok := fragIn(page, in); ok && isStart(kind) {
				return ps + in
			}
		}
	}
	for p := ps + PageSize; p < r.size; p += PageSize {
		for off := p; off+fragHeader <= min(p+PageSize, r.size); {
			kind, n, ok := r.fragAt(off)
			if !ok {
				break
			}
			if isStart(kind) {
				return off
			}
			off += fragHeader + n // a continuation of a lost record
			if PageSize-off%PageSize < fragHeader {
				break
			}
		}
	}
	return -1
}

func isStart(kind byte) bool { return kind == fragFull || kind == fragFirst || kind == fragHole }

// fragAt reads the fragment at off and returns its kind and length if it
// is intact and not padding.
func (r *Reader) fragAt(off int64) (byte, int64, bool) {
	if PageSize-off%PageSize < fragHeader || off+fragHeader > r.size {
		return 0, 0, false
	}
	n := min(PageSize-off%PageSize, r.size-off)
	b := make([]byte, n)
	if readFull(r.r, b, off) != nil {
		return 0, 0, false
	}
	return fragIn(b, 0)
}

// fragIn checks the fragment at b[in:], b ending no later than the end of
// its page: its kind and length if it is intact and not padding.
func fragIn(b []byte, in int64) (byte, int64, bool) {
	typ := b[in]
	kind := typ & fragTypeMask
	if typ&^(fragTypeMask|flagCompressed) != 0 || kind == fragPad || kind > fragHole || (kind == fragHole && typ != fragHole) {
		return 0, 0, false
	}
	n := int64(binary.BigEndian.Uint16(b[in+1:]))
	if in+fragHeader+n > int64(len(b)) {
		return 0, 0, false
	}
	if fragmentCRC(typ, b[in+fragHeader:in+fragHeader+n]) != binary.BigEndian.Uint32(b[in+3:]) {
		return 0, 0, false
	}
	return kind, n, true
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// readFull fills p from off; io.ReaderAt may report io.EOF with a full read.
func readFull(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
