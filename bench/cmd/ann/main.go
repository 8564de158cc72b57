// Command ann builds an hnsw index over a vector set and measures recall@10,
// single-thread query throughput and latency at a sweep of ef values,
// printing one JSON object per ef:
//
//	go run ./bench/cmd/ann -base B -query Q -gt G -metric cosine \
//	    -m 16 -efc 200 -ef 10,20,40,80,120,200,400 -threads 1
//
// Files are .fvecs/.ivecs, optionally gzipped. -dataset NAME reads a set
// from shared/datasets instead (sift10k, glove100-10k, glove100-100k).
// Queries run one at a time on one goroutine, like a user's recall;
// -threads only parallelizes the build.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/bench/dataset"
	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/quant"
	"golang.org/x/sys/unix"
)

// Result is one output line; the field names are shared with the peer
// benchmarks in scripts/peers.
type Result struct {
	Impl     string  `json:"impl"`
	Dataset  string  `json:"dataset"`
	N        int     `json:"n"`
	Dim      int     `json:"dim"`
	M        int     `json:"m"`
	EfC      int     `json:"efc"`
	Threads  int     `json:"threads"`
	Ef       int     `json:"ef"`
	Recall10 float64 `json:"recall10"`
	QPS      float64 `json:"qps"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	BuildS   float64 `json:"build_s"`
	// The CPU-time figures count only the time the measuring thread (or,
	// for the build, the process) ran: on a machine shared with other work
	// they are far steadier than wall-clock ones.
	CPUQPS    float64 `json:"cpu_qps"`
	CPUP50us  float64 `json:"cpu_p50_us"`
	CPUP99us  float64 `json:"cpu_p99_us"`
	BuildCPUS float64 `json:"build_cpu_s"`
	// BytesPerVector is what search needs resident: codes, graph and
	// per-node words (the serialized index minus the float32 vectors,
	// which only rescoring reads).
	BytesPerVector float64 `json:"bytes_per_vector"`
	// FloatBytesPerVector is the full-precision vector, 4*dim.
	FloatBytesPerVector float64 `json:"float_bytes_per_vector"`
	// HeapBytesPerVector is the Go heap in use after the build and a GC,
	// over n: everything, floats and build slack included.
	HeapBytesPerVector float64 `json:"heap_bytes_per_vector"`
}

type config struct {
	base, query, gt, name string
	metric                quant.Metric
	m, efc, threads, k    int
	efs                   []int
	maxQueries, maxBase   int
	noRescore             bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ann:", err)
		os.Exit(1)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("bad list element %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ann", flag.ContinueOnError)
	var c config
	var metric, efs, ds string
	fs.StringVar(&c.base, "base", "", "base vectors (.fvecs[.gz])")
	fs.StringVar(&c.query, "query", "", "query vectors (.fvecs[.gz])")
	fs.StringVar(&c.gt, "gt", "", "ground truth (.ivecs[.gz])")
	fs.StringVar(&ds, "dataset", "", "named set under shared/datasets (instead of -base/-query/-gt): "+strings.Join(dataset.Names(), ", "))
	fs.StringVar(&metric, "metric", "", "cosine, l2 or dot (default: the dataset's)")
	fs.IntVar(&c.m, "m", 16, "HNSW M")
	fs.IntVar(&c.efc, "efc", 200, "efConstruction")
	fs.StringVar(&efs, "ef", "10,20,40,80,120,200,400", "comma-separated ef values")
	fs.IntVar(&c.threads, "threads", 1, "build goroutines")
	fs.IntVar(&c.k, "k", 10, "neighbours per query")
	fs.IntVar(&c.maxQueries, "queries", 0, "use only the first N queries (0: all)")
	fs.IntVar(&c.maxBase, "n", 0, "use only the first N base vectors (needs a matching -gt; 0: all)")
	fs.BoolVar(&c.noRescore, "norescore", false, "return code-distance order without float rescoring")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.efs, err = parseInts(efs); err != nil {
		return fmt.Errorf("-ef: %w", err)
	}
	if c.m < 2 || c.efc < 1 || c.threads < 1 || c.k < 1 {
		return errors.New("-m must be >= 2 and -efc, -threads, -k >= 1")
	}
	var m quant.Metric
	if metric != "" {
		if m, err = quant.ParseMetric(metric); err != nil {
			return err
		}
	}
	var set *dataset.Set
	switch {
	case ds != "":
		root, err := dataset.FindRoot(".")
		if err != nil {
			return err
		}
		if set, err = dataset.Load(root, ds); err != nil {
			return err
		}
	case c.base != "" && c.query != "" && c.gt != "":
		if m == 0 {
			return errors.New("-metric is required with -base/-query/-gt")
		}
		if set, err = dataset.LoadFiles(c.base, c.base, c.query, c.gt, m); err != nil {
			return err
		}
	default:
		return errors.New("give -dataset, or -base, -query, -gt and -metric")
	}
	if m != 0 {
		set.Metric = m
	}
	set.Base = set.Base.Head(c.maxBase)
	if c.maxQueries > 0 && c.maxQueries < set.Queries.Len() {
		set.Queries = set.Queries.Head(c.maxQueries)
		set.GroundTruth = set.GroundTruth[:c.maxQueries]
	}
	return bench(set, c, out)
}

func bench(set *dataset.Set, c config, out io.Writer) error {
	n, dim := set.Base.Len(), set.Base.Dim
	ix, err := hnsw.New(hnsw.Config{Dim: dim, Metric: set.Metric, M: c.m, EfConstruction: c.efc, Capacity: n, Seed: 1})
	if err != nil {
		return err
	}
	rowOf := make([]int32, n) // hnsw id -> base row: concurrent inserts interleave
	cpu0 := processCPU()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c.threads)
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id, err := ix.Insert(set.Base.Row(i))
				if err != nil {
					errs <- fmt.Errorf("insert row %d: %w", i, err)
					return
				}
				rowOf[id] = int32(i)
			}
		}()
	}
	wg.Wait()
	buildS := time.Since(start).Seconds()
	buildCPU := (processCPU() - cpu0).Seconds()
	select {
	case err := <-errs:
		return err
	default:
	}

	var ser bytes.Buffer
	if _, err := ix.WriteTo(&ser); err != nil {
		return err
	}
	floatBytes := 4 * dim
	resident := float64(ser.Len()-n*floatBytes) / float64(n)
	ser = bytes.Buffer{}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap := float64(ms.HeapInuse) / float64(n)

	enc := json.NewEncoder(out)
	lat := make([]time.Duration, set.Queries.Len())
	cpuLat := make([]time.Duration, set.Queries.Len())
	// Thread CPU time is only meaningful if the goroutine stays on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, ef := range c.efs {
		opts := hnsw.SearchOptions{Ef: max(ef, c.k), NoRescore: c.noRescore}
		// A warm-up pass over a few queries, then the timed pass.
		for q := 0; q < min(100, set.Queries.Len()); q++ {
			if _, err := ix.Search(set.Queries.Row(q), c.k, opts); err != nil {
				return err
			}
		}
		var recall float64
		ids := make([]uint32, 0, c.k)
		total, totalCPU := time.Now(), threadCPU()
		for q := range lat {
			t0, c0 := time.Now(), threadCPU()
			res, err := ix.Search(set.Queries.Row(q), c.k, opts)
			lat[q], cpuLat[q] = time.Since(t0), threadCPU()-c0
			if err != nil {
				return err
			}
			ids = ids[:0]
			for _, r := range res {
				ids = append(ids, uint32(rowOf[r.ID]))
			}
			recall += dataset.RecallAtK(ids, set.GroundTruth[q], c.k)
		}
		elapsed, elapsedCPU := time.Since(total).Seconds(), (threadCPU() - totalCPU).Seconds()
		slices.Sort(lat)
		slices.Sort(cpuLat)
		if err := enc.Encode(Result{
			Impl: "engram", Dataset: set.Name, N: n, Dim: dim, M: c.m, EfC: c.efc, Threads: c.threads,
			Ef: ef, Recall10: round(recall/float64(len(lat)), 4),
			QPS:   round(float64(len(lat))/elapsed, 1),
			P50us: round(us(lat[len(lat)/2]), 1), P99us: round(us(lat[len(lat)*99/100]), 1),
			BuildS: round(buildS, 2), BytesPerVector: round(resident, 1),
			CPUQPS:   round(float64(len(lat))/elapsedCPU, 1),
			CPUP50us: round(us(cpuLat[len(lat)/2]), 1), CPUP99us: round(us(cpuLat[len(lat)*99/100]), 1),
			BuildCPUS:           round(buildCPU, 2),
			FloatBytesPerVector: float64(floatBytes), HeapBytesPerVector: round(heap, 1),
		}); err != nil {
			return err
		}
	}
	return nil
}

// threadCPU is the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// processCPU is the user+system CPU time of the whole process.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}
