package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

func cpuTime() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// TestFirstQueryVerifyCost measures what the lazy checksum verification
// costs the first query after Open: ENGRAM_VERIFY_BENCH=N builds a store of
// N 1024-d records (ENGRAM_VERIFY_DIM to change it; a small graph, M=8,
// for build speed: verification reads every byte whatever the graph), then
// times Open, the first 10-NN search (which verifies the record sections
// and the whole graph section of each segment once), a second search, and
// the verification alone, in wall and CPU time, with the bytes verified.
// It writes format 3 (whole sections verified: the baseline of
// bench/results/engine.md); TestOpenToFirstQuery measures format 4.
func TestFirstQueryVerifyCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ENGRAM_VERIFY_BENCH"))
	if n == 0 {
		t.Skip("set ENGRAM_VERIFY_BENCH=N to measure")
	}
	writeVersion = segVersionV3
	t.Cleanup(func() { writeVersion = segVersion })
	dim := 1024
	if s := os.Getenv("ENGRAM_VERIFY_DIM"); s != "" {
		dim, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(t.TempDir(), "s")
	opts := Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1, M: 8, EfConstruction: 32}
	db := openT(t, dir, opts)
	c, err := db.CreateCollection(CollectionConfig{Name: "bench", Dim: dim, Metric: quant.Cosine})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for lo := 0; lo < n; lo += 500 {
		batch := make([]Record, 0, 500)
		for i := lo; i < min(n, lo+500); i++ {
			batch = append(batch, benchRecord(randVec(r, dim), i))
		}
		if err := c.Upsert(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %d records of dim %d in %v", n, dim, time.Since(start).Round(time.Second))
	q := randVec(r, dim)
	for run := range 3 {
		// Warm: every file in the page cache.
		files, _ := filepath.Glob(filepath.Join(dir, "seg", "*.seg"))
		var size int64
		for _, f := range files {
			b, _ := os.ReadFile(f)
			size += int64(len(b))
		}
		w0, c0 := time.Now(), cpuTime()
		db, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		w1, c1 := time.Now(), cpuTime()
		c, _ := db.Collection("bench")
		if _, err := c.Search(ctx, SearchRequest{Vector: q, K: 10}); err != nil {
			t.Fatal(err)
		}
		w2, c2 := time.Now(), cpuTime()
		if _, err := c.Search(ctx, SearchRequest{Vector: randVec(r, dim), K: 10}); err != nil {
			t.Fatal(err)
		}
		w3, c3 := time.Now(), cpuTime()
		var verified int64
		for _, s := range c.segs {
			for _, k := range append(recordSections, secGraph) {
				verified += int64(len(s.sf.sections[k]))
			}
		}
		db.Close()
		// The verification alone, on a fresh open.
		db, _ = Open(dir, opts)
		c, _ = db.Collection("bench")
		v0, vc0 := time.Now(), cpuTime()
		for _, s := range c.segs {
			if err := s.need(append(recordSections, secGraph)...); err != nil {
				t.Fatal(err)
			}
		}
		v1, vc1 := time.Now(), cpuTime()
		db.Close()
		t.Logf("run %d: %d segment bytes, %d verified at the first query (%.0f B/record)", run, size, verified, float64(verified)/float64(n))
		t.Logf("run %d: open %v (cpu %v); first query %v (cpu %v); second query %v (cpu %v)", run,
			w1.Sub(w0).Round(time.Microsecond), (c1 - c0).Round(time.Microsecond),
			w2.Sub(w1).Round(time.Microsecond), (c2 - c1).Round(time.Microsecond),
			w3.Sub(w2).Round(time.Microsecond), (c3 - c2).Round(time.Microsecond))
		vcpu := vc1 - vc0
		t.Logf("run %d: verification alone %v wall, %v cpu: %s of CPU per GB verified", run,
			v1.Sub(v0).Round(time.Microsecond), vcpu.Round(time.Microsecond), fmt.Sprintf("%.1f ms", vcpu.Seconds()*1000/(float64(verified)/1e9)))
	}
}
