package scale

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

func TestTmpKW(t *testing.T) {
	dir := os.Getenv("ENGRAM_SCALE_STORE")
	if dir == "" {
		t.Skip()
	}
	cfg, _ := Config{N: 1000000, Dim: 1024, Sessions: 10000, Dir: dir}.withDefaults()
	d := newData(cfg)
	ctx := context.Background()
	st, err := memory.Open(dir, memory.OpenOptions{Options: memory.Options{Embedder: hashEmbedder{cfg.Dim}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mode := memory.ModeKeyword
	switch os.Getenv("TMPMODE") {
	case "hybrid":
		mode = memory.ModeHybrid
	case "vector":
		mode = memory.ModeVector
	}
	for _, s := range []int32{0, 1, 3} {
		r := rand.New(rand.NewPCG(1, 2))
		type q struct {
			v    []float32
			text string
		}
		var qs []q
		for i := range 100 {
			v, text := d.query(r, s, i%2 == 0)
			qs = append(qs, q{v, text})
		}
		for _, q := range qs[:20] { // warm
			st.RecallWithVector(ctx, q.text, q.v, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true, Mode: mode})
		}
		var ds []time.Duration
		c0 := cpuTime()
		for range 2 {
			for _, q := range qs {
				t0 := time.Now()
				st.RecallWithVector(ctx, q.text, q.v, memory.RecallOptions{Session: sessionName(s), K: 10, NoTouch: true, Mode: mode})
				ds = append(ds, time.Since(t0))
			}
		}
		cpu := (cpuTime() - c0) / time.Duration(len(ds))
		slices.Sort(ds)
		t.Logf("session %d: p50 %v p90 %v p99 %v cpu %v", s, ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)*99/100], cpu)
	}
}
