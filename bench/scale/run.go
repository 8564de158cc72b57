package scale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/hnsw"
	"github.com/engramdb/engram/memory"
)

// Mem is a reading of the process's memory from /proc/self/status, in
// bytes (zero where the file is missing: not Linux).
type Mem struct {
	RSS, Anon, File, HWM int64
}

// ReadMem reads VmRSS, RssAnon, RssFile and VmHWM.
func ReadMem() Mem {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Mem{}
	}
	var m Mem
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "RssAnon:":
			m.Anon = kb << 10
		case "RssFile:":
			m.File = kb << 10
		case "VmHWM:":
			m.HWM = kb << 10
		}
	}
	return m
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Band is one session's filtered-search figures.
type Band struct {
	Session  string
	Count    int     // the session's memories
	Share    float64 // Count / N
	Strategy string  // hnsw.Plan for the session's count in the store
	Recall   float64 // mean recall@10 against the exact scan of the session
	P50, P99 time.Duration
	ExactP50 time.Duration // the exact scan itself
}

// Recalls are the timed recalls of one opening of the store: through the
// memory layer, session-scoped, hybrid, the query vector given; split by
// heavy sessions (isHeavy) and the others; the process CPU time per recall.
type Recalls struct {
	P50, P99           time.Duration
	Heavy              int
	HeavyP50, HeavyP99 time.Duration
	SmallP50, SmallP99 time.Duration
	CPU                time.Duration
}

// Report is a run's figures.
type Report struct {
	Config Config
	// Ingest: Import of every memory with its vector, then Flush.
	IngestWall, IngestCPU time.Duration
	CompactWall           time.Duration
	DiskBytes             int64
	OpenWall              time.Duration
	MemIngest             Mem // after ingest (VmHWM: the ingest's peak)
	MemBeforeOpen         Mem // the ingesting store closed, heap returned
	MemOpen               Mem // after memory.Open
	MemQueries            Mem // after the timed recalls
	MemExact              Mem // after the bands' exact scans (they read every vector)
	// MeasureOnly: the report of Measure, on a store built before (no
	// ingest or compaction figures).
	MeasureOnly bool
	// Recall: the timed recalls right after memory.Open (cold: every
	// first touch of a page or chunk on the way). Warm: the same recalls
	// after reopening with engine.Options.Warm (what memctl serve sets)
	// once its warm-up ended, WarmWall after the open; MemWarm after it.
	Recall   Recalls
	Warm     Recalls
	WarmWall time.Duration
	MemWarm  Mem
	// Unfiltered vector search (engine, k=10): latency and recall@10
	// against the exact scan.
	AllP50, AllP99 time.Duration
	AllRecall      float64
	Bands          []Band
	Segments       int
	// Peer, when set, is a peer's build on the same vectors.
	Peer *Peer
}

// CodesGraphBytes estimates the int8 codes plus the graph of n vectors:
// dim code bytes and a level-0 list of 1+2M uint32 per node, plus about
// 1/(M-1) upper lists of 1+M (M = 16).
func CodesGraphBytes(n, dim int) int64 {
	const m = hnsw.DefaultM
	per := float64(dim) + 4*float64(1+2*m) + 4*float64(1+m)/float64(m-1) + 4 + 4 + 1
	return int64(per * float64(n))
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
}

