package engine

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/engramdb/engram/hnsw"
)

var (
	strategyStore = flag.String("engine.strategystore", "", "TestStrategiesOnStore: a store built by bench/cmd/scale -dir (skipped when empty)")
	strategyEf    = flag.Int("engine.strategyef", 0, "TestStrategiesOnStore: also run the two-hop walk with this ef")
)

// TestStrategiesOnStore compares, on a store of bench/cmd/scale (sessions
// s00000.. holding 10%, 5%, 2%, 1%), the planner's choice with each hnsw
// strategy forced: wall ms per query and recall@10 against the exact
// scan. Opt-in (-engine.strategystore DIR); it is how the thresholds were
// checked at 1024-d (hnsw package doc).
func TestStrategiesOnStore(t *testing.T) {
	if *strategyStore == "" {
		t.Skip("-engine.strategystore not set")
	}
	db, err := Open(*strategyStore, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfgs := db.Collections()
	if len(cfgs) == 0 {
		t.Fatal("no collection")
	}
	var c *Collection
	for _, cc := range cfgs {
		if c == nil || cc.Dim > c.cfg.Dim {
			if c, err = db.Collection(cc.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	var all []string
	if err := c.Scan(nil, false, func(rec Record) bool { all = append(all, rec.ID); return true }); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range []string{"s00000", "s00001", "s00002", "s00003", "s00004"} {
		f := Eq("session", String(s))
		var qs [][]float32
		var truth []map[string]bool
		for len(qs) < 40 {
			rec, err := c.Get(all[r.IntN(len(all))])
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.Search(ctx, SearchRequest{Vector: rec.Vector, K: 10, Filter: f, Exact: true, IDsOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]bool{}
			for _, h := range w {
				in[h.ID] = true
			}
			qs, truth = append(qs, rec.Vector), append(truth, in)
		}
		line := s
		type run struct {
			st hnsw.Strategy
			ef int
		}
		runs := []run{{hnsw.StrategyAuto, 0}, {hnsw.StrategyScan, 0}, {hnsw.StrategyTwoHop, 0}, {hnsw.StrategyWalk, 0}}
		if *strategyEf > 0 {
			runs = append(runs, run{hnsw.StrategyTwoHop, *strategyEf})
		}
		for _, rn := range runs {
			st := rn.st
			var hit, want int
			t0 := time.Now()
			for i, q := range qs {
				got, err := c.Search(ctx, SearchRequest{Vector: q, K: 10, Filter: f, IDsOnly: true, strategy: st, Ef: rn.ef})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range got {
					if truth[i][h.ID] {
						hit++
					}
				}
				want += len(truth[i])
			}
			line += fmt.Sprintf(" | %v ef %d: %.2f ms %.3f", st, rn.ef, float64(time.Since(t0).Microseconds())/1000/float64(len(qs)), float64(hit)/float64(max(want, 1)))
		}
		t.Log(line)
	}
}
