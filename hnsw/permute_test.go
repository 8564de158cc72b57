package hnsw

import (
	"bytes"
	"errors"
	"math"
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

// TestLocalityOrder: the order is a permutation that starts at the entry
// point and meets each node's neighbours right after the nodes before
// them, so after Permute linked nodes sit closer in id than they did;
// every vector moves with its node and is still found; nodes the walk
// cannot reach come last, by id.
func TestLocalityOrder(t *testing.T) {
	rows, _ := clustered(3000, 24, 30, 11)
	r := rand.New(rand.NewPCG(2, 2))
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	ix := build(t, Config{Dim: 24, M: 8, EfConstruction: 64, Metric: quant.L2, Seed: 5}, rows)
	gap := func() float64 { // mean |id - neighbour id| over level-0 links
		sum, links := 0.0, 0
		for id := range uint32(ix.Len()) {
			l := ix.g.list(id, 0)
			for _, nb := range l[1 : 1+l[0]] {
				sum += math.Abs(float64(id) - float64(nb))
				links++
			}
		}
		return sum / float64(links)
	}
	order := ix.LocalityOrder()
	ep, _ := unpackEP(ix.ep.Load())
	if len(order) != ix.Len() || order[0] != ep {
		t.Fatalf("order of %d starting at %d; %d nodes, entry %d", len(order), order[0], ix.Len(), ep)
	}
	before := gap()
	if err := ix.Permute(order); err != nil {
		t.Fatal(err)
	}
	after := gap()
	if after > 0.85*before {
		t.Fatalf("mean id gap of a link %.0f after, %.0f before: no locality", after, before)
	}
	for i, old := range order {
		if !slices.Equal(ix.Vector(uint32(i)), rows[old]) {
			t.Fatalf("node %d does not hold row %d's vector", i, old)
		}
	}
	found := 0
	for i := 0; i < len(rows); i += 7 {
		res, err := ix.Search(ix.Vector(uint32(i)), 1, SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 1 && res[0].ID == uint32(i) {
			found++
		}
	}
	if want := (len(rows) + 6) / 7; found < want*99/100 {
		t.Fatalf("%d of %d nodes found by their own vector after reordering", found, want)
	}

	// With every list emptied only the entry point is reached: the rest
	// follow by id.
	for id := range uint32(ix.Len()) {
		ix.g.list(id, 0)[0] = 0
	}
	ep, _ = unpackEP(ix.ep.Load())
	order = ix.LocalityOrder()
	want := []uint32{ep}
	for id := range uint32(ix.Len()) {
		if id != ep {
			want = append(want, id)
		}
	}
	if !slices.Equal(order, want) {
		t.Fatalf("order over an empty graph %v..., want %v...", order[:5], want[:5])
	}
}
