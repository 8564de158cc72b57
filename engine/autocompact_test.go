package engine

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// autoOpts are testOpts with automatic compaction on, as a CLI process has it.
func autoOpts() Options {
	o := testOpts()
	o.CompactInterval = time.Hour // on, but the tick never comes during a test
	return o
}

// TestShortLivedProcessesBoundSegments: a store written by many short-lived
// processes (open, one write, close, as `memctl remember` does) keeps a
// bounded number of segments, because Close runs the policy's compaction.
func TestShortLivedProcessesBoundSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	r := rand.New(rand.NewPCG(1, 2))
	const writes = 300
	for i := range writes {
		db := openT(t, dir, autoOpts())
		c, err := db.Collection("notes")
		if err != nil {
			c, err = db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp1"})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Upsert(ctx, mkRecords(r, 8, i, 1)); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db := openT(t, dir, autoOpts())
	defer db.Close()
	st := db.Stats().Collections[0]
	if st.Records != writes || st.Segments > compactMaxSegments+1 {
		t.Fatalf("after %d short-lived writes: %d records in %d segments, want %d in at most %d",
			writes, st.Records, st.Segments, writes, compactMaxSegments+1)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCompactionOffKeepsSegments: CompactInterval < 0 turns the Close
// compaction off too, for tests and tools that need the files as written.
func TestCompactionOffKeepsSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 8 {
		db := openT(t, dir, testOpts())
		c, err := db.Collection("notes")
		if err != nil {
			c, _ = db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp1"})
		}
		if err := c.Upsert(ctx, mkRecords(r, 8, i, 1)); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db := openT(t, dir, testOpts())
	defer db.Close()
	if st := db.Stats().Collections[0]; st.Segments != 8 {
		t.Fatalf("%d segments, want the 8 written", st.Segments)
	}
}

// TestMostlyDeletedSegmentRewritten: a delete that leaves a segment past
// compactDeletedFraction has the background loop rewrite it at once, not at
// the next tick, so the tombstones stop costing later writes.
func TestMostlyDeletedSegmentRewritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	db := openT(t, dir, autoOpts())
	defer db.Close()
	c, err := db.CreateCollection(CollectionConfig{Name: "notes", Dim: 8, Metric: quant.Cosine, Fingerprint: "fp1"})
	if err != nil {
		t.Fatal(err)
	}
	recs := mkRecords(rand.New(rand.NewPCG(5, 6)), 8, 0, 2000)
	if err := c.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs[:1990] {
		ids = append(ids, r.ID)
	}
	if n, err := c.Delete(ids...); err != nil || n != 1990 {
		t.Fatalf("Delete: %d, %v", n, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := db.Stats().Collections[0]
		if st.Deleted == 0 && st.Records == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the delete: %+v, want the segment rewritten", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, r := range recs[1990:] {
		if _, err := c.Get(r.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPickTiered: flushes of one record each, with the policy run after
// every flush, copy each record O(log n) times and keep the segment count
// bounded (merging only the smallest would copy a growing segment on every
// flush: n²/2 copies).
func TestPickTiered(t *testing.T) {
	c := &Collection{}
	const flushes = 5000
	copies := 0
	for i := range flushes {
		c.segs = append(c.segs, &segment{n: 1, file: uint64(i)})
		chosen := c.pick(false)
		if len(chosen) == 0 {
			continue
		}
		merged := &segment{file: uint64(i)}
		for _, s := range chosen {
			merged.n += s.n
		}
		copies += merged.n
		c.segs = slices.DeleteFunc(c.segs, func(s *segment) bool { return slices.Contains(chosen, s) })
		c.segs = append(c.segs, merged)
		if len(c.segs) > compactMaxSegments {
			t.Fatalf("flush %d: %d segments", i, len(c.segs))
		}
	}
	if bound := 2 * flushes * int(math.Ceil(math.Log2(flushes))); copies > bound {
		t.Fatalf("%d record copies for %d flushes, want at most %d", copies, flushes, bound)
	}
	t.Logf("%d flushes: %d record copies (%.1f per record), %d segments", flushes, copies, float64(copies)/flushes, len(c.segs))
}
