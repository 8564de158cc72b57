package hnsw

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engramdb/engram/quant"
)

// unreached counts the live nodes of g (n ids, entry point ep) that a walk
// over level-0 lists from ep does not reach.
func unreached(g *graph, ep uint32, n int) int {
	bits := make([]uint64, (n+63)/64)
	g.reach(bits, ep, new(scratch))
	missing := 0
	for id := uint32(0); int(id) < n; id++ {
		if g.flags[id]&(flagPresent|flagDeleted) == flagPresent && !has(bits, id) {
			missing++
		}
	}
	return missing
}

func (ix *Index) unreached() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	ep, _ := unpackEP(ix.ep.Load())
	return unreached(&ix.g, ep, ix.Len())
}

// reachabilityCases are data that used to leave live nodes unreachable:
// crowds of identical vectors (every list among them filled with copies),
// Dot over vectors of varied norms (long vectors win every list), and a
// grid, where distances tie without vectors being equal.
func reachabilityCases() []struct {
	name   string
	metric quant.Metric
	rows   [][]float32
} {
	r := rand.New(rand.NewPCG(7, 7))
	gauss := func(dim int, scale float64) []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	crowd := func(n, dim int, share float64) [][]float32 {
		dup := gauss(dim, 1)
		rows := make([][]float32, n)
		for i := range rows {
			if r.Float64() < share {
				rows[i] = dup
			} else {
				rows[i] = gauss(dim, 1)
			}
		}
		return rows
	}
	var dot [][]float32
	for range 2000 {
		dot = append(dot, gauss(8, 0.2+2*r.Float64()))
	}
	var grid [][]float32
	for x := range 40 {
		for y := range 40 {
			grid = append(grid, []float32{float32(x), float32(y)})
		}
	}
	type tc = struct {
		name   string
		metric quant.Metric
		rows   [][]float32
	}
	var cases []tc
	for _, m := range []quant.Metric{quant.Cosine, quant.Dot, quant.L2} {
		cases = append(cases,
			tc{fmt.Sprintf("half-identical/%v", m), m, crowd(400, 4, 0.5)},
			tc{fmt.Sprintf("90%%-identical/%v", m), m, crowd(1500, 16, 0.9)},
		)
	}
	return append(cases,
		tc{"dot-varied-norms", quant.Dot, dot},
		tc{"grid/l2", quant.L2, grid},
		tc{"clustered/cosine", quant.Cosine, synthetic(3000, 24, 9)},
	)
}

