package hnsw

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestPermute: a permuted index answers every query as before, with the
// ids renumbered (same scores), holds each vector under its new id, keeps
// its tombstone, writes a view that verifies, and takes inserts; orders
// that are not permutations are refused and change nothing.
func TestPermute(t *testing.T) {
	rows, _ := clustered(2500, 32, 20, 5)
	ix, err := New(Config{Dim: 32, Metric: quant.Cosine, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rows[:2000] {
		if _, err := ix.Insert(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Delete(11); err != nil {
		t.Fatal(err)
	}
	stored := make([][]float32, 2000)
	for i := range stored {
		stored[i] = slices.Clone(ix.Vector(uint32(i)))
	}
	var before [][]Result
	for qi := 0; qi < 2500; qi += 25 {
		got, err := ix.Search(rows[qi], 10, SearchOptions{Ef: 64})
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, got)
	}
	for _, bad := range [][]uint32{{0, 1}, slices.Repeat([]uint32{0}, 2000), func() []uint32 {
		o := make([]uint32, 2000)
		for i := range o {
			o[i] = uint32(i)
		}
		o[5] = 2000
		return o
	}()} {
		if err := ix.Permute(bad); !errors.Is(err, ErrBadArgument) {
			t.Fatalf("order of %d: %v", len(bad), err)
		}
	}
	order := rand.New(rand.NewPCG(3, 3)).Perm(2000)
	o32 := make([]uint32, len(order))
	inv := make([]uint32, len(order))
	for i, old := range order {
		o32[i], inv[old] = uint32(old), uint32(i)
	}
	if err := ix.Permute(o32); err != nil {
		t.Fatal(err)
	}
	for i, old := range order {
		if !slices.Equal(ix.Vector(uint32(i)), stored[old]) {
			t.Fatalf("node %d does not hold row %d", i, old)
		}
	}
	if !ix.Deleted(inv[11]) {
		t.Fatal("the tombstone did not move with its node")
	}
	for k, qi := 0, 0; qi < 2500; k, qi = k+1, qi+25 {
		got, err := ix.Search(rows[qi], 10, SearchOptions{Ef: 64})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(before[k]) {
			t.Fatalf("query %d: %d results, %d before", qi, len(got), len(before[k]))
		}
		for j, r := range got {
			if r.ID != inv[before[k][j].ID] || r.Distance != before[k][j].Distance {
				t.Fatalf("query %d result %d: %+v, before %+v (now %d)", qi, j, r, before[k][j], inv[before[k][j].ID])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenView(buf.Bytes()); err != nil {
		t.Fatalf("the permuted index's view: %v", err)
	}
	// New rows land after the permuted ones; every live row finds itself.
	permuted := make([][]float32, 0, 2500)
	for _, old := range order {
		permuted = append(permuted, rows[old])
	}
	for _, v := range rows[2000:] {
		id, err := ix.Insert(v)
		if err != nil {
			t.Fatal(err)
		}
		if int(id) != len(permuted) {
			t.Fatalf("insert got id %d, want %d", id, len(permuted))
		}
		permuted = append(permuted, v)
	}
	for qi := range permuted {
		if uint32(qi) == inv[11] {
			continue
		}
		got, err := ix.Search(permuted[qi], 1, SearchOptions{Ef: 64})
		if err != nil || len(got) == 0 || got[0].ID != uint32(qi) {
			t.Fatalf("row %d finds %v (%v)", qi, got, err)
		}
	}
}
