package hnsw

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
	"unsafe"

	"github.com/engramdb/engram/quant"
)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// FuzzOpenView feeds arbitrary bytes to OpenView: it must return an error
// or a View whose every method stays in range.
func FuzzOpenView(f *testing.F) {
	for _, n := range []int{0, 1, 40} {
		ix, _ := New(Config{Dim: 4, Metric: quant.L2, Seed: 1, M: 2})
		for _, r := range synthetic(n, 4, 1) {
			_, _ = ix.Insert(r)
		}
		if n > 10 {
			_ = ix.Delete(3)
		}
		b := serialize(f, ix)
		f.Add(b, false)
		f.Add(b, true)
		f.Add(b[:len(b)/2], true)
	}
	f.Add([]byte("ENGHNSW\x00"), false)
	f.Fuzz(func(t *testing.T, b []byte, resign bool) {
		if resign {
			// Fix the checksums so the structural checks get explored.
			resignBytes(b)
		}
		if v, err := OpenViewUnverified(b); err == nil {
			// Damaged sections may give wrong answers, never a panic.
			exerciseView(t, v, false)
			v.Reach()
			_ = v.VerifyVectors()
			v.Entry()
		}
		_, _ = RecoverVectors(b, 40, 4)
		v, err := OpenView(b)
		if err != nil {
			return
		}
		exerciseView(t, v, true)
	})
}

func exerciseView(t *testing.T, v *View, verified bool) {
	q := []float32{0.5, -0.25, 1, 0.125}
	if v.Dim() != 4 {
		q = make([]float32, v.Dim())
		q[0] = 1
	}
	for _, opts := range []SearchOptions{{}, {NoRescore: true}, {Filter: NewBitset(3)}, {Filter: FilterFunc(func(id uint32) bool { return id%2 == 0 })}} {
		res, err := v.Search(q, 3, opts)
		if err != nil {
			continue
		}
		for _, r := range res {
			if verified && (int(r.ID) >= v.Len() || v.Deleted(r.ID)) {
				t.Fatalf("bad result %v", r)
			}
		}
	}
	for id := uint32(0); int(id) < v.Len() && id < 64; id++ {
		_ = v.Vector(id)
		_ = v.Deleted(id)
	}
}

// resignBytes recomputes the section and header checksums of b wherever
// the section table points inside b.
func resignBytes(b []byte) {
	if len(b) < dataStart {
		return
	}
	le := binary.LittleEndian
	for i := 0; i < numSections; i++ {
		e := b[headerSize+i*sectionEntry:]
		off, sz := le.Uint64(e), le.Uint64(e[8:])
		if off <= uint64(len(b)) && sz <= uint64(len(b))-off {
			le.PutUint32(e[16:], crc32c(b[off:off+sz]))
		}
	}
	le.PutUint32(b[60:], headerCRC(b))
}
