package scale

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// TestRecallProfile (opt-in: ENGRAM_SCALE_STORE=DIR of a store this
// package built, ENGRAM_SCALE_N its size, default 1000000) runs the timed
// recalls of Run again on that store, writing a CPU profile of them to
// ENGRAM_SCALE_PROFILE (when set) and logging p50/p99 and the slowest, over
// all recalls and split by the session's share of the store (heavy: the
// sessions of Heavy holding at least 1%). ENGRAM_SCALE_ONLY=heavy, small
// or tiny (sessions of at most 1,000 memories) keeps just those recalls;
// ENGRAM_SCALE_MODE=vector or keyword recalls with that side alone;
// ENGRAM_SCALE_WARM=1 runs the recalls once unmeasured first. ENGRAM_SCALE_ONLY
// may also name one session (s00000); ENGRAM_SCALE_QUERIES sets how many
// recalls are drawn (default 500; sessions are drawn by their size, so a
// small one needs more draws to get some). ENGRAM_SCALE_WARMOPEN=1 opens
// the store with engine.Options.Warm, its warm-up running beside the
// recalls rather than awaited.
func TestRecallProfile(t *testing.T) {
	dir := os.Getenv("ENGRAM_SCALE_STORE")
	if dir == "" {
		t.Skip("opt-in: ENGRAM_SCALE_STORE=DIR")
	}
	n := 1_000_000
	if s := os.Getenv("ENGRAM_SCALE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	cfg, err := Config{N: n, Dim: 1024, Sessions: 10000, Dir: dir}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if s := os.Getenv("ENGRAM_SCALE_QUERIES"); s != "" {
		if cfg.Queries, err = strconv.Atoi(s); err != nil || cfg.Queries < 1 {
			t.Fatalf("ENGRAM_SCALE_QUERIES=%q", s)
		}
	}
	d := newData(cfg)
	ctx := context.Background()
	opts := memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}}
	opts.Engine.Warm = os.Getenv("ENGRAM_SCALE_WARMOPEN") != ""
	st, err := memory.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	memOpen := ReadMem()
	if p := os.Getenv("ENGRAM_SCALE_PROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
	type q struct {
		d       time.Duration
		session string
	}
	only := os.Getenv("ENGRAM_SCALE_ONLY")
	mode := memory.ModeHybrid
	switch os.Getenv("ENGRAM_SCALE_MODE") {
	case "vector":
		mode = memory.ModeVector
	case "keyword":
		mode = memory.ModeKeyword
	}
	// ENGRAM_SCALE_WARM=1: run the recalls once unmeasured first, so the
	// figures are those of a store whose pages the process has touched.
	if os.Getenv("ENGRAM_SCALE_WARM") != "" {
		wr := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
		for i := range cfg.Queries {
			s := d.session[wr.IntN(cfg.N)]
			vec, text := d.query(wr, s, i%2 == 0)
			if _, err := st.RecallWithVector(ctx, text, vec, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true, Mode: mode}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var lat []q
	byClass := map[bool][]time.Duration{}
	cpu0 := cpuTime()
	for i := range cfg.Queries {
		s := d.session[r.IntN(cfg.N)]
		vec, text := d.query(r, s, i%2 == 0)
		if (only == "heavy" && !isHeavy(s)) || (only == "small" && isHeavy(s)) || (only == "tiny" && d.sizes[s] > 1000) ||
			strings.HasPrefix(only, "s") && only != "small" && only != sessionName(s) {
			continue
		}
		t0 := time.Now()
		if _, err := st.RecallWithVector(ctx, text, vec, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true, Mode: mode}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, q{time.Since(t0), sessionName(s)})
		byClass[isHeavy(s)] = append(byClass[isHeavy(s)], lat[len(lat)-1].d)
	}
	if len(lat) == 0 {
		t.Fatal("no recalls")
	}
	t.Logf("process CPU per recall %v", (cpuTime()-cpu0)/time.Duration(len(lat)))
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	for _, m := range []struct {
		when string
		m    Mem
	}{{"after open", memOpen}, {"after the recalls", ReadMem()}} {
		t.Logf("%s: VmRSS %.1f MiB (anon %.1f, file %.1f)", m.when, mib(m.m.RSS), mib(m.m.Anon), mib(m.m.File))
	}
	slices.SortFunc(lat, func(a, b q) int { return int(a.d - b.d) })
	t.Logf("p50 %v p99 %v; slowest: %v", lat[len(lat)/2].d, lat[len(lat)*99/100].d, lat[len(lat)-5:])
	for _, heavy := range []bool{false, true} {
		if ds := byClass[heavy]; len(ds) > 0 {
			slices.Sort(ds)
			t.Logf("heavy=%v: %d recalls, p50 %v p99 %v", heavy, len(ds), ds[len(ds)/2], ds[len(ds)*99/100])
		}
	}
}
