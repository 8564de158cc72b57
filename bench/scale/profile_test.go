package scale

import (
	"context"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

// TestRecallProfile (opt-in: ENGRAM_SCALE_STORE=DIR of a store this
// package built, ENGRAM_SCALE_N its size, default 1000000) runs the timed
// recalls of Run again on that store, writing a CPU profile of them to
// ENGRAM_SCALE_PROFILE (when set) and logging p50/p99 and the slowest.
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
	d := newData(cfg)
	ctx := context.Background()
	st, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
	var lat []q
	for i := range cfg.Queries {
		s := d.session[r.IntN(cfg.N)]
		vec, text := d.query(r, s, i%2 == 0)
		t0 := time.Now()
		if _, err := st.RecallWithVector(ctx, text, vec, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, q{time.Since(t0), sessionName(s)})
	}
	slices.SortFunc(lat, func(a, b q) int { return int(a.d - b.d) })
	t.Logf("p50 %v p99 %v; slowest: %v", lat[len(lat)/2].d, lat[len(lat)*99/100].d, lat[len(lat)-5:])
}
