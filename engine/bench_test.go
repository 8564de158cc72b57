package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
)

// Benchmarks share one store of ENGRAM_BENCH_N (default 20000) clustered
// synthetic 1024-d records (bench/dataset.Synthetic), built once per
// process in a temporary directory.

type benchData struct {
	dir       string
	set       *dataset.Set
	n         int
	loadRate  float64 // records/s acknowledged while loading (UnsafeNoSync)
	flushTime time.Duration
	diskBytes int64
	keep      bool
}

var benchStore = sync.OnceValues(func() (*benchData, error) {
	n := 20000
	if s := os.Getenv("ENGRAM_BENCH_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	set, err := dataset.Synthetic(dataset.SyntheticConfig{N: n, Queries: 200, Dim: 1024, K: 10})
	if err != nil {
		return nil, err
	}
	// ENGRAM_BENCH_DIR keeps the store between runs (it is rebuilt when
	// it holds another N); by default it lives in a temporary directory.
	base := os.Getenv("ENGRAM_BENCH_DIR")
	keep := base != ""
	if !keep {
		if base, err = os.MkdirTemp("", "engram-bench-"); err != nil {
			return nil, err
		}
	}
	bd := &benchData{dir: filepath.Join(base, fmt.Sprintf("store-%d", n)), set: set, n: n, keep: keep}
	if keep {
		if db, err := Open(bd.dir, Options{FlushBytes: -1, CompactInterval: -1}); err == nil {
			c, cerr := db.Collection("bench")
			if cerr == nil {
				if cnt, _ := c.Count(nil); cnt == n {
					bd.diskBytes = db.Stats().Collections[0].DiskBytes
					db.Close()
					return bd, nil
				}
			}
			db.Close()
			os.RemoveAll(bd.dir)
		}
	}
	db, err := Open(bd.dir, Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	c, err := db.CreateCollection(CollectionConfig{Name: "bench", Dim: 1024, Metric: quant.Cosine})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for lo := 0; lo < n; lo += 500 {
		batch := make([]Record, 0, 500)
		for i := lo; i < min(n, lo+500); i++ {
			batch = append(batch, benchRecord(set.Base.Row(i), i))
		}
		if err := c.Upsert(ctx, batch); err != nil {
			return nil, err
		}
	}
	bd.loadRate = float64(n) / time.Since(start).Seconds()
	start = time.Now()
	if err := db.Flush(); err != nil {
		return nil, err
	}
	bd.flushTime = time.Since(start)
	bd.diskBytes = db.Stats().Collections[0].DiskBytes
	return bd, nil
})

func benchRecord(v []float32, i int) Record {
	return Record{ID: fmt.Sprintf("doc-%08d", i), Vector: v,
		Text: fmt.Sprintf("memory %d about topic %d and the user's preference number %d", i, i%97, i%13),
		Meta: Metadata{"session": String(fmt.Sprintf("s%d", i%100)), "importance": Float(float64(i%10) / 10)}}
}

func needBench(b *testing.B) *benchData {
	bd, err := benchStore()
	if err != nil {
		b.Fatal(err)
	}
	return bd
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bd, err := benchStoreIfBuilt(); err == nil && bd != nil && !bd.keep {
		os.RemoveAll(filepath.Dir(bd.dir))
	}
	os.Exit(code)
}

var benchBuilt bool

func benchStoreIfBuilt() (*benchData, error) {
	if !benchBuilt {
		return nil, nil
	}
	return benchStore()
}

func BenchmarkEngineLoad(b *testing.B) {
	bd := needBench(b)
	benchBuilt = true
	for range b.N {
	}
	b.ReportMetric(bd.loadRate, "records/s")
	b.ReportMetric(bd.flushTime.Seconds()*1000, "flush-ms")
	b.ReportMetric(float64(bd.diskBytes)/float64(bd.n), "disk-B/record")
}

// BenchmarkEngineOpenFirstQuery: Open (lock, manifest, mmap, WAL replay),
// one 10-NN search, Close. The files are in the page cache.
func BenchmarkEngineOpenFirstQuery(b *testing.B) {
	bd := needBench(b)
	benchBuilt = true
	var heap uint64
	var total time.Duration
	for i := range b.N {
		var ms0, ms1 runtime.MemStats
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		b.StartTimer()
		t0 := time.Now()
		db, err := Open(bd.dir, Options{FlushBytes: -1, CompactInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		c, err := db.Collection("bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Search(ctx, SearchRequest{Vector: bd.set.Queries.Row(i % bd.set.Queries.Len()), K: 10}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		heap = ms1.HeapAlloc - min(ms0.HeapAlloc, ms1.HeapAlloc)
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "open+query-ms")
	b.ReportMetric(float64(heap)/float64(bd.n), "heap-B/record")
}

type searchFn func(q []float32) ([]string, error)

func runSearchBench(b *testing.B, bd *benchData, search searchFn) {
	qs := bd.set.Queries
	lat := make([]time.Duration, 0, b.N)
	found := 0
	b.ResetTimer()
	for i := range b.N {
		qi := i % qs.Len()
		t0 := time.Now()
		ids, err := search(qs.Row(qi))
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		want := map[string]bool{}
		for _, id := range bd.set.GroundTruth[qi][:10] {
			want[fmt.Sprintf("doc-%08d", id)] = true
		}
		for _, id := range ids {
			if want[id] {
				found++
			}
		}
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(found)/float64(10*b.N), "recall@10")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

// BenchmarkSearch compares a 10-NN search through the engine (fan-out,
// merge, record materialization with text decompression) with the raw hnsw
// View over the very same graph bytes.
func BenchmarkSearch(b *testing.B) {
	bd := needBench(b)
	benchBuilt = true
	db, err := Open(bd.dir, Options{FlushBytes: -1, CompactInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c, _ := db.Collection("bench")
	seg := c.segs[0]
	view, err := hnsw.OpenViewUnverified(seg.sf.sections[secGraph])
	if err != nil {
		b.Fatal(err)
	}
	for _, ef := range []int{64, 128} {
		b.Run(fmt.Sprintf("raw-hnsw/ef=%d", ef), func(b *testing.B) {
			runSearchBench(b, bd, func(q []float32) ([]string, error) {
				res, err := view.Search(q, 10, hnsw.SearchOptions{Ef: ef})
				ids := make([]string, len(res))
				for i, r := range res {
					ids[i] = seg.id(r.ID)
				}
				return ids, err
			})
		})
		b.Run(fmt.Sprintf("engine/ef=%d", ef), func(b *testing.B) {
			runSearchBench(b, bd, func(q []float32) ([]string, error) {
				hits, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Ef: ef})
				ids := make([]string, len(hits))
				for i, h := range hits {
					ids[i] = h.ID
				}
				return ids, err
			})
		})
	}
	b.Run("engine-ids-only/ef=64", func(b *testing.B) {
		runSearchBench(b, bd, func(q []float32) ([]string, error) {
			hits, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Ef: 64, IDsOnly: true})
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.ID
			}
			return ids, err
		})
	})
	b.Run("engine/session-filter", func(b *testing.B) {
		runSearchBench(b, bd, func(q []float32) ([]string, error) {
			_, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Filter: Eq("session", String("s7"))})
			return nil, err
		})
	})
	b.Run("engine/text", func(b *testing.B) {
		for i := range b.N {
			if _, err := c.SearchText(ctx, fmt.Sprintf("topic %d preference", i%97), 10, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkUpsert measures acknowledged 1024-d writes (batches of 100) in
// the default durable mode.
func BenchmarkUpsert(b *testing.B) {
	bd := needBench(b)
	benchBuilt = true
	db, err := Open(filepath.Join(b.TempDir(), "w"), Options{FlushBytes: -1, CompactInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c, _ := db.CreateCollection(CollectionConfig{Name: "w", Dim: 1024, Metric: quant.Cosine})
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		batch := make([]Record, 0, 100)
		for j := i; j < min(b.N, i+100); j++ {
			batch = append(batch, benchRecord(bd.set.Base.Row(j%bd.n), j))
		}
		if err := c.Upsert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkCompactAfterDelete deletes half of a copy of the store and
// compacts it, reporting the disk use before and after.
func BenchmarkCompactAfterDelete(b *testing.B) {
	bd := needBench(b)
	benchBuilt = true
	for range b.N {
		src, err := Open(bd.dir, Options{FlushBytes: -1, CompactInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		cp := filepath.Join(b.TempDir(), "copy")
		err = src.Backup(cp)
		src.Close()
		if err != nil {
			b.Fatal(err)
		}
		db, err := Open(cp, Options{FlushBytes: -1, CompactInterval: -1, CompactBytesPerSec: -1})
		if err != nil {
			b.Fatal(err)
		}
		c, _ := db.Collection("bench")
		before := db.Stats().Collections[0].DiskBytes
		var ids []string
		for i := 0; i < bd.n; i += 2 {
			ids = append(ids, fmt.Sprintf("doc-%08d", i))
		}
		if _, err := c.Delete(ids...); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := db.Compact(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "compact-s")
		after := db.Stats().Collections[0].DiskBytes
		b.ReportMetric(float64(before)/1e6, "disk-before-MB")
		b.ReportMetric(float64(after)/1e6, "disk-after-MB")
		b.ReportMetric(100*(1-float64(after)/float64(before)), "disk-saved-%")
		db.Close()
	}
}

// BenchmarkMergeMemory writes 1024-d records (mkRecords: random vectors,
// texts and metadata) as four flushed segments of ENGRAM_MERGE_N/4 records
// (default 24,000 in all), then compacts them into one, reporting what the
// Go heap did: bytes allocated per record while writing (the WAL's
// encoding, the memtable), and the largest heap in use during the merge
// (sampled every 2 ms) against the heap in use before it.
//
//	go test ./engine -run XXX -bench MergeMemory -benchtime 1x
func BenchmarkMergeMemory(b *testing.B) {
	n := 24_000
	if s := os.Getenv("ENGRAM_MERGE_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 4 {
			b.Fatalf("ENGRAM_MERGE_N=%q: want a count of at least 4", s)
		}
		n = v
	}
	for range b.N {
		db, err := Open(filepath.Join(b.TempDir(), "m"), Options{UnsafeNoSync: true, FlushBytes: -1, CompactInterval: -1, CompactBytesPerSec: -1})
		if err != nil {
			b.Fatal(err)
		}
		c, _ := db.CreateCollection(CollectionConfig{Name: "m", Dim: 1024, Metric: quant.Cosine})
		r := rand.New(rand.NewPCG(1, 1))
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for seg := range 4 {
			recs := mkRecords(r, 1024, seg*n/4, n/4)
			for i := 0; i < len(recs); i += 500 {
				if err := c.Upsert(ctx, recs[i:min(i+500, len(recs))]); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n), "write-alloc-B/record")
		// Twice: the last flushed memtable may still be held for a
		// moment (the first cycle can run before it is let go).
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m0)
		peak := m0.HeapInuse
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			var m runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(2 * time.Millisecond):
				}
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}()
		err = db.Compact()
		close(done)
		wg.Wait()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(m0.HeapInuse)/(1<<20), "heap-before-MiB")
		b.ReportMetric(float64(peak)/(1<<20), "merge-peak-heap-MiB")
		b.ReportMetric(float64(peak-m0.HeapInuse)/float64(n), "merge-peak-B/record")
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
