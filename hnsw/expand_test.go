package hnsw

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestExpandKeys checks the fused expansion against the portable one: from
// the same visited marks, expandKeys must mark the same neighbours and
// return, in list order, exactly the keys of expand's distances that are
// below worst. Dimensions around the 64-byte blocks exercise the masked
// tail; lists with ids past the nodes (damaged bytes) must skip them.
func TestExpandKeys(t *testing.T) {
	if !useFusedExpand {
		t.Skip("no fused expansion on this CPU")
	}
	for _, metric := range []quant.Metric{quant.L2, quant.Cosine, quant.Dot} {
		for _, dim := range []int{1, 24, 63, 64, 65, 100, 130, 1024} {
			t.Run(fmt.Sprintf("%v/dim=%d", metric, dim), func(t *testing.T) {
				n := 400
				if dim >= 1024 {
					n = 150
				}
				rows, _ := clustered(n, dim, 6, uint64(dim))
				ix := build(t, Config{Dim: dim, M: 8, EfConstruction: 32, Metric: metric, Seed: 1}, rows)
				g := &ix.g
				r := rand.New(rand.NewPCG(uint64(dim), 7))
				// Damage two lists: ids past the nodes must be skipped.
				for _, id := range []uint32{3, 7} {
					l := g.list(id, 0)
					l[1], l[int(l[0])] = uint32(len(g.flags))+5, math.MaxUint32
				}
				var sa, sb scratch
				for trial := 0; trial < 300; trial++ {
					qc := sa.encode(g, rows[r.IntN(n)])
					sb.qcode = slices.Clone(qc)
					sa.begin(len(g.flags))
					sb.begin(len(g.flags))
					for range r.IntN(n) { // some nodes already visited
						id := uint32(r.IntN(n))
						sa.visit(id)
						sb.visit(id)
					}
					salt := uint32(0)
					if trial%2 == 1 {
						salt = saltOf(uint32(trial))
					}
					sa.salt, sb.salt = salt, salt
					id := uint32(r.IntN(n))
					if trial < 4 {
						id = []uint32{3, 7}[trial%2]
					}
					level := 0
					if trial%7 == 6 && g.levels[id] > 0 {
						level = 1
					}
					batch, dists := g.expand(&sb, sb.qcode, id, level, 0, false)
					var all []uint64
					for i, nb := range batch {
						all = append(all, intKey(dists[i], nb^salt))
					}
					worst := ^uint64(0)
					if len(all) > 0 && trial%3 != 0 {
						worst = all[r.IntN(len(all))]
					}
					var want []uint64
					for _, k := range all {
						if k < worst {
							want = append(want, k)
						}
					}
					g.beginFused(&sa, qc)
					got := g.expandKeys(&sa, id, level, uint64(r.IntN(n)), trial%2 == 0, worst)
					sa.endFused()
					if !slices.Equal(got, want) {
						t.Fatalf("trial %d node %d level %d: fused keys %x, want %x", trial, id, level, got, want)
					}
					if !slices.Equal(sa.marks[:n], sb.marks[:n]) {
						t.Fatalf("trial %d node %d: the two expansions marked different nodes", trial, id)
					}
				}
			})
		}
	}
}
