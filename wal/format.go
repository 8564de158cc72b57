package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
)

// On-disk constants; docs/format/wal.md is the specification.
const (
	// PageSize is the alignment unit of a segment: a fragment header never
	// straddles a page boundary, so every page starts with a fragment
	// header or zero padding, which lets recovery look past a damaged record.
	PageSize = 32 << 10

	// MaxRecordSize is the largest payload Append accepts.
	MaxRecordSize = 16 << 20

	// DefaultSegmentSize is used when Options.SegmentSize is zero.
	DefaultSegmentSize = 64 << 20
	// MinSegmentSize and MaxSegmentSize bound Options.SegmentSize. The upper
	// bound keeps a segment offset in the 32 bits an LSN gives it.
	MinSegmentSize = 2 * PageSize
	MaxSegmentSize = 1 << 30

	// formatVersion is the version this package writes. Version 2
	// segments are preallocated: created at their full size, zero-filled,
	// with that size in the header, so a short file is truncation and not
	// a torn tail. Version 1 segments (no size, the file ends where the
	// last write ended) are still read; the log never appends to one.
	formatVersion = 2
	legacyVersion = 1
	segHeaderSize = 16
	fragHeader    = 7 // type(1) | length(2) | crc32c(4)
	segNameLen    = 8
)

var segMagic = [4]byte{'E', 'W', 'A', 'L'}

// Fragment types, in the low 3 bits of the type byte. Zero is padding.
const (
	fragPad    = 0
	fragFull   = 1
	fragFirst  = 2
	fragMiddle = 3
	fragLast   = 4
	// fragHole marks bytes Repair gave up: a damaged stretch it
	// overwrote in place, so the intact records after it keep their
	// offsets (and LSNs). Its data is zeros and means nothing.
	fragHole = 5

	fragTypeMask   = 0x07
	flagCompressed = 0x08
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// LSN is the position of a record: its segment number in the high 32 bits
// and the byte offset of its first fragment in that segment in the low 32.
// LSNs of later records are larger; zero is before every record.
type LSN uint64

func makeLSN(seg uint32, off int64) LSN { return LSN(uint64(seg)<<32 | uint64(off)) }

// Segment returns the number of the segment holding the record.
func (l LSN) Segment() uint32 { return uint32(l >> 32) }

// Offset returns the byte offset of the record in its segment.
func (l LSN) Offset() int64 { return int64(uint32(l)) }

// String formats l as segment:offset.
func (l LSN) String() string { return fmt.Sprintf("%08d:%d", l.Segment(), l.Offset()) }

// segmentName is the file name of segment seg: zero-padded so names sort
// in log order.
func segmentName(seg uint32) string { return fmt.Sprintf("%0*d", segNameLen, seg) }

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint32, bool) {
	if len(name) != segNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(name, 10, 32)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint32(n), true
}

// segmentHeader encodes the header of a version 2 segment seg of size
// bytes (a whole number of pages): magic(4) | version(1) | size in
// pages(3) | segment(4) | crc32c of the first 12(4). Version 1 had zeros
// where the size is.
func segmentHeader(seg uint32, size int64) []byte {
	h := make([]byte, segHeaderSize)
	copy(h, segMagic[:])
	h[4] = formatVersion
	pages := uint32(size / PageSize)
	h[5], h[6], h[7] = byte(pages>>16), byte(pages>>8), byte(pages)
	binary.BigEndian.PutUint32(h[8:], seg)
	binary.BigEndian.PutUint32(h[12:], crc32.Checksum(h[:12], castagnoli))
	return h
}

// fragmentCRC is the checksum of a fragment: it covers the type and length
// as well as the stored bytes, so a damaged header is caught too.
func fragmentCRC(typ byte, data []byte) uint32 {
	var h [3]byte
	h[0] = typ
	binary.BigEndian.PutUint16(h[1:], uint16(len(data)))
	return crc32.Update(crc32.Checksum(h[:], castagnoli), castagnoli, data)
}

// appendRecord frames data as a record starting at segment offset off and
// appends the bytes (padding included) to buf. It returns the extended
// buffer, the offset of the record's first fragment and the offset after it.
func appendRecord(buf []byte, off int64, compressed bool, data []byte) ([]byte, int64, int64) {
	var start int64 = -1
	for first := true; ; first = false {
		rem := PageSize - off%PageSize
		if rem < fragHeader {
			buf = append(buf, make([]byte, rem)...)
			off += rem
			rem = PageSize
		}
		if start < 0 {
			start = off
		}
		n := min(int64(len(data)), rem-fragHeader)
		last := n == int64(len(data))
		var typ byte
		switch {
		case first && last:
			typ = fragFull
		case first:
			typ = fragFirst
		case last:
			typ = fragLast
		default:
			typ = fragMiddle
		}
		if compressed {
			typ |= flagCompressed
		}
		var h [fragHeader]byte
		h[0] = typ
		binary.BigEndian.PutUint16(h[1:], uint16(n))
		binary.BigEndian.PutUint32(h[3:], fragmentCRC(typ, data[:n]))
		buf = append(append(buf, h[:]...), data[:n]...)
		off += fragHeader + n
		data = data[n:]
		if last {
			return buf, start, off
		}
	}
}

// preallocSize is the size a new segment is created at: SegmentSize
// rounded up to whole pages.
func preallocSize(segmentSize int64) int64 {
	return (segmentSize + PageSize - 1) / PageSize * PageSize
}

// holeFragments encodes hole fragments (and page padding) covering
// exactly [from, to), which must not end inside a page's last 6 bytes
// unless at the page's end: what Repair writes over a damaged stretch.
func holeFragments(from, to int64) []byte {
	var buf []byte
	for off := from; off < to; {
		pageEnd := (off/PageSize + 1) * PageSize
		end := min(pageEnd, to)
		if end-off < fragHeader { // only at a page's end: padding
			buf = append(buf, make([]byte, end-off)...)
			off = end
			continue
		}
		data := make([]byte, end-off-fragHeader)
		var h [fragHeader]byte
		h[0] = fragHole
		binary.BigEndian.PutUint16(h[1:], uint16(len(data)))
		binary.BigEndian.PutUint32(h[3:], fragmentCRC(fragHole, data))
		buf = append(append(buf, h[:]...), data...)
		off = end
	}
	return buf
}

// recordEnd returns the offset after a record of n stored bytes framed at
// off, without encoding it.
func recordEnd(off int64, n int64) int64 {
	for first := true; first || n > 0; first = false {
		rem := PageSize - off%PageSize
		if rem < fragHeader {
			off += rem
			rem = PageSize
		}
		k := min(n, rem-fragHeader)
		off += fragHeader + k
		n -= k
	}
	return off
}

// IsSegmentName reports whether name is a segment file name this package
// writes; a log directory's other entries are ignored.
func IsSegmentName(name string) bool {
	_, ok := parseSegmentName(name)
	return ok
}
