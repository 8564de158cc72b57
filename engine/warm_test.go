package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// TestWarm: with Options.Warm, Open starts a pass that verifies every chunk
// of what searches read in each segment (the graph but its vectors) and
// the sections records and BM25 need, parses the namespace postings and
// the keyword section, and Warmed says when it is done; a
// damaged chunk does not stop it and is still reported by the search that
// reads it; Close right after Open waits for the pass to stop.
func TestWarm(t *testing.T) {
	leaveDamaged(t) // a code is damaged below
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.Cosine})
	recs := flushedBatches(t, db, c, rand.New(rand.NewPCG(6, 6)), 700, 500)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	chunksOf := func(c *Collection) (verified, all int) {
		c.mu.RLock()
		defer c.mu.RUnlock()
		for _, s := range c.segs {
			t := s.sf.chunks
			base := s.graphOffset()
			for _, r := range s.view.SearchRanges() {
				for i := (base + r[0]) >> t.shift; i <= (base+r[0]+r[1]-1)>>t.shift; i++ {
					all++
					if t.ok[i>>6].Load()&(1<<(i&63)) != 0 {
						verified++
					}
				}
			}
		}
		return verified, all
	}
	opts := testOpts()
	cold := openT(t, dir, opts)
	cc, _ := cold.Collection("a")
	if v, all := chunksOf(cc); v == all || all == 0 {
		t.Fatalf("without Warm, %d of %d chunks verified at open", v, all)
	}
	select {
	case <-cold.Warmed():
	default:
		t.Fatal("Warmed is not closed without Options.Warm")
	}
	cold.Close()

	opts.Warm = true
	db = openT(t, dir, opts)
	select {
	case <-db.Warmed():
	case <-time.After(10 * time.Second):
		t.Fatal("the warm-up did not end")
	}
	c, _ = db.Collection("a")
	if v, all := chunksOf(c); v != all {
		t.Fatalf("after the warm-up %d of %d chunks verified", v, all)
	}
	c.mu.RLock()
	for _, s := range c.segs {
		for _, k := range []sectionKind{secIDs, secText, secKeyword, secNamespace} {
			ran := true
			s.verified[k].Do(func() { ran = false }) // runs only if the warm-up did not
			if !ran || s.verifyErr[k] != nil {
				t.Fatalf("section %v: %v", k, s.verifyErr[k])
			}
		}
		// The namespace postings and the keyword section are parsed too
		// (each once runs only if the warm-up did not).
		parsed := true
		s.nsOnce.Do(func() { parsed = false })
		s.kwOnce.Do(func() { parsed = false })
		if !parsed || s.ns == nil || s.kw == nil {
			t.Fatalf("namespace postings or keyword section not parsed by the warm-up (%v, %v, %v)", parsed, s.ns != nil, s.kw != nil)
		}
	}
	c.mu.RUnlock()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// A damaged code: the warm-up goes on, the search that reads it fails.
	db = openT(t, dir, testOpts())
	c, _ = db.Collection("a")
	c.mu.RLock()
	s := c.segs[0]
	path, off := s.sf.path, s.graphOffset()+s.view.SearchRanges()[1][0]+5
	c.mu.RUnlock()
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x55
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	db = openT(t, dir, opts)
	<-db.Warmed()
	c, _ = db.Collection("a")
	var sawCorrupt bool
	for i := 0; i < len(recs) && !sawCorrupt; i += 3 {
		_, err := c.Search(ctx, SearchRequest{Vector: recs[i].Vector, K: 5})
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("search: %v", err)
		}
		sawCorrupt = err != nil
	}
	if !sawCorrupt {
		t.Fatal("no search reported the damaged code")
	}
	db.Close()

	// A compaction that replaces the segments while the pass runs: the
	// pass skips what is no longer the collection's.
	fresh := filepath.Join(t.TempDir(), "f")
	db = openT(t, fresh, testOpts())
	c, _ = db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.Cosine})
	recs = flushedBatches(t, db, c, rand.New(rand.NewPCG(7, 7)), 600, 600, 600)
	db.Close()
	db = openT(t, fresh, opts)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	<-db.Warmed()
	c, _ = db.Collection("a")
	if h, err := c.Search(ctx, SearchRequest{Vector: recs[42].Vector, K: 1}); err != nil || len(h) != 1 || h[0].ID != recs[42].ID {
		t.Fatalf("after a compaction during the warm-up: %v %v", h, err)
	}
	db.Close()

	// Close at once: the pass stops at its next step.
	for range 5 {
		db = openT(t, dir, opts)
		if err := db.Close(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatal(err)
		}
	}
}
