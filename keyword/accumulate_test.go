package keyword

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKthScore: the k-th best accepted score over dense and sparse
// accumulators, ties and rejected documents included, is the k-th of the
// sorted scores (-1 with fewer than k).
func TestKthScore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		dense := &accumulator{dense: make([]float64, 500), state: make([]uint8, 500)}
		sparse := &accumulator{}
		var all []float64
		ok := func(doc uint32) bool { return doc%7 != 3 }
		for range r.IntN(300) {
			doc := uint32(r.IntN(1000))
			s := float64(r.IntN(50)) / 4 // ties
			acc := dense
			if doc >= 500 {
				acc = sparse
			}
			acc.add(doc, s, ok, false)
		}
		for _, acc := range []*accumulator{dense, sparse} {
			acc.each(func(_ uint32, s float64) { all = append(all, s) })
		}
		slices.SortFunc(all, func(a, b float64) int {
			switch {
			case a > b:
				return -1
			case a < b:
				return 1
			}
			return 0
		})
		for _, k := range []int{1, 2, 10, 100, 400} {
			want := -1.0
			if len(all) >= k {
				want = all[k-1]
			}
			if got := kthScore([]*accumulator{dense, sparse}, k); got != want {
				t.Fatalf("trial %d k=%d: %v, want %v (%d scores)", trial, k, got, want, len(all))
			}
		}
	}
}
