package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/quant"
)

// damagedGraphStore writes one segment of 400 64-d records, zeroes up to
// 64 KiB in the middle of its graph section (codes, vectors and lists:
// derived and primary data both) and returns the store's directory.
func damagedGraphStore(t *testing.T) (string, []Record) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, err := db.CreateCollection(CollectionConfig{Name: "a", Dim: 64, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	recs := mkRecords(rand.New(rand.NewPCG(3, 4)), 64, 0, 400)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "seg", segName(1))
	sf, err := openSegFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g sectionEntry
	for _, e := range sf.entries {
		if e.kind == secGraph {
			g = e
		}
	}
	sf.close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zero := min(64<<10, int(g.len)/2)
	from := int(g.off) + int(g.len)/2 - zero/2
	clear(b[from : from+zero])
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, recs
}

// TestUnverifiedGraphNotAnswered: a store whose graph section is partly
// zeroed opens (open reads no section body), but a vector search answers a
// typed corruption error, not a result; reads that do not need the graph
// still work.
func TestUnverifiedGraphNotAnswered(t *testing.T) {
	dir, recs := damagedGraphStore(t)
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, err := db.Collection("a")
	if err != nil {
		t.Fatal(err)
	}
	var ce *CorruptionError
	for range 2 { // the verdict is kept, not recomputed into a result
		hits, err := c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3})
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.File != filepath.Join(dir, "seg", segName(1)) {
			t.Fatalf("Search over a damaged graph = %v, %v; want a CorruptionError naming the segment", hits, err)
		}
	}
	if _, err := c.Search(ctx, SearchRequest{Vector: recs[7].Vector, K: 3, Exact: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Exact search reads the damaged vectors: %v", err)
	}
	if _, err := c.Get(recs[7].ID); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Get returns the damaged vector: %v", err)
	}
	hits, err := c.SearchText(ctx, "topic", 3, nil)
	if err != nil || len(hits) != 3 {
		t.Fatalf("SearchText does not need the graph: %v, %v", hits, err)
	}
	n := 0
	if err := c.Scan(nil, false, func(Record) bool { n++; return true }); err != nil || n != len(recs) {
		t.Fatalf("Scan without vectors: %d records, %v", n, err)
	}
}
