package hnsw

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"unsafe"
)

// What a caller holding a View needs to know about its graph, without
// reading the serialized layout itself.

// Entry returns the entry point and its level; ok is false for a graph
// with no live node.
func (v *View) Entry() (id uint32, level int, ok bool) {
	if v.empty {
		return 0, 0, false
	}
	return v.ep, v.top, true
}

// Tombstones is the number of nodes flagged deleted in the layout.
func (v *View) Tombstones() int { return v.deleted }

// Reach returns the nodes reached breadth-first from the entry point over
// every node's lists on every level (tombstones included: searches walk
// through them), the entry point with them; nil for a graph without an
// entry point. Every read is bounds-checked, so it is safe on unverified
// bytes (a damaged list ends the walk of that list); call Verify first to
// know the answer is the graph's.
func (v *View) Reach() *Bitset {
	if v.empty {
		return nil
	}
	g := &v.g
	seen := NewBitset(v.n)
	queue := make([]uint32, 0, 1024)
	_ = seen.Set(v.ep)
	queue = append(queue, v.ep)
	visit := func(lst []uint32) {
		if len(lst) == 0 {
			return
		}
		cnt := min(int(lst[0]), len(lst)-1)
		for _, nb := range lst[1 : 1+cnt] {
			if int64(nb) < int64(v.n) && !seen.Allow(nb) {
				_ = seen.Set(nb)
				queue = append(queue, nb)
			}
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		u := queue[qi]
		visit(g.list(u, 0))
		for l := 1; l <= int(g.levels[u]); l++ {
			visit(g.upperList(u, l))
		}
	}
	return seen
}

// VerifyVectors checks the checksum of the vectors section alone: whether
// the full-precision vectors are intact when the rest of the layout (codes,
// lists, flags: all derived from them) may not be.
func (v *View) VerifyVectors() error {
	if crc32.Checksum(v.secs[secVectors], castagnoli) != v.crcs[secVectors] {
		return corrupt("vectors section checksum mismatch")
	}
	return nil
}

// RecoverVectors returns the n vectors of dimension dim of a serialized
// layout whose header or section table may be damaged, located by the
// layout's fixed order (docs/format/hnsw.md: the codes at byte 256, the
// vectors at the next multiple of 64) instead of its table. Nothing in them
// is verified: the caller checks each vector against its own record of it.
// The result aliases b when b is 4-byte aligned. It fails only when b is
// too short to hold them.
func RecoverVectors(b []byte, n, dim int) ([]float32, error) {
	if n < 0 || dim <= 0 || dim > maxDim {
		return nil, corrupt("recover %d vectors of dim %d", n, dim)
	}
	off := alignUp(uint64(dataStart) + uint64(n)*uint64(dim))
	size := 4 * uint64(n) * uint64(dim)
	if off > uint64(len(b)) || size > uint64(len(b))-off {
		return nil, corrupt("%d bytes cannot hold %d vectors of dim %d", len(b), n, dim)
	}
	raw := b[off : off+size]
	if !littleEndian || len(raw) > 0 && uintptr(unsafe.Pointer(&raw[0]))%4 != 0 {
		out := make([]float32, n*dim)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, nil
	}
	return fromBytes[float32](raw), nil
}

// StripLinks returns a copy of the serialized layout b with every
// adjacency list emptied and the checksums recomputed: a graph that passes
// Verify yet reaches nothing but its entry point. It exists to test the
// reachability checks of callers (a graph built by an older release could
// leave nodes unreachable).
func StripLinks(b []byte) ([]byte, error) {
	if _, err := OpenView(b); err != nil {
		return nil, err
	}
	out := append([]byte(nil), b...)
	le := binary.LittleEndian
	for _, sec := range []int{secLevel0, secUpper} {
		e := out[headerSize+sec*sectionEntry:]
		off, size := le.Uint64(e), le.Uint64(e[8:])
		clear(out[off : off+size])
		le.PutUint32(e[16:], crc32.Checksum(out[off:off+size], castagnoli))
	}
	le.PutUint32(out[60:], headerCRC(out))
	return out, nil
}
