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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
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
	Impl    string `json:"impl"`
	Dataset string `json:"dataset"`
	N       int    `json:"n"`
	Dim     int    `json:"dim"`
	M       int    `json:"m"`
	EfC     int    `json:"efc"`
	Threads int    `json:"threads"`
	Ef      int    `json:"ef"`
	// Width is the walk's width (hnsw.SearchOptions.Width; 0 left it to
	// the index, engram lines only).
	Width    int     `json:"width,omitempty"`
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
	// HeapBytesPerVector is the growth of the Go heap in use from before
	// the build to after it (each after a GC), over n: the whole index,
	// floats and spare capacity included, the benchmark's own copy of the
	// data excluded.
	HeapBytesPerVector float64 `json:"heap_bytes_per_vector"`
	// Reconnected is how many live nodes the build left unreachable from
	// the entry point, which hnsw's Reconnect then linked (before the
	// queries) in ReconnectMS.
	Reconnected int     `json:"reconnected"`
	ReconnectMS float64 `json:"reconnect_ms"`
	// ReorderMS is the wall time of numbering the nodes in locality order
	// (hnsw's LocalityOrder and Permute), which BuildS includes.
	ReorderMS float64 `json:"reorder_ms"`
}

type config struct {
	base, query, gt     string
	m, efc, threads, k  int
	efs                 []int
	widths              []int // 0: the index's default
	maxQueries, maxBase int
	noRescore           bool
	cpuProfile          string
	graph               string
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
	var widths string
	fs.StringVar(&widths, "width", "", "comma-separated walk widths, each searched at every ef in turn (empty: the index's default); repeat them (1,3,1,3) to alternate in one process")
	fs.IntVar(&c.threads, "threads", 1, "build goroutines")
	fs.IntVar(&c.k, "k", 10, "neighbours per query")
	fs.IntVar(&c.maxQueries, "queries", 0, "use only the first N queries (0: all)")
	fs.IntVar(&c.maxBase, "n", 0, "use only the first N base vectors (needs a matching -gt; 0: all)")
	fs.BoolVar(&c.noRescore, "norescore", false, "return code-distance order without float rescoring")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the query sweep to this file")
	fs.StringVar(&c.graph, "graph", "", "search the index saved in this file (with FILE.rows) instead of building one; build and save it there when absent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.efs, err = parseInts(efs); err != nil {
		return fmt.Errorf("-ef: %w", err)
	}
	c.widths = []int{0}
	if widths != "" {
		if c.widths, err = parseInts(widths); err != nil {
			return fmt.Errorf("-width: %w", err)
		}
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

// built is an index over a set's base vectors and what the build cost.
type built struct {
	ix       hnsw.Searcher
	rowOf    []int32 // hnsw id -> base row: concurrent inserts interleave
	buildS   float64
	buildCPU float64
	resident float64 // codes + graph bytes per vector
	heap     float64 // Go heap in use per vector
	// live nodes the build left unreachable, linked by Reconnect
	reconnected int
	reconnectMS float64
	reorderMS   float64 // LocalityOrder and Permute, included in buildS
}

func build(set *dataset.Set, c config) (*built, error) {
	n, dim := set.Base.Len(), set.Base.Dim
	heap0 := heapInUse() // before New, which preallocates Capacity
	ix, err := hnsw.New(hnsw.Config{Dim: dim, Metric: set.Metric, M: c.m, EfConstruction: c.efc, Capacity: n, Seed: 1})
	if err != nil {
		return nil, err
	}
	b := &built{ix: ix, rowOf: make([]int32, n)}
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
				b.rowOf[id] = int32(i)
			}
		}()
	}
	wg.Wait()
	b.buildS = time.Since(start).Seconds()
	b.buildCPU = (processCPU() - cpu0).Seconds()
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	start = time.Now()
	b.reconnected = ix.Reconnect()
	b.reconnectMS = float64(time.Since(start).Microseconds()) / 1000
	// Number the nodes in locality order, as a merge does (engine): part
	// of building the index, so its time counts in the build's.
	start, cpu0 = time.Now(), processCPU()
	order := ix.LocalityOrder()
	if err := ix.Permute(order); err != nil {
		return nil, err
	}
	rowOf := make([]int32, n)
	for i, old := range order {
		rowOf[i] = b.rowOf[old]
	}
	b.rowOf = rowOf
	b.reorderMS = float64(time.Since(start).Microseconds()) / 1000
	b.buildS += time.Since(start).Seconds()
	b.buildCPU += (processCPU() - cpu0).Seconds()
	cw := &countingWriter{}
	if _, err := ix.WriteTo(cw); err != nil {
		return nil, err
	}
	b.resident = float64(cw.n-int64(n*4*dim)) / float64(n)
	b.heap = float64(heapInUse()-heap0) / float64(n)
	return b, nil
}

