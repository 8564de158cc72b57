package hnsw

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestCheckedSearchNeverAnswersFromDamage damages one byte of a layout at
// a time and searches it through a ReadVerifier that compares the bytes it
// is asked about with the intact layout: every search either returns the
// verifier's error or exactly the intact layout's answer. A search that
// read a damaged byte without asking about it would answer wrongly (or,
// where the damage does not change the answer, slip through unnoticed:
// the count of caught searches shows the checks happen).
func TestCheckedSearchNeverAnswersFromDamage(t *testing.T) {
	const n, dim = 3000, 8
	rows := synthetic(n, dim, 7)
	ix := build(t, Config{Dim: dim, Metric: quant.Cosine, Seed: 3, M: 8}, rows)
	for id := uint32(0); id < 40; id += 4 {
		if err := ix.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	good := alignedCopy(serialize(t, ix), 0)
	gv, err := OpenView(good)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 9))
	queries := make([][]float32, 4)
	want := make([][]Result, len(queries))
	for i := range queries {
		queries[i] = rows[r.IntN(n)]
		opts := SearchOptions{Ef: 10} // a narrow walk: damage to a list changes it
		if i == 3 {
			opts.Filter = FilterFunc(func(id uint32) bool { return id%300 == 1 }) // a scan
		}
		if want[i], err = gv.Search(queries[i], 10, opts); err != nil {
			t.Fatal(err)
		}
	}
	errDamaged := errors.New("damaged")
	caught, answered := 0, 0
	for range 3000 {
		b := bytes.Clone(good)
		pos := dataStart + r.IntN(len(b)-dataStart) // the header has its own checksum
		b[pos] ^= byte(1 + r.IntN(255))
		v, err := OpenViewUnverified(b)
		if err != nil {
			continue
		}
		v.SetReadVerifier(func(off, k uint64) error {
			if off+k > uint64(len(b)) || !bytes.Equal(b[off:off+k], good[off:off+k]) {
				return errDamaged
			}
			return nil
		})
		for i, q := range queries {
			opts := SearchOptions{Ef: 10}
			if i == 3 {
				opts.Filter = FilterFunc(func(id uint32) bool { return id%300 == 1 })
			}
			got, err := v.Search(q, 10, opts)
			if errors.Is(err, errDamaged) {
				caught++
				continue
			}
			if err != nil || !slices.Equal(got, want[i]) {
				t.Fatalf("byte %d damaged: query %d answered %v, %v; intact %v", pos, i, got, err, want[i])
			}
			answered++
		}
		vec, err := v.CheckedVector(uint32(pos % n))
		if err == nil && !slices.Equal(vec, gv.Vector(uint32(pos%n))) {
			t.Fatalf("byte %d damaged: CheckedVector(%d) returned a damaged vector", pos, pos%n)
		}
	}
	if caught < 100 || answered < 100 {
		t.Fatalf("%d searches caught the damage, %d answered: both should be common", caught, answered)
	}
	t.Logf("%d searches caught damage, %d answered from intact bytes", caught, answered)
}

// TestCheckedSearchCoversItsReads: a search over a layout whose every byte
// it did not ask the verifier about is replaced by garbage answers exactly
// as over the intact layout. If the search read any byte it did not have
// checked, the garbage there would change its walk or its distances.
func TestCheckedSearchCoversItsReads(t *testing.T) {
	const n, dim = 3000, 8
	rows := synthetic(n, dim, 11)
	ix := build(t, Config{Dim: dim, Metric: quant.L2, Seed: 5, M: 8}, rows)
	for id := uint32(0); id < 300; id += 3 {
		if err := ix.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	good := alignedCopy(serialize(t, ix), 0)
	r := rand.New(rand.NewPCG(12, 13))
	for qi := range 12 {
		opts := SearchOptions{Ef: []int{10, 0, 64}[qi%3]}
		switch qi % 4 {
		case 2: // counts itself as selective: an exact scan
			bs := NewBitset(n)
			for id := uint32(5); id < n; id += 29 {
				_ = bs.Set(id)
			}
			opts.Filter = bs
		case 3: // a walk that may switch to a scan
			opts.Filter = FilterFunc(func(id uint32) bool { return id%200 == 7 })
		}
		v, err := OpenViewUnverified(good)
		if err != nil {
			t.Fatal(err)
		}
		checked := make([]bool, len(good))
		v.SetReadVerifier(func(off, k uint64) error {
			for i := off; i < off+k; i++ {
				checked[i] = true
			}
			return nil
		})
		q := rows[r.IntN(n)]
		want, err := v.Search(q, 10, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.CheckedVector(uint32(qi)); err != nil {
			t.Fatal(err)
		}
		garbage := bytes.Clone(good)
		kept := 0
		for i := dataStart; i < len(garbage); i++ {
			if checked[i] {
				kept++
			} else {
				garbage[i] = byte(r.Uint32())
			}
		}
		// Open reads the entry point's level (and checks it against the
		// header's copy).
		lv := v.offs[secLevels] + uint64(v.ep)
		garbage[lv] = good[lv]
		gv, err := OpenViewUnverified(garbage)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gv.Search(q, 10, opts)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("query %d (%+v): over garbage outside the %d checked bytes %v, %v; intact %v", qi, opts, kept, got, err, want)
		}
		if !slices.Equal(gv.Vector(uint32(qi)), v.Vector(uint32(qi))) {
			t.Fatalf("CheckedVector(%d) did not check the vector", qi)
		}
		if kept > len(good)/2 {
			t.Fatalf("query %d checked %d of %d bytes: not a partial read", qi, kept, len(good))
		}
	}
}

// BenchmarkCheckedSearch prices the read tracing of a View with a
// ReadVerifier once everything is verified (the steady state after the
// first queries): the verifier tests one bit per 4 KiB chunk, as the
// engine's does, against the same search with no verifier.
func BenchmarkCheckedSearch(b *testing.B) {
	const n, dim = 20000, 128
	rows := synthetic(n, dim, 21)
	ix := build(b, Config{Dim: dim, Metric: quant.Cosine, Seed: 4}, rows)
	lay := alignedCopy(serialize(b, ix), 0)
	ok := make([]atomic.Uint64, (len(lay)>>12)/64+1)
	for i := range ok {
		ok[i].Store(^uint64(0))
	}
	verify := func(off, k uint64) error {
		for c := off >> 12; c <= (off+k-1)>>12; c++ {
			if ok[c>>6].Load()&(1<<(c&63)) == 0 {
				return errors.New("unverified")
			}
		}
		return nil
	}
	for _, checked := range []bool{false, true} {
		b.Run(fmt.Sprintf("checked=%v", checked), func(b *testing.B) {
			v, err := OpenViewUnverified(lay)
			if err != nil {
				b.Fatal(err)
			}
			if checked {
				v.SetReadVerifier(verify)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := v.Search(rows[i%n], 10, SearchOptions{}); err != nil {
					b.Fatal(err)
				}
				i += 7
			}
		})
	}
}
