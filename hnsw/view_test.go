package hnsw

import (
	"errors"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestViewGraphAPI: Entry, Tombstones and Reach describe the written
// graph; StripLinks leaves a graph that verifies but reaches only its
// entry point.
func TestViewGraphAPI(t *testing.T) {
	rows := synthetic(600, 16, 3)
	ix := build(t, Config{Dim: 16, Metric: quant.L2, Seed: 2, M: 8}, rows)
	for id := uint32(0); id < 60; id += 6 {
		if err := ix.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	b := alignedCopy(serialize(t, ix), 0)
	v, err := OpenView(b)
	if err != nil {
		t.Fatal(err)
	}
	ep, level, ok := v.Entry()
	want, wantLevel := unpackEP(ix.ep.Load())
	if !ok || ep != want || level != wantLevel {
		t.Fatalf("Entry = %d, %d, %v; index has %d, %d", ep, level, ok, want, wantLevel)
	}
	if v.Tombstones() != 10 {
		t.Fatalf("Tombstones = %d, want 10", v.Tombstones())
	}
	reached := v.Reach()
	for id := uint32(0); id < 600; id++ {
		if !v.Deleted(id) && !reached.Allow(id) {
			t.Fatalf("live node %d not reached", id)
		}
	}
	stripped, err := StripLinks(b)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := OpenView(alignedCopy(stripped, 0))
	if err != nil {
		t.Fatalf("stripped layout does not verify: %v", err)
	}
	if r := sv.Reach(); r.Count() != 1 || !r.Allow(ep) {
		t.Fatalf("stripped graph reaches %d nodes, want the entry point alone", r.Count())
	}
	empty, err := New(Config{Dim: 4, Metric: quant.L2})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := OpenView(serialize(t, empty))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ev.Entry(); ok || ev.Reach() != nil {
		t.Fatal("an empty graph has an entry point")
	}
}

// TestRecoverVectors: with the header and section table destroyed the
// vectors are still found where the layout puts them; VerifyVectors tells
// damaged vectors from damage elsewhere.
func TestRecoverVectors(t *testing.T) {
	rows := synthetic(300, 24, 5)
	ix := build(t, Config{Dim: 24, Metric: quant.Cosine, Seed: 1, M: 6}, rows)
	good := serialize(t, ix)
	for _, skew := range []int{0, 1} {
		b := alignedCopy(good, skew)
		v, err := OpenView(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.VerifyVectors(); err != nil {
			t.Fatal(err)
		}
		wantVecs := make([][]float32, 300)
		for id := range wantVecs {
			wantVecs[id] = slices.Clone(v.Vector(uint32(id)))
		}
		// Damage the codes: derived, the vectors stay intact.
		b[dataStart+5] ^= 0x40
		uv, err := OpenViewUnverified(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := uv.VerifyVectors(); err != nil {
			t.Fatalf("codes damage reported as vectors damage: %v", err)
		}
		if err := uv.Verify(); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Verify of damaged codes = %v", err)
		}
		clear(b[:dataStart]) // header and table gone
		if _, err := OpenViewUnverified(b); err == nil {
			t.Fatal("a layout without header opened")
		}
		got, err := RecoverVectors(b, 300, 24)
		if err != nil {
			t.Fatal(err)
		}
		for id := range wantVecs {
			if !slices.Equal(got[id*24:(id+1)*24], wantVecs[id]) {
				t.Fatalf("skew %d: recovered vector %d differs", skew, id)
			}
		}
		if _, err := RecoverVectors(b[:len(b)/3], 300, 24); err == nil {
			t.Fatal("RecoverVectors read past a short layout")
		}
	}
	b := alignedCopy(good, 0)
	v, _ := OpenViewUnverified(b)
	b[int(alignUp(uint64(dataStart)+300*24))+9] ^= 1
	if err := v.VerifyVectors(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("VerifyVectors of a damaged vector = %v", err)
	}
}