// TestReachable: in every written graph the entry point reaches every live
// node on level 0, whatever the build left behind, and a search for a
// distinct vector finds it.
func TestReachable(t *testing.T) {
	for _, c := range reachabilityCases() {
		t.Run(c.name, func(t *testing.T) {
			ix := build(t, Config{Dim: len(c.rows[0]), Metric: c.metric, Seed: 3, M: 8, EfConstruction: 64}, c.rows)
			before := ix.unreached()
			// A crowd of copies used to leave half of itself without an
			// in-link after the build (salted walks spread the links).
			if strings.Contains(c.name, "identical") && before > len(c.rows)/20 {
				t.Errorf("%d of %d unreachable after the build", before, len(c.rows))
			}
			if c.name == "grid/l2" { // WriteTo's pass is tested below
				if linked := ix.Reconnect(); linked < before || ix.unreached() != 0 {
					t.Fatalf("Reconnect linked %d of %d unreached, %d left", linked, before, ix.unreached())
				}
			}
			var buf bytes.Buffer
			if _, err := ix.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			if after := ix.unreached(); after != 0 {
				t.Fatalf("%d of %d live nodes unreachable after WriteTo (%d before)", after, ix.Live(), before)
			}
			v, err := OpenView(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if u := unreached(&v.g, v.ep, v.n); u != 0 {
				t.Fatalf("view: %d live nodes unreachable", u)
			}
			t.Logf("%d of %d unreachable after the build, 0 after WriteTo", before, len(c.rows))
			if c.metric == quant.Dot {
				return // under Dot a vector need not be its own nearest
			}
			counts := map[string]int{}
			for _, row := range c.rows {
				counts[fmt.Sprint(row)]++
			}
			missed, distinct := 0, 0
			for id, row := range c.rows {
				if counts[fmt.Sprint(row)] > 1 {
					continue
				}
				distinct++
				res, err := v.Search(row, 1, SearchOptions{Ef: 64})
				if err != nil {
					t.Fatal(err)
				}
				if len(res) == 0 || res[0].ID != uint32(id) {
					missed++
				}
			}
			if missed > distinct/100 {
				t.Fatalf("%d of %d distinct vectors do not find themselves", missed, distinct)
			}
		})
	}
}

// TestReachableDuplicatesFiltered: every copy in a crowd of identical
// vectors can be found by a filtered graph walk that allows only a few of
// them.
func TestReachableDuplicatesFiltered(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	dup := []float32{0.5, -1, 2, 0.25, 1, 1, -3, 0.5}
	var rows [][]float32
	for i := range 3000 {
		if i%3 != 2 {
			rows = append(rows, dup)
			continue
		}
		v := make([]float32, len(dup))
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		rows = append(rows, v)
	}
	ix := build(t, Config{Dim: len(dup), Metric: quant.L2, Seed: 1, M: 8, EfConstruction: 64}, rows)
	t.Logf("%d of %d unreachable after the build", ix.unreached(), len(rows))
	v := writeView(t, ix)
	// Windows of the last copies: each window's 20 copies are the only
	// allowed nodes. The walk is called directly: Search would scan a
	// filter this selective instead of walking the graph.
	for lo := 2700; lo < 3000; lo += 30 {
		bits := make([]uint64, (v.n+63)/64)
		for id := lo; id < lo+30; id++ {
			if id%3 != 2 {
				bits[id>>6] |= 1 << (id & 63)
			}
		}
		q, _ := prepare(dup, v.g.dim, v.g.metric)
		res := v.g.search(new(scratch), q, 20, 400, DefaultWidth, v.n, v.ep, v.top, &accept{bits: bits}, true)
		if len(res) != 20 {
			t.Fatalf("window %d: %d results, want 20: %v", lo, len(res), res)
		}
		for _, x := range res {
			if x.Distance != 0 {
				t.Fatalf("window %d: result %v is not a copy", lo, x)
			}
		}
	}
}

// TestReachableWithTombstones: WriteTo with tombstones not yet repaired
// (the entry point among them) still writes a graph whose walk reaches
// every live node, and Repair after deleting nearly everything too.
func TestReachableWithTombstones(t *testing.T) {
	rows := synthetic(600, 16, 11)
	ix := build(t, Config{Dim: 16, Metric: quant.L2, Seed: 2, M: 8, EfConstruction: 64}, rows)
	ep, _ := unpackEP(ix.ep.Load())
	del := []uint32{ep}
	for id := uint32(0); len(del) < 40; id += 7 {
		if id != ep {
			del = append(del, id)
		}
	}
	for _, id := range del {
		if err := ix.Delete(id); err != nil {
			t.Fatal(err)
		}
	}
	if ix.pending.Load() == 0 {
		t.Fatal("a repair pass ran: the test wants pending tombstones")
	}
	v := writeView(t, ix)
	if u := unreached(&v.g, v.ep, v.n); u != 0 {
		t.Fatalf("%d live nodes unreachable with pending tombstones", u)
	}
	// Delete all but 5: repair passes run on the way; every survivor is
	// reachable and finds itself.
	for id := uint32(0); id < 595; id++ {
		if !ix.Deleted(id) {
			if err := ix.Delete(id); err != nil {
				t.Fatal(err)
			}
		}
	}
	ix.Repair()
	if u := ix.unreached(); u != 0 {
		t.Fatalf("%d of %d survivors unreachable", u, ix.Live())
	}
	for id := uint32(595); id < 600; id++ {
		res, err := ix.Search(rows[id], 1, SearchOptions{})
		if err != nil || len(res) != 1 || res[0].ID != id {
			t.Fatalf("survivor %d: %v, %v", id, res, err)
		}
	}
}

// writeView serializes ix and opens the bytes as a View.
func writeView(t *testing.T, ix *Index) *View {
	t.Helper()
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	v, err := OpenView(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return v
}
