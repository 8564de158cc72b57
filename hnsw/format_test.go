package hnsw

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

func serialize(t testing.TB, ix *Index) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := ix.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// alignedCopy returns b in a 64-byte-aligned buffer, shifted by skew bytes.
func alignedCopy(b []byte, skew int) []byte {
	words := make([]uint64, (len(b)+skew+64)/8+8)
	raw := asBytesU64(words)
	start := 0
	for (uintptrOf(raw[start:]))%64 != 0 {
		start++
	}
	out := raw[start+skew : start+skew+len(b)]
	copy(out, b)
	return out
}

func TestRoundTrip(t *testing.T) {
	n, nq := 3000, 100
	if testing.Short() {
		n, nq = 800, 20
	}
	rows := synthetic(n, 48, 11)
	queries := synthetic(nq, 48, 12)
	for _, m := range []quant.Metric{quant.Cosine, quant.L2} {
		ix := build(t, Config{Dim: 48, Metric: m, Seed: 1, M: 12}, rows)
		for id := uint32(0); id < 300; id += 3 {
			if err := ix.Delete(id); err != nil {
				t.Fatal(err)
			}
		}
		b := serialize(t, ix)
		for _, skew := range []int{0, 1} {
			v, err := OpenView(alignedCopy(b, skew))
			if err != nil {
				t.Fatalf("%v skew %d: %v", m, skew, err)
			}
			if v.Len() != ix.Len() || v.Live() != ix.Live() || v.Dim() != 48 || v.Metric() != m || v.M() != 12 {
				t.Fatalf("view shape %d/%d/%d, index %d/%d", v.Len(), v.Live(), v.Dim(), ix.Len(), ix.Live())
			}
			if v.Quantizer() != ix.Quantizer() {
				t.Fatalf("quantizer %+v != %+v", v.Quantizer(), ix.Quantizer())
			}
			for id := uint32(0); id < uint32(ix.Len()); id += 97 {
				if !slices.Equal(v.Vector(id), ix.Vector(id)) || v.Deleted(id) != ix.Deleted(id) {
					t.Fatalf("node %d differs", id)
				}
			}
			bs := NewBitset(ix.Len())
			for id := 0; id < ix.Len(); id += 2 {
				_ = bs.Set(uint32(id))
			}
			for _, q := range queries {
				for _, opts := range []SearchOptions{{}, {Ef: 20, NoRescore: true}, {Filter: bs}, {Filter: FilterFunc(bs.Allow)}} {
					a, err1 := ix.Search(q, 10, opts)
					b, err2 := v.Search(q, 10, opts)
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					if !slices.Equal(a, b) {
						t.Fatalf("%v: view and index disagree:\n%v\n%v", m, a, b)
					}
				}
			}
		}
	}
}

func TestViewEmpty(t *testing.T) {
	ix, _ := New(Config{Dim: 8, Metric: quant.L2})
	v, err := OpenView(serialize(t, ix))
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Search(make([]float32, 8), 3, SearchOptions{})
	if err != nil || len(res) != 0 {
		t.Fatalf("empty view search = %v, %v", res, err)
	}
	if v.Vector(0) != nil || v.Deleted(0) {
		t.Fatal("empty view has a node 0")
	}
}

func TestViewCorruption(t *testing.T) {
	ix := build(t, Config{Dim: 8, Metric: quant.L2, Seed: 1}, synthetic(300, 8, 3))
	good := serialize(t, ix)
	le := binary.LittleEndian
	// A byte flipped anywhere in the header, table or a section must be
	// caught (padding is not covered).
	covered := func(off int) bool {
		if off < headerSize+numSections*sectionEntry {
			return true
		}
		for i := 0; i < numSections; i++ {
			e := good[headerSize+i*sectionEntry:]
			so, sz := int(le.Uint64(e)), int(le.Uint64(e[8:]))
			if off >= so && off < so+sz {
				return true
			}
		}
		return false
	}
	for off := 0; off < len(good); off += 7 {
		if !covered(off) {
			continue
		}
		b := alignedCopy(good, 0)
		b[off] ^= 0x20
		if _, err := OpenView(b); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("flip at %d: err %v, want ErrCorrupt", off, err)
		}
	}
	for _, n := range []int{0, 10, dataStart - 1, dataStart, len(good) / 2, len(good) - 1} {
		if _, err := OpenView(alignedCopy(good[:n], 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d: err %v", n, err)
		}
	}
}

// TestViewRejectsBadGraph re-signs structurally invalid content with valid
// checksums: validation, not the checksum, must refuse it.
func TestViewRejectsBadGraph(t *testing.T) {
	ix := build(t, Config{Dim: 8, Metric: quant.L2, Seed: 1}, synthetic(300, 8, 3))
	good := serialize(t, ix)
	le := binary.LittleEndian
	section := func(b []byte, i int) []byte {
		e := b[headerSize+i*sectionEntry:]
		off, sz := le.Uint64(e), le.Uint64(e[8:])
		return b[off : off+sz]
	}
	for _, tc := range []struct {
		name string
		mut  func(b []byte)
	}{
		{"neighbour out of range", func(b []byte) { le.PutUint32(section(b, secLevel0)[4:], 300) }},
		{"count too large", func(b []byte) { le.PutUint32(section(b, secLevel0), 33) }},
		{"level too high", func(b []byte) { section(b, secLevels)[5] = 200 }},
		{"upper offset out of range", func(b []byte) { le.PutUint32(section(b, secUpperOff)[4*5:], 1<<30) }},
		{"unknown flag", func(b []byte) { le.PutUint32(section(b, secFlags)[8:], 1<<7) }},
		{"absent node", func(b []byte) { le.PutUint32(section(b, secFlags)[8:], 0) }},
		{"entry out of range", func(b []byte) { le.PutUint32(b[28:], 1000) }},
		{"entry level wrong", func(b []byte) { le.PutUint32(b[32:], 9) }},
		{"no entry", func(b []byte) { le.PutUint32(b[32:], 0) }},
		{"dim zero", func(b []byte) { le.PutUint32(b[16:], 0) }},
		{"M huge", func(b []byte) { le.PutUint32(b[20:], 1000) }},
		{"n larger", func(b []byte) { le.PutUint32(b[24:], 301) }},
		{"deleted count", func(b []byte) { le.PutUint32(b[56:], 2) }},
		{"deleted count > n", func(b []byte) { le.PutUint32(b[56:], 1000) }},
	} {
		b := alignedCopy(good, 0)
		tc.mut(b)
		resignBytes(b)
		if _, err := OpenView(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", tc.name, err)
		}
		// The cheap open may accept damaged sections; searching them must
		// stay in range and Verify must catch the damage.
		if v, err := OpenViewUnverified(b); err == nil {
			for _, q := range synthetic(20, 8, 9) {
				res, err := v.Search(q, 5, SearchOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					if int(r.ID) >= v.Len() {
						t.Fatalf("%s: result id %d out of range", tc.name, r.ID)
					}
				}
			}
			if err := v.Verify(); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: Verify = %v, want ErrCorrupt", tc.name, err)
			}
		}
	}
}
