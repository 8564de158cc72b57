package hnsw

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/quant"
)

// Benchmarks. Datasets: sift10k, glove10k, glove100k from shared/datasets,
// and synth1024 (clustered, L2-normalized, 1024-d; HNSW_SYNTH_N vectors,
// default 20000, with brute-force ground truth). Select with -bench, e.g.
//
//	go test ./hnsw -run XXX -bench 'Search/glove100k' -benchtime 1x
//
// Each Search sub-benchmark runs every query once per b.N, one at a time on
// one goroutine, and reports recall@10, QPS and latency percentiles.

var benchCache sync.Map // name -> *benchSet

type benchSet struct {
	ds       *dataset
	ix       *Index
	buildS   float64
	buildCPU float64
	buildMu  sync.Mutex
}

func synthSet(b *testing.B) *dataset {
	n := 20000
	if s := os.Getenv("HNSW_SYNTH_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			b.Fatalf("HNSW_SYNTH_N=%q", s)
		}
		n = v
	}
	ds := &dataset{name: "synth1024", metric: quant.Cosine, base: synthetic(n, 1024, 21), queries: synthetic(200, 1024, 22)}
	// Ground truth by brute force, in parallel over queries.
	ds.gt = make([][]uint32, len(ds.queries))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < len(ds.queries); i += runtime.GOMAXPROCS(0) {
				ds.gt[i] = bruteForce(ds.metric, ds.base, ds.queries[i], 10, nil)
			}
		}(w)
	}
	wg.Wait()
	return ds
}

func getBenchSet(b *testing.B, name string) *benchSet {
	v, _ := benchCache.LoadOrStore(name, &benchSet{})
	bs := v.(*benchSet)
	bs.buildMu.Lock()
	defer bs.buildMu.Unlock()
	if bs.ix == nil {
		if name == "synth1024" {
			bs.ds = synthSet(b)
		} else {
			bs.ds = loadDataset(b, name)
		}
		start, cpu0 := time.Now(), processCPU()
		bs.ix = build(b, Config{Dim: len(bs.ds.base[0]), Metric: bs.ds.metric, Seed: 1, Capacity: len(bs.ds.base)}, bs.ds.base)
		bs.buildS = time.Since(start).Seconds()
		bs.buildCPU = (processCPU() - cpu0).Seconds()
	}
	return bs
}

func BenchmarkSearch(b *testing.B) {
	for _, name := range []string{"sift10k", "glove10k", "glove100k", "synth1024"} {
		b.Run(name, func(b *testing.B) {
			for _, ef := range []int{10, 20, 40, 80, 120, 200, 400} {
				b.Run(fmt.Sprintf("ef=%d", ef), func(b *testing.B) {
					bs := getBenchSet(b, name)
					benchQueries(b, bs, SearchOptions{Ef: ef})
				})
			}
		})
	}
}

func benchQueries(b *testing.B, bs *benchSet, opts SearchOptions) {
	qs := bs.ds.queries
	lat := make([]time.Duration, 0, len(qs)*b.N)
	var recall float64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	start := time.Now()
	cpu0 := threadCPU()
	for i := 0; i < b.N; i++ {
		for j, q := range qs {
			t0 := time.Now()
			res, err := bs.ix.Search(q, 10, opts)
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				recall += recallAt(res, bs.ds.gt[j])
			}
		}
	}
	el := time.Since(start)
	cpu := threadCPU() - cpu0
	b.StopTimer()
	if cpu > 0 {
		b.ReportMetric(float64(len(lat))/cpu.Seconds(), "cpuQPS")
	}
	slices.Sort(lat)
	b.ReportMetric(recall/float64(len(qs)), "recall@10")
	b.ReportMetric(float64(len(lat))/el.Seconds(), "QPS")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_us")
	b.ReportMetric(bs.buildS, "build_s")
	b.ReportMetric(bs.buildCPU, "build_cpu_s")
	b.ReportMetric(float64(bs.ix.residentBytes())/float64(bs.ix.Len()), "resident_B/vec")
}

// BenchmarkBuild builds the index with 1 and 2 goroutines inserting.
func BenchmarkBuild(b *testing.B) {
	for _, name := range []string{"glove10k", "glove100k"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(b *testing.B) {
				ds := loadDataset(b, name)
				b.ResetTimer()
				cpu0 := processCPU()
				for i := 0; i < b.N; i++ {
					ix, err := New(Config{Dim: len(ds.base[0]), Metric: ds.metric, Seed: 1, Capacity: len(ds.base)})
					if err != nil {
						b.Fatal(err)
					}
					var wg sync.WaitGroup
					next := make(chan []float32, 256)
					for w := 0; w < threads; w++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for v := range next {
								if _, err := ix.Insert(v); err != nil {
									b.Error(err)
									return
								}
							}
						}()
					}
					for _, v := range ds.base {
						next <- v
					}
					close(next)
					wg.Wait()
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "build_s")
				b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "build_cpu_s")
			})
		}
	}
}