// Run builds the store in cfg.Dir and measures it; progress (may be nil)
// gets a line per phase.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(cfg.Dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("scale: %s is not empty", cfg.Dir)
	}
	rep := &Report{Config: cfg}
	d := newData(cfg)
	opts := memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}}

	// Ingest.
	logf(progress, "generating and importing %d memories of dim %d", cfg.N, cfg.Dim)
	st, err := memory.Open(cfg.Dir, opts)
	if err != nil {
		return nil, err
	}
	wall0, cpu0 := time.Now(), cpuTime()
	const chunk = 10_000
	batch := make([]memory.Memory, 0, chunk)
	for i := 0; i < cfg.N; i += chunk {
		batch = batch[:0]
		for j := i; j < min(i+chunk, cfg.N); j++ {
			batch = append(batch, d.memory(j))
		}
		if err := st.Import(ctx, batch); err != nil {
			_ = st.Close()
			return nil, err
		}
		logf(progress, "imported %d", min(i+chunk, cfg.N))
	}
	if err := st.Flush(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	rep.IngestWall, rep.IngestCPU = time.Since(wall0), cpuTime()-cpu0
	rep.MemIngest = ReadMem()
	logf(progress, "ingest %v wall, %v CPU; compacting", rep.IngestWall, rep.IngestCPU)
	t0 := time.Now()
	if err := st.Compact(ctx); err != nil {
		_ = st.Close()
		return nil, err
	}
	rep.CompactWall = time.Since(t0)
	if err := st.Close(); err != nil {
		return nil, err
	}
	rep.DiskBytes = dirBytes(cfg.Dir)
	rep.Segments = countFiles(filepath.Join(cfg.Dir, "seg"))
	batch = nil
	runtime.GC()
	debug.FreeOSMemory()
	logf(progress, "compacted in %v", rep.CompactWall)
	return rep, measure(ctx, cfg, d, rep, progress)
}

// Measure measures the store a Run left in cfg.Dir (the same Config) in
// this process, without ingesting: open, recall latency, resident memory
// and the bands. In a process of its own, resident memory is the store's
// and not what the ingest left in the heap.
func Measure(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(cfg.Dir, "CURRENT")); err != nil {
		return nil, fmt.Errorf("scale: no store in %s: %w", cfg.Dir, err)
	}
	rep := &Report{Config: cfg, MeasureOnly: true}
	rep.DiskBytes = dirBytes(cfg.Dir)
	rep.Segments = countFiles(filepath.Join(cfg.Dir, "seg"))
	return rep, measure(ctx, cfg, newData(cfg), rep, progress)
}

// timedRecalls runs cfg.Queries recalls in sessions drawn by their size
// (the same ones on every call).
func timedRecalls(ctx context.Context, cfg Config, d *data, st *memory.Store) (Recalls, error) {
	r := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
	lat := make([]time.Duration, 0, cfg.Queries)
	var heavy, small []time.Duration
	cpu0 := cpuTime()
	for q := range cfg.Queries {
		s := d.session[r.IntN(cfg.N)] // sessions weighted by their size
		vec, text := d.query(r, s, q%2 == 0)
		t := time.Now()
		if _, err := st.RecallWithVector(ctx, text, vec, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true}); err != nil {
			return Recalls{}, err
		}
		lat = append(lat, time.Since(t))
		if isHeavy(s) {
			heavy = append(heavy, lat[len(lat)-1])
		} else {
			small = append(small, lat[len(lat)-1])
		}
	}
	return Recalls{
		CPU: (cpuTime() - cpu0) / time.Duration(cfg.Queries),
		P50: pct(lat, 50), P99: pct(lat, 99),
		Heavy: len(heavy), HeavyP50: pct(heavy, 50), HeavyP99: pct(heavy, 99),
		SmallP50: pct(small, 50), SmallP99: pct(small, 99),
	}, nil
}

