package hnsw

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	"github.com/engramdb/engram/quant"
)

// The serialized layout (docs/format/hnsw.md): a 64-byte header, a section
// table, then the sections, each starting at a multiple of 64 bytes.
const (
	formatVersion = 1
	headerSize    = 64
	sectionEntry  = 24
	numSections   = 7
	dataStart     = 256 // headerSize + numSections*sectionEntry, rounded up to 64
	sectionAlign  = 64
)

var magic = [8]byte{'E', 'N', 'G', 'H', 'N', 'S', 'W', 0}

// Section order in the table and the file.
const (
	secCodes = iota
	secVectors
	secLevel0
	secLevels
	secUpperOff
	secUpper
	secFlags
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func asBytes[T int8 | uint8 | uint32 | float32](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

func fromBytes[T int8 | uint8 | uint32 | float32](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

func alignUp(x uint64) uint64 { return (x + sectionAlign - 1) &^ (sectionAlign - 1) }

// WriteTo writes the serialized layout of the index to w. It holds the
// index's write lock while it runs: inserts and searches wait. It first
// links any live node that a walk from the entry point cannot reach (see
// reconnect), so every live node of a written graph can be found.
func (ix *Index) WriteTo(w io.Writer) (int64, error) {
	if !littleEndian {
		return 0, fmt.Errorf("hnsw: serialization needs a little-endian host")
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.pool.get()
	ix.reconnect(s)
	ix.pool.put(s)
	g := &ix.g
	n := int(ix.n.Load())
	secs := [numSections][]byte{
		secCodes:    asBytes(g.codes[:n*g.dim]),
		secVectors:  asBytes(g.vectors[:n*g.dim]),
		secLevel0:   asBytes(g.level0[:n*g.stride0()]),
		secLevels:   asBytes(g.levels[:n]),
		secUpperOff: asBytes(g.upperOff[:n]),
		secUpper:    asBytes(g.upper[:ix.upperUsed]),
		secFlags:    asBytes(g.flags[:n]),
	}
	head := make([]byte, dataStart)
	copy(head, magic[:])
	le := binary.LittleEndian
	le.PutUint32(head[8:], formatVersion)
	le.PutUint32(head[12:], 0)
	le.PutUint32(head[16:], uint32(g.dim))
	le.PutUint32(head[20:], uint32(g.m))
	le.PutUint32(head[24:], uint32(n))
	if e := ix.ep.Load(); e != 0 {
		id, level := unpackEP(e)
		le.PutUint32(head[28:], id)
		le.PutUint32(head[32:], uint32(level+1))
	}
	qb, _ := g.quant.MarshalBinary()
	copy(head[36:52], qb)
	le.PutUint32(head[52:], numSections)
	le.PutUint32(head[56:], uint32(ix.deleted.Load()))
	off := uint64(dataStart)
	for i, s := range secs {
		e := head[headerSize+i*sectionEntry:]
		le.PutUint64(e, off)
		le.PutUint64(e[8:], uint64(len(s)))
		le.PutUint32(e[16:], crc32.Checksum(s, castagnoli))
		off = alignUp(off + uint64(len(s)))
	}
	le.PutUint32(head[60:], headerCRC(head))
	var total int64
	write := func(b []byte) error {
		k, err := w.Write(b)
		total += int64(k)
		return err
	}
	if err := write(head); err != nil {
		return total, err
	}
	var pad [sectionAlign]byte
	for i, s := range secs {
		if err := write(s); err != nil {
			return total, err
		}
		if p := int(alignUp(uint64(total)) - uint64(total)); p > 0 && i < numSections-1 {
			if err := write(pad[:p]); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// headerCRC covers the header (without its CRC field) and the section table.
func headerCRC(head []byte) uint32 {
	c := crc32.Checksum(head[:60], castagnoli)
	return crc32.Update(c, castagnoli, head[headerSize:headerSize+numSections*sectionEntry])
}

// View is a read-only index over a serialized layout. It searches the
// caller's bytes in place; they must not change while the View is in use.
// A View is safe for concurrent use.
type View struct {
	g       graph
	n       int
	ep      uint32
	top     int
	empty   bool
	deleted int
	secs    [numSections][]byte
	offs    [numSections]uint64 // where each section starts in the layout
	crcs    [numSections]uint32
	pool    kept[scratch]

	verify ReadVerifier // nil: searches answer from the bytes as they are
	traces kept[trace]  // for searches checked by verify
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

// OpenView validates b (header, checksums of every section, every count,
// offset and neighbour id: see Verify) and returns a View searching it in
// place. If b is not 4-byte aligned it is copied once.
func OpenView(b []byte) (*View, error) {
	v, err := OpenViewUnverified(b)
	if err != nil {
		return nil, err
	}
	if err := v.Verify(); err != nil {
		return nil, err
	}
	return v, nil
}

// OpenViewUnverified checks only the header (its checksum, fields and the
// section table) and the entry point, reading a few hundred bytes, so that
// opening a large mmapped file costs no full read. Searches on a View whose
// sections are damaged return wrong results but never read out of range;
// call Verify (engine check) to detect the damage.
func OpenViewUnverified(b []byte) (*View, error) {
	if !littleEndian {
		return nil, fmt.Errorf("hnsw: serialized indexes need a little-endian host")
	}
	if len(b) < dataStart {
		return nil, corrupt("%d bytes, shorter than the header", len(b))
	}
	if uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		words := make([]uint64, (len(b)+7)/8)
		c := asBytesU64(words)[:len(b)]
		copy(c, b)
		b = c
	}
	le := binary.LittleEndian
	if [8]byte(b[:8]) != magic {
		return nil, corrupt("bad magic")
	}
	if v := le.Uint32(b[8:]); v != formatVersion {
		return nil, corrupt("unsupported version %d", v)
	}
	if headerCRC(b) != le.Uint32(b[60:]) {
		return nil, corrupt("header checksum mismatch")
	}
	dim, m, n := uint64(le.Uint32(b[16:])), uint64(le.Uint32(b[20:])), uint64(le.Uint32(b[24:]))
	if dim == 0 || dim > maxDim || m < 2 || m > maxM || le.Uint32(b[12:]) != 0 || le.Uint32(b[52:]) != numSections {
		return nil, corrupt("bad header fields dim=%d M=%d", dim, m)
	}
	var q quant.Quantizer
	if err := q.UnmarshalBinary(b[36:52]); err != nil {
		return nil, corrupt("%v", err)
	}
	if uint64(q.Dim) != dim {
		return nil, corrupt("quantizer dimension %d, index %d", q.Dim, dim)
	}
	want := [numSections]uint64{
		secCodes:    n * dim,
		secVectors:  n * dim * 4,
		secLevel0:   n * (1 + 2*m) * 4,
		secLevels:   n,
		secUpperOff: n * 4,
		secFlags:    n * 4,
	}
	v := &View{n: int(n), deleted: int(le.Uint32(b[56:]))}
	secs := &v.secs
	prevEnd := uint64(dataStart)
	for i := range secs {
		e := b[headerSize+i*sectionEntry:]
		off, size, crc := le.Uint64(e), le.Uint64(e[8:]), le.Uint32(e[16:])
		if i == secUpper {
			want[i] = size - size%(4*(m+1)) // whole lists only
		}
		if size != want[i] || off%sectionAlign != 0 || off < prevEnd || off > uint64(len(b)) || size > uint64(len(b))-off {
			return nil, corrupt("section %d: offset %d length %d (want length %d) in %d bytes", i, off, size, want[i], len(b))
		}
		secs[i] = b[off : off+size : off+size]
		v.offs[i] = off
		v.crcs[i] = crc
		prevEnd = off + size
	}
	if prevEnd != uint64(len(b)) {
		return nil, corrupt("%d bytes after the last section", uint64(len(b))-prevEnd)
	}
	if uint64(v.deleted) > n {
		return nil, corrupt("%d deleted of %d nodes", v.deleted, n)
	}
	v.g = graph{
		dim: int(dim), m: int(m), metric: q.Metric, quant: q,
		codes:    fromBytes[int8](secs[secCodes]),
		vectors:  fromBytes[float32](secs[secVectors]),
		level0:   fromBytes[uint32](secs[secLevel0]),
		levels:   fromBytes[uint8](secs[secLevels]),
		upperOff: fromBytes[uint32](secs[secUpperOff]),
		upper:    fromBytes[uint32](secs[secUpper]),
		flags:    fromBytes[uint32](secs[secFlags]),
	}
	ep, epLevel := le.Uint32(b[28:]), le.Uint32(b[32:])
	switch {
	case epLevel == 0:
		v.empty = true
		if n > uint64(v.deleted) {
			return nil, corrupt("no entry point for %d live nodes", n-uint64(v.deleted))
		}
	case uint64(ep) >= n || epLevel-1 != uint32(v.g.levels[ep]):
		return nil, corrupt("entry point %d on level %d", ep, epLevel-1)
	default:
		v.ep, v.top = ep, int(epLevel-1)
	}
	return v, nil
}

func asBytesU64(s []uint64) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*8)
}

// Verify checks every section's checksum and every structural invariant:
// flags, levels, upper-list offsets, list counts, neighbour ids (< n, and
// living on the list's level) and the deleted count. It reads the whole
// layout once.
func (v *View) Verify() error {
	for i, s := range v.secs {
		if crc32.Checksum(s, castagnoli) != v.crcs[i] {
			return corrupt("section %d checksum mismatch", i)
		}
	}
	g := &v.g
	n := v.n
	deleted := 0
	for id := 0; id < n; id++ {
		f := g.flags[id]
		if f&^flagMask != 0 || f&flagPresent == 0 {
			return corrupt("node %d: flags %#x", id, f)
		}
		if f&flagDeleted != 0 {
			deleted++
		}
		lv := uint64(g.levels[id])
		if lv > maxLevel || uint64(g.upperOff[id])+lv*uint64(g.m+1) > uint64(len(g.upper)) {
			return corrupt("node %d: level %d at upper offset %d", id, lv, g.upperOff[id])
		}
	}
	for id := 0; id < n; id++ {
		for l := 0; l <= int(g.levels[id]); l++ {
			lst := g.list(uint32(id), l)
			cnt := uint64(lst[0])
			if cnt > uint64(len(lst)-1) {
				return corrupt("node %d level %d: count %d", id, l, cnt)
			}
			for _, nb := range lst[1 : 1+cnt] {
				if uint64(nb) >= uint64(n) || int(g.levels[nb]) < l {
					return corrupt("node %d level %d: neighbour %d", id, l, nb)
				}
			}
		}
	}
	if deleted != v.deleted {
		return corrupt("%d deleted nodes, header says %d", deleted, v.deleted)
	}
	if !v.empty && g.flags[v.ep]&flagUnlinked != 0 {
		return corrupt("entry point %d is unlinked", v.ep)
	}
	return nil
}

// Search returns the k nearest live ids to q, closest first.
func (v *View) Search(q []float32, k int, opts SearchOptions) ([]Result, error) {
	p, err := makePlan(&v.g, q, k, opts, v.n-v.deleted, v.deleted > 0)
	if err != nil {
		return nil, err
	}
	if v.empty {
		return []Result{}, nil
	}
	if v.verify == nil {
		return p.run(&v.g, &v.pool, v.n, v.ep, v.top, !opts.NoRescore, nil)
	}
	tr := v.traces.get()
	defer v.traces.put(tr)
	tr.reset()
	res, err := p.run(&v.g, &v.pool, v.n, v.ep, v.top, !opts.NoRescore, tr)
	if err != nil {
		return nil, err
	}
	if err := v.verifyTrace(tr); err != nil {
		return nil, err
	}
	return res, nil
}

// Reserve readies scratch for n searches at once (at most two per CPU):
// each search needs visited marks of two bytes a node, kept between
// searches, and the first searches of a View would otherwise fault their
// fresh pages in one at a time as they mark nodes. The engine's warm-up
// calls it.
func (v *View) Reserve(n int) { reserve(&v.pool, n, v.n) }

// Len is the number of ids, deleted ones included.
func (v *View) Len() int { return v.n }

// Live is the number of ids not deleted.
func (v *View) Live() int { return v.n - v.deleted }

// Dim is the vector dimension.
func (v *View) Dim() int { return v.g.dim }

// M is the graph's link count per upper level.
func (v *View) M() int { return v.g.m }

// Metric is the distance.
func (v *View) Metric() quant.Metric { return v.g.metric }

// Quantizer returns the quantizer the codes were encoded with.
func (v *View) Quantizer() quant.Quantizer { return v.g.quant }

// Vector returns id's stored vector, aliasing the View's bytes (do not
// modify it), or nil when id is out of range.
func (v *View) Vector(id uint32) []float32 {
	if int64(id) >= int64(v.n) {
		return nil
	}
	return v.g.vector(id)
}

// Deleted reports whether id is a tombstone.
func (v *View) Deleted(id uint32) bool {
	return int64(id) < int64(v.n) && v.g.flags[id]&flagDeleted != 0
}
