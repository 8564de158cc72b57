package engine

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engramdb/engram/quant"
)

// TestCompactionGroupsSessions: a merge orders its records by session
// (mergeOrder), each session holding the same records, in the graph's
// locality order; searches in a session answer as before the merge, and a
// record deleted while the merge ran stays deleted in the merged segment.
func TestCompactionGroupsSessions(t *testing.T) {
	sessionsOf := func(c *Collection) (sessions, ids []string) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		if len(c.segs) != 1 {
			t.Fatalf("%d segments", len(c.segs))
		}
		s := c.segs[0]
		for node := uint32(0); node < uint32(s.n); node++ {
			v, _ := s.getter(node)("session")
			sessions, ids = append(sessions, v.s), append(ids, s.id(node))
		}
		return sessions, ids
	}
	var merged [2][]string // ids in merge order, grouped and not
	for pass, cluster := range []bool{false, true} {
		clusterMerges = cluster
		t.Cleanup(func() { clusterMerges = true })
		db := openT(t, filepath.Join(t.TempDir(), "s"), testOpts())
		c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.Cosine})
		recs := flushedBatches(t, db, c, rand.New(rand.NewPCG(4, 4)), 400, seedMin+100, 200)
		victim := recs[17]
		query := recs[5].Vector
		// Text scores (ties among equal texts break by position, which a
		// merge changes) and exact neighbours, the victim left out.
		search := func(s string) (text []float64, exact []string) {
			f := Eq("session", String(s))
			th, err := c.SearchText(ctx, "topic 3 r00042 r10042", 20, f)
			if err != nil {
				t.Fatal(err)
			}
			eh, err := c.Search(ctx, SearchRequest{Vector: query, K: 20, Filter: f, Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range th {
				if h.ID != victim.ID {
					text = append(text, h.Score)
				}
			}
			for _, h := range eh {
				if h.ID != victim.ID {
					exact = append(exact, h.ID)
				}
			}
			return text[:18], exact[:18]
		}
		type answers struct {
			text  []float64
			exact []string
		}
		before := map[string]answers{}
		for _, s := range []string{"s0", "s1", "s2"} {
			tx, ex := search(s)
			before[s] = answers{tx, ex}
		}
		// The merge as Compact runs it, with a delete between building the
		// merged segment and installing it.
		rep, err := db.buildReplacement(c, func(c *Collection) []*segment { return c.pick(true) }, &progressCounter{}, 2)
		if err != nil || rep == nil || rep.seg == nil {
			t.Fatalf("buildReplacement: %v", err)
		}
		if n, err := c.Delete(victim.ID); n != 1 || err != nil {
			t.Fatalf("delete: %d, %v", n, err)
		}
		db.writeMu.Lock()
		err = db.flushLocked([]*replacement{rep})
		rep.installed = err == nil
		db.writeMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		sessions, ids := sessionsOf(c)
		merged[pass] = ids
		if grouped := slices.IsSorted(sessions); grouped != cluster {
			t.Fatalf("clustering %v: sessions in node order grouped %v", cluster, grouped)
		}
		if _, err := c.Get(victim.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the record deleted during the merge: %v", err)
		}
		for _, rec := range recs {
			if rec.ID == victim.ID {
				continue
			}
			got, err := c.Get(rec.ID)
			if err != nil || got.Text != rec.Text || !slices.Equal(got.Vector, rec.Vector) && len(got.Vector) != len(rec.Vector) {
				t.Fatalf("%s after the merge: %v", rec.ID, err)
			}
			if rec.ID[len(rec.ID)-1] == '3' { // a sample, by its own vector
				h, err := c.Search(ctx, SearchRequest{Vector: rec.Vector, K: 1})
				if err != nil || len(h) != 1 || h[0].ID != rec.ID {
					t.Fatalf("%s by its vector: %v %v", rec.ID, h, err)
				}
			}
		}
		for s, want := range before {
			tx, ex := search(s)
			if !slices.Equal(tx, want.text) || !slices.Equal(ex, want.exact) {
				t.Fatalf("session %s after the merge: text %v exact %v, before %v %v", s, tx, ex, want.text, want.exact)
			}
		}
		if err := db.Check(); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	// Grouping moves whole sessions only: each session holds the same
	// records.
	bySession := func(ids []string) map[byte][]string {
		out := map[byte][]string{}
		for _, id := range ids {
			n := 0
			for _, ch := range id[1:] {
				n = 10*n + int(ch-'0')
			}
			out[byte(n%3)] = append(out[byte(n%3)], id)
		}
		return out
	}
	plain, grouped := bySession(merged[0]), bySession(merged[1])
	for s := range plain {
		slices.Sort(plain[s])
		slices.Sort(grouped[s])
		if !slices.Equal(plain[s], grouped[s]) {
			t.Fatalf("session s%d: other records once grouped", s)
		}
	}
}

// TestCompactionLocalityOrder: without sessions a merge numbers its
// records in the graph's locality order, which starts at the entry point:
// the merged segment's entry is node 0 (a merge that kept the records'
// order would leave it wherever the build put it).
func TestCompactionLocalityOrder(t *testing.T) {
	db := openT(t, filepath.Join(t.TempDir(), "s"), testOpts())
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.Cosine})
	r := rand.New(rand.NewPCG(8, 8))
	for i, n := range []int{300, 200} {
		batch := mkRecords(r, 16, 10_000*i, n)
		for j := range batch {
			delete(batch[j].Meta, "session")
		}
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.segs) != 1 {
		t.Fatalf("%d segments after Compact", len(c.segs))
	}
	if ep, _, ok := c.segs[0].view.Entry(); !ok || ep != 0 {
		t.Fatalf("the merged segment's entry point is node %d (ok %v), want 0", ep, ok)
	}
}
