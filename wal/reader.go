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
	size int64
	seg  uint32
	raw  bool // return stored bytes without decompressing (Open's scan)

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
	badAfter int64 // where the next fragment would be if its length is plausible, or -1
}

// NewReader returns a Reader over a segment of size bytes read from r;
// segment is the number the segment's header must carry.
func NewReader(r io.ReaderAt, size int64, segment uint32) *Reader {
	return &Reader{r: r, size: size, seg: segment, pageStart: -1, badAfter: -1}
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
		if r.off >= r.size {
			if start >= 0 {
				return r.corrupt(r.off, io.ErrUnexpectedEOF)
			}
			return false
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
				return false
			}
			return r.corrupt(r.off, errZeroed)
		}
		if int64(len(p))-in < fragHeader {
			return r.corrupt(r.off, io.ErrUnexpectedEOF)
		}
		typ := p[in]
		n := int64(binary.BigEndian.Uint16(p[in+1:]))
		sum := binary.BigEndian.Uint32(p[in+3:])
		if typ&^(fragTypeMask|flagCompressed) != 0 || typ&fragTypeMask > fragLast {
			return r.corrupt(r.off, errBadType)
		}
		if in+fragHeader+n > PageSize {
			return r.corrupt(r.off, errBadLength)
		}
		r.badAfter = r.off + fragHeader + n
		if in+fragHeader+n > int64(len(p)) {
			return r.corrupt(r.off, io.ErrUnexpectedEOF)
		}
		data := p[in+fragHeader : in+fragHeader+n]
		if fragmentCRC(typ, data) != sum {
			return r.corrupt(r.off, errBadCRC)
		}
		r.badAfter = -1
		kind := typ & fragTypeMask
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
		return r.corrupt(0, errShortHeader)
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
		r.err = fmt.Errorf("%w: segment %s has no WAL magic", ErrNotWAL, segmentName(r.seg))
		return false
	case binary.BigEndian.Uint32(h[12:]) != crc32.Checksum(h[:12], castagnoli):
		return r.corrupt(0, errBadHeaderCRC)
	case h[4] != formatVersion:
		r.err = fmt.Errorf("%w %d in segment %s", ErrVersion, h[4], segmentName(r.seg))
		return false
	case binary.BigEndian.Uint32(h[8:]) != r.seg:
		return r.corrupt(0, errBadSegment)
	}
	r.off, r.end = segHeaderSize, segHeaderSize
	return true
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

// Record returns the current record. The slice is valid until the next
// call to Next.
func (r *Reader) Record() []byte { return r.cur }

// LSN returns the position of the current record.
func (r *Reader) LSN() LSN { return r.lsn }

// Err returns the error that stopped Next: nil at a clean end of segment,
// a *CorruptionError for damage, or the error of the underlying reader.
func (r *Reader) Err() error { return r.err }

// intactEnd returns the offset after the last intact record.
func (r *Reader) intactEnd() int64 { return r.end }

// dataFollows reports whether an intact fragment lies after the damage
// Next stopped at: then the damage is not a torn tail but corruption
// inside the log. It looks at the fragment right after the damaged one
// (when its length was plausible) and at the start of every later page.
func (r *Reader) dataFollows() bool {
	if r.badAfter >= 0 && r.badAfter%PageSize != 0 && r.fragmentAt(r.badAfter) {
		return true
	}
	for p := (r.badFrag/PageSize + 1) * PageSize; p < r.size; p += PageSize {
		if r.fragmentAt(p) {
			return true
		}
	}
	return false
}

// fragmentAt reports whether an intact, non-padding fragment starts at off.
func (r *Reader) fragmentAt(off int64) bool {
	if PageSize-off%PageSize < fragHeader || off+fragHeader > r.size {
		return false
	}
	var h [fragHeader]byte
	if readFull(r.r, h[:], off) != nil {
		return false
	}
	typ, n := h[0], int64(binary.BigEndian.Uint16(h[1:]))
	if typ&^(fragTypeMask|flagCompressed) != 0 || typ&fragTypeMask == fragPad || typ&fragTypeMask > fragLast ||
		off%PageSize+fragHeader+n > PageSize || off+fragHeader+n > r.size {
		return false
	}
	data := make([]byte, n)
	if readFull(r.r, data, off+fragHeader) != nil {
		return false
	}
	return fragmentCRC(typ, data) == binary.BigEndian.Uint32(h[3:])
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
