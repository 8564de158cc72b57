package main

import (
	"fmt"
	"math"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

func qndcg(sl *setLists, id string, ranked []string) float64 {
	return beir.Evaluate(map[string][]string{id: ranked}, beir.Qrels{id: sl.Qrels[id]}).NDCG10
}

func corr(x, y []float64) float64 {
	mx, my := 0.0, 0.0
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestFusionAnalyze asks whether the shape of a query's two lists predicts whether ungated fusion
// (0.3/0.7) helps it: the correlation, per set, of per-query features with the nDCG@10 gained
// over BM25 alone (and the feature's mean). None reaches 0.25 on any set.
func TestFusionAnalyze(t *testing.T) {
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, _ := beir.FindDatasets()
	for _, s := range sweepSets {
		sl := buildLists(t, root, s.dir, s.prefix, nil)
		bm := weighted(fixed(0), normRaw)
		hy := weighted(fixed(0.3), normRaw)
		feats := map[string][]float64{}
		var delta []float64
		pos, neg := 0, 0
		for id, q := range sl.Q {
			d := qndcg(sl, id, hy(q.KW, q.Vec)) - qndcg(sl, id, bm(q.KW, q.Vec))
			if d > 0 {
				pos++
			} else if d < 0 {
				neg++
			}
			delta = append(delta, d)
			f := map[string]float64{}
			f["overlap10"] = overlap(q.KW, q.Vec, 10)
			f["overlap1"] = overlap(q.KW, q.Vec, 1)
			at := func(l []scored, i int) float64 {
				if len(l) == 0 {
					return 0
				}
				return l[min(i, len(l)-1)].Score
			}
			f["vtop"] = at(q.Vec, 0)
			f["vgap10"] = 1 - at(q.Vec, 9)/max(1e-9, at(q.Vec, 0))
			f["kgap10"] = 1 - at(q.KW, 9)/max(1e-9, at(q.KW, 0))
			f["kgap2"] = 1 - at(q.KW, 1)/max(1e-9, at(q.KW, 0))
			f["vgap2"] = 1 - at(q.Vec, 1)/max(1e-9, at(q.Vec, 0))
			m, sd := meanStd(q.Vec)
			f["vz1"] = (at(q.Vec, 0) - m) / max(1e-9, sd)
			m, sd = meanStd(q.KW)
			f["kz1"] = (at(q.KW, 0) - m) / max(1e-9, sd)
			f["ktop"] = at(q.KW, 0)
			f["klen"] = float64(len(q.KW))
			for k, v := range f {
				feats[k] = append(feats[k], v)
			}
		}
		line := fmt.Sprintf("%s +%d -%d", sl.Name, pos, neg)
		for _, k := range []string{"overlap10", "overlap1", "vtop", "vgap10", "kgap10", "kgap2", "vgap2", "vz1", "kz1", "ktop", "klen"} {
			m, _ := meanStd(toScored(feats[k]))
			line += fmt.Sprintf(" %s=%.2f(%.2f)", k, corr(feats[k], delta), m)
		}
		t.Log(line)
	}
}

func toScored(x []float64) []scored {
	out := make([]scored, len(x))
	for i := range x {
		out[i].Score = x[i]
	}
	return out
}
