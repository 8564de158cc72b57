package engine

import (
	"errors"
	"fmt"
)

// The typed sections of a segment file, parsed once at open from the
// mapped bytes (layouts: docs/format/segment.md). Parsing checks every
// header field and size against the node count, so the accessors below
// need no offset arithmetic of their own; what they still read from the
// bytes (offsets inside a section) is bounds-checked, so damaged bytes
// give an error or wrong data (caught by the section checksums before a
// section's first use), never a panic.

// idSection (kind 3): record i's ID is blob[off[i]:off[i+1]]; sorted
// lists the live nodes ordered by ID.
type idSection struct {
	n, live uint64
	off     []byte // (n+1) u64
	sorted  []byte // live u32
	blob    []byte
}

func parseIDs(b []byte, n int) (idSection, error) {
	nn := uint64(n)
	if len(b) < 16 || le.Uint64(b) != nn {
		return idSection{}, errors.New("id section header")
	}
	s := idSection{n: nn, live: le.Uint64(b[8:])}
	offEnd := 16 + 8*(nn+1)
	if s.live > nn || uint64(len(b)) < offEnd+4*s.live+4*(s.live%2) {
		return idSection{}, errors.New("id section too short")
	}
	sortedEnd := offEnd + 4*s.live
	s.off, s.sorted, s.blob = b[16:offEnd], b[offEnd:sortedEnd], b[sortedEnd+4*(s.live%2):]
	return s, nil
}

// id returns node's ID bytes, nil when the offsets are out of range.
func (s *idSection) id(node uint32) []byte {
	return slice(s.blob, u64at(s.off, 0, uint64(node)), u64at(s.off, 0, uint64(node)+1))
}

// sortedAt returns the i-th live node in ID order (i < live).
func (s *idSection) sortedAt(i int) uint32 { return le.Uint32(s.sorted[4*i:]) }

// deadNodes lists the nodes missing from the sorted table: those that
// were dead when the file was written.
func (s *idSection) deadNodes() []uint32 {
	live := make([]uint64, (s.n+63)/64)
	for i := range int(s.live) {
		if node := uint64(s.sortedAt(i)); node < s.n {
			live[node>>6] |= 1 << (node & 63)
		}
	}
	var dead []uint32
	for node := uint64(0); node < s.n; node++ {
		if live[node>>6]&(1<<(node&63)) == 0 {
			dead = append(dead, uint32(node))
		}
	}
	return dead
}

// rowSection (kind 4, version 1): record i's encoded metadata is
// blob[off[i]:off[i+1]] (empty: none).
type rowSection struct {
	off  []byte // (n+1) u64
	blob []byte
}

func parseRows(b []byte, n int) (*rowSection, error) {
	nn := uint64(n)
	if uint64(len(b)) < 8+8*(nn+1) || le.Uint64(b) != nn {
		return nil, errors.New("metadata section too short")
	}
	return &rowSection{off: b[8 : 16+8*nn], blob: b[16+8*nn:]}, nil
}

func (s *rowSection) row(node uint32) []byte {
	return slice(s.blob, u64at(s.off, 0, uint64(node)), u64at(s.off, 0, uint64(node)+1))
}

// textSection (kind 5): texts concatenated into zstd-compressed blocks;
// loc holds (block, offset, length) per record.
type textSection struct {
	n, nblocks uint64
	boff       []byte // (nblocks+1) u64
	loc        []byte // n × 3 u32
	blocks     []byte
}

func parseTexts(b []byte, n int) (textSection, error) {
	nn := uint64(n)
	if len(b) < 16 || le.Uint64(b) != nn {
		return textSection{}, errors.New("text section header")
	}
	s := textSection{n: nn, nblocks: le.Uint64(b[8:])}
	if s.nblocks > nn || uint64(len(b)) < 16+8*(s.nblocks+1)+12*nn+4*((3*nn)%2) {
		return textSection{}, errors.New("text section too short")
	}
	locBase := 16 + 8*(s.nblocks+1)
	s.boff, s.loc = b[16:locBase], b[locBase:locBase+12*nn]
	s.blocks = b[locBase+12*nn+4*((3*nn)%2):]
	return s, nil
}

// where returns node's (block, offset, length); length 0 past the end.
func (s *textSection) where(node uint32) (blk, off, ln uint64) {
	p := 12 * uint64(node)
	if p+12 > uint64(len(s.loc)) {
		return 0, 0, 0
	}
	return uint64(le.Uint32(s.loc[p:])), uint64(le.Uint32(s.loc[p+4:])), uint64(le.Uint32(s.loc[p+8:]))
}

// block returns the compressed bytes of block blk, nil when out of range.
func (s *textSection) block(blk uint64) []byte {
	if blk >= s.nblocks {
		return nil
	}
	return slice(s.blocks, u64at(s.boff, 0, blk), u64at(s.boff, 0, blk+1))
}

// timeSection (kind 6): four arrays of n u64.
type timeSection struct {
	created, updated, lastAccess, count []byte
}

func parseTimes(b []byte, n int) (timeSection, error) {
	nn := uint64(n)
	if uint64(len(b)) != 8+32*nn || le.Uint64(b) != nn {
		return timeSection{}, errors.New("times section size")
	}
	col := func(i uint64) []byte { return b[8+8*nn*i : 8+8*nn*(i+1)] }
	return timeSection{col(0), col(1), col(2), col(3)}, nil
}

// at64 reads node's u64 of a times array (0 past its end).
func at64(b []byte, node uint32) uint64 { return u64at(b, 0, uint64(node)) }

// sumSection (kind 10, version 3): one record checksum per node.
type sumSection struct{ sums []byte }

func parseSums(b []byte, n int) (sumSection, error) {
	nn := uint64(n)
	if uint64(len(b)) != 8+4*(nn+nn%2) || le.Uint64(b) != nn {
		return sumSection{}, fmt.Errorf("sums section of %d bytes for %d nodes", len(b), n)
	}
	return sumSection{b[8 : 8+4*nn]}, nil
}

// at returns node's record checksum (0 past the end: never a record's).
func (s sumSection) at(node uint32) uint32 {
	if p := 4 * uint64(node); p+4 <= uint64(len(s.sums)) {
		return le.Uint32(s.sums[p:])
	}
	return 0
}
