package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
)

// TestSessionBands: a session-filtered search through the engine (the
// namespace field "session", sessions of very different sizes, over two
// segments with deletes and the mutable part) returns recall@10 >= 0.95
// against an exact scan of that session, in every selectivity band, and
// never a record of another session. The hnsw planner picks the strategy
// per part from the session's count there; the test logs which.
func TestSessionBands(t *testing.T) {
	const dim, nc, total = 24, 30, 6000
	r := rand.New(rand.NewPCG(25, 25))
	centres := make([][]float64, nc)
	for i := range centres {
		centres[i] = make([]float64, dim)
		for j := range centres[i] {
			centres[i][j] = r.NormFloat64()
		}
	}
	vec := func(c int) []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(centres[c][j] + 0.6*r.NormFloat64())
		}
		return v
	}
	// Skewed sessions: a few heavy users, many light ones.
	bands := []struct {
		name string
		size int
	}{{"s-25pct", 1500}, {"s-10pct", 600}, {"s-5pct", 300}, {"s-1pct", 60}, {"s-0.1pct", 6}, {"s-single", 1}}
	var sessions []string
	for _, b := range bands {
		for range b.size {
			sessions = append(sessions, b.name)
		}
	}
	for i := 0; len(sessions) < total; i++ {
		for range 5 + i%20 {
			sessions = append(sessions, fmt.Sprintf("light%d", i))
		}
	}
	sessions = sessions[:total]
	r.Shuffle(len(sessions), func(i, j int) { sessions[i], sessions[j] = sessions[j], sessions[i] })
	// Each session lives mostly in two topics of its own.
	home := map[string][2]int{}
	recs := make([]Record, total)
	for i, s := range sessions {
		h, ok := home[s]
		if !ok {
			h = [2]int{r.IntN(nc), r.IntN(nc)}
			home[s] = h
		}
		c := r.IntN(nc)
		if r.Float64() < 0.7 {
			c = h[r.IntN(2)]
		}
		recs[i] = Record{ID: fmt.Sprintf("m%05d", i), Vector: vec(c), Text: "memory " + s, Meta: Metadata{"session": String(s)}}
	}

	db := openT(t, filepath.Join(t.TempDir(), "store"), testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "c", Dim: dim, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	for i, cut := range []int{2500, 5000, total} { // two segments and the mutable part
		from := []int{0, 2500, 5000}[i]
		if err := c.Upsert(ctx, recs[from:cut]); err != nil {
			t.Fatal(err)
		}
		if cut < total {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 3; i < total; i += 41 {
		if _, err := c.Delete(recs[i].ID); err != nil {
			t.Fatal(err)
		}
	}

	for _, b := range bands {
		f := Eq("session", String(b.name))
		var plans []string
		if err := c.read(func() error {
			for part := -1; part < len(c.segs); part++ {
				filt, err := c.partFilter(part, f)
				if err != nil {
					return err
				}
				bs, ok := filt.(*hnsw.Bitset)
				if !ok {
					return fmt.Errorf("part %d: filter %T, want a bitset from the namespace postings", part, filt)
				}
				live := c.mem.idx.Live()
				if part >= 0 {
					live = c.segs[part].view.Live()
				}
				plans = append(plans, fmt.Sprintf("%d/%d %v", bs.Count(), live, hnsw.Plan(bs.Count(), live, 0)))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// The planner's choice, then each strategy forced: at this size
		// the planner scans every part, so the two graph strategies are
		// checked on their own (the hnsw tests check the thresholds).
		for _, st := range []hnsw.Strategy{hnsw.StrategyAuto, hnsw.StrategyTwoHop, hnsw.StrategyWalk} {
			rc := sessionRecall(t, c, f, st, b.name, sessions, func(q int) []float32 {
				// Half the queries on the session's topics, half anywhere.
				cl := r.IntN(nc)
				if q%2 == 0 {
					cl = home[b.name][0]
				}
				return vec(cl)
			})
			t.Logf("%-9s (%4d records, parts: %v) %v: recall@10 %.3f", b.name, b.size, plans, st, rc)
			if rc < 0.95 || math.IsNaN(rc) {
				t.Errorf("%s %v: recall@10 %.3f against the exact scan, want >= 0.95", b.name, st, rc)
			}
		}
	}
}

// sessionRecall is the mean recall@10 of 30 searches filtered by f
// (strategy st) against exact scans with the same filter; it fails t
// when a hit is not from session want.
func sessionRecall(t *testing.T, c *Collection, f *Filter, st hnsw.Strategy, session string, sessions []string, query func(int) []float32) float64 {
	t.Helper()
	var sum float64
	const nq = 30
	for q := range nq {
		qv := query(q)
		got, err := c.Search(ctx, SearchRequest{Vector: qv, K: 10, Filter: f, IDsOnly: true, strategy: st})
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.Search(ctx, SearchRequest{Vector: qv, K: 10, Filter: f, Exact: true, IDsOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d hits, exact scan %d", session, len(got), len(want))
		}
		in := map[string]bool{}
		for _, h := range want {
			in[h.ID] = true
		}
		hit := 0
		for _, h := range got {
			var n int
			if _, err := fmt.Sscanf(h.ID, "m%05d", &n); err != nil || sessions[n] != session {
				t.Fatalf("%s: hit %s is from session %q", session, h.ID, sessions[n])
			}
			if in[h.ID] {
				hit++
			}
		}
		if len(want) > 0 {
			sum += float64(hit) / float64(len(want))
		} else {
			sum++
		}
	}
	return sum / nq
}