// measure fills rep's open, recall, memory and band figures from the store
// in cfg.Dir.
func measure(ctx context.Context, cfg Config, d *data, rep *Report, progress io.Writer) error {
	opts := memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}}
	rep.MemBeforeOpen = ReadMem()

	// Open and recall through the memory layer.
	logf(progress, "opening")
	t0 := time.Now()
	st, err := memory.Open(cfg.Dir, opts)
	if err != nil {
		return err
	}
	rep.OpenWall = time.Since(t0)
	rep.MemOpen = ReadMem()
	if rep.Recall, err = timedRecalls(ctx, cfg, d, st); err != nil {
		_ = st.Close()
		return err
	}
	rep.MemQueries = ReadMem()
	if err := st.Close(); err != nil {
		return err
	}

	// The same recalls after a warmed open.
	logf(progress, "opening with the warm-up")
	t0 = time.Now()
	db, err := engine.Open(cfg.Dir, engine.Options{Warm: true})
	if err != nil {
		return err
	}
	<-db.Warmed()
	rep.WarmWall = time.Since(t0)
	rep.MemWarm = ReadMem()
	if st, err = memory.New(ctx, memory.NewEngineBackend(db), opts.Options); err == nil {
		rep.Warm, err = timedRecalls(ctx, cfg, d, st)
		err = errors.Join(err, st.Close())
	}
	if err = errors.Join(err, db.Close()); err != nil {
		return err
	}

	// Vector search per band, against the exact scan (engine level: the
	// memory layer has no exact mode).
	logf(progress, "recall p50 %v p99 %v, warm %v %v; bands", rep.Recall.P50, rep.Recall.P99, rep.Warm.P50, rep.Warm.P99)
	// The bands are a served store's figures: opened with the warm-up, as
	// memctl serve opens it (the cold figures are the recalls' above).
	db, err = engine.Open(cfg.Dir, engine.Options{ReadOnly: true, Warm: true})
	if err != nil {
		return err
	}
	<-db.Warmed()
	r := rand.New(rand.NewPCG(cfg.Seed, 1<<41))
	defer db.Close()
	coll, err := vectorCollection(db, cfg.Dim)
	if err != nil {
		return err
	}
	// The approximate searches of a band are timed one after another, as
	// a server answers them; the exact scans that judge them run after,
	// in a pass of their own. Interleaved, each search would follow a
	// scan that streamed the whole store's codes through the caches and
	// the TLB, and time that eviction instead of the search (at 1M x
	// 1024-d it doubled the unfiltered p50).
	search := func(f *engine.Filter, s int32, n int) (rc float64, approx, exact []time.Duration, err error) {
		vecs := make([][]float32, n)
		got := make([][]engine.Hit, n)
		for q := range n {
			vecs[q], _ = d.query(r, s, s >= 0 && q%2 == 0)
			t := time.Now()
			got[q], err = coll.Search(ctx, engine.SearchRequest{Vector: vecs[q], K: 10, Filter: f, IDsOnly: true})
			if err != nil {
				return 0, nil, nil, err
			}
			approx = append(approx, time.Since(t))
		}
		var sum float64
		for q := range n {
			t := time.Now()
			want, err := coll.Search(ctx, engine.SearchRequest{Vector: vecs[q], K: 10, Filter: f, IDsOnly: true, Exact: true})
			if err != nil {
				return 0, nil, nil, err
			}
			exact = append(exact, time.Since(t))
			sum += recallAt(got[q], want)
		}
		return sum / float64(n), approx, exact, nil
	}
	rc, approx, _, err := search(nil, -1, cfg.BandQueries)
	if err != nil {
		return err
	}
	rep.AllRecall, rep.AllP50, rep.AllP99 = rc, pct(approx, 50), pct(approx, 99)
	for _, s := range d.heavy {
		name := sessionName(int32(s))
		b := Band{Session: name, Count: d.sizes[s], Share: float64(d.sizes[s]) / float64(cfg.N)}
		b.Strategy = hnsw.Plan(b.Count, cfg.N, 0).String()
		logf(progress, "band %s (%d memories, %s)", name, b.Count, b.Strategy)
		rc, approx, exact, err := search(engine.Eq("session", engine.String(name)), int32(s), cfg.BandQueries)
		if err != nil {
			return err
		}
		b.Recall, b.P50, b.P99, b.ExactP50 = rc, pct(approx, 50), pct(approx, 99), pct(exact, 50)
		rep.Bands = append(rep.Bands, b)
	}
	rep.MemExact = ReadMem()
	return nil
}

// isHeavy reports whether session s is one of Heavy holding at least 1% of
// the store.
func isHeavy(s int32) bool { return int(s) < len(Heavy) && Heavy[s] >= 0.01 }

// vectorCollection finds the memory layer's collection of dimension dim.
func vectorCollection(db *engine.DB, dim int) (*engine.Collection, error) {
	for _, c := range db.Collections() {
		if c.Dim == dim {
			return db.Collection(c.Name)
		}
	}
	return nil, fmt.Errorf("scale: no collection of dimension %d", dim)
}

func recallAt(got, want []engine.Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[string]bool, len(want))
	for _, h := range want {
		in[h.ID] = true
	}
	hit := 0
	for _, h := range got {
		if in[h.ID] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(0, min(i, len(s)-1))]
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func countFiles(dir string) int {
	ents, _ := os.ReadDir(dir)
	return len(ents)
}