// heapInUse returns the bytes of heap in use after a full collection.
func heapInUse() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// sweep is one pass of every query at one ef.
type sweep struct {
	recall      float64
	wall, cpu   time.Duration   // totals
	lat, cpuLat []time.Duration // per query, sorted
}

// search runs every query once, one at a time, on the calling goroutine,
// which must be locked to its OS thread for the CPU times to mean anything.
func (b *built) search(set *dataset.Set, k int, opts hnsw.SearchOptions) (sweep, error) {
	nq := set.Queries.Len()
	sw := sweep{lat: make([]time.Duration, nq), cpuLat: make([]time.Duration, nq)}
	ids := make([]uint32, 0, k)
	total, totalCPU := time.Now(), threadCPU()
	for q := 0; q < nq; q++ {
		t0, c0 := time.Now(), threadCPU()
		res, err := b.ix.Search(set.Queries.Row(q), k, opts)
		sw.lat[q], sw.cpuLat[q] = time.Since(t0), threadCPU()-c0
		if err != nil {
			return sw, err
		}
		ids = ids[:0]
		for _, r := range res {
			ids = append(ids, uint32(b.rowOf[r.ID]))
		}
		sw.recall += dataset.RecallAtK(ids, set.GroundTruth[q], k)
	}
	sw.wall, sw.cpu = time.Since(total), threadCPU()-totalCPU
	sw.recall /= float64(nq)
	slices.Sort(sw.lat)
	slices.Sort(sw.cpuLat)
	return sw, nil
}

func pct(d []time.Duration, p int) float64 { return us(d[len(d)*p/100]) }

func bench(set *dataset.Set, c config, out io.Writer) error {
	var b *built
	var err error
	if c.graph != "" {
		b, err = buildOrLoad(set, c)
	} else {
		b, err = build(set, c)
	}
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	if c.cpuProfile != "" {
		f, err := os.OpenFile(c.cpuProfile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, ef := range c.efs {
		for _, width := range c.widths {
			if err := sweepOne(b, set, c, ef, width, enc); err != nil {
				return err
			}
		}
	}
	return nil
}

// sweepOne times every query at one ef and walk width and writes the line.
func sweepOne(b *built, set *dataset.Set, c config, ef, width int, enc *json.Encoder) error {
	n, dim := set.Base.Len(), set.Base.Dim
	opts := hnsw.SearchOptions{Ef: max(ef, c.k), NoRescore: c.noRescore, Width: width}
	// A warm-up pass over a few queries, then the timed pass.
	for q := 0; q < min(100, set.Queries.Len()); q++ {
		if _, err := b.ix.Search(set.Queries.Row(q), c.k, opts); err != nil {
			return err
		}
	}
	sw, err := b.search(set, c.k, opts)
	if err != nil {
		return err
	}
	nq := float64(len(sw.lat))
	return enc.Encode(Result{
		Impl: "engram", Dataset: set.Name, N: n, Dim: dim, M: c.m, EfC: c.efc, Threads: c.threads,
		Ef: ef, Width: width, Recall10: round(sw.recall, 4),
		QPS:   round(nq/sw.wall.Seconds(), 1),
		P50us: round(pct(sw.lat, 50), 1), P99us: round(pct(sw.lat, 99), 1),
		BuildS: round(b.buildS, 2), BytesPerVector: round(b.resident, 1),
		CPUQPS:   round(nq/sw.cpu.Seconds(), 1),
		CPUP50us: round(pct(sw.cpuLat, 50), 1), CPUP99us: round(pct(sw.cpuLat, 99), 1),
		BuildCPUS:           round(b.buildCPU, 2),
		FloatBytesPerVector: float64(4 * dim), HeapBytesPerVector: round(b.heap, 1),
		Reconnected: b.reconnected, ReconnectMS: round(b.reconnectMS, 1),
		ReorderMS: round(b.reorderMS, 1),
	})
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
