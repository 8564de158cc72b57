package engine

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// TestMergeSeedsFromLargest: a merge starts from the graph of its largest
// input without deleted records (seedInput), and the merged segment holds
// every live record, each found by its own vector; with a deletion in the
// large input it rebuilds, and the result is as complete.
func TestMergeSeedsFromLargest(t *testing.T) {
	for _, deleteInLarge := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "s")
		db := openT(t, dir, testOpts())
		c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.Cosine})
		recs := flushedBatches(t, db, c, rand.New(rand.NewPCG(8, 8)), 300, seedMin+500, 200)
		if deleteInLarge {
			if _, err := c.Delete(recs[300].ID); err != nil {
				t.Fatal(err)
			}
			recs = append(recs[:300], recs[301:]...)
		}
		c.mu.RLock()
		segs := append([]*segment(nil), c.segs...)
		deleted := make([][]uint64, len(segs))
		for i, s := range segs {
			deleted[i] = append([]uint64(nil), s.deleted...)
		}
		c.mu.RUnlock()
		seed, live := seedInput(segs, deleted)
		if live != len(recs) {
			t.Fatalf("seedInput counts %d live records, want %d", live, len(recs))
		}
		switch {
		case !deleteInLarge && (seed < 0 || segs[seed].n != seedMin+500):
			t.Fatalf("seed %d, want the segment of %d", seed, seedMin+500)
		case deleteInLarge && seed >= 0:
			t.Fatalf("seed %d (of %d nodes) despite a deleted record in the large input", seed, segs[seed].n)
		}
		if seed >= 0 { // the segment's graph is taken as it is
			mem, err := newMemtableFrom(c.cfg, &db.opts, segs[seed], live)
			if err != nil || mem.idx.Len() != segs[seed].n {
				t.Fatalf("newMemtableFrom: %v", err)
			}
		}
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		st := db.Stats().Collections[0]
		if st.Segments != 1 || st.Records != len(recs) {
			t.Fatalf("after compaction: %+v", st)
		}
		for i := 0; i < len(recs); i += 7 {
			got, err := c.Search(ctx, SearchRequest{Vector: recs[i].Vector, K: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].ID != recs[i].ID || got[0].Record.Text != recs[i].Text {
				t.Fatalf("record %s: %+v", recs[i].ID, got)
			}
		}
		if err := db.Check(); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
}

// flushedBatches upserts mkRecords batches of the given sizes (16-d, ids
// from 0, 10,000, 20,000, ...) into c, flushing after each: a segment a
// batch. It returns the records in order.
func flushedBatches(t *testing.T, db *DB, c *Collection, r *rand.Rand, sizes ...int) []Record {
	t.Helper()
	var recs []Record
	for i, n := range sizes {
		batch := mkRecords(r, 16, 10_000*i, n)
		recs = append(recs, batch...)
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestCompactionCost (opt-in: ENGRAM_COMPACT_BENCH=1) times Compact of one
// segment of 30,000 records and three of 1,000 (64-d), once starting from
// the large segment's graph and once rebuilding it (seedMerges off):
//
//	ENGRAM_COMPACT_BENCH=1 go test ./engine -run TestCompactionCost -v
func TestCompactionCost(t *testing.T) {
	if os.Getenv("ENGRAM_COMPACT_BENCH") == "" {
		t.Skip("opt-in: ENGRAM_COMPACT_BENCH=1")
	}
	for _, seeded := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "s")
		db := openT(t, dir, testOpts())
		c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 64, Metric: quant.Cosine})
		r := rand.New(rand.NewPCG(8, 8))
		for i, n := range []int{30_000, 1000, 1000, 1000} {
			for j := 0; j < n; j += 1000 {
				if err := c.Upsert(ctx, mkRecords(r, 64, 1_000_000*i+j, min(1000, n-j))); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		seedMerges = seeded
		t0 := time.Now()
		err := db.Compact()
		seedMerges = true
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seeded %v: Compact of 30,000 + 3 x 1,000 records (64-d) in %v, %d workers", seeded, time.Since(t0).Round(time.Millisecond), runtime.GOMAXPROCS(0))
		db.Close()
	}
}

// TestMergeKeepsEveryVector: a merge reads its inputs' vectors into arrays
// it reuses from insert batch to batch (mergeBatch records); every record
// must come out with its own vector, bit for bit, and its own checksum,
// whether the merge starts from the largest input's graph or rebuilds
// (a deletion in it), with more than two batches of records inserted.
func TestMergeKeepsEveryVector(t *testing.T) {
	for _, deleteInLarge := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "s")
		db := openT(t, dir, testOpts())
		c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 16, Metric: quant.L2})
		recs := flushedBatches(t, db, c, rand.New(rand.NewPCG(9, 9)), 300, seedMin+3000, mergeBatch+700, mergeBatch/2)
		if deleteInLarge {
			if _, err := c.Delete(recs[300].ID); err != nil {
				t.Fatal(err)
			}
			recs = append(recs[:300], recs[301:]...)
		}
		if err := db.Compact(); err != nil {
			t.Fatal(err)
		}
		if st := db.Stats().Collections[0]; st.Segments != 1 || st.Records != len(recs) {
			t.Fatalf("after compaction: %+v", st)
		}
		for _, want := range recs {
			got, err := c.Get(want.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Vector, want.Vector) || got.Text != want.Text {
				t.Fatalf("record %s: vector %v, text %q; want %v, %q", want.ID, got.Vector[:2], got.Text, want.Vector[:2], want.Text)
			}
		}
		if err := db.Check(); err != nil { // the record checksums too
			t.Fatal(err)
		}
		db.Close()
	}
}
