package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

func TestKVAndTouchSurviveFlushCompactReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.Dot})
	r := rand.New(rand.NewPCG(1, 1))
	c.Upsert(ctx, mkRecords(r, 4, 0, 20))
	kv := db.KV()
	kv.Put("wm/task1", []byte("step 1"))
	kv.Put("wm/task2", []byte("step 2"))
	kv.Put("other", []byte("x"))
	t1 := time.Unix(1700000000, 0).UTC()
	c.Touch([]string{"r00001", "r00002", "r00001"}, t1) // duplicates count once
	db.Flush()
	c.Touch([]string{"r00001"}, t1.Add(time.Hour)) // a segment record: override
	kv.Delete("wm/task2")
	steps := []func(){
		func() {},
		func() { db.Flush() },
		func() { db.Compact() },
		func() {
			db.Close()
			db = openT(t, dir, testOpts())
			c, _ = db.Collection("a")
			kv = db.KV()
		},
	}
	for i, step := range steps {
		step()
		got, err := c.Get("r00001")
		if err != nil || got.AccessCount != 2 || !got.LastAccess.Equal(t1.Add(time.Hour)) {
			t.Fatalf("step %d: r00001 access %d %v, %v", i, got.AccessCount, got.LastAccess, err)
		}
		got, _ = c.Get("r00002")
		if got.AccessCount != 1 || !got.LastAccess.Equal(t1) {
			t.Fatalf("step %d: r00002 access %d %v", i, got.AccessCount, got.LastAccess)
		}
		var keys []string
		kv.Scan("wm/", func(k string, v []byte) bool { keys = append(keys, k+"="+string(v)); return true })
		if fmt.Sprint(keys) != "[wm/task1=step 1]" {
			t.Fatalf("step %d: KV scan %v", i, keys)
		}
	}
	if st := db.Stats(); st.Collections[0].Overrides != 0 || st.Collections[0].Segments != 1 {
		t.Fatalf("after compaction the overrides are folded into the segment: %+v", st.Collections[0])
	}
	db.Close()
}

func TestBackup(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	r := rand.New(rand.NewPCG(2, 2))
	recs := mkRecords(r, 4, 0, 50)
	c.Upsert(ctx, recs[:30])
	db.Flush()
	c.Upsert(ctx, recs[30:])
	c.Delete("r00005")
	db.KV().Put("k", []byte("v"))
	bdir := filepath.Join(t.TempDir(), "backup")
	if err := db.Backup(bdir); err != nil {
		t.Fatal(err)
	}
	if err := db.Backup(bdir); err == nil {
		t.Fatal("Backup over an existing store accepted")
	}
	// The original keeps working; the copy is a store of its own.
	c.Upsert(ctx, mkRecords(r, 4, 100, 1))
	b := openT(t, bdir, testOpts())
	defer b.Close()
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	bc, err := b.Collection("a")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := bc.Count(nil); n != 49 {
		t.Fatalf("backup holds %d records, want 49", n)
	}
	if v, err := b.KV().Get("k"); err != nil || string(v) != "v" {
		t.Fatalf("backup KV: %q %v", v, err)
	}
	if err := bc.Upsert(ctx, mkRecords(r, 4, 200, 2)); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrent runs readers, writers, flushes and compactions at once
// (meaningful under -race) and checks the final state.
func TestConcurrent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	opts := testOpts()
	opts.FlushBytes = 20 << 10 // background flushes
	opts.CompactInterval = 30 * time.Millisecond
	opts.CompactBytesPerSec = -1
	db := openT(t, dir, opts)
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 8, Metric: quant.Cosine})
	const writers, perWriter = 3, 60
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for i := range perWriter {
				rec := mkRecords(r, 8, w*1000+i, 1)
				if err := c.Upsert(ctx, rec); err != nil {
					t.Error(err)
					return
				}
				if i%10 == 9 {
					if _, err := c.Delete(fmt.Sprintf("r%05d", w*1000+i-5)); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(9, 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Search(ctx, SearchRequest{Vector: randVec(r, 8), K: 5, Filter: Eq("session", String("s1"))}); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.SearchText(ctx, "topic 3", 3, nil); err != nil {
					t.Error(err)
					return
				}
				c.Get("r00003")
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			if err := db.Compact(); err != nil {
				t.Error(err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	readers.Wait()
	if n, _ := c.Count(nil); n != writers*(perWriter-perWriter/10) {
		t.Fatalf("count %d, want %d", n, writers*(perWriter-perWriter/10))
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.BackgroundError != nil {
		t.Fatalf("background: %v", st.BackgroundError)
	}
}

func TestCompactShrinksDisk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 32, Metric: quant.Cosine})
	r := rand.New(rand.NewPCG(4, 4))
	for i := range 4 {
		c.Upsert(ctx, mkRecords(r, 32, i*250, 250))
		db.Flush()
	}
	before := db.Stats().Collections[0].DiskBytes
	n, err := c.DeleteWhere(Range("n", Int(0), Int(499)))
	if err != nil || n != 500 {
		t.Fatalf("DeleteWhere = %d, %v", n, err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	st := db.Stats().Collections[0]
	if st.Segments != 1 || st.Records != 500 || st.Deleted != 0 {
		t.Fatalf("after compaction: %+v", st)
	}
	if float64(st.DiskBytes) > 0.55*float64(before) {
		t.Fatalf("disk %d -> %d bytes after deleting half: less than 45%% smaller", before, st.DiskBytes)
	}
}

// TestBackgroundPolicy: the background compaction merges segments of a size
// tier and the smallest down to compactMaxSegments, and rewrites a segment with more than
// compactDeletedFraction deleted; a tidy store is left alone.
func TestBackgroundPolicy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	db := openT(t, dir, testOpts())
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "a", Dim: 4, Metric: quant.L2})
	r := rand.New(rand.NewPCG(6, 6))
	for i := range 6 {
		c.Upsert(ctx, mkRecords(r, 4, i*100, 10+i*10))
		db.Flush()
	}
	if err := db.compact(false); err != nil {
		t.Fatal(err)
	}
	st := db.Stats().Collections[0]
	if st.Segments >= 6 || st.Segments > compactMaxSegments || st.Records != 10+20+30+40+50+60 {
		t.Fatalf("after background compaction: %+v", st)
	}
	before := db.Stats().Collections[0]
	if err := db.compact(false); err != nil {
		t.Fatal(err)
	}
	if after := db.Stats().Collections[0]; after.Segments != before.Segments || after.DiskBytes != before.DiskBytes {
		t.Fatalf("a tidy store was rewritten: %+v -> %+v", before, after)
	}
	// Delete 35% of the largest segment (the tier merge put records
	// 100..599 in one segment of 200; delete 400..409 and 500..559).
	var ids []string
	for i := range 60 {
		ids = append(ids, fmt.Sprintf("r%05d", 500+i))
	}
	for i := range 10 {
		ids = append(ids, fmt.Sprintf("r%05d", 400+i))
	}
	c.Delete(ids...)
	if st := db.Stats().Collections[0]; st.Deleted != 70 {
		t.Fatalf("before the policy: %+v", st)
	}
	if err := db.compact(false); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats().Collections[0]; st.Deleted != 0 || st.Records != 210-70 {
		t.Fatalf("segment with 40%% deleted not rewritten: %+v", st)
	}
}
