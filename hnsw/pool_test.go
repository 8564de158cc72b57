package hnsw

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestWalkAllMatchesHeaps checks the pool walk (every node accepted)
// against the two-heap walk it replaces: the same keys, on every level and
// ef, salted or not, including ties (duplicate vectors).
func TestWalkAllMatchesHeaps(t *testing.T) {
	withAndWithout(t, &useFusedExpand, "fused", testWalkAllMatchesHeaps)
}

// withAndWithout runs test with the assembly path *flag selects turned off,
// then, where the CPU has it (*flag set), on; *flag is restored after.
func withAndWithout(t *testing.T, flag *bool, name string, test func(*testing.T)) {
	has := *flag
	defer func() { *flag = has }()
	for _, on := range []bool{false, has} {
		*flag = on
		t.Run(fmt.Sprintf("%s=%v", name, on), test)
		if !has {
			break
		}
	}
}

func testWalkAllMatchesHeaps(t *testing.T) {
	rows, _ := clustered(3000, 24, 12, 7)
	for i := 0; i < 200; i++ { // a crowd of copies: equal distances
		rows = append(rows, rows[i%5])
	}
	ix := build(t, Config{Dim: 24, M: 8, EfConstruction: 64, Metric: quant.Cosine, Seed: 3}, rows)
	g := &ix.g
	ep, top := unpackEP(ix.ep.Load())
	r := rand.New(rand.NewPCG(5, 9))
	var sa, sb scratch
	everyone := &accept{filter: FilterFunc(func(uint32) bool { return true })}
	for q := 0; q < 300; q++ {
		qv := rows[r.IntN(len(rows))]
		if q%2 == 1 { // a query away from the rows
			fresh, _ := clustered(1, 24, 1, uint64(q))
			qv = fresh[0]
		}
		qc := sa.encode(g, qv)
		level := 0
		if q%5 == 4 && top > 0 {
			level = 1
		}
		cur, curD := g.descend(qc, ep, top, level)
		ef := []int{1, 2, 10, 40, 100}[q%5]
		salt := uint32(0)
		if q%3 == 0 {
			salt = saltOf(uint32(q))
		}
		sa.salt, sb.salt = salt, salt
		width := 1 + (q/3)%walkWidth
		if g.searchLayer(&sa, qc, cur, curD, ef, level, width, &accept{}) {
			t.Fatal("walkAll asked for a scan")
		}
		if g.searchLayer(&sb, qc, cur, curD, ef, level, width, everyone) {
			t.Fatal("heap walk asked for a scan")
		}
		got, want := slices.Clone(sa.sortedResults()), sb.sortedResults()
		if !slices.Equal(got, want) {
			t.Fatalf("query %d ef %d level %d width %d salt %x: pool walk %d keys, heap walk %d; first difference at %d", q, ef, level, width, salt, len(got), len(want), firstDiff(got, want))
		}
		if len(got) != min(ef, len(rows)) && level == 0 {
			t.Fatalf("query %d: %d results for ef %d", q, len(got), ef)
		}
	}
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestPool checks the pool against a sorted slice: it holds the ef best
// keys offered, and pops each once, best unexpanded first.
// Both insertions run: the assembly one (where the CPU has it) and the
// portable one. Keys span all 64 bits (a distance key's top bit is set for
// positive distances: the comparisons must be unsigned), and the pool
// sizes cross the assembly's 8-key blocks and the done bits' 64-bit words.
func TestPool(t *testing.T) {
	withAndWithout(t, &useInsertAsm, "asm", testPool)
}

func testPool(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var p pool
	for round := 0; round < 300; round++ {
		ef := 1 + r.IntN(50)
		if round%3 == 0 {
			ef = 1 + r.IntN(200)
		}
		p.reset(ef)
		var all []uint64
		popped := map[uint64]bool{}
		for step := 0; step < 300; step++ {
			if r.IntN(3) == 0 {
				k, ok := p.pop()
				// The best key held and not yet popped.
				best, found := uint64(0), false
				for _, x := range p.keys {
					if !popped[x] && x != k {
						if !found || x < best {
							best, found = x, true
						}
					}
				}
				if !ok {
					if found {
						t.Fatalf("round %d: pop found nothing, %x unexpanded", round, best)
					}
					continue
				}
				if popped[k] {
					t.Fatalf("round %d: %x popped twice", round, k)
				}
				if found && best < k {
					t.Fatalf("round %d: popped %x before %x", round, k, best)
				}
				popped[k] = true
				continue
			}
			k := r.Uint64()&^0xfffff | uint64(step)<<8 | uint64(round&0xff) // distinct
			if step%4 == 0 {
				k = uint64(r.IntN(3))<<63 | uint64(step)<<8 | uint64(round&0xff) // close keys
			}
			var open []uint64 // the unexpanded keys, best first
			for i, pk := range p.keys {
				if p.done[i>>6]&(1<<(i&63)) == 0 {
					open = append(open, pk)
				}
			}
			if n := step % 4; !slices.Equal(p.peekN(nil, n), open[:min(n, len(open))]) {
				t.Fatalf("round %d: peekN(%d) %x, want the first unexpanded keys of %x", round, n, p.peekN(nil, n), open)
			}
			all = append(all, k)
			p.insert(k)
			slices.Sort(all)
			want := all[:min(ef, len(all))]
			if !slices.Equal(p.keys, want) {
				t.Fatalf("round %d step %d: pool %v, want %v", round, step, p.keys, want)
			}
		}
	}
}
