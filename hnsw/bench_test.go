package hnsw

import (
	"fmt"
	"math/rand/v2"
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
	// The rows are normalized already, so the distance is 1 - dot.
	ds.gt = make([][]uint32, len(ds.queries))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			keys := make([]uint64, len(ds.base))
			for i := w; i < len(ds.queries); i += runtime.GOMAXPROCS(0) {
				for id, r := range ds.base {
					keys[id] = floatKey(1-quant.DotFloat32(ds.queries[i], r), uint32(id))
				}
				slices.Sort(keys)
				for _, k := range keys[:10] {
					ds.gt[i] = append(ds.gt[i], keyID(k))
				}
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
				cpu0, wait0 := processCPU(), runQueueWait()
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
				// Time runnable threads waited for a core (not for a lock).
				b.ReportMetric((runQueueWait()-wait0).Seconds()/float64(b.N), "runq_wait_s")
			})
		}
	}
}

// searchMode runs a search forcing the scan (scan) or the graph walk.
func searchMode(ix *Index, q []float32, k, ef int, f *Bitset, scan bool) ([]Result, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	p, err := makePlan(&ix.g, q, k, SearchOptions{Ef: ef, Filter: f}, ix.Live(), ix.deleted.Load() > 0)
	if err != nil {
		return nil, err
	}
	p.strat, p.acc.scanBelow = StrategyWalk, 0
	if scan {
		p.strat = StrategyScan
	}
	ep, top := unpackEP(ix.ep.Load())
	return p.run(&ix.g, &ix.pool, ix.Len(), ep, top, true, nil)
}

// BenchmarkFilter compares, per selectivity, the filtered graph walk with
// the scan (both with a Bitset filter), against brute-force ground truth.
// It is how ScanFactor was chosen.
func BenchmarkFilter(b *testing.B) {
	for _, name := range []string{"glove10k", "glove100k"} {
		for _, sel := range filterSels {
			b.Run(fmt.Sprintf("%s/sel=%g", name, sel), func(b *testing.B) {
				bs := getBenchSet(b, name)
				r := rand.New(rand.NewPCG(uint64(sel*1e6), 3))
				set := NewBitset(bs.ix.Len())
				for id := 0; id < bs.ix.Len(); id++ {
					if r.Float64() < sel {
						_ = set.Set(uint32(id))
					}
				}
				qs := bs.ds.queries[:200]
				truth := make([][]uint32, len(qs))
				for i, q := range qs {
					truth[i] = bruteForce(bs.ds.metric, bs.ds.base, q, 10, func(id int) bool { return set.Allow(uint32(id)) })
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				for _, mode := range []struct {
					name string
					scan bool
					auto bool // Search with a FilterFunc: walk, maybe switching to the scan
				}{{"graph", false, false}, {"scan", true, false}, {"func", false, true}} {
					var recall float64
					cpu0 := threadCPU()
					for i := 0; i < b.N; i++ {
						for j, q := range qs {
							var res []Result
							var err error
							if mode.auto {
								res, err = bs.ix.Search(q, 10, SearchOptions{Ef: 120, Filter: FilterFunc(set.Allow)})
							} else {
								res, err = searchMode(bs.ix, q, 10, 120, set, mode.scan)
							}
							if err != nil {
								b.Fatal(err)
							}
							if i == 0 {
								recall += recallAt(res, truth[j])
							}
						}
					}
					cpu := threadCPU() - cpu0
					b.ReportMetric(recall/float64(len(qs)), mode.name+"_recall@10")
					if cpu > 0 {
						b.ReportMetric(float64(b.N*len(qs))/cpu.Seconds(), mode.name+"_cpuQPS")
					}
				}
			})
		}
	}
}

var filterSels = []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5}
