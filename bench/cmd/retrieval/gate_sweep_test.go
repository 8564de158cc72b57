package main

import (
	"fmt"
	"testing"

	"github.com/engramdb/engram/bench/beir"
)

// sweepLists is the cached candidate lists of every sweep set; it skips the test without -sweep.
func sweepLists(t *testing.T) []*setLists {
	t.Helper()
	if !*sweep {
		t.Skip("measurement only; pass -sweep")
	}
	root, _ := beir.FindDatasets()
	var sets []*setLists
	for _, s := range sweepSets {
		sets = append(sets, buildLists(t, root, s.dir, s.prefix, nil))
	}
	return sets
}

func fuseScore(f func(kw, cos float64, kRank int) float64) fuseFn {
	return func(kw, vec []scored) []string {
		nk := normMax(kw)
		rk := map[string]int{}
		for i, s := range kw {
			rk[s.ID] = i + 1
		}
		nv := normRaw(vec)
		sc := map[string]float64{}
		for id := range nk {
			sc[id] = 0
		}
		for id := range nv {
			sc[id] = 0
		}
		for id := range sc {
			sc[id] = f(nk[id], nv[id], rk[id])
		}
		return top10(sc)
	}
}

// TestFusionGate is the measurement behind memory.LexicalVectorGate: weighted fusion with the
// lexical vectors gated by the BM25 score (memory.FusionWeighted), for gates and weights, on
// locomo-dev's tune conversations (tuneConvs), its held-out ones, all of it, and the BEIR-style
// sets, as differences from BM25 alone; then the same for the GloVe lists when cached.
func TestFusionGate(t *testing.T) {
	sets := sweepLists(t)
	bm := fuseScore(func(kw, _ float64, _ int) float64 { return kw })
	tune := func(s string) bool { return tuneConvs[s] }
	held := func(s string) bool { return !tuneConvs[s] }
	var pick func(q *qlists) ([]scored, []scored)
	row := func(name string, f fuseFn) {
		d := func(sl *setLists, sess func(string) bool) float64 {
			return evalSet(sl, pick, f, sess) - evalSet(sl, pick, bm, sess)
		}
		line := fmt.Sprintf("%-22s locomo tune %+.4f held %+.4f all %+.4f |", name, d(sets[0], tune), d(sets[0], held), d(sets[0], nil))
		for _, sl := range sets[1:] {
			line += fmt.Sprintf(" %s %+.4f", sl.Name, d(sl, nil))
		}
		t.Log(line)
	}
	gated := func(w, g float64) fuseFn {
		return fuseScore(func(kw, cos float64, _ int) float64 {
			if g > 0 {
				cos *= max(0, min(1, (kw-g)/(1-g)))
			}
			return (1-w)*kw + w*cos
		})
	}
	for _, name := range []string{"lex", "glove", "g0.30", "g0.50", "g0.70"} {
		switch name {
		case "lex":
			pick = func(q *qlists) ([]scored, []scored) { return q.KW, q.Vec }
		case "glove":
			pick = func(q *qlists) ([]scored, []scored) { return q.KW, q.Glove }
		default:
			pick = func(q *qlists) ([]scored, []scored) { return q.KW, q.Combo[name] }
		}
		if _, vec := pick(sets[0].Q[firstKey(sets[0])]); name != "lex" && vec == nil {
			continue // no GloVe lists in the cache
		}
		row(name+" alone", weighted2(fixed(1), normMax, normRaw))
		for _, g := range []float64{0, 0.6, 0.7, 0.8, 0.9} {
			for _, w := range []float64{0.3, 0.5, 0.7} {
				if name != "lex" && g != 0 && g != 0.8 {
					continue
				}
				row(fmt.Sprintf("%s gate %.1f w%.1f", name, g, w), gated(w, g))
			}
		}
	}
}

func firstKey(sl *setLists) string {
	for k := range sl.Q {
		return k
	}
	return ""
}
