package scale

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/metrics"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// searchCost is what one timed call cost: wall time, the process's minor
// faults and the garbage collections that ran meanwhile.
type searchCost struct {
	d      time.Duration
	faults int64
	gcs    uint64
	q      int
	what   string
}

// timeCall times fn with its minor faults and collections.
func timeCall(fn func() error) (searchCost, error) {
	gc := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	metrics.Read(gc)
	g0 := gc[0].Value.Uint64()
	t := time.Now()
	err := fn()
	d := time.Since(t)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	metrics.Read(gc)
	return searchCost{d: d, faults: ru1.Minflt - ru0.Minflt, gcs: gc[0].Value.Uint64() - g0}, err
}

// tailStore opens the opt-in store of ENGRAM_SCALE_STORE (a 1M x 1024-d
// store this package built, as TestRecallProfile).
func tailStore(t *testing.T) (Config, *data) {
	dir := os.Getenv("ENGRAM_SCALE_STORE")
	if dir == "" {
		t.Skip("opt-in: ENGRAM_SCALE_STORE=DIR")
	}
	cfg, err := Config{N: 1_000_000, Dim: 1024, Sessions: 10000, Dir: dir}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return cfg, newData(cfg)
}

// TestBandTail (opt-in, ENGRAM_SCALE_STORE) times the heaviest session's
// filtered searches (100 of them, ENGRAM_SCALE_ROUNDS rounds, default 20)
// on a store opened with the warm-up, as the bands are, and logs each
// round's p50 / p99 and every search over 2.5 ms with its minor faults and
// collections: where a band's tail comes from (bench/results/scale-1m.md,
// eighth measurement). It first logs the first filtered search of the
// process and of the next sessions.
func TestBandTail(t *testing.T) {
	cfg, d := tailStore(t)
	rounds := 20
	if s := os.Getenv("ENGRAM_SCALE_ROUNDS"); s != "" {
		if _, err := fmt.Sscan(s, &rounds); err != nil || rounds < 1 {
			t.Fatalf("ENGRAM_SCALE_ROUNDS=%q", s)
		}
	}
	ctx := context.Background()
	db, err := engine.Open(cfg.Dir, engine.Options{ReadOnly: true, Warm: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	<-db.Warmed()
	coll, err := vectorCollection(db, cfg.Dim)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 1<<41))
	search := func(s int32, vec []float32) (searchCost, error) {
		return timeCall(func() error {
			_, err := coll.Search(ctx, engine.SearchRequest{Vector: vec, K: 10, Filter: engine.Eq("session", engine.String(sessionName(s))), IDsOnly: true})
			return err
		})
	}
	// The first search of each heavy session, and a second one.
	for _, s := range d.heavy[1:] {
		for i := range 2 {
			vec, _ := d.query(r, int32(s), true)
			c, err := search(int32(s), vec)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("session %s, search %d: %v, %d minor faults, %d collections", sessionName(int32(s)), i+1, c.d, c.faults, c.gcs)
		}
	}
	s := int32(d.heavy[0])
	vecs := make([][]float32, 100)
	for q := range vecs {
		vecs[q], _ = d.query(r, s, q%2 == 0)
	}
	for round := range rounds {
		var lat []time.Duration
		for q, vec := range vecs {
			c, err := search(s, vec)
			if err != nil {
				t.Fatal(err)
			}
			lat = append(lat, c.d)
			if c.d > 2500*time.Microsecond {
				t.Logf("round %d, search %d: %v, %d minor faults, %d collections", round, q, c.d, c.faults, c.gcs)
			}
		}
		slices.Sort(lat)
		t.Logf("round %d: p50 %v, p99 %v, max %v", round, lat[49], lat[98], lat[99])
	}
}

// TestColdFaults (opt-in, ENGRAM_SCALE_STORE) runs the benchmark's 500
// timed recalls right after memory.Open without the warm-up, as its cold
// column does, and logs the fifteen slowest with their minor faults: what
// a cold recall pays for (bench/results/scale-1m.md, eighth measurement).
func TestColdFaults(t *testing.T) {
	cfg, d := tailStore(t)
	ctx := context.Background()
	st, err := memory.Open(cfg.Dir, memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(cfg.Seed, 1<<40))
	var all []searchCost
	var faults int64
	for q := range cfg.Queries {
		s := d.session[r.IntN(cfg.N)]
		vec, text := d.query(r, s, q%2 == 0)
		c, err := timeCall(func() error {
			_, err := st.RecallWithVector(ctx, text, vec, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		c.q, c.what = q, fmt.Sprintf("%s (%d memories)", sessionName(s), d.sizes[s])
		all = append(all, c)
		faults += c.faults
	}
	slices.SortFunc(all, func(a, b searchCost) int { return int(b.d - a.d) })
	t.Logf("%d recalls: p99 %v, %d minor faults in all", len(all), all[len(all)/100-1].d, faults)
	for _, c := range all[:min(15, len(all))] {
		t.Logf("recall %d, %s: %v, %d minor faults, %d collections", c.q, c.what, c.d, c.faults, c.gcs)
	}
}
