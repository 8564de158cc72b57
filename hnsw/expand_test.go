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
// tail; lists with ids past the nodes (damaged bytes) must skip them,
// and a count past a list's slots must stop at them.
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
				// And a count: past the list's slots, it must stop at them.
				g.list(11, 0)[0] = 1000
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
					// One to walkWidth nodes, sometimes the same one twice
					// (its second list then adds nothing), often sharing
					// neighbours.
					ids := []uint32{uint32(r.IntN(n))}
					if trial < 6 {
						ids[0] = []uint32{3, 7, 11}[trial%3]
					}
					level := 0
					if trial%7 == 6 && g.levels[ids[0]] > 0 {
						level = 1
					}
					for len(ids) < 1+trial%walkWidth {
						next := uint32(r.IntN(n))
						switch {
						case trial%5 == 0:
							next = ids[0]
						case trial%5 == 1:
							if l := g.list(ids[0], 0); l[0] > 0 {
								next = l[1+r.IntN(min(int(l[0]), len(l)-1))] // shared neighbours
							}
						}
						if level > 0 && g.levels[next] < 1 {
							next = ids[0]
						}
						if next >= uint32(n) {
							next = ids[0]
						}
						ids = append(ids, next)
					}
					var nexts []uint64
					for range trial % (walkWidth + 1) {
						nexts = append(nexts, uint64(uint32(r.IntN(n))^salt))
					}
					batch, dists := g.expand(&sb, sb.qcode, ids, level, nexts)
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
					got := g.expandKeys(&sa, ids, level, nexts, worst)
					sa.endFused()
					if !slices.Equal(got, want) {
						t.Fatalf("trial %d nodes %d level %d: fused keys %x, want %x", trial, ids, level, got, want)
					}
					if !slices.Equal(sa.marks[:n], sb.marks[:n]) {
						t.Fatalf("trial %d nodes %d: the two expansions marked different nodes", trial, ids)
					}
				}
			})
		}
	}
}
